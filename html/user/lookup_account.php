#!/usr/bin/env python3
"""BOINC web RPC lookup_account.php, a Python CGI (see boincpy.web.rpc.lookup_account)."""
from boincpy.web.rpc import cgi_main

cgi_main("lookup_account")
