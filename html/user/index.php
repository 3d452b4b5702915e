#!/usr/bin/env python3
"""The master page, BOINC's index.php: built on each request from schedulers.txt (see boincpy.web.master)."""
from boincpy.hot_path import cgi_start

cgi_start("site_master")       # its modules from one file when up to date; no GC
from boincpy.web.master import cgi_main

cgi_main()
