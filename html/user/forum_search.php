#!/usr/bin/env python3
"""forum_search.php, a page of the project's web site (see boincpy.web.user.main)."""
from boincpy.web.user.main import run

run(__file__, "forum")
