#!/usr/bin/env python3
"""The master page, BOINC's index.php: built on each request from schedulers.txt (see boincpy.web.master)."""
from boincpy.web.master import cgi_main

cgi_main()
