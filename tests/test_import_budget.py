"""The classic CGIs' import budget: what a scheduler request and an upload
load when each is its own process.

A CGI pays for every module it imports on every request, so the request
path of cgi-bin/cgi and cgi-bin/file_upload_handler is held to the modules
listed here (docs/design.md, "The hot path").  Each CGI is run as make_project
installs it (``python -S``, site's paths given), with ``-X importtime``, on a
real project and database, and every module it loaded must be in its budget.
A module that is not fails the test with its import time: either keep it off
the request path (import it where the rare case needs it) or, if every
request needs it, add it here (and to boincpy.tools.cgi_bundles' list, if every
request needs it) and say why in the commit.  The request measured is the
second: the first parsed config.xml (boincpy.config and expat) and left the
snapshot the next ones read (boincpy.parsed_config).  What a request loaded
is ``sys.modules`` as the CGI leaves: the modules its bundle ran
(boincpy.hot_path) never pass through the import system.

Everything outside these modules imports normally at the top of its module.
"""

import hashlib
import os
import subprocess
import sys

import pytest

from boincpy import crypto
from boincpy.testing.simclient import SchedulerRequest
from boincpy.tools import cgi_bundles
from boincpy.tools.server_mode import cgi_paths
from tests.sched_env import CLIENT_AUTH, REPO, sched_env  # noqa: F401 (fixture)

# What the interpreter loads before the CGI's first line (python -S): not
# os, which the scheduler's and upload handler's paths do without
# (boincpy.hot_path.join).
START_UP = {
    "_io", "marshal", "posix", "_frozen_importlib_external", "time", "zipimport", "_codecs",
    "codecs", "encodings.aliases", "encodings", "encodings.utf_8", "_signal", "_abc", "abc",
    "io",
    # boincpy.hot_path.cgi_start turns the cyclic collector off (built in)
    "gc",
}
# os and what it loads: 1.4 ms of a CGI's CPU
OS = {"_stat", "stat", "_collections_abc", "genericpath", "posixpath", "os", "os.path"}

# Every request of the scheduler: read the request, the configuration, the
# log, the job array, the database over boincpy's wire client.
SCHEDULER = START_UP | {
    "boincpy", "boincpy.hot_path", "boincpy.sched", "boincpy.proc_types", "boincpy.xml",
    "boincpy.xml.scan",
    "boincpy.cnum", "boincpy.errors", "boincpy.parsed_config", "boincpy.files",
    "boincpy.log", "boincpy.resident", "boincpy.shmem",
    "boincpy.sched.reply", "boincpy.record", "boincpy.sched.context",
    "boincpy.sched.request", "boincpy.sched.handler",
    "boincpy.db", "boincpy.db.connection", "boincpy.db.wire", "boincpy.db.lite",
    "boincpy.db.bulk", "boincpy.db.columns",
    "boincpy.db.host",
    "boincpy.sched.hosts",
    # a host's first request of the day reads its host_app_version rows (an
    # on-demand module of the bundle: the later requests of the day don't)
    "boincpy.db.host_app_version",
    # md5, the array (its header and tables read, not mapped, nor locked)
    "_md5",
    "_struct",
    # the wire client: a socket and the password scramble
    "_socket", "_sha1", "_random",
}

# A request that asks for work also loads job choice, from the bundle's
# on-demand modules (boincpy.tools.cgi_bundles.ON_DEMAND).  Not os, nor random (which
# imports os, warnings, bisect: boincpy.rand has what job choice needs).
SCHEDULER_WORK = SCHEDULER | {
    # the jobs the client holds, checked for abort (send_result_abort)
    "boincpy.sched.reports",
    "boincpy.db.result", "boincpy.db.workunit", "boincpy.db.assignment",
    "boincpy.sched.plan_class", "boincpy.hrclass", "boincpy.sched.hr", "boincpy.sched.limits",
    "boincpy.sched.prefs", "boincpy.sched.choose", "boincpy.sched.version",
    "boincpy.sched.assign", "boincpy.sched.check", "boincpy.sched.score",
    "boincpy.sched.send", "boincpy.doorbell", "boincpy.rand",
    # the array's slots, mapped and locked; job choice's arithmetic
    "mmap", "fcntl", "math",
    # the feeder's doorbell (boincpy.doorbell: errno and select, built in)
    "errno", "select",
}

# The upload handler: a file's bytes in, its certificate checked.
UPLOAD = START_UP | {
    "boincpy", "boincpy.hot_path", "boincpy.upload", "boincpy.cnum", "boincpy.errors", "boincpy.files",
    "boincpy.xml", "boincpy.parsed_config", "boincpy.log", "boincpy.resident",
    "boincpy.proc_types", "_md5", "errno", "fcntl",
    # the upload certificate's signature, checked by default (boincpy.crypto's
    # RSA verification needs no library; its hex and ASCII decoding)
    "boincpy.crypto", "math", "encodings.ascii",
}


def _run(script, body, project, extra=None, loaders=None):
    """Run SCRIPT (cgi-bin/cgi, html/user/home.php ...) on ``body`` as Apache would, after an empty request
    (which leaves the project's config snapshot); its reply and
    {module: self import time in µs}."""
    tmp = project / ("tmp_" + os.uname().nodename.split(".")[0])   # as make_project makes
    tmp.mkdir(exist_ok=True)
    _run_once(script, b"", project, extra)
    # (the pages read config.xml without config_aux.xml, as BOINC's PHP does)
    assert (tmp / ("config_noaux.snapshot" if script.startswith("html/")
                   else "config.snapshot")).is_file()
    return _run_once(script, body, project, extra, loaders)


# The CGI as Apache runs it, telling what it loaded as it leaves (it ends
# with posix._exit: no atexit hook runs).  The wrapper loads nothing itself.
_WRAPPER = """
import posix, sys
leave = posix._exit
def tell(status=0):
    sys.stderr.write("\\nloaded: %s\\n" % " ".join(sorted(sys.modules)))
    sys.stderr.write("\\nloaders: %s\\n" % " ".join(
        "%s=%s" % (name, type(m.__spec__.loader).__name__)
        for name, m in sorted(sys.modules.items()) if name.startswith("boincpy.")))
    sys.stderr.flush()
    leave(status)
posix._exit = tell
script = sys.argv[0] = sys.argv.pop(1)
sys.path[0] = script.rpartition("/")[0]
exec(compile(open(script).read(), script, "exec"), {"__name__": "__main__", "__file__": script})
"""


# the CGIs' bundles, as make_project writes them (compile_package)
pytestmark = pytest.mark.usefixtures("fresh_bundles")


def _run_once(script, body, project, extra=None, loaders=None):
    """SCRIPT run once on ``body``: its reply and {module it loaded:
    self import time in µs, or None if its bundle ran it}; ``loaders``, a
    dict, gets each boincpy module's loader (the class's name)."""
    env = {"PATH": "/usr/bin:/bin", "BOINC_PROJECT_DIR": str(project),
           "REQUEST_METHOD": "POST", "CONTENT_LENGTH": str(len(body)),
           "PYTHONPATH": os.pathsep.join([REPO] + (cgi_paths(sys.executable) or []))}
    env.update(extra or {})
    proc = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", _WRAPPER,
                           os.path.join(REPO, script)],
                          input=body, env=env, capture_output=True, cwd=str(project),
                          timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    timed, loaded = {}, None
    for line in proc.stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, _, name = line[len("import time:"):].split("|")
            timed[name.strip()] = int(self_us)
        elif line.startswith("loaded: "):
            loaded = line[len("loaded: "):].split()
        elif line.startswith("loaders: ") and loaders is not None:
            loaders.update(pair.split("=") for pair in line[len("loaders: "):].split())
    assert loaded, proc.stderr.decode(errors="replace")[-2000:]
    # the interpreter's own, and the wrapper's -c
    loaded = set(loaded) - {"sys", "builtins", "_frozen_importlib", "_imp", "_thread",
                            "_warnings", "_weakref", "__main__"}
    return proc.stdout, {name: timed.get(name) for name in loaded}


def _over(loaded, budget):
    extra = {m: t or 0 for m, t in loaded.items() if m not in budget}
    return "modules beyond the budget (self import time, µs): %s" % ", ".join(
        "%s %d" % (m, t) for m, t in sorted(extra.items(), key=lambda kv: -kv[1]))


# what a CGI imports to read its bundle
BEFORE_THE_BUNDLE = {"boincpy", "boincpy.hot_path"}


def _through_the_import_system(loaded):
    return {m for m, t in loaded.items() if m.startswith("boincpy") and t is not None}


def _left_to_their_package(cgi):
    """The bundle's modules its preload leaves to their package's body (a
    package that imports them as it runs): these pass through the import
    system, served from the bundle."""
    names = [entry[0] for entry in cgi_bundles.bundle_entries(cgi)]
    return {name for i, name in enumerate(names)
            if "." in name and name.rpartition(".")[0] in names[i + 1:]}


def test_scheduler_request_without_work_stays_in_budget(sched_env):
    sched_env.job_array(refill=True)
    body = SchedulerRequest(CLIENT_AUTH).xml().encode()
    loaders = {}
    reply, loaded = _run("cgi-bin/cgi", body, sched_env.root, loaders=loaders)
    assert b"<userid>" in reply           # it went through the database
    assert set(loaded) <= SCHEDULER, _over(loaded, SCHEDULER)
    # and the budget is not stale: the request path really is this
    assert {"boincpy.db.wire", "boincpy.sched.hosts", "boincpy.shmem"} <= set(loaded)
    assert "boincpy.sched.send" not in loaded
    # every boincpy module came from the bundle (boincpy.hot_path): run by its
    # preload, or imported from it (an on-demand module, or one its package's
    # body imports), and the preload runs nothing the request does not load
    assert {m for m, loader in loaders.items() if loader != "_Bundle"} <= BEFORE_THE_BUNDLE
    on_demand = {e[0] for e in cgi_bundles.on_demand_entries("scheduler")}
    assert (_through_the_import_system(loaded) - on_demand
            <= _left_to_their_package("scheduler") | BEFORE_THE_BUNDLE)
    assert {e[0] for e in cgi_bundles.bundle_entries("scheduler")} <= set(loaded)


def test_rare_requests_take_their_modules_from_the_bundle(sched_env):
    """A client signing in with its weak authenticator, and one whose new
    cross-project id changes its user row: boincpy.passwords and
    boincpy.db.user, which the common request does not load, come from the
    bundle's on-demand part (not the path), and the reply is the usual one."""
    from boincpy.sched.hosts import weak_auth
    sched_env.job_array(refill=True)
    user = sched_env.row("SELECT * FROM user WHERE id = 1")
    cases = ((weak_auth(user), None, "boincpy.passwords"),
             (CLIENT_AUTH, "00ff", "boincpy.db.user"))
    for authenticator, cpid, module in cases:
        request = SchedulerRequest(authenticator)
        if cpid:
            request.cross_project_id = cpid
        loaders = {}
        reply, loaded = _run("cgi-bin/cgi", request.xml().encode(), sched_env.root,
                             loaders=loaders)
        assert b"<userid>1</userid>" in reply
        assert loaders.get(module) == "_Bundle", (module, loaders.get(module))
    assert sched_env.row("SELECT cross_project_id FROM user WHERE id = 1")[
        "cross_project_id"] == "00ff"


def test_job_limits_come_from_the_bundle(sched_env):
    """config_aux.xml's job limits: a snapshot's rows, made into
    boincpy.config_specs' objects when a request for work reads them (from the
    bundle's on-demand part); a request without work never loads them."""
    (sched_env.root / "config_aux.xml").write_text(
        "<config><max_jobs_in_progress><project><cpu_limit><jobs>1</jobs></cpu_limit>"
        "</project></max_jobs_in_progress></config>\n")
    sched_env.add_job("limits_wu")
    sched_env.job_array(refill=True)
    loaders = {}
    reply, loaded = _run("cgi-bin/cgi", SchedulerRequest(CLIENT_AUTH).xml().encode(),
                         sched_env.root, loaders=loaders)
    assert b"<userid>" in reply and "boincpy.config_specs" not in loaded
    body = SchedulerRequest(CLIENT_AUTH, work_req_seconds=3600).xml().encode()
    reply, loaded = _run("cgi-bin/cgi", body, sched_env.root, loaders=loaders)
    assert b"limits_wu" in reply
    assert loaders.get("boincpy.config_specs") == "_Bundle"


def test_scheduler_request_that_gets_a_job_stays_in_budget(sched_env):
    sched_env.add_job("budget_wu")
    sched_env.job_array(refill=True)
    body = SchedulerRequest(CLIENT_AUTH, work_req_seconds=3600).xml().encode()
    loaders = {}
    reply, loaded = _run("cgi-bin/cgi", body, sched_env.root, loaders=loaders)
    assert b"<result>" in reply and b"budget_wu" in reply
    assert set(loaded) <= SCHEDULER_WORK, _over(loaded, SCHEDULER_WORK)
    # job choice came from the bundle too (its on-demand modules): no boincpy
    # module was looked for along the path or read from its .pyc
    assert "boincpy.sched.send" in loaders
    assert {m for m, loader in loaders.items() if loader != "_Bundle"} <= BEFORE_THE_BUNDLE
    for heavy in ("re", "dataclasses", "inspect", "enum", "lxml", "MySQLdb", "hashlib",
                  "cryptography", "datetime", "decimal"):
        assert heavy not in loaded


def test_upload_stays_in_budget(sched_env):
    sched_env.set_options(ignore_upload_certificates=0)    # the default: checked
    root = sched_env.root
    private, public = crypto.generate_key_pair()
    (root / "keys" / "upload_private").write_text(private)
    (root / "keys" / "upload_public").write_text(public)
    name = "budget_wu_0_r1_0"
    data = b"output bytes\n"
    key = crypto.read_key(str(root / "keys" / "upload_private"))
    sig = crypto.sign_upload_certificate(name, 100000, key).strip()
    body = ("<data_server_request>\n<core_client_major_version>7</core_client_major_version>\n"
            "<core_client_minor_version>20</core_client_minor_version>\n"
            "<core_client_release>5</core_client_release>\n<file_upload>\n<file_info>\n"
            "<name>%s</name>\n<xml_signature>\n%s</xml_signature>\n"
            "<max_nbytes>100000</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n"
            "<md5_cksum>%s</md5_cksum>\n<offset>0</offset>\n<data>\n"
            % (name, sig, len(data), hashlib.md5(data).hexdigest())).encode() + data
    reply, loaded = _run("cgi-bin/file_upload_handler", body, root)
    assert b"<status>0</status>" in reply
    assert set(loaded) <= UPLOAD, _over(loaded, UPLOAD)
    assert "boincpy.crypto" in loaded         # the certificate was checked
    assert "boincpy.db" not in loaded and "boincpy.sched" not in loaded
    assert _through_the_import_system(loaded) <= _left_to_their_package("upload") | BEFORE_THE_BUNDLE
    assert {e[0] for e in cgi_bundles.bundle_entries("upload")} <= set(loaded)



# What no page of the web site loads in a classic CGI: dataclasses (and
# inspect, ast, dis: about 10 ms), a MySQL client library (6 ms: pages use
# boincpy.db.wire), OpenSSL's bindings (2 ms), json (reCAPTCHA's only).
PAGE_HEAVY = ("dataclasses", "inspect", "ast", "dis", "MySQLdb", "_mysql", "MySQLdb._mysql",
              "_hashlib", "hashlib", "hmac", "json", "datetime", "decimal", "lxml")


@pytest.mark.parametrize("page, bundle, query, expected", [
    ("html/user/top_users.php", "site_lists", "", b"Top participants"),
    ("html/user/home.php", "site_account", "", b"Your account"),
    ("html/user/index.php", "site_master", "", b"<html"),
    ("html/user/am_get_info.php", "web_rpc", "account_key=" + CLIENT_AUTH, b"<am_get_info_reply>"),
])
def test_a_page_runs_from_its_bundle(sched_env, page, bundle, query, expected):
    """A page of the site as a classic CGI (its entry file as make_project
    installs it): its boincpy modules all from its family's bundle, none of
    the heavy ones, and the page right (the volunteer logged in by cookie)."""
    reply, loaded = _run(page, b"", sched_env.root, {
        "REQUEST_METHOD": "GET", "QUERY_STRING": query, "SCRIPT_NAME": "/test/" + page,
        "HTTP_COOKIE": "auth=" + CLIENT_AUTH})
    assert expected in reply, reply[-1500:]
    assert [m for m in PAGE_HEAVY if m in loaded] == []
    assert (_through_the_import_system(loaded)
            <= _left_to_their_package(bundle) | BEFORE_THE_BUNDLE), loaded
    assert {"boincpy.db.wire", "boincpy.web.http"} <= set(loaded)
