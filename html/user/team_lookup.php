#!/usr/bin/env python3
"""BOINC web RPC team_lookup.php, a Python CGI (see boincpy.web.rpc.team_lookup)."""
from boincpy.web.rpc import cgi_main

cgi_main("team_lookup")
