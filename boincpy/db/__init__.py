"""The BOINC database: connection, schema, row dataclasses and written-out queries.

``from boincpy.db import connect`` is all most callers need; SQL lives in
:mod:`boincpy.db.queries` or next to the code that runs it.
"""

from boincpy.db.connection import Database, connect, connect_params

__all__ = ["Database", "connect", "connect_params"]
