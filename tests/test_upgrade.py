"""bin/upgrade: a project made by BOINC's C++ make_project (or an older
boincpy) taken over in place.

CI has no C++ tree, so the C++ project is made here: a boincpy project
reshaped as BOINC's make_project leaves one -- the captured reference
project's config.xml (tests/fixtures/reference-server/project), compiled
programs in bin/ and cgi-bin/ (ELF files), BOINC's bin/start with stop and
status linked to it, PHP pages in html/user and html/ops (some boincpy
serves, some it doesn't), BOINC's html/inc and html/project, a database
taken back to an older revision with db_revision saying so, and rows of
users, hosts, workunits and results in several states.
"""

import hashlib
import os
import shutil
import subprocess
import sys

import MySQLdb
import MySQLdb.cursors
import pytest

from boincpy.db import revision as rv
from boincpy.tools.upgrade import apache_runs_php
from submit_util import http
from tests.sched_env import SchedEnv
from tests.shared_fixtures import fixture_text

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_AUTH = "80b1ceedb8ec2b4333cf9040fb85d01a"     # the captured request's account
OLD_REVISION = 27030
# PHP pages of BOINC's site that boincpy does not serve (checked below)
CXX_ONLY_USER = ("language_select.php", "old_news_archive.php")
CXX_ONLY_OPS = ("manage_special_users_old.php",)
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4
STOP_LOG = "stop_calls"
HOST = os.uname().nodename.split(".")[0]
TABLES = ("user", "team", "host", "workunit", "result", "app", "app_version", "platform")


def _boinc_start_script():
    # BOINC's bin/start answers to start, stop and status (links): here it
    # only records that it was called, and as what
    return ("#!/bin/sh\n# BOINC's start/stop/status (stand-in)\n"
            "echo \"$(basename \"$0\")\" >> \"$(dirname \"$0\")/../%s\"\n" % STOP_LOG)


def _cxx_config(p):
    """The reference project's config.xml, with this test's paths, URLs and
    database, one option of the project's own and one daemon of its own."""
    from boincpy.config import load_config
    made = load_config(p.root)
    text = fixture_text("reference-server", "project", "config.xml").decode()
    text = text.replace("/srv1/ref/projects/refproj", p.root)
    # the captured project's host was "vm": this machine is the project's host
    text = text.replace("<host>vm</host>", "<host>%s</host>" % HOST)
    text = text.replace("/log_vm<", "/log_%s<" % HOST)
    text = text.replace("http://127.0.0.1:8800/refproj", p.url_base + p.short_name)
    text = text.replace("<db_user>boincadm</db_user>", "<db_user>%s</db_user>" % p.db_user)
    text = text.replace("<db_name>refproj</db_name>", "<db_name>%s</db_name>" % p.db_name)
    text = text.replace("<db_passwd>boincpw</db_passwd>",
                        "<db_passwd>%s</db_passwd>" % p.db_passwd)
    # this project's own job array key (the captured one may be in use)
    text = text.replace("<shmem_key>0x11115882</shmem_key>",
                        "<shmem_key>0x%x</shmem_key>" % made.shmem_key)
    extra = "        <project_own_flag>keep me</project_own_flag>\n"
    if made.raw.get("db_socket"):
        extra += "        <db_socket>%s</db_socket>\n" % made.raw["db_socket"]
    text = text.replace("    </config>", extra + "    </config>")
    text = text.replace("    </daemons>", "        <daemon>\n            <cmd>my_validator -d 3"
                        "</cmd>\n        </daemon>\n    </daemons>")
    assert p.root in text and p.db_name in text
    return text


def _write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(path, mode)


def _root_db(p):
    from boincpy.db import Database
    conn = MySQLdb.connect(db=p.db_name, autocommit=True, charset="utf8mb4",
                           **p.db_root_params)
    return Database(conn)


def _rows(p, table):
    conn = MySQLdb.connect(db=p.db_name, charset="utf8mb4", **p.db_root_params)
    try:
        cur = conn.cursor(MySQLdb.cursors.DictCursor)
        cur.execute("SELECT * FROM `%s` ORDER BY id" % table)
        return list(cur.fetchall())
    finally:
        conn.close()


def _insert(db, table, **cols):
    db.execute("INSERT INTO `%s` (%s) VALUES (%s)" % (
        table, ", ".join(cols), ", ".join(["%s"] * len(cols))), list(cols.values()))
    return db.query_value("SELECT LAST_INSERT_ID()")


def _add_rows(db):
    """Users, a team, hosts, workunits and results in several states."""
    uid = _insert(db, "user", create_time=1700000000, email_addr="refuser@example.com",
                  name="refuser", authenticator=REFERENCE_AUTH,
                  passwd_hash="$2y$10$abcdefghijklmnopqrstuv", total_credit=456.25,
                  expavg_credit=12.5, cross_project_id="14e8ce95352d1aa18f26083c43e0f61b",
                  global_prefs="", project_prefs="", venue="", country="Germany")
    uid2 = _insert(db, "user", create_time=1700000100, email_addr="second@example.com",
                   name="second", authenticator="0123456789abcdef0123456789abcdef",
                   passwd_hash="5f4dcc3b5aa765d61d8327deb882cf99", total_credit=7.0,
                   cross_project_id="0" * 32, global_prefs="", project_prefs="", venue="")
    tid = _insert(db, "team", create_time=1700000200, userid=uid2, name="Old team",
                  name_lc="old team", url="", type=1, name_html="", description="a team",
                  nusers=1, country="", total_credit=7.0, expavg_credit=0, seti_id=0)
    db.execute("UPDATE user SET teamid = %s WHERE id = %s", (tid, uid2))
    hid = _insert(db, "host", create_time=1700000000, userid=uid, rpc_seqno=3,
                  rpc_time=1700000500, total_credit=123.5, expavg_credit=3.25, p_ncpus=2,
                  p_vendor="AuthenticAMD", p_model="AMD EPYC", os_name="Linux Debian",
                  domain_name="vm", last_ip_addr="127.0.0.1", m_nbytes=25e9, venue="",
                  misc="")
    assert hid == 1                   # the captured request is host 1's
    hid2 = _insert(db, "host", create_time=1700000100, userid=uid2, rpc_seqno=9,
                   total_credit=7.0, p_ncpus=4, os_name="Linux", domain_name="other",
                   venue="", misc="")
    _insert(db, "platform", create_time=1700000000, name="x86_64-pc-linux-gnu",
            user_friendly_name="Linux on x86-64")
    appid = _insert(db, "app", create_time=1700000000, name="example_app",
                    user_friendly_name="Example Application")
    states = [  # (server_state, outcome, validate_state, hostid, granted_credit)
        (2, 0, 0, 0, 0), (4, 0, 0, hid, 0), (5, 1, 1, hid, 10.5), (5, 3, 0, hid2, 0),
        (5, 1, 2, hid2, 0)]
    for n, (state, outcome, vstate, host, credit) in enumerate(states):
        wuid = _insert(db, "workunit", create_time=1700000000 + n, appid=appid,
                       name="old_wu_%d" % n, xml_doc="<workunit/>", rsc_fpops_est=1e12,
                       rsc_fpops_bound=1e13, rsc_memory_bound=5e8, rsc_disk_bound=1e9,
                       delay_bound=86400, min_quorum=1, target_nresults=1,
                       max_error_results=3, max_total_results=10, max_success_results=6,
                       result_template_file="templates/example_app_out",
                       transition_time=2147483647, canonical_credit=credit)
        _insert(db, "result", create_time=1700000000 + n, workunitid=wuid,
                server_state=state, outcome=outcome, validate_state=vstate,
                name="old_wu_%d_0" % n, xml_doc_in="<result/>", appid=appid, hostid=host,
                userid=uid if host == hid else (uid2 if host else 0),
                granted_credit=credit, random=n)


def _tree(root, skip=("upgrade_backup",)):
    """{relative path: (kind, sha256 or link target, mode)} of everything under root."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir.split(os.sep)[0] in skip:
            continue
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(path)
            if os.path.islink(path):
                found[rel] = ("link", os.readlink(path), 0)
            elif os.path.isdir(path):
                found[rel] = ("dir", "", st.st_mode & 0o7777)
            else:
                with open(path, "rb") as f:
                    found[rel] = ("file", hashlib.sha256(f.read()).hexdigest(),
                                  st.st_mode & 0o7777)
    return found


@pytest.fixture
def cxx_project(made_project):
    """A made project reshaped as BOINC's C++ make_project leaves one (see the
    module docstring)."""
    p = made_project
    root = p.root
    _write(os.path.join(root, "config.xml"), _cxx_config(p), 0o640)
    if os.geteuid() == 0:         # the web server reads it, as BOINC's PHP did
        shutil.chown(os.path.join(root, "config.xml"), group="www-data")
    p.reload()
    for rel in ("cgi-bin/cgi", "cgi-bin/file_upload_handler", "bin/feeder",
                "bin/transitioner", "bin/file_deleter", "bin/my_validator"):
        _write(os.path.join(root, rel), ELF + rel.encode(), 0o755)
    _write(os.path.join(root, "bin", "start"), _boinc_start_script(), 0o755)
    for name in ("stop", "status"):
        os.unlink(os.path.join(root, "bin", name))
        os.symlink("start", os.path.join(root, "bin", name))
    # BOINC's PHP site: its pages over boincpy's, pages boincpy lacks, its
    # include files and the project's own project.inc
    for d, extra in (("html/user", CXX_ONLY_USER), ("html/ops", CXX_ONLY_OPS)):
        ours = [n for n in os.listdir(os.path.join(REPO, d)) if n.endswith(".php")]
        assert not set(extra) & set(ours)
        for name in ours + list(extra):
            _write(os.path.join(root, d, name),
                   "<?php\n// BOINC's %s/%s\nrequire_once('../inc/util.inc');\n?>\n" % (d, name))
    _write(os.path.join(root, "html/inc/util.inc"), "<?php // BOINC's util.inc ?>\n")
    _write(os.path.join(root, "html/inc/boinc_db.inc"), "<?php // BOINC's boinc_db.inc ?>\n")
    _write(os.path.join(root, "html/project/project.inc"),
           "<?php // the project's own project.inc ?>\n")
    os.unlink(os.path.join(root, "html/project/cache_parameters.inc"))
    # what BOINC's make_project writes, not boincpy's
    _write(os.path.join(root, p.short_name + ".httpd.conf"),
           "# BOINC's Apache settings: .php files are PHP's\n")
    # files, logs and keys that must stay
    _write(os.path.join(root, "download", "1a", "input_file_1"), b"input data\n")
    _write(os.path.join(root, "upload", "2b", "old_wu_2_0_r1_0"), b"an output\n")
    _write(os.path.join(root, "log_" + HOST, "feeder.log"), b"2026-11-01 12:00:00 [normal] ...\n")
    db = _root_db(p)
    try:
        _add_rows(db)
        take_back(db, OLD_REVISION)
    finally:
        db.close()
    rv.write_revision(root, OLD_REVISION)
    return p


def take_back(db, revision):
    """The database as BOINC left it at ``revision`` (test_db_revision's undo)."""
    from tests.test_db_revision import take_back as undo
    undo(db, revision)


def upgrade(root, *args, input=None):
    """Run the project-independent bin/upgrade (the source tree's) on root."""
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "upgrade")] + list(args)
                          + [root], input=input, capture_output=True, text=True, timeout=300)
    return proc


def test_dry_run_lists_and_changes_nothing(cxx_project):
    p = cxx_project
    before_tree = _tree(p.root)
    before_rows = {t: _rows(p, t) for t in TABLES}
    db = _root_db(p)
    before_schema = rv.check_schema(db)
    db.close()
    proc = upgrade(p.root, "--dry_run")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "a project made by BOINC C++" in out and "compiled programs: cgi-bin/cgi" in out
    assert "replace cgi-bin/cgi" in out and "replace bin/feeder" in out
    assert "replace html/user/index.php" in out
    assert "replace %s.httpd.conf" % p.short_name in out
    assert "add     html/project/cache_parameters.inc" in out
    assert "html/project/project.inc" not in out          # the project's own stays
    assert "says revision %d" % OLD_REVISION in out
    for u in rv.pending(OLD_REVISION):                     # each with its statements
        assert "update %s (revision %d)\n  ALTER TABLE" % (u.name, u.revision) in out \
            or "update %s (revision %d): nothing to do" % (u.name, u.revision) in out
    assert "boincpy's own tables, indexes and column defaults, and BOINC's this database " \
        "lacks:" in out
    assert "project_own_flag" in out                       # reported unknown option
    assert "my_validator" in out                           # stays the project's own
    for name in CXX_ONLY_USER + CXX_ONLY_OPS:
        assert name in out
    assert "--dry_run: nothing was changed" in out
    assert _tree(p.root) == before_tree
    assert not os.path.exists(os.path.join(p.root, STOP_LOG))
    assert {t: _rows(p, t) for t in TABLES} == before_rows
    db = _root_db(p)
    assert rv.check_schema(db) == before_schema and before_schema
    db.close()


def test_no_answer_changes_nothing(cxx_project):
    p = cxx_project
    before = _tree(p.root)
    proc = upgrade(p.root, input="n\n")
    assert proc.returncode == 1
    assert "Overwrite files in %s" % p.root in proc.stdout
    assert _tree(p.root) == before


def test_take_over_keeps_everything_and_the_scheduler_knows_the_hosts(cxx_project):
    p = cxx_project
    root = p.root
    before_tree = _tree(root)
    before_bytes = {rel: open(os.path.join(root, rel), "rb").read()
                    for rel, (kind, _, _) in before_tree.items() if kind == "file"}
    before_links = {rel: target for rel, (kind, target, _) in before_tree.items()
                    if kind == "link"}
    before_rows = {t: _rows(p, t) for t in TABLES}

    proc = upgrade(root, input="y\n")          # a script answers as it would BOINC's
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "Run `bin/start' to restart the project." in out
    # the project's own bin/stop stopped it, before anything was replaced
    assert open(os.path.join(root, STOP_LOG)).read().split() == ["stop"]

    # every row kept, field by field
    for t in TABLES:
        assert _rows(p, t) == before_rows[t], t
    # the schema is boincpy's, and db_revision says so
    db = _root_db(p)
    assert rv.check_schema(db) == []
    db.close()
    assert rv.read_revision(root) == rv.LATEST

    # backups: every replaced file, byte for byte (links as links)
    backups = os.listdir(os.path.join(root, "upgrade_backup"))
    assert len(backups) == 1
    backup = os.path.join(root, "upgrade_backup", backups[0])
    after = _tree(root)
    # (db_revision is rewritten by the schema's updates, not replaced)
    replaced = [rel for rel, v in before_tree.items()
                if v[0] != "dir" and after.get(rel) != v and rel != "db_revision"]
    assert {"cgi-bin/cgi", "bin/stop", "html/user/index.php",
            p.short_name + ".httpd.conf"} <= set(replaced)
    for rel in replaced:
        saved = os.path.join(backup, rel)
        if rel in before_links:
            assert os.readlink(saved) == before_links[rel]
        else:
            assert open(saved, "rb").read() == before_bytes[rel], rel

    # kept: config.xml, keys, download/upload, logs, the project's own
    # programs and pages, its project.inc
    for rel in ("config.xml", "keys/upload_private", "keys/code_sign_public",
                "download/1a/input_file_1", "upload/2b/old_wu_2_0_r1_0", "log_%s/feeder.log" % HOST,
                "bin/my_validator", "html/inc/util.inc", "html/project/project.inc") + tuple("html/user/" + n for n in CXX_ONLY_USER) \
            + tuple("html/ops/" + n for n in CXX_ONLY_OPS):
        assert after[rel] == before_tree[rel], rel
    assert "project_own_flag" in out
    # boincpy's programs and pages in place: the Apache configuration runs
    # boincpy's pages as CGIs and leaves the PHP ones to PHP
    assert open(os.path.join(root, "cgi-bin", "cgi"), "rb").read().startswith(b"#!")
    assert not os.path.islink(os.path.join(root, "bin", "stop"))
    conf = open(os.path.join(root, p.short_name + ".httpd.conf")).read()
    assert "index\\.php" in conf and "language_select" not in conf
    assert '<FilesMatch "\\.php$">' not in conf
    # this machine's Apache has no PHP: the project's own pages are refused,
    # and the report says so (with PHP they would be left to it)
    kept = "still served by PHP" if apache_runs_php() else "refused (HTTP 403)"
    for name in CXX_ONLY_USER:
        assert name in out.split(kept)[1].split("\n")[0]
    assert os.path.exists(os.path.join(root, "html/project/cache_parameters.inc"))
    assert os.path.isdir(os.path.join(root, "pid_" + HOST))
    # boincpy's bin/status shows the project's daemons, its own validator too
    status = subprocess.run([os.path.join(root, "bin", "status"), "-v"], cwd=root,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    for cmd in ("feeder -d 3", "sample_bitwise_validator -d 3 --app example_app",
                "my_validator -d 3"):
        assert cmd in status.stdout, status.stdout

    # boincpy's scheduler answers host 1 of the old project as host 1,
    # with its credit and its user's
    body = fixture_text("reference-server", "sched", "02_work_fetch_job_sent.request.xml")
    body = body.replace(b"<rpc_seqno>", b"<rpc_seqno>1")      # newer than the row's 3
    env = {"PATH": "/usr/bin:/bin", "BOINC_PROJECT_DIR": root, "REQUEST_METHOD": "POST",
           "CONTENT_LENGTH": str(len(body))}
    # ... and accepts the result it was sent before the switch (old_wu_1_0)
    report = fixture_text("reference-server", "sched", "05_report1_no_work_available.request.xml")
    report = report.replace(b"uc_init_3_0", b"old_wu_1_0").replace(b"<rpc_seqno>", b"<rpc_seqno>2")

    def post(data):
        env["CONTENT_LENGTH"] = str(len(data))
        return subprocess.run([os.path.join(root, "cgi-bin", "cgi")], input=data, env=env,
                              capture_output=True, cwd=os.path.join(root, "cgi-bin"), timeout=60)
    feeder = SchedEnv(root, p.db_root_params)       # boincpy's feeder fills the job array
    try:
        feeder.job_array()
        reply = post(body)
        reported = post(report)
    finally:
        feeder.close_array()
        feeder.conn.close()
    text = reply.stdout.decode(errors="replace")
    assert "<user_total_credit>456.25" in text, text[:2000] + reply.stderr.decode()[-2000:]
    assert "<host_total_credit>123.5" in text
    assert "<hostid>" not in text or "<hostid>1</hostid>" in text
    hosts = _rows(p, "host")
    assert [h["id"] for h in hosts] == [1, 2]           # no new host made
    assert hosts[0]["rpc_seqno"] > 3            # both requests taken as host 1's
    text = reported.stdout.decode(errors="replace")
    assert "<result_ack>\n    <name>old_wu_1_0</name>" in text, \
        text[:3000] + reported.stderr.decode()[-2000:]
    (res,) = [r for r in _rows(p, "result") if r["name"] == "old_wu_1_0"]
    assert (res["server_state"], res["outcome"], res["hostid"]) == (5, 1, 1)


def test_second_run_replaces_nothing_and_a_boincpy_project_gets_boincs_files(made_project):
    """An older boincpy project (no db_revision, no html/project): upgrade adds
    what BOINC's tools/upgrade reads, replaces nothing that is current."""
    p = made_project
    root = p.root
    for rel in ("db_revision", "html/project/project.inc", "html/project/cache_parameters.inc",
                "html/project/project_specific_prefs.inc"):
        if os.path.exists(os.path.join(root, rel)):
            os.unlink(os.path.join(root, rel))
    shutil.rmtree(os.path.join(root, "html/project"))
    _write(os.path.join(root, "bin", "stop"), "#!/bin/sh\necho stop >> ../%s\n" % STOP_LOG,
           0o755)
    proc = upgrade(root, "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a project made by boincpy" in proc.stdout
    assert "inferred revision %d" % rv.LATEST in proc.stdout
    assert rv.read_revision(root) == rv.LATEST
    for rel in ("html/project/project.inc", "html/project/cache_parameters.inc",
                "html/project/project_specific_prefs.inc"):
        assert os.path.isfile(os.path.join(root, rel))
    assert "define(\"PROJECT\", '%s')" % p.long_name in \
        open(os.path.join(root, "html/project/project.inc")).read()
    # only the stand-in bin/stop was not current: it alone is replaced
    backup_root = os.path.join(root, "upgrade_backup")
    (stamp,) = os.listdir(backup_root)
    assert sorted(_tree(os.path.join(backup_root, stamp), skip=())) == ["bin", "bin/stop"]
    # the Apache configuration is make_project's (no PHP pages to keep)
    conf = open(os.path.join(root, p.short_name + ".httpd.conf")).read()
    assert '<FilesMatch "\\.php$">' in conf
    again = upgrade(root, "--dry_run")
    assert "0 files to replace, 0 to add" in again.stdout, again.stdout
    assert "No updates needed" in again.stdout


def test_check_schema_prints_the_differences(cxx_project):
    p = cxx_project
    proc = upgrade(p.root, "--check_schema")
    assert proc.returncode == 1
    assert "differences from boincpy's schema" in proc.stdout
    assert "host" in proc.stdout or "misc" in proc.stdout or proc.stdout.count("\n") > 1
    db = _root_db(p)
    rv.apply_updates(db, p.root, log=lambda s: None)
    db.close()
    proc = upgrade(p.root, "--check_schema")
    assert proc.returncode == 0, proc.stdout
    assert "matches boincpy's schema" in proc.stdout


def test_refusals_change_nothing(tmp_path, made_project):
    proc = upgrade(str(tmp_path))
    assert proc.returncode == 1 and "no config.xml" in proc.stderr
    (tmp_path / "config.xml").write_text("<boinc><config><master_url>http://x/p/</master_url>"
                                         "</config></boinc>")
    proc = upgrade(str(tmp_path))
    assert proc.returncode == 1 and "neither BOINC's compiled programs" in proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["config.xml"]
    # a db_revision newer than boincpy knows: refused before anything changes
    p = made_project
    rv.write_revision(p.root, rv.LATEST + 1)
    before = _tree(p.root)
    proc = upgrade(p.root, "--yes")
    assert proc.returncode == 1 and "newer than" in proc.stderr
    assert _tree(p.root) == before


def test_for_boinc_prepares_what_boincs_upgrade_reads(made_project):
    """The way back: a boincpy project gets what BOINC's tools/upgrade and its
    PHP steps open (html/project/project.inc, db_revision at BOINC's
    revision) and an Apache configuration where every .php is PHP's."""
    p = made_project
    root = p.root
    shutil.rmtree(os.path.join(root, "html/project"))
    if os.path.exists(os.path.join(root, "db_revision")):
        os.unlink(os.path.join(root, "db_revision"))
    conf_path = os.path.join(root, p.short_name + ".httpd.conf")
    old_conf = open(conf_path, "rb").read()
    before = _tree(root)
    dry = upgrade(root, "--for_boinc", "--dry_run")
    assert dry.returncode == 0, dry.stderr
    assert "add     html/project/project.inc" in dry.stdout
    assert "replace %s.httpd.conf" % p.short_name in dry.stdout
    assert _tree(root) == before
    proc = upgrade(root, "--for_boinc", "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tools/upgrade %s" % root in proc.stdout
    assert rv.read_revision(root) == rv.LATEST
    # what html/ops/upgrade_db.php and update_translations.php open
    for rel in ("html/project/project.inc", "html/project/cache_parameters.inc",
                "html/project/project_specific_prefs.inc", "db_revision", "config.xml"):
        assert os.path.isfile(os.path.join(root, rel)), rel
    conf = open(conf_path).read()
    assert "cgi-script" not in conf.split('<Directory "%s/cgi-bin">' % root)[0]
    assert 'ScriptAlias "/%s_cgi" "%s/cgi-bin"' % (p.short_name, root) in conf
    (stamp,) = os.listdir(os.path.join(root, "upgrade_backup"))
    assert open(os.path.join(root, "upgrade_backup", stamp, p.short_name + ".httpd.conf"),
                "rb").read() == old_conf
    # nothing else changed: programs, pages, keys, config.xml
    after = _tree(root)
    changed = {rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)}
    assert {r for r in changed if not r.startswith(("html/project", "upgrade_backup"))} == \
        {p.short_name + ".httpd.conf", "db_revision"}


@pytest.mark.slow
def _get(url):
    """(HTTP status, body) of a GET (submit_util.http: no proxy, no raise)."""
    status, _, body = http(url)
    return status, body


def test_apache_runs_boincpys_pages_and_leaves_the_php_ones_to_php(cxx_project):
    """Under Apache, after the take-over: boincpy's pages run as CGIs, the
    scheduler answers; the project's own PHP pages are not CGIs.  Without
    PHP in the web server (as here) Apache would send them as their source:
    they are refused, a PHP file put there later too.  With --php (the
    operator says PHP runs them) they are left to PHP's handler."""
    from boincpy.tools.httpd import PrivateApache
    if apache_runs_php():
        pytest.skip("this machine's Apache runs PHP: the refusal is not written")
    p = cxx_project
    proc = upgrade(p.root, "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(os.path.join(p.root, "html", "user", "later.php"), "w") as f:
        f.write("<?php $secret = 'x'; ?>\n")
    server = PrivateApache(p.root, p.port, user="www-data" if os.geteuid() == 0 else None)
    server.start()
    try:
        status, body = _get(p.master_url + "get_project_config.php")
        assert status == 200, open(server.error_log).read()[-3000:]
        assert b"<project_config>" in body and b"<name>Reference Project</name>" in body
        for name in CXX_ONLY_USER + ("later.php",):
            status, body = _get(p.master_url + name)
            assert status == 403 and b"<?php" not in body, (name, status)
        # boincpy's own pages still run, the master page and a site page
        assert _get(p.master_url)[0] == 200
        assert _get(p.master_url + "create_account_form.php")[0] == 200
    finally:
        server.stop(graceful=False)
    proc = upgrade(p.root, "--web_only", "--php", "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "still served by PHP" in proc.stdout
    server = PrivateApache(p.root, p.port, user="www-data" if os.geteuid() == 0 else None)
    server.start()
    try:
        # left to PHP's handler (none here, so Apache sends the file): not a CGI
        status, body = _get(p.master_url + CXX_ONLY_USER[0])
        assert status == 200 and body.startswith(b"<?php")
        assert _get(p.master_url + "get_project_config.php")[0] == 200
    finally:
        server.stop(graceful=False)


def test_server_only_and_web_only(cxx_project):
    """--server_only installs the programs, --web_only the pages and the
    Apache configuration (without stopping the project), as BOINC's."""
    p = cxx_project
    root = p.root
    before = _tree(root)
    proc = upgrade(root, "--server_only", "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = _tree(root)
    changed = {r for r in before if before[r] != after.get(r)}
    assert "cgi-bin/cgi" in changed and "bin/feeder" in changed
    assert not {r for r in changed if r.startswith("html/")}
    assert p.short_name + ".httpd.conf" not in changed
    assert open(os.path.join(root, STOP_LOG)).read().split() == ["stop"]
    proc = upgrade(root, "--web_only", "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    final = _tree(root)
    changed = {r for r in after if after[r] != final.get(r)}
    assert "html/user/index.php" in changed and p.short_name + ".httpd.conf" in changed
    assert not {r for r in changed if r.startswith(("bin/", "cgi-bin/"))}
    assert open(os.path.join(root, STOP_LOG)).read().split() == ["stop"]   # not stopped again


def test_report_names_the_php_tasks_run_in_ops_cant_run(tmp_path):
    """BOINC's make_project lists its PHP ops scripts as "run_in_ops
    ./NAME.php" tasks: those boincpy has a program for are not reported, the
    others are named as tasks boincpy's run_in_ops can't run (not as programs
    missing from bin/), a daemon of the project's own stays reported."""
    from boincpy.config import load_config
    from boincpy.tools import upgrade as up
    (tmp_path / "config.xml").write_text(
        "<boinc><config><master_url>http://127.0.0.1/x/</master_url></config>\n"
        "<daemons><daemon><cmd>feeder -d 3</cmd></daemon>\n"
        "<daemon><cmd>my_validator -d 3</cmd></daemon></daemons>\n<tasks>\n"
        "<task><cmd>run_in_ops ./update_uotd.php</cmd><period>1 days</period></task>\n"
        "<task><cmd>run_in_ops ./badge_assign.php</cmd><period>1 days</period></task>\n"
        "<task><cmd>run_in_ops ./team_import.php</cmd><period>1 days</period>"
        "<disabled>1</disabled></task>\n"
        "<task><cmd>run_in_ops ./my_report.php</cmd><period>1 days</period></task>\n"
        "</tasks></boinc>\n")
    project = up.Project(str(tmp_path), load_config(str(tmp_path)), "BOINC C++", [], "x", "")
    lines = []
    up.report_config(project, REPO, lines.append)
    text = "\n".join(lines)
    assert "MISSING from bin/" in text and "my_validator (MISSING" in text
    assert "update_uotd" not in text and "badge_assign" not in text
    (php,) = [ln for ln in lines if ln.startswith("tasks boincpy's run_in_ops can't run")]
    assert php.endswith(": my_report.php, team_import.php (disabled)")
    assert "my_report.php" not in text.replace(php, "")


def test_columns_without_defaults_get_schema_sqls(schema_db, tmp_path):
    """BOINC's schema.sql gives its NOT NULL columns no default (its programs
    name every column); a database it made refuses boincpy's INSERTs that
    leave columns to their defaults (the transitioner's new result: found by
    the take-over of a real C++ project, tests/test_upgrade_cxx.py) until the
    schema's updates set schema.sql's defaults."""
    from boincpy.errors import DatabaseError
    db = schema_db()
    dropped = (("result", "outcome"), ("result", "validate_state"), ("user", "total_credit"),
               ("host", "venue"))
    for table, col in dropped:
        db.execute("ALTER TABLE `%s` ALTER COLUMN `%s` DROP DEFAULT" % (table, col))
    assert {ln for ln in rv.check_schema(db, defaults=True) if "default None" in ln} == \
        {"%s.%s: default None, expected %s" % (t, c, "''" if c == "venue" else 0)
         for t, c in dropped}
    insert = ("INSERT INTO result (create_time, workunitid, server_state, name, xml_doc_in, "
              "xml_doc_out, stderr_out) VALUES (1, 1, 2, 'r_0', '', '', '')")
    with pytest.raises(DatabaseError, match="outcome"):
        db.execute(insert)
    rv.write_revision(str(tmp_path), rv.LATEST)
    lines = []
    rv.apply_updates(db, str(tmp_path), log=lines.append)
    assert not [ln for ln in rv.check_schema(db, defaults=True) if "default" in ln]
    db.execute(insert)
    assert db.query("SELECT outcome, validate_state FROM result WHERE name = 'r_0'") == \
        [{"outcome": 0, "validate_state": 0}]
    assert rv.read_revision(str(tmp_path)) == rv.LATEST
    # nothing left to do the second time
    lines = []
    rv.apply_updates(db, str(tmp_path), log=lines.append)
    assert not [ln for ln in lines if ln.startswith("adding boincpy's own")]
