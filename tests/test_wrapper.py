"""Wrapper apps end to end: unmodified programs as BOINC jobs on a stock client.

One project (make_project, a private Apache, feeder and transitioner) gets
three apps laid out as BOINC's wrapper apps are: the wrapper as main program,
a job.xml (logical name job.xml) and the program, described by version.xml
with <is_wrapper/>, logical names and <copy_file/>, installed by xadd and
update_versions:

* upper: a shell program (examples/wrapper/upper, the operator's guide's
  example) reading standard input, writing standard output;
* count_words: a Python program opening its files by name (input and output
  <copy_file/> in the templates, a data file <copy_file/> in the app version);
* slow: a shell program that runs commands for minutes, reporting progress:
  the client's suspend, resume and abort (boinccmd --task) must reach it.

The wrapper is examples/wrapper built with make, or the program named by
BOINCPY_TEST_WRAPPER (BOINC's own wrapper, say): the server side is the same.
Debian's boinc-client 7.20.5 runs the jobs.
"""

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import psutil
import pytest
from lxml import etree

from boincpy import shmem
from boincpy.error_numbers import EXIT_CODES
from boincpy.files import dir_hier_path
from boincpy.states import ClientState, Outcome, ServerState
from boincpy.tools.demo import PLATFORM, Demo, Settings, rewrite_config

from test_end_to_end import CLIENT_LOG_PROBLEMS, _db_settings, _new_root

pytestmark = [
    pytest.mark.skipif(not shutil.which("boinc"), reason="boinc-client is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="Apache's children run as www-data"),
]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "wrapper")
APPS = {                      # app -> directory with version.xml, job.xml, program, templates/
    "upper": os.path.join(REPO, "examples", "wrapper", "upper"),
    "count_words": os.path.join(FIXTURES, "count_words"),
    "slow": os.path.join(FIXTURES, "slow"),
}
VERSION = "1.0"
OWN_WRAPPER = not os.environ.get("BOINCPY_TEST_WRAPPER")


def _wrapper_program(directory):
    """The wrapper to install: $BOINCPY_TEST_WRAPPER, or examples/wrapper built."""
    if not OWN_WRAPPER:
        return os.environ["BOINCPY_TEST_WRAPPER"]
    target = os.path.join(directory, "wrapper")
    subprocess.run(["make", "-s", "-C", os.path.join(REPO, "examples", "wrapper"),
                    "TARGET=" + target], check=True)
    return target


def _install_app(root, app, source, wrapper):
    """apps/APP/VERSION/PLATFORM/ from the app's version.xml: the main program
    is the wrapper, every other file is the source file of its logical name."""
    vdir = os.path.join(root, "apps", app, VERSION, PLATFORM)
    os.makedirs(vdir)
    shutil.copy(os.path.join(source, "version.xml"), vdir)
    for f in etree.parse(os.path.join(source, "version.xml")).getroot().iter("file"):
        physical = f.findtext("physical_name").strip()
        src = wrapper if f.find("main_program") is not None else \
            os.path.join(source, f.findtext("logical_name").strip())
        shutil.copy(src, os.path.join(vdir, physical))     # keeps the x bit
    for name in os.listdir(os.path.join(source, "templates")):
        shutil.copy(os.path.join(source, "templates", name), os.path.join(root, "templates"))


@pytest.fixture(scope="module")
def wrapped(request):
    """A running project with the three wrapper apps and one attached stock client
    (logs and the client's directory kept if a test fails)."""
    failed_before = request.session.testsfailed
    token = secrets.token_hex(4)
    base = _new_root("wrap")
    clients_dir = tempfile.mkdtemp(prefix="boincpy-wrap-clients-")
    demo = Demo(Settings(project_root=os.path.join(base, "bw" + token), short_name="bw" + token,
                         db_name="bwt_" + token, db_user="bwu_" + token, njobs=0,
                         min_quorum=1, volunteers=1, until="reported",
                         daemons=("feeder -d 3", "transitioner -d 3"), daemon_sleep=1,
                         clients_dir=clients_dir, timeout=240, **_db_settings()),
                out=sys.stdout, tty=False)
    failed = True
    try:
        demo.make_project()
        # replies without the 7 s "requested delay" make_project's projects ask
        # for: the client reports as soon as it is done
        rewrite_config(demo.cfg, options={"min_sendwork_interval": 0})
        demo.start_apache()
        root = demo.root
        wrapper = _wrapper_program(base)
        with open(os.path.join(root, "project.xml")) as f:
            text = f.read()
        apps = "".join("    <app>\n        <name>%s</name>\n        <user_friendly_name>%s"
                       "</user_friendly_name>\n    </app>\n" % (a, a) for a in APPS)
        with open(os.path.join(root, "project.xml"), "w") as f:
            f.write(text.replace("</boinc>", apps + "</boinc>"))
        demo.run_tool([demo.bin("xadd")], cwd=root)
        for app, source in APPS.items():
            _install_app(root, app, source, wrapper)
        demo.run_tool([demo.bin("update_versions"), "--noconfirm"], cwd=root)
        demo.configure_daemons()
        demo.start_project()
        demo.make_volunteers()
        for v in demo.volunteers:       # all of a job's small files at once
            v.client.options["max_file_xfers_per_project"] = 8
        demo.start_volunteers()
        (v,) = demo.volunteers      # attached: its first scheduler reply came
        v.client.wait_for(lambda: v.client.hostid(demo.cfg.master_url), 60, "a host id")
        yield demo
        failed = request.session.testsfailed > failed_before
    finally:
        if failed:
            sys.stderr.write("logs copied to %s\n" % demo.save_evidence())
        demo.failed = failed
        problems = demo.teardown()
        if failed:
            sys.stderr.write("client data directory kept in %s\n" % clients_dir)
        else:
            shutil.rmtree(clients_dir, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        assert not problems, problems


def _submit(demo, batch, app, jobs):
    """create_work --stdin: jobs = [(wu_name, input text or None, command line)]."""
    demo.batch = batch
    demo.s.njobs = len(jobs)
    staging = tempfile.mkdtemp(dir=demo.cfg.tmp_dir)
    lines = []
    for name, text, cmdline in jobs:
        line = "--wu_name %s" % name
        if cmdline:
            line += " --command_line '%s'" % cmdline
        if text is not None:
            with open(os.path.join(staging, name + ".txt"), "w") as f:
                f.write(text)
            line += " %s.txt" % name
        lines.append(line)
    if os.listdir(staging):
        demo.run_tool([demo.bin("stage_file"), staging], cwd=demo.root)
    shutil.rmtree(staging)
    demo.run_tool([demo.bin("create_work"), "--appname", app, "--batch", str(batch), "--stdin"],
                  cwd=demo.root, input="\n".join(lines) + "\n")


def _fetch_now(demo, njobs):
    """Once the feeder offers ``njobs`` jobs, have the client ask for them (a
    client told "no work" otherwise waits before asking again)."""
    def offered():
        array = shmem.attach(demo.cfg)
        try:
            return array.n_present >= njobs
        finally:
            array.close()
    _wait("the feeder offering %d jobs" % njobs, offered, 30, demo, poke=False)
    demo.volunteers[0].client.project_op(demo.cfg.master_url, "update")


def _results(demo, batch):
    db = demo.connect()
    try:
        rows = db.query("SELECT r.*, w.name AS wu_name FROM result r JOIN workunit w "
                        "ON w.id = r.workunitid WHERE w.batch = %s", (batch,))
    finally:
        db.close()
    return {r["wu_name"]: r for r in rows}


def _output(demo, result):
    xml = result["xml_doc_in"]
    name = re.search(r"<file_name>([^<]+)</file_name>", xml).group(1)
    with open(dir_hier_path(demo.cfg.upload_dir, name, demo.cfg.uldl_dir_fanout)) as f:
        return f.read()


def test_shell_and_python_programs_run_as_jobs(wrapped):
    """The shell program gets its input on stdin and its arguments from the
    job (<append_cmdline_args/>); the Python program opens its input, output
    and the app version's data file by name (<copy_file/>); outputs uploaded."""
    demo = wrapped
    # the program's arguments after --passthrough_child, which BOINC's wrapper
    # wants since 2024 (before, it gave the program every argument)
    _submit(demo, 1, "upper", [("upper_a", "hello, world\n", "--passthrough_child --flag one"),
                               ("upper_b", "second job\nTwo lines\n", "")])
    text = "The cat and the hat.\nA cat, a hat, a bat: the cat sat.\n"
    _submit(demo, 1, "count_words", [("count_a", text, "")])
    demo.s.njobs = 3
    _fetch_now(demo, 3)
    demo.wait_for_jobs()

    results = _results(demo, 1)
    assert sorted(results) == ["count_a", "upper_a", "upper_b"]
    for name, r in results.items():
        assert r["server_state"] == ServerState.OVER, name
        assert r["outcome"] == Outcome.SUCCESS, (name, r["stderr_out"])
        assert r["client_state"] == ClientState.FILES_UPLOADED, name
        assert r["exit_status"] == 0, name
    assert _output(demo, results["upper_a"]) == "HELLO, WORLD\narguments: --flag one\n"
    assert _output(demo, results["upper_b"]) == "SECOND JOB\nTWO LINES\narguments: \n"
    assert _output(demo, results["count_a"]) == "cat 3\nhat 2\nbat 1\nsat 1\n"
    # the Python program's own standard error came back in the result
    assert "count_words: 14 words, 4 distinct" in results["count_a"]["stderr_out"]
    if OWN_WRAPPER:
        assert "the program exited with status 0" in results["upper_a"]["stderr_out"]

    (v,) = demo.volunteers
    log = v.client.log_text()
    assert not [bad for bad in CLIENT_LOG_PROBLEMS if bad in log]
    with open(os.path.join(v.client.data_dir, "client_state.xml")) as f:
        state = etree.fromstring(f.read().encode(), etree.XMLParser(recover=True))
    versions = {av.findtext("app_name"): av for av in state.iter("app_version")}
    assert sorted(versions) == ["count_words", "upper"]
    for av in versions.values():
        assert av.find("is_wrapper") is not None
    refs = {(r.findtext("open_name") or "", r.find("copy_file") is not None,
             r.find("main_program") is not None) for r in versions["count_words"].iter("file_ref")}
    assert refs == {("", False, True), ("job.xml", False, False),
                    ("count_words.py", False, False), ("stopwords.txt", True, False)}


def _task(client, name):
    for t in client.tasks():
        if t.get("name", "").startswith(name):
            return t
    return None


def _running_program(client, url_dir):
    """The program of the running slow job, once it runs its pipeline: the
    wrapper is the process whose executable is the app version's main program."""
    wrapper_file = "wrapper_%s_%s" % (VERSION, PLATFORM)
    want = os.path.realpath(os.path.join(client.data_dir, "projects", url_dir, wrapper_file))
    for p in psutil.process_iter(["exe"]):
        if p.info["exe"] and os.path.realpath(p.info["exe"]) == want and p.children():
            program = p.children()[0]
            if any(c.name() == "cat" for c in program.children()):
                return program
    return None


def _lasting(program):
    """The program and the processes it runs for as long as it runs (the
    loop's shell, cat), not the short commands in the loop."""
    return [program] + [c for c in program.children(recursive=True)
                        if c.name() in (program.name(), "cat")]


def _wait(what, predicate, timeout, demo, poke=True):
    """predicate()'s first true value; meanwhile an idle client is asked to
    fetch work now and then (``poke``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if poke:
            demo.poke_idle()
        time.sleep(0.2)
    pytest.fail("timed out after %ss waiting for %s%s"
                % (timeout, what, demo.volunteers[0].client.log_tail()))


def _stopped(procs):
    try:
        return all(p.status() == psutil.STATUS_STOPPED for p in procs)
    except psutil.NoSuchProcess:
        return False


def _progress(program):
    with open(os.path.join(program.cwd(), "progress")) as f:
        return f.read()


def test_suspend_resume_and_abort_reach_the_program(wrapped):
    """boinccmd --task ... suspend stops the program (and the commands it runs),
    resume lets it go on, abort ends it with SIGTERM (its trap runs) well before
    the client would kill it; progress from <fraction_done_filename> reaches
    the client, and the abort reaches the server."""
    from boincpy.testing.client import project_dir_name
    demo = wrapped
    (v,) = demo.volunteers
    client, url = v.client, demo.cfg.master_url
    _submit(demo, 2, "slow", [("slow_a", None, "--passthrough_child 600")])
    _fetch_now(demo, 1)
    task = _wait("the slow job running", lambda: (_task(client, "slow_a") or {}).get(
        "active_task_state") == "EXECUTING" and _task(client, "slow_a"), 120, demo)
    name = task["name"]
    program = _wait("the program's processes",
                    lambda: _running_program(client, project_dir_name(url)), 30, demo)
    assert "slow_1.0.sh" in " ".join(program.cmdline())
    lasting = _lasting(program)
    assert len(lasting) == 3, lasting       # sh; the loop's sh | cat
    _wait("progress reported", lambda: float(_task(client, name).get("fraction done", 0)) > 0,
          30, demo)

    client.boinccmd("--task", url, name, "suspend")
    if OWN_WRAPPER:     # the whole process group: the commands the script runs too
        _wait("the program's processes stopped", lambda: _stopped(lasting), 15, demo)
        before = _progress(program)
        time.sleep(1.5)
        assert _progress(program) == before and _stopped(lasting)
    else:               # BOINC's stops the program only (without <multi_process/>)
        _wait("the program stopped", lambda: _stopped([program]), 15, demo)
        before = _progress(program)

    client.boinccmd("--task", url, name, "resume")
    _wait("the program running again", lambda: not any(
        p.status() == psutil.STATUS_STOPPED for p in lasting), 15, demo)
    _wait("progress moving again", lambda: _progress(program) != before, 15, demo)

    group = [program] + program.children(recursive=True)
    started = time.monotonic()
    client.boinccmd("--task", url, name, "abort")
    gone, alive = psutil.wait_procs(group, timeout=20)
    took = time.monotonic() - started
    assert not alive, "still running %.0f s after the abort: %s" % (took, alive)
    assert took < 15        # the client itself would wait 60 s before killing

    demo.s.njobs = 1
    demo.wait_for_jobs()
    r = _results(demo, 2)["slow_a"]
    assert r["server_state"] == ServerState.OVER
    assert r["outcome"] == Outcome.CLIENT_ERROR
    assert EXIT_CODES.get(r["exit_status"]) == "EXIT_ABORTED_VIA_GUI"
    if OWN_WRAPPER:
        assert "abort requested: stopping the program" in r["stderr_out"], r["stderr_out"]
        # SIGTERM from the wrapper to the whole group (the client kills with
        # SIGKILL, which no trap sees), and the script's trap ran at once
        assert "slow.sh: terminated" in r["stderr_out"], r["stderr_out"]
