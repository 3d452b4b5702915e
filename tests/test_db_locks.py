"""Which rows the batched statements lock: only the rows they name.

A statement that locks rows it does not write (a scan of a small table's
whole index, a range of a host's host_app_version rows) holds them until
its transaction ends; scheduler requests writing those rows then wait, and
deadlock with it.  Each test holds one transaction open and checks from a
second connection, with a one-second lock wait, that a row the first did
not name can still be written and a named one cannot.
"""

import pytest

from boincpy.db.host_app_version import lock_rows, record_statistics
from boincpy.db.result import set_results_file_delete_state
from boincpy.db.workunit import (lower_transition_times, set_transition_times,
                                 set_workunits_file_delete_state)

N_ROWS = 300


@pytest.fixture
def two(schema_db):
    first, second = schema_db(), schema_db()
    first.execute("INSERT INTO workunit (id, appid, name, xml_doc, file_delete_state, "
                  "transition_time) SELECT seq, 1, CONCAT('wu_', seq), '', 1, 2147483647 "
                  "FROM seq_1_to_%d" % N_ROWS)
    first.execute("INSERT INTO result (id, workunitid, name, xml_doc_in, xml_doc_out, "
                  "stderr_out, server_state, file_delete_state) "
                  "SELECT seq, seq, CONCAT('r_', seq), '', '', '', 5, 1 FROM seq_1_to_%d"
                  % N_ROWS)
    first.execute("INSERT INTO host_app_version (host_id, app_version_id) "
                  "SELECT h.seq, a.seq FROM seq_1_to_6 h JOIN seq_1_to_2 a")
    for table in ("workunit", "result", "host_app_version"):
        first.execute("ANALYZE TABLE %s" % table)
    second.execute("SET SESSION innodb_lock_wait_timeout = 1")
    return first, second


def _blocked(db, sql, params=()):
    """Whether ``sql`` waits out the lock wait timeout (1 s) on this connection."""
    try:
        db.execute(sql, params)
    except Exception as exc:
        if getattr(exc, "mysql_code", None) == 1205:
            return True
        raise
    return False


HALF = list(range(1, N_ROWS + 1, 2))        # enough of the table for a scan to look cheaper


@pytest.mark.parametrize("write", [
    lambda db: set_workunits_file_delete_state(db, HALF, 2, 1),
    lambda db: set_transition_times(db, HALF, 5),
    lambda db: lower_transition_times(db, {i: 5 + i % 3 for i in HALF}),
], ids=["file_deleter", "transitioner", "scheduler"])
def test_updates_of_listed_workunits_lock_only_those(two, write):
    first, second = two
    with first.transaction():
        assert write(first) == len(HALF)
        assert not _blocked(second, "UPDATE workunit SET transition_time = 7 WHERE id = 2")
        assert _blocked(second, "UPDATE workunit SET transition_time = 7 WHERE id = 3")
    assert second.query_value("SELECT transition_time FROM workunit WHERE id = 2") == 7


def test_file_deleter_update_of_results_locks_only_those(two):
    first, second = two
    with first.transaction():
        assert set_results_file_delete_state(first, HALF, 2, 1) == len(HALF)
        # not listed, and in the same file_delete_state the statement looked for
        assert not _blocked(second, "UPDATE result SET file_delete_state = 2 WHERE id = 4")
        assert _blocked(second, "UPDATE result SET server_state = 4 WHERE id = 5")


def test_validator_locks_host_app_version_rows_by_their_whole_key(two):
    first, second = two
    with first.transaction():
        rows = lock_rows(first, [(2, 1), (2, 2), (4, 1)])
        assert [(r["host_id"], r["app_version_id"]) for r in rows] == [(2, 1), (2, 2), (4, 1)]
        assert record_statistics(first, ("n_jobs_today",), {(2, 1): (3,), (4, 1): (4,)}) == 2
        # host 3's first row is the one past host 2's range: not locked
        assert not _blocked(second, "UPDATE host_app_version SET n_jobs_today = 9 "
                            "WHERE host_id = 3 AND app_version_id = 1")
        assert not _blocked(second, "UPDATE host_app_version SET n_jobs_today = 9 "
                            "WHERE host_id = 4 AND app_version_id = 2")
        assert _blocked(second, "UPDATE host_app_version SET n_jobs_today = 9 "
                        "WHERE host_id = 2 AND app_version_id = 2")
    assert first.query_value("SELECT n_jobs_today FROM host_app_version "
                             "WHERE host_id = 4 AND app_version_id = 1") == 4


def test_lower_transition_times_keeps_earlier_times(two):
    first, _ = two
    first.execute("UPDATE workunit SET transition_time = 100 WHERE id = 1")
    first.execute("UPDATE workunit SET transition_time = 900 WHERE id IN (2, 3)")
    assert lower_transition_times(first, {1: 500, 2: 500, 3: 200}) == 2
    assert [r["transition_time"] for r in first.query(
        "SELECT transition_time FROM workunit WHERE id IN (1, 2, 3) ORDER BY id")] == \
        [100, 500, 200]
    assert lower_transition_times(first, {}) == 0
