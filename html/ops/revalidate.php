#!/usr/bin/env python3
"""boincpy ops page (see boincpy.web.ops.main)."""
from boincpy.hot_path import cgi_start

cgi_start("ops")       # its modules from one file when up to date; no GC
from boincpy.web.ops.main import run

run(__file__)
