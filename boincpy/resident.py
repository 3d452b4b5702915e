"""What a server process keeps from one request to the next.

The scheduler, the upload handler and the web RPCs run either as classic
CGIs (one process per request) or persistently (one process serving many
requests, :mod:`boincpy.persistent`).  Both go through a :class:`Resident`: a CGI
makes one, serves its request and closes it; a persistent process keeps one
for its whole life.  So the two modes run the same code, and what differs
is only how long these things live:

* the project's configuration (``config.xml`` and, for the server programs,
  ``config_aux.xml``), parsed again when either file changes (its size,
  time or inode), or taken from the snapshot of another process's parse of
  the same files (:mod:`boincpy.parsed_config`: a CGI's predecessor's);
* key files (``code_sign_public``, ``upload_public``, ...), read again when
  they change;
* one database connection, opened again when the server has dropped it or
  restarted: a request's first statement (a SELECT) finds out and is sent
  again on a new connection (:mod:`boincpy.db.lite`), which saves the round
  trip of a ping before every request (BOINC's FastCGI scheduler pings in
  open_database());
* the feeder's job array, attached once and attached again when the feeder
  has made a new segment (restarted, or shmem_key changed).

Every check is a ``stat``: a few microseconds a request.
"""

import posix     # not os, on a classic CGI's path (boincpy.hot_path.join)

from boincpy.hot_path import join
from boincpy.parsed_config import (
    file_signature as _signature, find_project_dir, load_snapshot, save_snapshot, snapshot_key)


class Resident:
    """A server process's configuration, keys, database and job array.

    ``project_dir`` None: found as BOINC's programs find it
    (:func:`boincpy.parsed_config.find_project_dir`).  ``persistent``: the
    process serves many requests (only names and counters differ, e.g.
    debug_req_reply_dir's file names).
    """

    def __init__(self, project_dir=None, persistent=False):
        self.project_dir = project_dir
        self.persistent = persistent
        self.requests = 0
        self._cfgs = {}             # aux -> (signature of the files, Config)
        self._files = {}            # path -> (signature, value)
        self._db = None
        self._db_key = None
        self._db_cfg = None
        self._array = None
        self._array_path = None
        self._kept = {}             # path -> (device and inode, pid, open object)

    # -- configuration --------------------------------------------------

    def config(self, aux=True):
        """The project's Config, parsed again when config.xml (or, with
        ``aux``, config_aux.xml) changed since the last call.  ``aux``: read
        config_aux.xml too, as BOINC's server programs do (its web pages
        don't, so a broken config_aux.xml can't stop them).  Raises
        ConfigError as load_config does, on every call until the file is
        fixed."""
        if self.project_dir is None:
            self.project_dir = find_project_dir()
        key = snapshot_key(self.project_dir, aux)
        hit = self._cfgs.get(aux)
        if hit is not None and hit[0] == key:
            return hit[1]
        self._cfgs.pop(aux, None)
        # another process's parse of the same files (a CGI's predecessor)
        cfg = load_snapshot(key)
        if cfg is None:
            # the table and the parser only when no snapshot is the parse's
            from boincpy.config import load_config
            cfg = load_config(self.project_dir, aux=aux)
            save_snapshot(cfg, key)
        self._cfgs[aux] = (key, cfg)
        return cfg

    # -- files and keys --------------------------------------------------

    def file_value(self, path, parse):
        """``parse(path)`` of a file, kept until the file changes; None while
        the file is missing.  An exception from ``parse`` propagates (and the
        next call tries again)."""
        sig = _signature(path)
        if sig is None:
            self._files.pop(path, None)
            return None
        hit = self._files.get(path)
        if hit is not None and hit[0] == sig:
            return hit[1]
        value = parse(path)
        self._files[path] = (sig, value)
        return value

    def key_text(self, cfg, name):
        """KEY_DIR/NAME, whitespace-stripped (the code-signing key the
        scheduler hands out), or None if unreadable."""
        def read(path):
            with open(path, "rb") as f:
                return f.read().decode("ascii", "replace").strip()
        try:
            return self.file_value(join(cfg.key_dir, name), read)
        except OSError:
            return None

    def key(self, cfg, name):
        """KEY_DIR/NAME as a parsed key (:func:`boincpy.crypto.read_key`);
        None if missing; raises what read_key raises for a bad file."""
        from boincpy import crypto
        return self.file_value(join(cfg.key_dir, name), crypto.read_key)

    def kept_open(self, path, opener):
        """``opener(path)`` (an object with ``fileno`` and ``close``: a log),
        kept open from one request to the next, as BOINC's FastCGI scheduler
        keeps its log; opened again when the file at ``path`` is no longer the
        open one (rotated, removed) or the process is another (forked since).
        One ``stat`` a request instead of an open and a close.  Raises what
        ``opener`` raises."""
        hit = self._kept.get(path)
        if hit is not None:
            ident, pid, obj = hit
            try:
                st = posix.stat(path)
                if (st.st_dev, st.st_ino) == ident and pid == posix.getpid():
                    return obj
            except OSError:
                pass
            del self._kept[path]
            _close_quietly(obj)
        obj = opener(path)
        st = posix.fstat(obj.fileno())
        self._kept[path] = ((st.st_dev, st.st_ino), posix.getpid(), obj)
        return obj

    # -- database ---------------------------------------------------------

    def database(self, cfg, log=None):
        """The project's database (:mod:`boincpy.db.lite`), one connection
        for the process.  If the server dropped it since the last request
        (restart, wait_timeout, KILL), the request's first statement opens
        it again and goes on, writing "lost connection to database - trying
        to reconnect" to ``log``; one the last request lost
        (``Database.lost``) is opened anew.  Raises DatabaseError if it
        can't be opened."""
        from boincpy.db import connect, connect_params
        db = self._db
        if db is not None and db.lost:      # the server went away under the last request
            self.close_database()
            db = None
        if cfg is not self._db_cfg:         # config.xml read again: the same database?
            key = repr(sorted(connect_params(cfg).items()))
            if db is not None and key != self._db_key:
                self.close_database()
                db = None
            self._db_cfg, self._db_key = cfg, key
        if db is None:
            # a CGI's one request: no client library to load (boincpy.db.wire);
            # a persistent process: libmariadb's C parsing, loaded once
            db = self._db = connect(cfg, driver="mysql_c" if self.persistent else "wire")
        db.on_reconnect = None if log is None else (
            lambda: log.critical("lost connection to database - trying to reconnect"))
        return db

    def close_database(self):
        """Close the connection (the next request opens a new one)."""
        if self._db is not None:
            self._db.close()
        self._db = None

    # -- the feeder's job array ---------------------------------------------

    def job_array(self, cfg):
        """The feeder's job array, mapped once.  Mapped again when the
        segment file at this project's path is not the mapped one (the
        feeder restarted and made a new segment, or shmem_key changed) or
        the mapped one was marked not ready.  Raises ShmemError as
        :func:`boincpy.shmem.attach` does."""
        from boincpy import shmem
        path = shmem.segment_path(cfg)
        array = self._array
        if array is not None:
            if path == self._array_path and array.ready:
                sig = _signature(path)
                own = posix.fstat(array.fd)
                if sig is not None and sig[0] == own.st_ino:
                    return array
            self.close_job_array()
        # a classic CGI maps it only if its request reads a slot
        array = shmem.attach(cfg, mapped=self.persistent)
        self._array, self._array_path = array, path
        return array

    def close_job_array(self):
        if self._array is not None:
            self._array.close()
        self._array = None
        self._array_path = None

    def close(self):
        """Give everything back (a CGI's end, or a persistent process exiting)."""
        self.close_database()
        self.close_job_array()
        kept, self._kept = self._kept, {}
        for _, _, obj in kept.values():
            _close_quietly(obj)


def _close_quietly(obj):
    try:
        obj.close()
    except (OSError, ValueError):
        pass

