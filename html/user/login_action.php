#!/usr/bin/env python3
"""boincpy submitter page login_action.php (see boincpy.web.submitter.main)."""
from boincpy.web.submitter.main import run

run(__file__)
