#!/usr/bin/env python3
"""BOINC web RPC create_account.php, a Python CGI (see boincpy.web.rpc.create_account)."""
from boincpy.web.rpc import cgi_main

cgi_main("create_account")
