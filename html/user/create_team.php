#!/usr/bin/env python3
"""BOINC web RPC create_team.php, a Python CGI (see boincpy.web.rpc.create_team)."""
from boincpy.web.rpc import cgi_main

cgi_main("create_team")
