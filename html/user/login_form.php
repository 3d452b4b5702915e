#!/usr/bin/env python3
"""login_form.php, a page of the project's web site (see boincpy.web.user.main)."""
from boincpy.web.user.main import run

run(__file__, "session")
