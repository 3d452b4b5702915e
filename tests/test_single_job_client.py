"""A single job end to end on the stock client: single_job_setup with
boincpy's wrapper (built to run a program that comes with the job, as BOINC's
single-job setup needs), update_versions, boinc_submit from a directory of
the operator's, Debian's boinc-client 7.20.5 running the program, and the
single_job_assimilator bringing its outputs back into that directory."""

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from boincpy.tools.demo import PLATFORM, Demo, Settings, rewrite_config

from test_end_to_end import _db_settings, _new_root

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which("boinc"), reason="boinc-client is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APP = "single_job_" + PLATFORM

PROGRAM = """#!/bin/sh
# upper-cases its input file into its output file; says what it got
tr a-z A-Z < words.txt > shout.txt
echo "arguments: $*"
"""


def test_a_program_from_the_operators_directory_runs_on_a_volunteer():
    token = secrets.token_hex(4)
    base = _new_root("sj")
    clients_dir = tempfile.mkdtemp(prefix="boincpy-sj-clients-")
    demo = Demo(Settings(project_root=os.path.join(base, "sj" + token), short_name="sj" + token,
                         db_name="sjt_" + token, db_user="sju_" + token, njobs=0,
                         min_quorum=1, volunteers=1, until="reported",
                         daemons=("feeder -d 3", "transitioner -d 3",
                                  "sample_trivial_validator --app " + APP,
                                  "single_job_assimilator -d 3 --app " + APP),
                         daemon_sleep=1, clients_dir=clients_dir, timeout=240,
                         **_db_settings()),
                out=sys.stdout, tty=False)
    failed = True
    try:
        demo.make_project()
        rewrite_config(demo.cfg, options={"min_sendwork_interval": 0})
        demo.start_apache()
        root = demo.root
        samples = os.path.join(base, "samples")
        os.makedirs(os.path.join(samples, "wrapper"))
        subprocess.run(["make", "-s", "-C", os.path.join(REPO, "examples", "wrapper"),
                        "TARGET=" + os.path.join(samples, "wrapper", "wrapper"),
                        "CHECK_EXECUTABLES=no"], check=True)
        said = demo.run_tool([demo.bin("single_job_setup"), samples], cwd=root)
        assert "bin/update_versions" in said
        demo.run_tool([demo.bin("update_versions"), "--noconfirm"], cwd=root)
        demo.configure_daemons()
        demo.start_project()
        demo.make_volunteers()
        demo.start_volunteers()
        (v,) = demo.volunteers
        v.client.wait_for(lambda: v.client.hostid(demo.cfg.master_url), 60, "a host id")

        job_dir = os.path.join(base, "myjob")
        os.makedirs(job_dir)
        with open(os.path.join(job_dir, "shout.sh"), "w") as f:
            f.write(PROGRAM)
        with open(os.path.join(job_dir, "words.txt"), "w") as f:
            f.write("volunteers compute\n")
        said = demo.run_tool([demo.bin("boinc_submit"), "--project_dir", root, "--no_wait",
                              "--infile", "words.txt", "--outfile", "shout.txt",
                              "--stdout", "said.txt", "shout.sh", "one", "two"], cwd=job_dir)
        wuid = int(said.split("Job ")[1].split()[0])
        summary = os.path.join(job_dir, "job_summary_%d" % wuid)
        deadline = time.time() + 240
        while not os.path.exists(summary):
            assert time.time() < deadline, "the job did not come back: %s" % os.listdir(job_dir)
            v.client.project_op(demo.cfg.master_url, "update")
            time.sleep(3)
        assert "Job was completed by host" in open(summary).read()
        assert open(os.path.join(job_dir, "shout.txt")).read() == "VOLUNTEERS COMPUTE\n"
        assert open(os.path.join(job_dir, "said.txt")).read() == "arguments: one two\n"
        waited = demo.run_tool([demo.bin("boinc_submit"), "--project_dir", root,
                                "--wait", str(wuid)], cwd=job_dir)
        assert "job %d completed" % wuid in waited
        failed = False
    finally:
        if failed:
            sys.stderr.write("logs copied to %s\n" % demo.save_evidence())
        demo.failed = failed
        problems = demo.teardown()
        shutil.rmtree(clients_dir, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        assert not problems, problems
