"""Helpers of the remote submission tests: a project serving the RPCs under a
private Apache with submitters and an app, the captured reference exchanges,
requests sent as BOINC's two clients send them, and replies compared element
by element with the reference's."""

import hashlib
import os
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from webrpc_util import assert_same_elements

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "remote_submit")

# the reference's uppercase app: one input "in", one output "out", both copied
UPPERCASE_IN = """<input_template>
    <file_info>
        <number>0</number>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
            <copy_file/>
        </file_ref>
    </workunit>
</input_template>
"""
UPPERCASE_OUT = """<output_template>
    <file_info>
        <name><OUTFILE_0/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>65536</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <result>
        <file_ref>
            <file_name><OUTFILE_0/></file_name>
            <open_name>out</open_name>
            <copy_file/>
        </file_ref>
    </result>
</output_template>
"""
# what the app does on a real client (copy_file: "in" and "out" in the slot)
UPPERCASE_SCRIPT = """#!/bin/sh
tr a-z A-Z < in > out
echo "uppercase: done" >&2
echo 0 > boinc_finish_called
exit 0
"""
PLATFORM = "x86_64-pc-linux-gnu"

_NOISE = ("<br />", "<b>Deprecated</b>", "<b>Warning</b>", "<b>Notice</b>")


def fixture(kind, name):
    """A captured file's text (kind: python_client or gahp)."""
    with open(os.path.join(FIXTURES, kind, name), encoding="utf-8") as f:
        return f.read()


def fixture_reply(kind, name, subst=None):
    """A captured reply without the PHP notices the reference printed into it,
    placeholders replaced by ``subst``."""
    text = "\n".join(line for line in fixture(kind, name).split("\n")
                     if not line.startswith(_NOISE))
    return substitute(text, subst or {})


def substitute(text, subst):
    """Replace placeholders, longest first (AUTHENTICATOR inside OTHER_..._AUTHENTICATOR)."""
    for key in sorted(subst, key=len, reverse=True):
        text = text.replace(key, subst[key])
    return text


# the reference's replies are compared as the account RPCs' are
assert_like = assert_same_elements


def multipart(fields, files=()):
    """(body, content type) of multipart/form-data: ``fields`` {name: text},
    ``files`` [(field, filename, bytes)] -- as libcurl and requests lay it out."""
    boundary = "------------------------" + uuid.uuid4().hex[:16]
    out = []
    for name, value in fields.items():
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n"
                    % (boundary, name)).encode() + value.encode() + b"\r\n")
    for field, filename, data in files:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
                    "Content-Type: application/octet-stream\r\n\r\n"
                    % (boundary, field, filename)).encode() + data + b"\r\n")
    out.append(("--%s--\r\n" % boundary).encode())
    return b"".join(out), "multipart/form-data; boundary=%s" % boundary


def http(url, data=None, content_type=None, agent="Python-urllib/3.11"):
    """(status, headers, body bytes) of a GET (data None) or POST."""
    headers = {"User-Agent": agent}
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=data, headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=120) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def post(master_url, xml, page="submit_rpc_handler.php", form="urlencoded", files=()):
    """POST ``xml`` as the "request" field, urlencoded (BOINC's Python client)
    or multipart (its C++ library and the GAHP, and every upload); the reply text."""
    if form == "urlencoded" and not files:
        body = urllib.parse.urlencode({"request": xml}).encode()
        ctype = "application/x-www-form-urlencoded"
    else:
        body, ctype = multipart({"request": xml}, files)
    status, headers, data = http(master_url + page, body, ctype)
    assert status == 200, data
    assert headers["Content-Type"] == "text/xml;charset=UTF-8"
    return data.decode("utf-8")


def md5(text):
    return hashlib.md5(text.encode()).hexdigest()


def add_user(db, name, submit=None, manage_all=0, max_jobs=0):
    """A user (and a user_submit row when ``submit`` is 0 or 1: submit_all); their authenticator."""
    auth = secrets.token_hex(16)
    uid = db.insert("INSERT INTO user (create_time, email_addr, name, authenticator, passwd_hash, "
                    "global_prefs, project_prefs, venue, cross_project_id) VALUES "
                    "(1, %s, %s, %s, 'x', '', '', '', '')", (name + "@example.com", name, auth))
    if submit is not None:
        db.execute("INSERT INTO user_submit (user_id, quota, logical_start_time, submit_all, "
                   "manage_all, max_jobs_in_progress) VALUES (%s, 0, 0, %s, %s, %s)",
                   (uid, submit, manage_all, max_jobs))
    return uid, auth


def add_uppercase_app(project, script=UPPERCASE_SCRIPT):
    """The reference's app: row, templates, a signed app version (a shell script)."""
    import subprocess
    run_bin(project, "xadd")            # the platforms of project.xml
    db = project.connect()
    try:
        if db.query_value("SELECT id FROM app WHERE name = 'uppercase'") is None:
            db.execute("INSERT INTO app (create_time, name, user_friendly_name) "
                       "VALUES (1, 'uppercase', 'Upper case')")
    finally:
        db.close()
    for name, text in (("uppercase_in", UPPERCASE_IN), ("uppercase_out", UPPERCASE_OUT)):
        with open(project.path("templates", name), "w") as f:
            f.write(text)
    app_dir = project.path("apps", "uppercase", "1.0", PLATFORM)
    os.makedirs(app_dir, exist_ok=True)
    path = os.path.join(app_dir, "uppercase_1.0_" + PLATFORM)
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, 0o755)
    proc = subprocess.run([project.bin("update_versions"), "--noconfirm"], cwd=project.root,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout


def run_bin(project, tool, *args):
    """PROJECT/bin/TOOL in the project directory; its CompletedProcess (must succeed)."""
    import subprocess
    proc = subprocess.run([project.bin(tool)] + list(args), cwd=project.root,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def transition(p):
    """One transitioner pass over every workunit (the transitioner takes those
    whose transition time has passed: wait out the current second)."""
    import time
    time.sleep(1.05 - time.time() % 1)
    return run_bin(p, "transitioner", "--one_pass", "-d", "3")


def start_feeder(p):
    """The feeder, started; returns once its job array holds a job (or after 10 s)."""
    import subprocess
    import time
    from boincpy import shmem
    log = open(p.path("log_" + p.cfg.host, "feeder.log"), "a")
    proc = subprocess.Popen([p.bin("feeder"), "-d", "3", "--sleep_interval", "1"], cwd=p.root,
                            stdout=log, stderr=log)
    for _ in range(100):
        try:
            array = shmem.attach(p.cfg, wait_ready=0.2)
            n = array.n_present
            array.close()
            if n:
                return proc
        except Exception:
            pass
        time.sleep(0.1)
    return proc


def run_jobs(site, njobs, seed=1):
    """Run unsent jobs on a simulated volunteer's host (the feeder running)
    until it has reported ``njobs``; the SimHost (its volunteer is
    volunteer@example.com)."""
    from boincpy.testing import simclient as sc
    p = site.p
    volunteer = sc.create_account(site.url, "volunteer@example.com", "pw", "volunteer")
    feeder = start_feeder(p)
    try:
        host = sc.SimHost(sc.discover_scheduler(site.url), volunteer, name="h1", seed=seed,
                          delay_cap=0, work_req_seconds=1e6)
        for k in range(10):
            if k:
                # a real client reports no sooner than its jobs ran: the
                # scheduler caps a reported elapsed time at the turnaround in
                # whole seconds (as BOINC does), so a report within the second
                # the job was sent would be worth no credit
                time.sleep(1.1)
            host.cycle()
            if len(host.acked) == njobs:
                break
        assert len(host.acked) == njobs, (
            host.rpc_errors, host.received, host.download_errors, host.protocol_errors,
            open(p.path("log_" + p.cfg.host, "scheduler.log")).read()[-3000:])
    finally:
        feeder.terminate()
        feeder.wait(20)
    return host


def make_submit_site(apache):
    """The set-up of ``submit_site`` on a RunningApache (see there)."""
    from boincpy.config import write_config
    p = apache.project
    opts = p.cfg.as_options()
    opts.update(min_sendwork_interval=0)
    write_config(p.root, opts, p.cfg.daemons, p.cfg.tasks)
    p.reload()
    add_uppercase_app(p)
    db = p.connect()
    try:
        site = type("SubmitSite", (), {})()
        site.apache, site.p, site.url = apache, p, apache.master_url
        site.uid, site.auth = add_user(db, "submitter", submit=1)
        site.other_uid, site.other_auth = add_user(db, "second", submit=1)
        site.noperm_uid, site.noperm_auth = add_user(db, "nobody")
    finally:
        db.close()
    host = re.match(r"https?://([^/]+)/", apache.master_url).group(1)
    site.subst = {
        "http://HOST/PROJECT/": apache.master_url, "HOST": host, "PROJECT": p.short_name,
        "OTHER_SUBMITTER_AUTHENTICATOR": site.other_auth,
        "NO_PERMISSION_AUTHENTICATOR": site.noperm_auth,
        "WRONG_AUTHENTICATOR": "0" * 32, "AUTHENTICATOR": site.auth,
    }
    return site


@pytest.fixture
def submit_site(apache):
    """A made project under a private Apache with the uppercase app, a
    submitter (``auth``), a second submitter (``other_auth``), a user without
    submission rights (``noperm_auth``), and the placeholders of the
    reference captures in ``subst``."""
    return make_submit_site(apache)


def run_named_jobs(site, names, volunteer=None):
    """Run the jobs ``names`` (created, not yet transitioned) to the end: the
    transitioner makes their instances, a feeder caches them, a simulated
    volunteer (``volunteer``, default ``site.volunteer``) runs them through the
    scheduler and upload handler, then the transitioner, the validator and
    the transitioner again give each its canonical instance."""
    from boincpy.testing import simclient as sc
    p = site.p
    transition(p)
    feeder = start_feeder(p)
    try:
        host = sc.SimHost(sc.discover_scheduler(site.url), volunteer or site.volunteer,
                          name="h1", seed=1, delay_cap=0, work_req_seconds=1e6)
        wanted = {n + "_0" for n in names}
        for _ in range(20):
            host.cycle()
            if not host.busy and wanted <= set(host.acked):
                break
        assert wanted <= set(host.acked), (host.rpc_errors, host.protocol_errors,
                                            host.download_errors)
    finally:
        feeder.terminate()
        feeder.wait(20)
    transition(p)
    run_bin(p, "sample_trivial_validator", "--app", "uppercase", "--one_pass")
    transition(p)
    db = p.connect()
    try:
        done = db.query("SELECT name FROM workunit WHERE canonical_resultid > 0")
    finally:
        db.close()
    assert {r["name"] for r in done} >= set(names), done
