"""A database lost in the middle of a request is an expected event.

When MariaDB stops, crashes or can't be reached, the statement's error is a
DatabaseLostError (errors 2002, 2003, 2006, 2013... from MySQLdb or from
boincpy.db.wire), and a server program logs one CRITICAL line naming it
("lost connection to database", BOINC's words, and the server's reason), no
traceback; the client gets the well-formed error reply, and a persistent
process opens a new connection for its next request.  The real thing, with
MariaDB SIGKILLed under load, is in tests/test_persistent_faults.py; here the
connection is KILLed from the server side in the middle of a request and
the server made unreachable for it, at each of the request's round trips.
"""

import io
import os
import signal
import threading
import time

import pytest

from boincpy.db import lite
from boincpy.db.connection import Database, LOST_CODES, connect_error
from boincpy.db.wire import Error as WireError
from boincpy.errors import DatabaseError, DatabaseLostError
from boincpy.log import SchedLog, failure_text
from boincpy.resident import Resident
from boincpy.sched.handler import handle_request
from tests.sched_env import CLIENT_AUTH, sched_env  # noqa: F401
from tests.test_sched_handler import ENV, Reply, body


# -- which errors are a lost database --------------------------------------------------

class _Failing:
    """A driver connection whose every statement fails with ``error``."""

    def __init__(self, error):
        self.error = error
        self.converter = {}

    def cursor(self, *args):
        error = self.error

        class Cursor:
            def execute(self, *args):
                raise error

            def close(self):
                pass
        return Cursor()


@pytest.mark.parametrize("code, text", [
    (2006, "Server has gone away"), (2013, "Lost connection to server during query"),
    (1927, "Connection was killed"), (1053, "Server shutdown in progress")])
def test_a_statement_whose_server_went_away_raises_database_lost(code, text):
    db = Database(_Failing(WireError(code, text)), {"db": "p", "user": "u"})
    with pytest.raises(DatabaseLostError) as info:
        db.query("SELECT 1")
    assert info.value.reason == text and info.value.mysql_code == code
    assert db.lost


def test_other_database_errors_are_not_a_lost_database():
    db = Database(_Failing(WireError(1064, "You have an error in your SQL syntax")), {})
    with pytest.raises(DatabaseError) as info:
        db.query("SELEKT 1")
    assert not isinstance(info.value, DatabaseLostError) and not db.lost
    assert "SELEKT 1" in str(info.value)


def test_an_unreachable_server_is_a_lost_database_and_a_refusal_is_not():
    params = {"db": "p", "user": "u", "unix_socket": "/nowhere.sock"}
    err = connect_error(WireError(2002, "Can't connect to local server through socket "
                                  "'/nowhere.sock' (2)"), params)
    assert isinstance(err, DatabaseLostError) and "is MariaDB/MySQL running?" in str(err)
    assert err.reason.startswith("Can't connect to local server")
    denied = connect_error(WireError(1045, "Access denied for user 'u'"), params)
    assert not isinstance(denied, DatabaseLostError) and "db_passwd" in str(denied)
    assert {2002, 2003, 2006, 2013} <= LOST_CODES


def test_failure_text_is_one_line_for_a_lost_database_and_a_traceback_otherwise():
    lost = DatabaseLostError("lost connection to database (x)",
                             reason="Lost connection to server\nduring query")
    assert failure_text(lost, "Scheduler failed") == \
        "lost connection to database (Lost connection to server during query)"
    assert failure_text(lost, "x.php failed", "x.php") == \
        "x.php: lost connection to database (Lost connection to server during query)"
    try:
        {}["missing"]
    except KeyError as exc:
        text = failure_text(exc, "Scheduler failed")
    lines = text.splitlines()
    assert lines[0] == "Scheduler failed: KeyError: 'missing'"
    assert lines[1] == "Traceback (most recent call last):" and "test_db_lost.py" in text


# -- the scheduler, persistent, its connection lost mid-request ------------------------

class _DroppedAt:
    """The Resident's connection, KILLed by the server just before its
    ``at``-th round trip, after which the server can't be reached by it
    (a crashed MariaDB): its reconnection fails too."""

    def __init__(self, db, env, at):
        self.db, self.conn, self.env, self.at, self.n = db, db.conn, env, at, 0

    def query(self, text):
        self.n += 1
        if self.n == self.at:
            self.env.execute("KILL CONNECTION %d" % self.conn.thread_id())
            time.sleep(0.05)
            params = dict(self.db.params, host="127.0.0.1", port=1)
            params.pop("unix_socket", None)
            self.db.params = params
        return self.conn.query(text)

    def __getattr__(self, name):
        return getattr(self.conn, name)


def _request(env, resident):
    log = SchedLog(io.StringIO(), 3)
    out = handle_request(env.cfg, body("no_work", "03_sched_workfetch_hostid1.body.xml"),
                         dict(ENV), job_array=env.job_array(), log=log, resident=resident)
    return Reply(out, log.stream.getvalue())


def _round_trips(env):
    """How many round trips the request makes on a persistent connection."""
    resident = Resident(str(env.root), persistent=True)
    try:
        db = resident.database(env.cfg)
        counter = _DroppedAt(db, env, at=0)
        db.conn = counter
        _request(env, resident)
        return counter.n
    finally:
        resident.close()


def test_a_request_whose_database_is_lost_logs_one_line_and_the_next_reconnects(sched_env):
    env = sched_env
    first = _request(env, None)             # the host row exists from now on
    assert not first.messages() or "Server error" not in first.messages()[0][1]
    trips = _round_trips(env)
    assert trips >= 2
    for at in range(1, trips + 1):
        resident = Resident(str(env.root), persistent=True)
        try:
            db = resident.database(env.cfg)
            db.conn = _DroppedAt(db, env, at)
            r = _request(env, resident)
            critical = [line for line in r.log.splitlines() if "[CRITICAL]" in line]
            # one line naming the event, no traceback
            assert len(critical) == 1 and "lost connection to database (" in critical[0], \
                (at, r.log)
            assert "Traceback" not in r.log and "Scheduler failed" not in r.log, (at, r.log)
            # the well-formed error reply
            assert r.messages()[0][1].startswith("Server error"), (at, r.raw)
            assert r.text("request_delay") is not None
            # the server is back: the next request opens a new connection and is served
            assert db.lost
            again = _request(env, resident)
            assert resident._db is not db
            assert "[CRITICAL]" not in again.log, (at, again.log)
            assert again.text("hostid") is None and again.root.find("project_is_down") is None
            assert not any("Server error" in m for _, m in again.messages()), again.raw
        finally:
            resident.close()


# -- MariaDB itself stopped, then SIGKILLed, while a request waits on it ---------------

@pytest.fixture
def private_project():
    """A made project on a MariaDB server of the test's own, with the
    captured client's account and the feeder's job array."""
    import mariadb_instance
    from boincpy import shmem
    from conftest import TEST_BASE, make_test_project, remove_test_project
    from jobs_helpers import make_feeder
    if not mariadb_instance.available():
        pytest.skip("needs root and mariadbd / mariadb-install-db")
    os.makedirs(TEST_BASE, exist_ok=True)
    server = mariadb_instance.MariaDB(TEST_BASE)
    server.start()
    p = None
    try:
        p = make_test_project(server.params)
        db = p.connect()
        db.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
                   "cross_project_id, passwd_hash) VALUES (1, 't@example.com', 't', %s, "
                   "'x', 'x')", (CLIENT_AUTH,))
        db.close()
        feeder = make_feeder(p.cfg)
        feeder.one_pass()
        feeder.db.close()
        yield p, server
    finally:
        if p is not None:
            try:
                os.unlink(shmem.segment_path(p.cfg))
            except OSError:
                pass
            remove_test_project(p)
        server.remove()


@pytest.mark.slow
@pytest.mark.parametrize("persistent", [True, False], ids=["persistent", "classic"])
def test_mariadb_killed_under_a_waiting_request(private_project, persistent):
    """The request's statement waits on a stopped MariaDB, which is then
    SIGKILLed and started again: one CRITICAL line, the error reply, and the
    next request (the same process's, when persistent) is served."""
    p, server = private_project
    resident = Resident(p.root, persistent=persistent)

    def request():
        log = SchedLog(io.StringIO(), 3)
        out = handle_request(resident.config(), body("no_work",
                             "03_sched_workfetch_hostid1.body.xml"), dict(ENV), log=log,
                             resident=resident)
        if not persistent:          # a CGI's Resident lives for one request
            resident.close()
        return Reply(out, log.stream.getvalue())
    try:
        assert "[CRITICAL] lost" not in request().log
        server.proc.send_signal(signal.SIGSTOP)
        replies = []
        waiting = threading.Thread(target=lambda: replies.append(request()))
        waiting.start()
        time.sleep(1.0)
        assert waiting.is_alive()           # its statement waits on the server
        server.restart(signal.SIGKILL)
        waiting.join(30)
        r = replies[0]
        critical = [line for line in r.log.splitlines() if "[CRITICAL]" in line]
        assert len(critical) == 1, r.log
        assert ("lost connection to database (" in critical[0]
                or "can't open database" in critical[0]), r.log
        assert "Traceback" not in r.log
        assert r.messages()[0][1].startswith("Server"), r.raw
        again = request()
        assert "database" not in again.log, again.log
        assert "Request: [USER#1]" in again.log and "Sending reply" in again.log
    finally:
        resident.close()


# -- a web RPC, persistent, its connection lost mid-request -------------------------------

def test_a_web_rpc_whose_database_is_lost_logs_one_line_and_the_next_reconnects(
        mini_project, capfd):
    from boincpy import passwords
    from boincpy.config import load_config
    from boincpy.db import connect
    from boincpy.web import rpc
    from boincpy.web.http import Request
    from webrpc_util import error_of, text_of
    cfg = load_config(str(mini_project))
    email, password = "lost@example.com", "pw"
    hashed = passwords.client_passwd_hash(password, email)

    def call(name, get, resident=None):
        req = Request.of(method="GET", get=get, post={}, environ={"REMOTE_ADDR": "127.0.0.1"})
        req.resident = resident
        return rpc.handle(name, cfg, req)
    made = call("create_account", {"email_addr": email, "passwd_hash": hashed,
                                   "user_name": "Lost"})
    auth = text_of(made.body, "authenticator")
    assert auth, made.body
    lookup = {"email_addr": email, "passwd_hash": hashed}
    killer = connect(cfg)
    resident = Resident(str(mini_project), persistent=True)
    try:
        db = resident.database(cfg)
        db.conn = _DroppedAt(db, killer, at=1)
        capfd.readouterr()
        resp = call("lookup_account", lookup, resident)
        err = capfd.readouterr().err
        # the well-formed <error> reply, one line in the error log, no traceback
        assert error_of(resp.body) is not None, resp.body
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            "[boincpy web] lookup_account.php: lost connection to database ("), err
        # the server is back: the next request, on a new connection, is served
        again = call("lookup_account", lookup, resident)
        assert text_of(again.body, "authenticator") == auth, again.body
        assert resident._db is not db and capfd.readouterr().err == ""
    finally:
        resident.close()
        killer.close()
