"""Text columns come back as str from both database layers, decoded once in
the connection (BLOB columns included, invalid UTF-8 as U+FFFD)."""

import MySQLdb
import pytest

from boincpy.db import connect, lite

GOOD = "<stderr_txt>caf\u00e9 \u4e2d \U0001f600</stderr_txt>"
BAD = b"<stderr_txt>\xff\xfe ok \xc3</stderr_txt>"      # a client's broken bytes
BAD_TEXT = "<stderr_txt>\ufffd\ufffd ok \ufffd</stderr_txt>"


@pytest.fixture(params=["full", "lite"])
def db(request, mini_project):
    from boincpy.config import load_config
    cfg = load_config(str(mini_project))
    d = connect(cfg) if request.param == "full" else connect(cfg, driver="wire")
    yield d
    d.close()


def _client_writes(db_root_params, db_name, xml_doc_out, stderr_out):
    """A result row written as a BOINC client's report would be: raw bytes,
    by a plain MySQLdb connection (not through boincpy's layers)."""
    conn = MySQLdb.connect(db=db_name, charset="utf8mb4", **db_root_params)
    try:
        cur = conn.cursor()
        cur.execute("INSERT INTO result (workunitid, name, xml_doc_out, stderr_out) "
                    "VALUES (1, 'r_text', %s, %s)", (xml_doc_out, stderr_out))
        conn.commit()
        return cur.lastrowid
    finally:
        conn.close()


def test_blob_columns_come_back_as_str(db, db_root_params, scratch_db_name):
    rid = _client_writes(db_root_params, scratch_db_name, GOOD.encode("utf-8"), BAD)
    sql = "SELECT name, xml_doc_out, stderr_out FROM result WHERE id = %s"
    row = db.query_one(sql, (rid,))
    assert row == {"name": "r_text", "xml_doc_out": GOOD, "stderr_out": BAD_TEXT}
    assert db.query(sql, (rid,)) == [row]
    if not isinstance(db, lite.LiteDatabase):       # (the light layer has no stream)
        assert list(db.stream(sql, (rid,))) == [row]
    assert db.query_value("SELECT stderr_out FROM result WHERE id = %s", (rid,)) == BAD_TEXT
    assert db.query_value("SELECT xml_doc_out FROM result WHERE id = %s", (rid,)) == GOOD
    # expressions over BLOBs are binary too
    assert db.query_value("SELECT CONCAT(name, stderr_out) FROM result WHERE id = %s",
                          (rid,)) == "r_text" + BAD_TEXT
    assert db.query_value("SELECT xml_doc_in FROM result WHERE id = %s", (rid,)) is None


def test_text_read_and_written_back(db, db_root_params, scratch_db_name):
    rid = _client_writes(db_root_params, scratch_db_name, GOOD.encode("utf-8"), BAD)
    row = db.query_one("SELECT xml_doc_out, stderr_out FROM result WHERE id = %s", (rid,))
    db.execute("UPDATE result SET xml_doc_out = %s, stderr_out = %s WHERE id = %s",
               (row["xml_doc_out"], row["stderr_out"], rid))
    db.insert_many("result", ("workunitid", "name", "stderr_out"),
                   [(1, "r_copy", row["stderr_out"])])
    again = db.query_one("SELECT xml_doc_out, stderr_out FROM result WHERE id = %s", (rid,))
    assert again == {"xml_doc_out": GOOD, "stderr_out": BAD_TEXT}
    # valid text is byte-for-byte unchanged; only the bad bytes became U+FFFD
    conn = MySQLdb.connect(db=scratch_db_name, charset="utf8mb4", **db_root_params)
    try:
        cur = conn.cursor()
        cur.execute("SELECT xml_doc_out, stderr_out FROM result WHERE id = %s", (rid,))
        assert cur.fetchone() == (GOOD.encode("utf-8"), BAD_TEXT.encode("utf-8"))
        cur.execute("SELECT stderr_out FROM result WHERE name = 'r_copy'")
        assert cur.fetchone() == (BAD_TEXT.encode("utf-8"),)
    finally:
        conn.close()


def test_varchar_and_text_columns_are_str(db):
    db.execute("INSERT INTO user (create_time, email_addr, name, authenticator, "
               "global_prefs, cross_project_id, country) VALUES (1, %s, %s, 'k', %s, '', %s)",
               ("a@example.com", "n\u00e9\u4e2d", "<p>\u00e9</p>", None))
    row = db.query_one("SELECT email_addr, name, global_prefs, country, login_token "
                       "FROM user WHERE authenticator = 'k'")
    assert row == {"email_addr": "a@example.com", "name": "n\u00e9\u4e2d",
                   "global_prefs": "<p>\u00e9</p>", "country": None, "login_token": ""}
