#!/usr/bin/env python3
"""BOINC web RPC login_token_lookup.php, a Python CGI (see boincpy.web.rpc.login_token_lookup)."""
from boincpy.hot_path import cgi_start

cgi_start("web_rpc")       # its modules from one file when up to date; no GC
from boincpy.web.rpc import cgi_main

cgi_main("login_token_lookup")
