#!/usr/bin/env python3
"""BOINC's remote job submission RPCs, a Python CGI (see boincpy.web.submit_rpc)."""
from boincpy.hot_path import cgi_start

cgi_start("web_submit_rpc")       # its modules from one file when up to date; no GC
from boincpy.web.submit_rpc import cgi_main

cgi_main()
