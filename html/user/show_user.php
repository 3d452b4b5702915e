#!/usr/bin/env python3
"""BOINC web RPC show_user.php, a Python CGI (see boincpy.web.rpc.show_user)."""
from boincpy.web.rpc import cgi_main

cgi_main("show_user")
