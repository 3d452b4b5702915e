"""db_purge against MariaDB: archive files in BOINC's format, rows deleted only once archived."""

import glob
import gzip
import os
import re
import signal
import subprocess
import sys
import zipfile

import pytest

from backend_rows import add_result, add_workunit, app_id, db_of, row, run_pass
from boincpy.daemons.db_purge import DbPurge
from boincpy.xml import xml_escape


@pytest.fixture
def proj(mini_project):
    db = db_of(mini_project)
    yield dict(db=db, root=mini_project, appid=app_id(db))
    db.close()


def purgeable(ctx, name, n_results=2, state=2, stderr="line <1> & more\n"):
    db = ctx["db"]
    wu = add_workunit(db, name, ctx["appid"], need_validate=0, assimilate_state=2,
                      file_delete_state=state, opaque=1.5)
    rids = [add_result(db, ctx["root"], wu, "%s_%d" % (name, k), validate_state=1,
                       file_delete_state=state, stderr_out=stderr, granted_credit=0.25)[0]
            for k in range(n_results)]
    return wu, rids


def archives(root, pattern):
    return sorted(glob.glob(os.path.join(str(root), "archives", pattern)))


def test_archive_content_and_rows_deleted(proj):
    db, root = proj["db"], proj["root"]
    wu, rids = purgeable(proj, "wu_p1")
    keep, keep_r = purgeable(proj, "wu_p2", state=1)          # files not deleted yet
    tmpl, _ = purgeable(proj, "wu_nodelete_tmpl")             # never purged
    run_pass(DbPurge, root, "--one_pass")
    assert row(db, "workunit", wu) is None
    assert all(row(db, "result", r) is None for r in rids)
    assert row(db, "workunit", keep) is not None and row(db, "result", keep_r[0]) is not None
    assert row(db, "workunit", tmpl) is not None
    [wa] = archives(root, "wu_archive_*.xml")
    [ra] = archives(root, "result_archive_*.xml")
    [wi] = archives(root, "wu_index_*.xml")
    [ri] = archives(root, "result_index_*.xml")
    t = re.search(r"wu_archive_(\d+)\.xml$", wa).group(1)
    w_text = open(wa, "rb").read().decode()
    assert w_text.startswith("<archive>\n<workunit_archive>\n  <id>%d</id>\n" % wu)
    assert w_text.endswith("</workunit_archive>\n</archive>\n")
    assert "  <name>wu_p1</name>\n" in w_text
    assert "  <rsc_fpops_est>3.600000000000000e+12</rsc_fpops_est>\n" in w_text
    assert "  <opaque>1.500000</opaque>\n" in w_text
    assert "  <file_delete_state>2</file_delete_state>\n" in w_text
    assert re.search(r"  <mod_time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d</mod_time>\n", w_text)
    r_text = open(ra, "rb").read().decode()
    assert r_text.count("<result_archive>") == 2
    assert "  <stderr_out>line &lt;1> &amp; more&#10;</stderr_out>\n" in r_text
    assert "  <granted_credit>2.500000000000000e-01</granted_credit>\n" in r_text
    assert "<file_ref>" in r_text                     # xml_doc_in kept as is
    assert open(wi).read() == "%d     %s    wu_p1\n" % (wu, t)
    assert open(ri).read() == "".join("%d     %s    wu_p1_%d\n" % (r, t, k)
                                      for k, r in enumerate(rids))


def test_xml_escape_like_boinc():
    assert xml_escape(b"a<b&c]]>d\x01\te\xc3\xa9") == \
        b"a&lt;b&amp;c]]&gt;d&#9;e&#195;&#169;"


def test_gzip_archives(proj):
    db, root = proj["db"], proj["root"]
    wu, rids = purgeable(proj, "wu_gz")
    run_pass(DbPurge, root, "--one_pass", "--gzip")
    [wa] = archives(root, "wu_archive_*.xml.gz")
    [ri] = archives(root, "result_index_*.xml.gz")
    text = gzip.decompress(open(wa, "rb").read()).decode()
    assert "<id>%d</id>" % wu in text and text.endswith("</archive>\n")
    assert gzip.decompress(open(ri, "rb").read()).decode().count("\n") == 2
    assert row(db, "workunit", wu) is None


def test_zip_archives(proj):
    wu, _ = purgeable(proj, "wu_zip")
    run_pass(DbPurge, proj["root"], "--one_pass", "--zip")
    [wa] = archives(proj["root"], "wu_archive_*.xml.zip")
    with zipfile.ZipFile(wa) as z:
        assert z.namelist() == ["-"]
        assert b"<name>wu_zip</name>" in z.read("-")
    assert archives(proj["root"], "*.xml") == []       # plain files removed once zipped


def test_max_min_age_and_files_per_archive(proj):
    db, root = proj["db"], proj["root"]
    wus = [purgeable(proj, "wu_m%d" % i, n_results=1)[0] for i in range(3)]
    run_pass(DbPurge, root, "--one_pass", "--min_age_days", "1")
    assert all(row(db, "workunit", w) is not None for w in wus)      # all too recent
    run_pass(DbPurge, root, "--one_pass", "--max", "2", "--max_wu_per_file", "1")
    assert [row(db, "workunit", w) is None for w in wus] == [True, True, False]
    assert len(archives(root, "wu_archive_*.xml")) == 2
    for path in archives(root, "wu_archive_*.xml"):
        assert open(path).read().count("<workunit_archive>") == 1


def test_dont_delete_and_no_archive(proj):
    db, root = proj["db"], proj["root"]
    wu, _ = purgeable(proj, "wu_dd")
    run_pass(DbPurge, root, "--one_pass", "--dont_delete")
    assert row(db, "workunit", wu) is not None
    assert len(archives(root, "wu_archive_*.xml")) == 1
    for f in archives(root, "*"):
        os.unlink(f)
    run_pass(DbPurge, root, "--one_pass", "--no_archive")
    assert row(db, "workunit", wu) is None
    assert archives(root, "*") == []


def test_mod_requires_no_archive(proj):
    from boincpy.daemons.base import run_daemon
    assert run_daemon(DbPurge, ["--one_pass", "--mod", "2", "0",
                                "--project_dir", str(proj["root"])]) == 1


KILL_SCRIPT = """
import os, signal, sys
from boincpy.daemons import db_purge
from boincpy.daemons.base import run_daemon
original = db_purge.DbPurge._archive
def archive_then_die(self, wus, results):
    original(self, wus, results)        # written and synced, nothing deleted
    os.kill(os.getpid(), signal.SIGKILL)
db_purge.DbPurge._archive = archive_then_die
sys.exit(run_daemon(db_purge.DbPurge, sys.argv[1:]))
"""


@pytest.mark.parametrize("compression", ["", "--gzip"])
def test_kill_after_archiving_loses_nothing(proj, compression):
    db, root = proj["db"], proj["root"]
    wu, rids = purgeable(proj, "wu_k")
    argv = [sys.executable, "-c", KILL_SCRIPT, "--one_pass", "--project_dir", str(root)]
    if compression:
        argv.append(compression)
    proc = subprocess.run(argv, capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    assert row(db, "workunit", wu) is not None          # still in the database
    [wa] = archives(root, "wu_archive_*")
    data = open(wa, "rb").read()
    if compression:
        # the sync flush makes the records readable though the stream is unfinished
        data = gzip.GzipFile(fileobj=__import__("io").BytesIO(data)).read1(1 << 20)
    assert b"<id>%d</id>" % wu in data                   # ... and already archived
    run_pass(DbPurge, root, "--one_pass", *([compression] if compression else []))
    assert row(db, "workunit", wu) is None
    assert all(row(db, "result", r) is None for r in rids)


def test_batch_only_retired_and_daily_dir(proj):
    db, root = proj["db"], proj["root"]
    live = db.insert("INSERT INTO batch (create_time, name, description, state)"
                     " VALUES (0, 'live', '', 1)")
    done = db.insert("INSERT INTO batch (create_time, name, description, state)"
                     " VALUES (0, 'old', '', 4)")
    w_none, _ = purgeable(proj, "wu_b0", n_results=1)
    w_live, _ = purgeable(proj, "wu_b1", n_results=1)
    w_done, _ = purgeable(proj, "wu_b2", n_results=1)
    db.execute("UPDATE workunit SET batch = %s WHERE id = %s", (live, w_live))
    db.execute("UPDATE workunit SET batch = %s WHERE id = %s", (done, w_done))
    run_pass(DbPurge, root, "--one_pass", "--batch", "--daily_dir")
    assert row(db, "workunit", w_none) is None and row(db, "workunit", w_done) is None
    assert row(db, "workunit", w_live) is not None
    [wa] = archives(root, "*/wu_archive_*.xml")
    assert re.search(r"/archives/\d{4}_\d\d_\d\d/wu_archive_\d+\.xml$", wa)
