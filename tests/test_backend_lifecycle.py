"""The bin/ entry points of the back end, run as an operator runs them, over one
job's life: validate, assimilate, delete files, purge."""

import glob
import os
import subprocess
import sys

import pytest

from backend_rows import (add_host, add_result, add_user, add_workunit, app_id, db_of,
                          download_path, row, wu_xml)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = ("sample_trivial_validator", "sample_bitwise_validator", "sample_substr_validator",
           "script_validator", "sample_assimilator", "script_assimilator",
           "sample_dummy_assimilator", "single_job_assimilator", "file_deleter", "db_purge")


def run(script, root, *args):
    return subprocess.run([sys.executable, os.path.join(REPO, "bin", script)] + list(args)
                          + ["--project_dir", str(root)], capture_output=True, text=True)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_and_bad_option(script, tmp_path):
    ok = subprocess.run([sys.executable, os.path.join(REPO, "bin", script), "--help"],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and "--one_pass" in ok.stdout
    bad = subprocess.run([sys.executable, os.path.join(REPO, "bin", script), "--no_such_opt",
                          "--app", "x"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "no_such_opt" in bad.stderr


def test_job_lifecycle_through_the_scripts(mini_project):
    root = mini_project
    db = db_of(root)
    user = add_user(db, "dave")
    host = add_host(db, user)
    inp = download_path(root, "life_in.txt")
    with open(inp, "w") as f:
        f.write("input\n")
    wu = add_workunit(db, "life", app_id(db), min_quorum=2, target_nresults=2,
                      xml_doc=wu_xml(("life_in.txt",)))
    rids, outs = [], []
    for k in range(2):
        rid, paths = add_result(db, root, wu, "life_%d" % k, hostid=host, userid=user,
                                outputs=[b"THE ANSWER\n"])
        rids.append(rid)
        outs += paths
    p = run("sample_bitwise_validator", root, "--app", "example_app", "--one_pass", "-d", "3")
    assert p.returncode == 0, p.stderr
    assert "[normal] [WU#%d life] handle_wu(): No canonical result yet" % wu in p.stderr
    assert row(db, "workunit", wu)["assimilate_state"] == 1
    p = run("sample_assimilator", root, "--app", "example_app", "--one_pass")
    assert p.returncode == 0, p.stderr
    assert open(os.path.join(str(root), "sample_results", "life"), "rb").read() == \
        b"THE ANSWER\n"
    assert row(db, "workunit", wu)["assimilate_state"] == 2
    # what the transitioner does next
    db.execute("UPDATE workunit SET file_delete_state = 1 WHERE id = %s", (wu,))
    db.execute("UPDATE result SET file_delete_state = 1 WHERE workunitid = %s", (wu,))
    p = run("file_deleter", root, "--one_pass")
    assert p.returncode == 0, p.stderr
    assert not os.path.exists(inp) and not any(os.path.exists(o) for o in outs)
    assert row(db, "workunit", wu)["file_delete_state"] == 2
    p = run("db_purge", root, "--one_pass", "--gzip")
    assert p.returncode == 0, p.stderr
    assert row(db, "workunit", wu) is None and all(row(db, "result", r) is None for r in rids)
    assert len(glob.glob(os.path.join(str(root), "archives", "wu_archive_*.xml.gz"))) == 1
    assert row(db, "host", host)["total_credit"] > 0
    db.close()


def test_daemon_stops_on_stop_daemons_file(mini_project):
    """Without --one_pass the daemon sleeps between passes and exits 0 once
    PROJECT/stop_daemons appears."""
    import time
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, "bin", "file_deleter"),
                             "--sleep_interval", "1", "--project_dir", str(mini_project)],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    open(os.path.join(str(mini_project), "stop_daemons"), "w").close()
    assert proc.wait(timeout=20) == 0
    assert "Exiting" in proc.stderr.read()
