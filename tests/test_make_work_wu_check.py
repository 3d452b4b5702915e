"""make_work and wu_check against a real database and download hierarchy."""

import io
import os
import re
import subprocess
import time

import pytest

from backend_util import (bin_cmd, bin_env, make_result, make_upload_keys, make_wu,
                          project_db, results_of, run_daemon_once, wait_for, wu_row)
from boincpy.daemons.make_work import MakeWork, rename_input_files
from boincpy.daemons.transitioner import Transitioner
from boincpy.files import dir_hier_path
from boincpy.tools import wu_check


def create_job(project, name, infile, *options):
    """Stage ``infile`` (if not yet) and create one job with bin/create_work."""
    src = project / infile
    if not src.exists():
        src.write_text("data of %s\n" % infile)
        subprocess.run(bin_cmd("stage_file", "--copy", str(src)), cwd=project, check=True,
                       env=bin_env(project), capture_output=True)
    subprocess.run(bin_cmd("create_work", "--appname", "example_app", "--wu_name", name)
                   + list(options) + [infile], cwd=project, check=True, env=bin_env(project),
                   capture_output=True)


@pytest.fixture
def proj(mini_project):
    make_upload_keys(mini_project)
    cfg, db = project_db(mini_project)
    yield mini_project, cfg, db
    db.close()


def transition_all(project, db):
    """A transitioner pass over every workunit (the transitioner takes only
    transition_time < now, so jobs made this second would wait)."""
    db.execute("UPDATE workunit SET transition_time = 0 WHERE transition_time < 2147483647")
    status, log = run_daemon_once(Transitioner, project)
    assert status == 0, log


def wu_named(db, name):
    return db.query_one("SELECT * FROM workunit WHERE name = %s", (name,))


def make_work(project, *args):
    status, log = run_daemon_once(MakeWork, project, *args)
    return status, log


# -- make_work ------------------------------------------------------------------------

def test_make_work_clones_until_the_cushion_is_filled(proj):
    project, cfg, db = proj
    create_job(project, "tmpl_nodelete", "in_a.txt", "--credit", "12.5")
    db.execute("UPDATE workunit SET canonical_credit = 12.5, error_mask = 2, "
               "assimilate_state = 2, need_validate = 1, hr_class = 4, file_delete_state = 1")
    template = wu_named(db, "tmpl_nodelete")
    before = int(time.time())
    status, log = make_work(project, "--wu_name", "tmpl_nodelete", "--cushion", "3", "-d", "4")
    assert status == 0, log
    clones = db.query("SELECT * FROM workunit WHERE name <> 'tmpl_nodelete' ORDER BY id")
    assert len(clones) == 3
    start = int(re.match(r"wu_(\d+)_0$", clones[0]["name"]).group(1))
    assert [c["name"] for c in clones] == ["wu_%d_%d" % (start, k) for k in range(3)]
    for k, c in enumerate(clones):
        xml = c["xml_doc"]
        new_name = "in_a.txt__%d_%d" % (start, k)
        assert "<name>%s</name>" % new_name in xml
        assert "<file_name>%s</file_name>" % new_name in xml
        assert xml.count(new_name) == 2
        # same URL: clients download the template's file under the new name
        assert re.search(r"<url>http://127.0.0.1/test/download/[0-9a-f]+/in_a.txt</url>", xml)
        assert xml.replace(new_name, "in_a.txt") == template["xml_doc"]
        assert (c["need_validate"], c["canonical_resultid"], c["canonical_credit"],
                c["hr_class"], c["error_mask"], c["file_delete_state"],
                c["assimilate_state"]) == (0, 0, 0, 0, 0, 0, 0)
        assert before <= c["transition_time"] <= time.time()
        for col in ("appid", "rsc_fpops_est", "delay_bound", "target_nresults",
                    "result_template_file", "min_quorum"):
            assert c[col] == template[col]
    assert "Created %s, clone of tmpl_nodelete" % clones[0]["name"] in log
    assert "Starting: cushion 3, max_wus 0" in log


def test_make_work_credit_from_wu(proj):
    project, cfg, db = proj
    create_job(project, "tmpl_c", "in_c.txt", "--credit", "7")
    make_work(project, "--wu_name", "tmpl_c", "--cushion", "0", "--credit_from_wu")
    clone = db.query_one("SELECT * FROM workunit WHERE name LIKE 'wu\\_%%'")
    assert clone["canonical_credit"] == 7


def test_make_work_respects_unsent_results(proj):
    project, cfg, db = proj
    create_job(project, "tmpl_u", "in_u.txt")
    for k in range(3):
        make_result(db, wu_named(db, "tmpl_u")["id"], "tmpl_u_%d" % k)
    make_work(project, "--wu_name", "tmpl_u", "--cushion", "2")
    assert db.query_value("SELECT COUNT(*) FROM workunit") == 1       # 3 unsent > 2
    make_work(project, "--wu_name", "tmpl_u", "--cushion", "3")
    assert db.query_value("SELECT COUNT(*) FROM workunit") == 2       # at the cushion: one more


def test_make_work_round_robin_and_target_nresults(proj):
    project, cfg, db = proj
    create_job(project, "tmpl_two", "in_t.txt", "--target_nresults", "2", "--min_quorum", "2")
    create_job(project, "tmpl_one", "in_t.txt")
    make_work(project, "--wu_name", "tmpl_two", "--wu_name", "tmpl_one", "--cushion", "5")
    clones = db.query("SELECT target_nresults FROM workunit WHERE name LIKE 'wu\\_%%' "
                      "ORDER BY id")
    # 2 + 1 + 2 results cover the cushion of 5
    assert [c["target_nresults"] for c in clones] == [2, 1, 2]


def test_make_work_stops_at_max_wus(proj):
    project, cfg, db = proj
    create_job(project, "tmpl_m", "in_m.txt")
    status, log = make_work(project, "--wu_name", "tmpl_m", "--cushion", "10", "--max_wus", "3")
    assert status == 0 and "Reached max_wus = 3" in log
    assert db.query_value("SELECT COUNT(*) FROM workunit") == 3


def test_make_work_unknown_template(proj):
    project, cfg, db = proj
    status, log = make_work(project, "--wu_name", "nonesuch")
    assert status == 1 and "can't find wu nonesuch" in log


def test_make_work_daemon_waits_for_the_transitioner(proj):
    project, cfg, db = proj
    create_job(project, "tmpl_d", "in_d.txt")
    proc = subprocess.Popen(bin_cmd("make_work", "--wu_name", "tmpl_d", "--cushion", "1",
                                    "--sleep_interval", "1", "-d", "4"),
                            cwd=project, env=bin_env(project), stderr=subprocess.PIPE,
                            text=True)
    try:
        wait_for(lambda: db.query_value("SELECT COUNT(*) FROM workunit") == 2)
        time.sleep(2.5)          # waiting for results: no more clones meanwhile
        assert db.query_value("SELECT COUNT(*) FROM workunit") == 2
        status, log = run_daemon_once(Transitioner, project)
        assert status == 0
        # results exist now (2 unsent > cushion 1): still no more work needed
        time.sleep(2.5)
        assert db.query_value("SELECT COUNT(*) FROM workunit") == 2
        (project / "stop_daemons").write_text("<stop/>\n")
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Exiting" in proc.stderr.read()


def test_rename_input_files_renames_every_file():
    xml = ("<file_info>\n    <name>a</name>\n    <url>http://x/a</url>\n</file_info>\n"
           "<file_info>\n    <name>b</name>\n    <url>http://x/b</url>\n</file_info>\n"
           "<workunit>\n<file_ref>\n    <file_name>a</file_name>\n    <open_name>in</open_name>"
           "\n</file_ref>\n<file_ref>\n    <file_name>b</file_name>\n</file_ref>\n</workunit>")
    out = rename_input_files(xml, lambda old: old + "__9")
    assert out.count("<name>a__9</name>") == 1 and out.count("<file_name>a__9</file_name>") == 1
    assert out.count("<name>b__9</name>") == 1 and out.count("<file_name>b__9</file_name>") == 1
    assert "<url>http://x/a</url>" in out and "<open_name>in</open_name>" in out


# -- wu_check -------------------------------------------------------------------------

def run_wu_check(project, *args):
    out = io.StringIO()
    status = wu_check.main(["--project_dir", str(project)] + list(args), out=out)
    return status, out.getvalue()


def test_wu_check_reports_missing_input_files_and_repairs(proj):
    project, cfg, db = proj
    create_job(project, "job_ok", "in_ok.txt")
    create_job(project, "job_gone", "in_gone.txt")
    transition_all(project, db)
    ok_rid = results_of(db, wu_named(db, "job_ok")["id"])[0]["id"]
    gone = wu_named(db, "job_gone")
    gone_rid = results_of(db, gone["id"])[0]["id"]
    status, out = run_wu_check(project)
    assert status == 0
    assert out.splitlines()[:2] == ["Unsent results:", "0 out of 2 errors"]
    path = dir_hier_path(cfg.download_dir, "in_gone.txt", cfg.uldl_dir_fanout)
    os.unlink(path)
    status, out = run_wu_check(project)
    assert "no file %s for result %d" % (path, gone_rid) in out
    assert "1 out of 2 errors" in out
    assert results_of(db, gone["id"])[0]["server_state"] == 2        # no repair asked
    status, out = run_wu_check(project, "--repair")
    r = results_of(db, gone["id"])[0]
    assert (r["server_state"], r["outcome"]) == (5, 2)
    assert results_of(db, wu_named(db, "job_ok")["id"])[0]["server_state"] == 2
    assert wu_row(db, gone["id"])["transition_time"] <= time.time()
    # the transitioner (from the next second on) errors the workunit
    time.sleep(1.1)
    run_daemon_once(Transitioner, project)
    wu = wu_row(db, gone["id"])
    assert wu["error_mask"] & 1 and wu["assimilate_state"] == 1
    status, out = run_wu_check(project)
    assert out.splitlines()[:2] == ["Unsent results:", "0 out of 1 errors"]
    assert ok_rid


def test_wu_check_in_progress_missing_wu_and_canonical(proj):
    project, cfg, db = proj
    create_job(project, "job_ip", "in_ip.txt")
    wuid = wu_named(db, "job_ip")["id"]
    rid = make_result(db, wuid, "job_ip_0", server_state=4, report_deadline=2 ** 31 - 1)
    os.unlink(dir_hier_path(cfg.download_dir, "in_ip.txt", cfg.uldl_dir_fanout))
    orphan = make_result(db, 9999, "ghost_0", server_state=2)
    old_orphan = make_result(db, 8888, "old_ghost_0", server_state=5, outcome=1)
    w2 = make_wu(db, "no_canon", canonical_resultid=7777)
    w3 = make_wu(db, "wrong_canon", canonical_resultid=rid)
    status, out = run_wu_check(project, "--repair")
    lines = out.splitlines()
    assert "ERROR: can't find WU 9999 for result %d" % orphan in lines
    assert lines[lines.index("In progress results:") + 1].startswith("no file ")
    assert lines[lines.index("In progress results:") + 2] == "1 out of 1 errors"
    assert "WU %d no_canon: canonical result 7777 doesn't exist" % w2 in lines
    assert "WU %d wrong_canon: canonical result %d belongs to WU %d" % (w3, rid, wuid) in lines
    assert "ERROR: can't find WU 8888 for result %d" % old_orphan in lines
    assert results_of(db, wuid)[0]["server_state"] == 4       # in progress: never repaired


def test_wu_check_follows_urls_of_clones_and_skips_remote_files(proj):
    project, cfg, db = proj
    create_job(project, "tmpl_w_nodelete", "in_w.txt")
    make_work(project, "--wu_name", "tmpl_w_nodelete", "--cushion", "0")
    remote_xml = ("<file_info>\n    <name>jf_abc</name>\n    <url>http://elsewhere/jf_abc</url>"
                  "\n</file_info>\n<workunit>\n</workunit>")
    make_wu(db, "remote_job", xml_doc=remote_xml)
    transition_all(project, db)
    status, out = run_wu_check(project)
    assert out.splitlines()[:2] == ["Unsent results:", "0 out of 3 errors"]
