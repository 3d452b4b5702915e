"""The BOINC database: connection, schema, row dataclasses and written-out queries.

``from boincpy.db import connect`` is all most callers need.  Every write of
a table (UPDATE, INSERT, DELETE) lives in that table's module here
(:mod:`boincpy.db.result`, :mod:`boincpy.db.workunit`, ...; docs/design.md
has the map); queries that only read live next to the code that runs them.
"""

from boincpy.db.connection import Database, connect, connect_params

__all__ = ["Database", "connect", "connect_params"]
