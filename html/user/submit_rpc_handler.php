#!/usr/bin/env python3
"""BOINC's remote job submission RPCs, a Python CGI (see boincpy.web.submit_rpc)."""
from boincpy.web.submit_rpc import cgi_main

cgi_main()
