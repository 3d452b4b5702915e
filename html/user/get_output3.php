#!/usr/bin/env python3
"""BOINC's get_output3.php (outputs of remote-submitted jobs), a Python CGI (see boincpy.web.get_output)."""
from boincpy.hot_path import cgi_start

cgi_start("web_get_output")       # its modules from one file when up to date; no GC
from boincpy.web.get_output import cgi_main

cgi_main("get_output3")
