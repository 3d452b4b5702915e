#!/usr/bin/env python3
"""BOINC's input-file RPCs of remote submission, a Python CGI (see boincpy.web.job_file)."""
from boincpy.web.job_file import handle
from boincpy.web.submit_rpc import cgi_main

cgi_main(handle)
