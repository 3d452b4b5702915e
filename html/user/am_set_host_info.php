#!/usr/bin/env python3
"""BOINC web RPC am_set_host_info.php, a Python CGI (see boincpy.web.rpc.am_set_host_info)."""
from boincpy.web.rpc import cgi_main

cgi_main("am_set_host_info")
