#!/usr/bin/env python3
"""BOINC's public server_status.php (HTML, ?xml=1, ?counts=1), a Python CGI (see boincpy.web.server_status)."""
from boincpy.web.server_status import cgi_main

cgi_main()
