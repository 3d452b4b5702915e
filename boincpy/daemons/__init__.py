"""The back-end daemons: feeder, transitioner, validators, assimilators, file_deleter,
db_purge, make_work; all built on :mod:`boincpy.daemons.base`."""
