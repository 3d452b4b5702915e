#!/usr/bin/env python3
"""delete_account_confirm.php, a page of the project's web site (see boincpy.web.user.main)."""
from boincpy.hot_path import cgi_start

cgi_start("site_account")       # its modules from one file when up to date; no GC
from boincpy.web.user.main import run

run(__file__, "account")
