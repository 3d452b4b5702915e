#!/usr/bin/env python3
"""team_forum.php, a page of the project's web site (see boincpy.web.user.main)."""
from boincpy.web.user.main import run

run(__file__, "teams")
