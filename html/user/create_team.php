#!/usr/bin/env python3
"""BOINC web RPC create_team.php, a Python CGI (see boincpy.web.rpc.create_team)."""
from boincpy.hot_path import cgi_start

cgi_start("web_rpc")       # its modules from one file when up to date; no GC
from boincpy.web.rpc import cgi_main

cgi_main("create_team")
