#!/usr/bin/env python3
"""boincpy ops page (see boincpy.web.ops.main)."""
from boincpy.web.ops.main import run

run(__file__)
