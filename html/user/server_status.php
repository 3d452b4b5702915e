#!/usr/bin/env python3
"""BOINC's public server_status.php (HTML, ?xml=1, ?counts=1), a Python CGI (see boincpy.web.server_status)."""
from boincpy.hot_path import cgi_start

cgi_start("web_server_status")       # its modules from one file when up to date; no GC
from boincpy.web.server_status import cgi_main

cgi_main()
