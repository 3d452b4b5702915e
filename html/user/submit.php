#!/usr/bin/env python3
"""boincpy submitter page submit.php (see boincpy.web.submitter.main)."""
from boincpy.web.submitter.main import run

run(__file__)
