#!/usr/bin/env python3
"""BOINC's input-file RPCs of remote submission, a Python CGI (see boincpy.web.job_file)."""
from boincpy.hot_path import cgi_start

cgi_start("web_job_file")       # its modules from one file when up to date; no GC
from boincpy.web.job_file import cgi_main

cgi_main()
