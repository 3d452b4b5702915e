"""The BOINC database: connection, schema, row dataclasses and written-out queries.

``from boincpy.db import connect`` is all most callers need.  Every write of
a table (UPDATE, INSERT, DELETE) lives in that table's module here
(:mod:`boincpy.db.result`, :mod:`boincpy.db.workunit`, ...; docs/design.md
has the map); queries that only read live next to the code that runs them.
"""

from boincpy.db.connection import Database, connect_params, open_connection

__all__ = ["Database", "connect", "connect_params"]

# The drivers connect() can use.  All three give a Database with the same
# methods and the same conversions (text and BLOB columns as str):
#   mysqlclient  MySQLdb's full layer: tools, daemons, tests
#   mysql_c      MySQLdb's C layer alone, batching round trips: the
#                scheduler, the upload handler and the web's pages and RPCs
#                in a persistent process (boincpy.resident)
#   wire         boincpy.db.wire, no client library to load: a classic CGI
#                (falls back to mysql_c when the server wants what it can't do)
DRIVERS = ("mysqlclient", "mysql_c", "wire")


def connect(cfg, replica=False, driver="mysqlclient"):
    """Open the project's database as config.xml says (``db_host`` read by
    :func:`connection.split_host`, the one ``host:port`` reader).

    ``replica=True`` uses the ``replica_db_*`` settings (which default to the
    main ones), as BOINC's read-only tools and web pages do.  ``driver`` is
    one of :data:`DRIVERS`.  Raises DatabaseError with a sentence an operator
    can act on if the server refuses.
    """
    params = connect_params(cfg, replica)
    if driver == "mysqlclient":
        return Database(open_connection(params), params)
    if driver not in DRIVERS:
        raise ValueError("unknown database driver %r (one of %s)" % (driver, ", ".join(DRIVERS)))
    # imported here: every page and tool imports this package, and a page's
    # CGI would otherwise load the scheduler's wire client for nothing
    from boincpy.db.lite import open_database
    return open_database(params, wire=(driver == "wire"))
