"""The schema's revision (boincpy.db.revision): PROJECT/db_revision, BOINC's
updates from each older revision, a failed update, the schema check.

Databases at an older revision are made the way they were: schema.sql
loaded, then each newer update undone by the statements below (written from
what BOINC's schema was before that update), newest first.
"""

import os

import MySQLdb
import pytest

from boincpy.db import Database, revision as rv
from boincpy.errors import BoincpyError

# revision -> statements taking a database at that revision back to the one before
UNDO = {
    27031: [
        "alter table platform modify name varchar(254) not null",
        "alter table app modify name varchar(254) not null",
        "alter table app_version modify plan_class varchar(254) not null default ''",
        "alter table user modify email_addr varchar(254) not null, "
        "modify name varchar(254), modify authenticator varchar(254)",
        # (team.name shares a FULLTEXT index with description: same character set)
        "alter table team modify name varchar(254) character set utf8mb4 not null",
        "alter table workunit modify name varchar(254) not null",
        "alter table result modify name varchar(254) not null",
        "alter table job_file modify name varchar(255) not null",
        "alter table category modify name varchar(254) binary",
        "alter table forum modify title varchar(254) not null",
        "alter table token modify token varchar(255) not null",
        "alter table consent_type modify shortname varchar(255) not null",
    ],
    27030: ["alter table host drop column misc"],
    27029: ["alter table result add index res_wu_user (workunitid, userid), drop index res_batch",
            "alter table workunit drop index wu_batch"],
    27028: ["drop table consent", "drop table consent_type"],
    27027: ["alter table host drop index host_userid_cpid, drop index host_domain_name, "
            "add index host_user (userid)"],
    27026: ["drop table user_deleted", "drop table host_deleted",
            "alter table team_delta drop index team_delta_userid",
            "alter table banishment_vote drop index banishment_vote_userid",
            "alter table post_ratings drop index post_ratings_user",
            "alter table msg_from_host drop index message_hostid"],
    27025: ["alter table user drop index user_email_time, drop column previous_email_addr, "
            "drop column email_addr_change_time"],
    27024: ["alter table token modify create_time integer"],
    27023: ["alter table team modify total_credit double not null, "
            "modify expavg_credit double not null, modify seti_id integer not null"],
    27022: ["drop table token"],
    27021: ["alter table user modify login_token char(32) not null, "
            "modify login_token_time double not null"],
    27020: ["alter table user drop column login_token, drop column login_token_time"],
    27019: ["alter table workunit drop column app_version_num"],
    27018: ["alter table workunit drop column keywords"],
    27017: ["alter table host drop column p_ngpus, drop column p_gpu_fpops"],
    27016: ["alter table credit_user drop index cu_total, drop index cu_avg",
            "alter table credit_team drop index ct_total, drop index ct_avg"],
    27015: ["alter table job_file drop index jf_name",
            "alter table job_file change name md5 char(64) not null, add index md5 (md5)"],
    27014: ["alter table team drop column mod_time"],
    27013: ["alter table forum " + ", ".join(
        "alter %s drop default" % c for c in (
            "timestamp", "threads", "posts", "rate_min_expavg_credit", "rate_min_total_credit",
            "post_min_interval", "post_min_expavg_credit", "post_min_total_credit",
            "parent_type"))],
    27012: ["alter table user_submit drop primary key",
            "alter table user_submit_app drop primary key"],
    27011: ["drop table credit_user", "drop table credit_team"],
    27010: ["alter table app_version drop column beta"],
    27009: ["alter table app drop column fraction_done_exact"],
    27008: ["alter table result drop column peak_working_set_size, drop column peak_swap_size, "
            "drop column peak_disk_usage"],
    27007: ["alter table host drop column gpu_active_frac"],
    27006: ["alter table user_submit drop column max_jobs_in_progress"],
    27005: ["drop table badge", "drop table badge_user", "drop table badge_team"],
    27004: ["alter table batch drop column expire_time"],
    27003: ["alter table workunit modify mod_time timestamp null default null",
            "alter table result modify mod_time timestamp null default null"],
    27002: ["alter table host drop column product_name"],
    27001: ["alter table app drop column n_size_classes",
            "alter table workunit drop column size_class",
            "alter table result drop column size_class"],
    27000: ["drop table job_file"],
    26062: ["alter table app drop column locality_scheduling"],
    26060: ["alter table app drop column non_cpu_intensive"],
    25734: ["alter table batch drop column project_state, drop column description"],
    25169: ["alter table workunit drop column transitioner_flags",
            "alter table assignment drop index asgn_target"],
    24248: ["alter table user_submit drop column submit_all, drop column manage_all, "
            "add all_apps tinyint not null, add create_apps tinyint not null, "
            "add create_app_versions tinyint not null",
            "alter table user_submit_app drop column manage"],
    24225: ["alter table result drop column runtime_outlier"],
    24137: ["alter table user_submit drop column create_apps, drop column create_app_versions"],
    23881: ["alter table batch " + ", ".join("drop column " + c for c in (
        "fraction_done", "nerror_jobs", "state", "completion_time", "credit_estimate",
        "credit_canonical", "credit_total", "name", "app_id"))],
    23762: ["drop table batch", "drop table user_submit", "drop table user_submit_app"],
    23635: ["alter table app drop column homogeneous_app_version",
            "alter table workunit drop column app_version_id"],
    21728: ["alter table app add max_jobs_in_progress integer not null, "
            "add max_gpu_jobs_in_progress integer not null, "
            "add max_jobs_per_rpc integer not null, add max_jobs_per_day_init integer not null"],
    21226: ["alter table host_app_version drop column consecutive_valid, "
            "add host_scale_time double not null, add scale_probation tinyint not null default 1, "
            "add error_rate double not null"],
    20932: ["drop table host_app_version",
            "alter table app_version drop column pfc_n, drop column pfc_avg, "
            "drop column pfc_scale, drop column expavg_credit, drop column expavg_time",
            "alter table app drop column min_avg_pfc, drop column host_scale_check, "
            "drop column max_jobs_in_progress, drop column max_gpu_jobs_in_progress, "
            "drop column max_jobs_per_rpc, drop column max_jobs_per_day_init"],
    20807: ["alter table workunit drop column fileset_id"],
    19001: ["alter table result drop column elapsed_time, drop column flops_estimate, "
            "drop column app_version_id"],
    18490: [],          # state_counts: not in schema.sql
}

TEXT_TYPES = ("tinytext", "text", "mediumtext", "longtext")


def undo_utf8mb4(db):
    """Before update_5_2_2026b: the tables in a one-byte character set.  A
    table with TEXT columns only gets the table's default changed (converting
    those would make them MEDIUMTEXT on the way back, as BOINC's update does
    to real latin1 tables)."""
    present = {r["TABLE_NAME"] for r in db.query(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")}
    for t in rv.UTF8MB4_TABLES:
        if t not in present:
            continue
        texts = db.query_value(
            "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
            "AND TABLE_NAME = %s AND DATA_TYPE IN ('tinytext', 'text', 'mediumtext', "
            "'longtext')", (t,))
        if texts:
            db.execute("alter table `%s` default character set latin1" % t)
        else:
            db.execute("alter table `%s` convert to character set latin1" % t)


def take_back(db, revision, charset=True):
    """Undo every update newer than ``revision`` (newest first); with
    ``charset=False`` the tables stay utf8mb4 (as BOINC's create_project has
    made them since 2024, revision 27028)."""
    for rev in sorted((u.revision for u in rv.pending(revision)), reverse=True):
        if rev == 27032:
            if charset:
                undo_utf8mb4(db)
        else:
            for stmt in UNDO[rev]:
                db.execute(stmt)


def inferred(revision):
    """The revision read from a schema at ``revision``: the same, or the
    newest of the updates that follow with nothing to do here."""
    for u in rv.pending(revision):
        if u.steps:
            break
        revision = u.revision
    return revision


def utf8mb4_everywhere(db):
    return not db.query(
        "SELECT TABLE_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
        "AND CHARACTER_SET_NAME IS NOT NULL AND CHARACTER_SET_NAME <> 'utf8mb4'") and not \
        db.query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                 "DATABASE() AND LEFT(TABLE_COLLATION, 7) <> 'utf8mb4'")


def shape(db):
    """Every table's CREATE statement (what a second run must not change)."""
    return {r["TABLE_NAME"]: db.query("SHOW CREATE TABLE `%s`" % r["TABLE_NAME"])[0]
            for r in db.query("SELECT TABLE_NAME FROM information_schema.TABLES "
                              "WHERE TABLE_SCHEMA = DATABASE()")}


def test_updates_are_boincs_list_up_to_latest():
    revs = [u.revision for u in rv.UPDATES]
    assert revs == sorted(revs) and revs[0] > rv.OLDEST and revs[-1] == rv.LATEST
    assert [r for r in revs if r >= 27000] == list(range(27000, rv.LATEST + 1))
    assert set(UNDO) | {27032} == set(revs)
    assert rv.pending(rv.LATEST) == [] and rv.pending(27029)[0].name == "update_11_23_2025"
    assert [u.revision for u in rv.pending(27025)] == list(range(27026, rv.LATEST + 1))


# The fast tier brings these up to date (27001: every update); the slow one
# every revision (about 5 s each on a loaded machine).
FAST_REVISIONS = (rv.OLDEST, 23881, 27015, 27024, 27029, 27030, 27031)


@pytest.mark.parametrize("revision", [
    r if r in FAST_REVISIONS else pytest.param(r, marks=pytest.mark.slow)
    for r in [rv.OLDEST] + sorted(UNDO)])
def test_database_at_older_revision_is_brought_to_latest(schema_db, tmp_path, revision):
    db = schema_db()
    # a few rows, to see the updates keep them
    db.execute("insert into platform (name) values ('x86_64-pc-linux-gnu')")
    db.execute("insert into user (email_addr, name, authenticator) values ('a@b.c', 'Ann', 'k1')")
    # tables in latin1 for a few (converting them takes most of the time)
    latin1 = revision in (rv.OLDEST, 27029, 27031)
    take_back(db, revision, charset=latin1)
    # (check_schema does not compare character sets: update_5_2_2026b's undoing
    # is seen by utf8mb4_everywhere)
    assert rv.check_schema(db) != [] or revision == 27031
    assert utf8mb4_everywhere(db) != latin1
    # no db_revision: the revision is read from the schema
    rec = rv.recognise(db, str(tmp_path))
    assert (rec.revision, rec.inferred) == (inferred(revision), True)
    assert "inferred revision %d" % inferred(revision) in rec.note
    rv.write_revision(str(tmp_path), revision)
    lines = []
    applied = rv.apply_updates(db, str(tmp_path), log=lines.append)
    assert applied == rv.pending(revision) and applied[-1].revision == rv.LATEST
    assert "performing update %s (revision %d)" % (applied[0].name, applied[0].revision) \
        in lines
    assert rv.read_revision(str(tmp_path)) == rv.LATEST
    assert rv.check_schema(db) == []
    assert utf8mb4_everywhere(db)
    assert db.query_value("select name from platform") == "x86_64-pc-linux-gnu"
    assert db.query_one("select email_addr, name from user") == {"email_addr": "a@b.c",
                                                                  "name": "Ann"}


def test_utf8mb4_update_converts_tables(schema_db, tmp_path):
    db = schema_db()
    undo_utf8mb4(db)
    assert not utf8mb4_everywhere(db)
    assert rv.infer_revision(db) == 27031
    rv.write_revision(str(tmp_path), 27031)
    assert [u.name for u in rv.apply_updates(db, str(tmp_path), log=lambda s: None)] \
        == ["update_5_2_2026b"]
    assert utf8mb4_everywhere(db)
    assert rv.check_schema(db) == []


def test_applying_twice_changes_nothing(schema_db, tmp_path):
    db = schema_db()
    take_back(db, 27024)
    rv.write_revision(str(tmp_path), 27024)
    before = shape(db)
    plan = rv.describe_pending(db, str(tmp_path))
    assert shape(db) == before and rv.read_revision(str(tmp_path)) == 27024
    assert "update update_4_19_2018 (revision 27025)" in plan
    assert any("ADD COLUMN `previous_email_addr`" in ln for ln in plan)
    rv.apply_updates(db, str(tmp_path), log=lambda s: None)
    before = shape(db)
    lines = []
    assert rv.apply_updates(db, str(tmp_path), log=lines.append) == []
    assert "No updates needed" in lines
    assert shape(db) == before
    # every update finds nothing left to do, even run again by hand
    expected = rv.expected_schema(db)
    assert [u.name for u in rv.UPDATES if u.needed(db, expected)] == []
    assert rv.read_revision(str(tmp_path)) == rv.LATEST


def test_failed_update_leaves_the_revision_and_names_the_update(schema_db, tmp_path):
    db = schema_db()
    take_back(db, 27014)
    # a hand-made mess BOINC's job_file allowed: the same md5 twice
    for md5 in ("a" * 32, "a" * 32):
        db.execute("insert into job_file (md5, create_time, delete_time) values (%s, 0, 0)",
                   (md5,))
    rv.write_revision(str(tmp_path), 27014)
    with pytest.raises(rv.RevisionError) as err:
        rv.apply_updates(db, str(tmp_path), log=lambda s: None)
    text = str(err.value)
    assert "update_2_17_2017 (revision 27015) failed" in text
    assert "Duplicate entry" in text and "db_revision stays at 27014" in text
    assert rv.read_revision(str(tmp_path)) == 27014
    # nothing after it was done
    assert "misc" not in {r["Field"] for r in db.query("show columns from host")}
    # once the operator has fixed it, the same command goes on from there
    db.execute("delete from job_file where id = (select max(id) from "
               "(select id from job_file) j)")
    applied = rv.apply_updates(db, str(tmp_path), log=lambda s: None)
    assert applied[0].revision == 27015 and rv.read_revision(str(tmp_path)) == rv.LATEST
    assert rv.check_schema(db) == []


def test_narrowing_refuses_rows_that_would_not_fit(schema_db, tmp_path):
    db = schema_db()
    take_back(db, 27030)
    long_name = "w" * 200
    db.execute("insert into workunit (appid, name) values (1, %s)", (long_name,))
    rv.write_revision(str(tmp_path), 27030)
    with pytest.raises(rv.RevisionError) as err:
        rv.apply_updates(db, str(tmp_path), log=lambda s: None)
    assert "update_5_2_2026a (revision 27031) failed" in str(err.value)
    assert "workunit.name: 1 rows are longer than 191" in str(err.value)
    assert rv.read_revision(str(tmp_path)) == 27030
    assert db.query_value("select name from workunit") == long_name


def test_check_schema_names_each_difference(schema_db):
    db = schema_db()
    assert rv.check_schema(db) == []
    db.execute("alter table result add column foo integer not null default 0, "
               "drop column peak_disk_usage")
    db.execute("alter table host add index bar (venue), drop index host_tot")
    db.execute("alter table user modify name varchar(254)")
    db.execute("alter table app modify user_friendly_name varchar(254) null")
    db.execute("alter table batch add index batch_state (state, id)")
    db.execute("drop table login_failure")
    db.execute("create table extra_one (id integer)")
    db.execute("create view extra_view as select id from platform")
    lines = rv.check_schema(db)
    assert sorted(lines) == sorted([
        "result: column peak_disk_usage is missing",
        "result: column foo is extra",
        "host: index host_tot is missing",
        "host: index bar is extra",
        "user.name: type varchar(254), expected varchar(191)",
        "app.user_friendly_name: NULL, expected NOT NULL",
        "batch: index batch_state is extra",
        "login_failure: table is missing",
        "extra_one: table is extra",
        "extra_view: view is extra",
    ])
    db.execute("alter table host drop index bar, add index host_tot (venue)")
    assert "host: index host_tot is KEY (venue), expected KEY (total_credit)" \
        in rv.check_schema(db)
    db.execute("alter table team alter seti_id drop default")
    assert "team.seti_id: default None, expected 0" in rv.check_schema(db, defaults=True)
    assert not any(ln.startswith("team.seti_id") for ln in rv.check_schema(db))


def test_check_schema_takes_what_boincs_own_schema_makes(schema_db):
    """A database BOINC's db/schema.sql and constraints.sql made at LATEST
    differs from boincpy's in two ways that do not count: whole-column
    indexes where boincpy's are on a prefix, and timestamps that allow NULL
    (MariaDB's explicit_defaults_for_timestamp).  Its views are BOINC's."""
    db = schema_db()
    db.execute("alter table host drop index host_userid_cpid, drop index host_domain_name, "
               "add index host_userid_cpid (userid, host_cpid), "
               "add index host_domain_name (domain_name)")
    for table in ("team", "workunit", "result"):
        db.execute("alter table %s modify mod_time timestamp null default current_timestamp "
                   "on update current_timestamp" % table)
    assert rv.check_schema(db) == []
    # but an index on other columns, or a column allowing NULL that is no
    # timestamp, still does
    db.execute("alter table host drop index host_domain_name, "
               "add index host_domain_name (domain_name(191), venue)")
    db.execute("alter table team modify create_time integer null default 0")
    assert sorted(rv.check_schema(db)) == [
        "host: index host_domain_name is KEY (domain_name(191), venue), "
        "expected KEY (domain_name(191))",
        "team.create_time: NULL, expected NOT NULL"]
    db.execute("drop view latest_consent")
    assert "latest_consent: view is missing" in rv.check_schema(db)


def test_an_older_boincpy_database_gets_boincs_tables_indexes_and_view(schema_db, tmp_path):
    """What boincpy's schema.sql lacked until it followed BOINC's (the donation
    tables, the latest_consent view, four indexes, batch.id as 'serial'):
    apply_updates adds it to a database boincpy made before."""
    db = schema_db()
    db.execute("insert into batch (user_id, name) values (1, 'b1')")
    db.execute("drop view latest_consent")
    for table in rv.BOINC_TABLES_ADDED:
        db.execute("drop table %s" % table)
    for table, indexes in rv.BOINC_INDEXES_ADDED:
        db.execute("alter table %s %s" % (table, ", ".join("drop index %s" % i
                                                             for i in indexes)))
    db.execute("alter table batch modify id integer not null auto_increment")
    before = rv.check_schema(db)
    assert "latest_consent: view is missing" in before
    assert "batch.id: type int(11), expected bigint(20) unsigned" in before
    assert len(before) == 1 + len(rv.BOINC_TABLES_ADDED) + len(rv.BOINC_INDEXES_ADDED) + 1
    rv.write_revision(str(tmp_path), rv.LATEST)
    assert any("batch" in ln for ln in rv.describe_pending(db, str(tmp_path)))
    lines = []
    assert rv.apply_updates(db, str(tmp_path), log=lines.append) == []
    assert rv.check_schema(db) == []
    assert sum(ln.startswith("adding BOINC's: ") for ln in lines) >= 4
    assert db.query_value("select name from batch where id = 1") == "b1"
    # the view answers as BOINC's: each user's latest consent of each type
    db.execute("insert into consent_type (shortname) values ('ENROLL')")
    for t, flag in ((100, 1), (200, 0)):
        db.execute("insert into consent (userid, consent_type_id, consent_time, consent_flag) "
                   "values (7, 1, %s, %s)", (t, flag))
    assert db.query("select userid, consent_type_id, consent_flag from latest_consent") == [
        {"userid": 7, "consent_type_id": 1, "consent_flag": 0}]


def test_recognise_refuses_what_it_cannot_take(db_root_params, scratch_db_name, tmp_path):
    root = MySQLdb.connect(**db_root_params)
    root.cursor().execute("CREATE DATABASE `%s`" % scratch_db_name)
    root.close()
    db = Database(MySQLdb.connect(db=scratch_db_name, autocommit=True, **db_root_params),
                  dict(db_root_params, db=scratch_db_name))
    try:
        db.execute("create table customers (id integer)")
        with pytest.raises(rv.RevisionError) as err:
            rv.recognise(db, str(tmp_path))
        assert "not a BOINC project's database" in str(err.value)
        assert scratch_db_name in str(err.value)
        with pytest.raises(rv.RevisionError):
            rv.apply_updates(db, str(tmp_path), log=lambda s: None)
        assert not os.path.exists(rv.revision_path(str(tmp_path)))
        db.execute("create table platform (id integer)")
        db.execute("create table app (id integer)")
        with pytest.raises(rv.RevisionError) as err:
            rv.recognise(db, str(tmp_path))
        assert "lacks BOINC tables (app_version, user, team, host, workunit, result)" \
            in str(err.value)
    finally:
        db.close()


def test_recognise_refuses_revisions_out_of_range(schema_db, tmp_path):
    db = schema_db()
    d = str(tmp_path)
    for text, words in (("18000\n", "older than 18489"), ("27099", "newer than 27032"),
                        ("", "expected a revision number"),
                        ("27a", "expected a revision number")):
        (tmp_path / "db_revision").write_text(text)
        with pytest.raises(BoincpyError) as err:
            rv.recognise(db, d)
        assert words in str(err.value) and "db_revision" in str(err.value)
    # BOINC's two spellings: make_project's with a newline, upgrade_db.php's without
    for text in ("27025\n", "27025"):
        (tmp_path / "db_revision").write_text(text)
        rec = rv.recognise(db, d)
        assert (rec.revision, rec.inferred) == (27025, False)
    # older than OLDEST, as read from the schema
    os.unlink(tmp_path / "db_revision")
    take_back(db, rv.OLDEST, charset=False)
    db.execute("alter table team drop column joinable")     # update_10_7_2008's
    with pytest.raises(rv.RevisionError) as err:
        rv.recognise(db, d)
    assert "lacks app.target_nresults and team.joinable: its schema is older than " \
        "BOINC's of 2009 (revision 18489)" in str(err.value)


def test_updates_recorded_but_not_applied_are_completed(schema_db, tmp_path):
    """BOINC's upgrade_db.php recorded a revision whose update had failed
    (#2481): db_revision says LATEST, the database lacks 27025's columns."""
    db = schema_db()
    for stmt in UNDO[27025] + UNDO[27012]:
        db.execute(stmt)
    rv.write_revision(str(tmp_path), rv.LATEST)
    rec = rv.recognise(db, str(tmp_path))
    assert [u.revision for u in rec.missing] == [27012, 27025]
    assert "lacks part of update_10_8_2014, update_4_19_2018" in rec.note
    assert "update update_4_19_2018 (revision 27025)" in rv.describe_pending(db, str(tmp_path))
    lines = []
    assert rv.apply_updates(db, str(tmp_path), log=lines.append) == []
    assert "completing update update_4_19_2018 (revision 27025), which db_revision counts " \
        "as done" in lines
    assert rv.check_schema(db) == [] and rv.read_revision(str(tmp_path)) == rv.LATEST
    assert rv.recognise(db, str(tmp_path)).missing == []


def test_revision_file_round_trip(tmp_path):
    d = str(tmp_path)
    assert rv.read_revision(d) is None
    rv.write_revision(d, 27031)
    assert (tmp_path / "db_revision").read_text() == "27031\n"
    assert rv.read_revision(d) == 27031


def test_boincpy_tables_added_to_a_boinc_database(schema_db, tmp_path):
    db = schema_db()
    for t in rv.BOINCPY_TABLES:
        db.execute("drop table `%s`" % t)
    db.execute("alter table thread drop index thread_forum")
    rv.write_revision(str(tmp_path), rv.LATEST)
    lines = []
    assert rv.apply_updates(db, str(tmp_path), log=lines.append) == []
    assert rv.check_schema(db) == []
    assert sum("adding boincpy's own" in ln for ln in lines) == len(rv.BOINCPY_TABLES) + 1


def test_made_project_is_at_latest(made_project):
    """make_project records LATEST; the project's own account (no rights
    beyond its database) can check its schema."""
    from boincpy.db import connect
    from boincpy.web.server_status import db_revision
    assert rv.read_revision(made_project.root) == rv.LATEST
    # server_status.php's "Database schema version"
    assert db_revision(made_project.cfg) == str(rv.LATEST)
    db = connect(made_project.cfg)
    try:
        assert rv.recognise(db, made_project.root).revision == rv.LATEST
        assert rv.check_schema(db) == []
        assert rv.apply_updates(db, made_project.root, log=lambda s: None) == []
    finally:
        db.close()
