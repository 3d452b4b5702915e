"""A project prepared for scheduler tests: keys, an app version, users, jobs.

Built on conftest's ``mini_project`` (schema, platform x86_64-pc-linux-gnu,
app example_app).  Test modules import the fixtures they use from here.
"""

import http.client
import os
import subprocess
import time
from urllib.parse import urlsplit

import MySQLdb
import MySQLdb.cursors
import pytest

from boincpy.db.connection import read_text_as_str
from tests.shared_fixtures import FIXTURES, fixture_text  # noqa: F401  (re-exported)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(FIXTURES, "client-7.20.5")
REFERENCE = os.path.join(FIXTURES, "reference-server")

CLIENT_AUTH = "abcdef0123456789"                    # the captured client's account key
REFERENCE_AUTH = "80b1ceedb8ec2b4333cf9040fb85d01a"  # the reference server's account
PLATFORM = "x86_64-pc-linux-gnu"

APP_VERSION_XML = """<file_info>
    <name>example_app_1.0_x86_64-pc-linux-gnu</name>
    <url>http://127.0.0.1/test/download/example_app_1.0_x86_64-pc-linux-gnu</url>
    <executable/>
    <file_signature>
176c51f5f858898265526265b9e40222b5cb46493ef33b3b11be005eeed805b0
74f5bdfd22c1a239f4a112da0f319c817a78d876d60b1fa063387e0d79c15263
465b0753b4bda1b58ec91e9a1b05e88a040a0fb281ccbee3025db0626fdc69e5
50a8413979ade78d76fbaf6a0a54df2a07d9d66977646d338a117a0a51ae58a7
.
    </file_signature>
    <nbytes>3156888</nbytes>
</file_info>
<app_version>
    <app_name>example_app</app_name>
    <version_num>100</version_num>
    <api_version>8.3.0</api_version>
<file_ref>
    <file_name>example_app_1.0_x86_64-pc-linux-gnu</file_name>
    <main_program/>
</file_ref>
</app_version>
"""

_KEYS = {}


def code_sign_keys():
    """One code-signing key pair per test session (generation is slow)."""
    if not _KEYS:
        from boincpy.crypto import generate_key_pair
        _KEYS["private"], _KEYS["public"] = generate_key_pair()
    return _KEYS["private"], _KEYS["public"]


class SchedEnv:
    """The project directory, its config and direct database access."""

    def __init__(self, root, db_root_params):
        from boincpy.config import load_config
        self.root = root
        self.db_root_params = db_root_params
        self.cfg = load_config(str(root))
        # rows as the scheduler reads them: text and BLOB columns as str
        self.conn = read_text_as_str(MySQLdb.connect(
            db=self.cfg.db_name, autocommit=True, charset="utf8mb4", **db_root_params))

    def reload(self):
        from boincpy.config import load_config
        self.cfg = load_config(str(self.root))
        return self.cfg

    # -- the feeder's job array (the real one: bin/feeder's code, in-process) --

    _feeder = None
    _array = None

    def job_array(self, refill=False):
        """The project's job array, made by the feeder on first use; ``refill``
        runs a feeder pass first (after jobs were added)."""
        from boincpy import shmem
        from jobs_helpers import make_feeder
        if self._feeder is None:
            self._feeder = make_feeder(self.cfg)
            refill = True
        if refill:
            self._feeder.one_pass()
        if self._array is None:
            self._array = shmem.attach(self.cfg, wait_ready=1)
        return self._array

    def close_array(self):
        if self._array is not None:
            self._array.close()
            self._array = None
        if self._feeder is not None:
            self._feeder.shutdown()
            self._feeder = None

    def set_options(self, **options):
        """Rewrite config.xml with these options changed."""
        from boincpy.config import write_config
        opts = self.cfg.as_options()
        opts.update(options)
        write_config(str(self.root), opts)
        return self.reload()

    def rows(self, sql, params=()):
        cur = self.conn.cursor(MySQLdb.cursors.DictCursor)
        cur.execute(sql, params)
        rows = list(cur.fetchall())
        cur.close()
        return rows

    def row(self, sql, params=()):
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    def execute(self, sql, params=()):
        cur = self.conn.cursor()
        cur.execute(sql, params)
        last = cur.lastrowid
        cur.close()
        return last

    def snapshot(self, tables=("user", "host", "result", "workunit", "host_app_version",
                               "msg_from_host", "team")):
        """All rows of the tables a scheduler may write (mod_time excluded)."""
        snap = {}
        for table in tables:
            rows = self.rows("SELECT * FROM %s ORDER BY 1, 2" % table)
            for r in rows:
                r.pop("mod_time", None)
            snap[table] = rows
        return snap

    def add_user(self, authenticator, name="tester", email="tester@example.com",
                 passwd_hash="5f4dcc3b5aa765d61d8327deb882cf99", teamid=0, **extra):
        cols = {"create_time": 1700000000, "email_addr": email, "name": name,
                "authenticator": authenticator, "passwd_hash": passwd_hash,
                "teamid": teamid, "cross_project_id": "14e8ce95352d1aa18f26083c43e0f61b",
                "global_prefs": "", "project_prefs": "", "venue": ""}
        cols.update(extra)
        return self.execute("INSERT INTO user (%s) VALUES (%s)" % (
            ", ".join(cols), ", ".join(["%s"] * len(cols))), list(cols.values()))

    def add_host(self, userid, **extra):
        cols = {"create_time": 1700000000, "userid": userid, "rpc_seqno": 0,
                "rpc_time": 0, "p_ncpus": 2, "p_vendor": "AuthenticAMD",
                "p_model": "AMD EPYC [Family 25 Model 1 Stepping 1]",
                "os_name": "Linux Debian", "domain_name": "vm", "last_ip_addr": "127.0.0.1",
                "m_nbytes": 25276063744.0, "misc": "", "venue": ""}
        cols.update(extra)
        return self.execute("INSERT INTO host (%s) VALUES (%s)" % (
            ", ".join(cols), ", ".join(["%s"] * len(cols))), list(cols.values()))

    def app(self):
        return self.row("SELECT * FROM app WHERE name = 'example_app'")

    def platform(self):
        return self.row("SELECT * FROM platform WHERE name = %s", (PLATFORM,))

    def app_version(self):
        return self.row("SELECT * FROM app_version ORDER BY id LIMIT 1")

    def add_job(self, name, state=2, hostid=0, userid=0, sent_time=0, delay_bound=604800,
                report_deadline=0, out_name=None):
        """A workunit NAME with one result NAME_0 as create_work and the
        transitioner would make them (UNSENT unless ``state`` says otherwise)."""
        app = self.app()
        av = self.app_version()
        wu_xml = ("<file_info>\n    <name>in_%s.txt</name>\n"
                  "    <url>http://127.0.0.1/test/download/1a/in_%s.txt</url>\n"
                  "    <md5_cksum>ed3bc8e71d247133e1b956b921bbc579</md5_cksum>\n"
                  "    <nbytes>75</nbytes>\n</file_info>\n<workunit>\n"
                  "<file_ref>\n    <file_name>in_%s.txt</file_name>\n"
                  "    <open_name>in</open_name>\n</file_ref>\n"
                  "<command_line>\n-cpu_time 30\n</command_line>\n</workunit>"
                  % (name, name, name))
        wuid = self.execute(
            "INSERT INTO workunit (create_time, appid, name, xml_doc, rsc_fpops_est, "
            "rsc_fpops_bound, rsc_memory_bound, rsc_disk_bound, delay_bound, min_quorum, "
            "target_nresults, max_error_results, max_total_results, max_success_results, "
            "result_template_file, transition_time) VALUES (%s, %s, %s, %s, 3.6e12, 8.64e13, "
            "5e8, 1e9, %s, 1, 1, 3, 10, 6, 'templates/example_app_out', 2147483647)",
            (int(time.time()), app["id"], name, wu_xml, delay_bound))
        rname = name + "_0"
        out = out_name or "%s_r1835291539_0" % rname
        res_xml = ("<file_info>\n        <name>%s</name>\n        <generated_locally/>\n"
                   "        <upload_when_present/>\n        <max_nbytes>5000000</max_nbytes>\n"
                   "        <url>http://127.0.0.1/test_cgi/file_upload_handler</url>\n"
                   "    </file_info>\n    <result>\n        <file_ref>\n"
                   "            <file_name>%s</file_name>\n"
                   "            <open_name>out</open_name>\n        </file_ref>\n"
                   "    </result>" % (out, out))
        rid = self.execute(
            "INSERT INTO result (create_time, workunitid, server_state, name, xml_doc_in, "
            "appid, hostid, userid, sent_time, report_deadline, app_version_id, random) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 7)",
            (int(time.time()), wuid, state, rname, res_xml, app["id"], hostid, userid,
             sent_time, report_deadline, av["id"] if state != 2 else 0))
        return wuid, rid


def with_code_sign_key(data, key):
    """A request (bytes) whose <code_sign_key> block holds ``key`` instead."""
    text = data.decode()
    start = text.index("<code_sign_key>") + len("<code_sign_key>")
    end = text.index("</code_sign_key>")
    return (text[:start] + "\n" + key.strip() + "\n" + text[end:]).encode()


@pytest.fixture
def sched_env(mini_project, db_root_params):
    """mini_project plus: code-signing keys, the app version (id 1) of
    example_app, the captured client's and the reference server's users,
    config as make_project writes it (min_sendwork_interval 0 here)."""
    from boincpy.config import write_config, load_config
    root = mini_project
    private, public = code_sign_keys()
    (root / "keys" / "code_sign_private").write_text(private)
    (root / "keys" / "code_sign_public").write_text(public)
    cfg = load_config(str(root))
    opts = cfg.as_options()
    opts.update({"daily_result_quota": 500, "max_wus_to_send": 50, "send_result_abort": 1,
                 "dont_generate_upload_certificates": 1, "ignore_upload_certificates": 1})
    write_config(str(root), opts)
    env = SchedEnv(root, db_root_params)
    app = env.app()
    plat = env.platform()
    env.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                "xml_doc, plan_class) VALUES (%s, %s, 100, %s, %s, '')",
                (1700000000, app["id"], plat["id"], APP_VERSION_XML))
    env.add_user(CLIENT_AUTH, name="tester", email="tester@example.com")
    env.add_user(REFERENCE_AUTH, name="refuser", email="refuser@example.com")
    yield env
    env.close_array()
    env.conn.close()


# -- the reference server's project, as far as its replies show it ----------------

def reference_code_sign_key():
    """The reference project's public code-signing key (from its first reply)."""
    text = fixture_text(REFERENCE, "sched", "01_attach_first_rpc.reply.xml").decode()
    start = text.index("<code_sign_key>\n") + len("<code_sign_key>\n")
    return text[start:text.index("\n</code_sign_key>")] + "\n"


def reference_app_version_xml():
    """app_version.xml_doc of the reference project's example_app 1.0."""
    text = fixture_text(REFERENCE, "sched", "01_attach_first_rpc.reply.xml").decode()
    start = text.index("<file_info>\n    <name>example_app")
    end = text.index("    <platform>", start)
    return text[start:end] + "</app_version>"




def reference_gui_urls():
    """The reference project's gui_urls.xml, recovered from its reply by undoing
    the scheduler's substitutions (the removed <ifteam> block left its indent)."""
    text = fixture_text(REFERENCE, "sched", "04_work_fetch_no_work_available.reply.xml").decode()
    text = text[text.index("<gui_urls>"):text.index("</scheduler_reply>")]
    text = text.replace("Reference Project", "<project_name/>")
    text = text.replace("http://127.0.0.1:8800/refproj/", "<master_url/>")
    text = text.replace("userid=1&auth=1_9536fbc73342772121238dbca7b4cc11",
                        "userid=<userid/>&auth=<rss_auth/>")
    text = text.replace("results.php?userid=1<", "results.php?userid=<userid/><")
    return text.replace("    \n</gui_urls>", "    <ifteam><gui_url><name>Team <team_name/>"
                        "</name><url><master_url/>team_display.php?teamid=<teamid/></url>"
                        "</gui_url></ifteam>\n</gui_urls>")


def reference_reply(name, rss_auth):
    """A captured C++ reply with the notices-feed key of our test user (the
    reference user's password hash isn't known)."""
    text = fixture_text(REFERENCE, "sched", name).decode()
    return text.replace("1_9536fbc73342772121238dbca7b4cc11", rss_auth)


def reference_wu_xml(n, bucket, md5):
    """workunit.xml_doc of the reference project's uc_init_N."""
    return ("<file_info>\n    <name>in_%d.txt</name>\n"
            "    <url>http://127.0.0.1:8800/refproj/download/%s/in_%d.txt</url>\n"
            "    <md5_cksum>%s</md5_cksum>\n    <nbytes>75</nbytes>\n</file_info>\n"
            "<workunit>\n<command_line>\n\n</command_line>\n<file_ref>\n"
            "    <file_name>in_%d.txt</file_name>\n    <open_name>in</open_name>\n"
            "</file_ref>\n<command_line>\n-cpu_time 30\n</command_line>\n</workunit>"
            % (n, bucket, n, md5, n))


def reference_result_xml(out):
    """result.xml_doc_in with output file ``out`` (the example_app_out template)."""
    return ("<file_info>\n        <name>%s</name>\n        <generated_locally/>\n"
            "        <upload_when_present/>\n        <max_nbytes>5000000</max_nbytes>\n"
            "        <url>http://127.0.0.1:8800/refproj_cgi/file_upload_handler</url>\n"
            "    </file_info>\n    <result>\n        <file_ref>\n"
            "            <file_name>%s</file_name>\n            <open_name>out</open_name>\n"
            "        </file_ref>\n    </result>" % (out, out))


def add_reference_job(env, n, bucket, md5, out, state=2, hostid=0, userid=0, sent_time=0,
                      report_deadline=0):
    """Workunit uc_init_N and result uc_init_N_0 as the reference project had them."""
    app = env.app()
    wuid = env.execute(
        "INSERT INTO workunit (id, create_time, appid, name, xml_doc, rsc_fpops_est, "
        "rsc_fpops_bound, rsc_memory_bound, rsc_disk_bound, delay_bound, min_quorum, "
        "target_nresults, max_error_results, max_total_results, max_success_results, "
        "result_template_file, transition_time) VALUES (%s, 1795334700, %s, %s, %s, 3.6e12, "
        "8.64e13, 5e8, 1e9, 604800, 1, 1, 3, 10, 6, 'templates/example_app_out', %s)",
        (n, app["id"], "uc_init_%d" % n, reference_wu_xml(n, bucket, md5),
         report_deadline or 2147483647))
    rid = env.execute(
        "INSERT INTO result (id, create_time, workunitid, server_state, name, xml_doc_in, "
        "appid, hostid, userid, sent_time, report_deadline, app_version_id, random) "
        "VALUES (%s, 1795334700, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 7)",
        (n, wuid, state, "uc_init_%d_0" % n, reference_result_xml(out), app["id"], hostid,
         userid, sent_time, report_deadline, 1 if state != 2 else 0))
    return wuid, rid


@pytest.fixture
def ref_env(mini_project, db_root_params):
    """A project set up as the reference server's was when it captured its
    replies: same name, URLs, code-signing key, gui_urls.xml, app version,
    user 1 (refuser) and host 1."""
    from boincpy.config import load_config, write_config
    root = mini_project
    (root / "keys" / "code_sign_public").write_text(reference_code_sign_key())
    (root / "gui_urls.xml").write_text(reference_gui_urls())
    cfg = load_config(str(root))
    opts = cfg.as_options()
    opts.update({"long_name": "Reference Project",
                 "master_url": "http://127.0.0.1:8800/refproj/",
                 "download_url": "http://127.0.0.1:8800/refproj/download",
                 "upload_url": "http://127.0.0.1:8800/refproj_cgi/file_upload_handler",
                 "min_sendwork_interval": 6, "max_wus_to_send": 50,
                 "daily_result_quota": 500, "send_result_abort": 1,
                 "one_result_per_user_per_wu": 0,
                 "dont_generate_upload_certificates": 1, "ignore_upload_certificates": 1})
    write_config(str(root), opts)
    env = SchedEnv(root, db_root_params)
    env.execute("UPDATE app SET user_friendly_name = 'Example Application (uc2)'")
    app, plat = env.app(), env.platform()
    env.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                "xml_doc, plan_class) VALUES (1795334700, %s, 100, %s, %s, '')",
                (app["id"], plat["id"], reference_app_version_xml()))
    env.add_user(REFERENCE_AUTH, name="refuser", email="refuser@example.com",
                 create_time=1795334708, passwd_hash="$2y$10$notthereferencehash")
    env.add_host(1, create_time=1795334730, rpc_seqno=3, rpc_time=int(time.time()) - 12,
                 host_cpid="afbb1cfa612e18dad38f8dbcb57f1971", expavg_time=1795334730.0)
    yield env
    env.close_array()
    env.conn.close()


def check_client_needs(root, client_platforms, expect_key=False):
    """scheduler-protocol.md §6.4: what a stock client needs before it runs a
    job, checked on a strictly parsed <scheduler_reply> (ElementTree root).
    Returns the result names found."""
    if expect_key:
        key = root.findtext("code_sign_key") or ""
        assert key.strip().startswith("1024\n") and key.strip().endswith(".")
    apps = {a.findtext("name") for a in root.findall("app")}
    files = {f.findtext("name"): f for f in root.findall("file_info")}
    versions = {}
    for av in root.findall("app_version"):
        assert av.findtext("app_name") in apps
        platform = av.findtext("platform")
        assert platform in client_platforms
        assert float(av.findtext("flops")) > 0
        mains = [r for r in av.findall("file_ref") if r.find("main_program") is not None]
        assert len(mains) == 1
        for ref in av.findall("file_ref"):
            fi = files[ref.findtext("file_name")]
            assert fi.findtext("url") and int(fi.findtext("nbytes")) > 0
            assert (fi.findtext("file_signature") or "").strip().endswith(".")
        assert files[mains[0].findtext("file_name")].find("executable") is not None
        versions[(av.findtext("app_name"), platform, av.findtext("version_num"),
                  av.findtext("plan_class") or "")] = av
    wus = {}
    for wu in root.findall("workunit"):
        for tag in ("rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound"):
            assert float(wu.findtext(tag)) > 0
        assert wu.findtext("app_name")
        for ref in wu.findall("file_ref"):
            fi = files[ref.findtext("file_name")]
            url = fi.findtext("url")
            assert url and "file_upload_handler" not in url
            assert int(fi.findtext("nbytes")) >= 0 and len(fi.findtext("md5_cksum")) == 32
        wus[wu.findtext("name")] = wu
    names = []
    for res in root.findall("result"):
        wu = wus[res.findtext("wu_name")]
        assert int(res.findtext("report_deadline")) > time.time()
        key = (wu.findtext("app_name"), res.findtext("platform"), res.findtext("version_num"),
               res.findtext("plan_class") or "")
        assert key in versions, key
        for ref in res.findall("file_ref"):
            fi = files[ref.findtext("file_name")]
            assert "file_upload_handler" in fi.findtext("url")
            assert float(fi.findtext("max_nbytes")) > 0
        names.append(res.findtext("name"))
    return names


# -- a made project served by Apache ------------------------------------------------

APP_FILE = "example_app_1.0_" + PLATFORM
# A non-API app as a shell script: it follows the client's soft-link files to
# the input and output (the example templates have no <copy_file/>), upper-
# cases the input and leaves the finish marker BOINC needs.
SCRIPT_APP = r"""#!/bin/sh
link() { sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' "$1"; }
tr a-z A-Z < "$(link in)" > "$(link out)"
echo 0 > boinc_finish_called
exit 0
"""


def run_tool(p, tool, *args, input=""):
    """Run PROJECT/bin/TOOL in the project directory; fail the test if it fails."""
    proc = subprocess.run([p.bin(tool)] + list(args), cwd=p.root, input=input,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


class Site:
    """A made project served by a private Apache: POST to its scheduler, read
    its rows, add jobs, run its feeder (see tests/test_sched_apache.py)."""

    def __init__(self, apache):
        self.apache = apache
        self.p = apache.project
        self.feeder = None

    def post(self, data):
        url = urlsplit(self.apache.scheduler_url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        conn.request("POST", url.path, data, {
            "User-Agent": "BOINC client (x86_64-pc-linux-gnu 7.20.5)", "Accept": "*/*",
            "Accept-Encoding": "deflate, gzip, br, zstd",
            "Content-Type": "application/x-www-form-urlencoded"})
        resp = conn.getresponse()
        body = resp.read()
        headers = dict(resp.getheaders())
        conn.close()
        return resp.status, headers, body

    def rows(self, sql, params=()):
        db = self.p.connect()
        try:
            return db.query(sql, params)
        finally:
            db.close()

    def execute(self, sql, params=()):
        db = self.p.connect()
        try:
            return db.execute(sql, params)
        finally:
            db.close()

    def add_job(self, name):
        """A job made the operator's way: stage_file, create_work, then one pass
        of the transitioner, which creates its first result (UNSENT)."""
        src = os.path.join(self.p.root, "in_" + name)
        with open(src, "w") as f:
            f.write("hello from %s\n" % name)
        run_tool(self.p, "stage_file", "--copy", src)
        run_tool(self.p, "create_work", "--appname", "example_app", "--wu_name", name,
                 "in_" + name)
        wu = self.rows("SELECT * FROM workunit WHERE name = %s", (name,))[0]
        run_tool(self.p, "transitioner", "--wu_id", str(wu["id"]))
        assert self.rows("SELECT server_state FROM result WHERE workunitid = %s",
                         (wu["id"],)) == [{"server_state": 2}]
        return wu

    def start_feeder(self):
        from boincpy import shmem
        log = open(self.p.path("log_" + self.p.cfg.host, "feeder.log"), "a")
        self.feeder = subprocess.Popen([self.p.bin("feeder"), "-d", "3", "--sleep_interval",
                                        "1"], cwd=self.p.root, stdout=log, stderr=log)
        for _ in range(100):
            try:
                shmem.attach(self.p.cfg, wait_ready=0.2).close()
                return
            except Exception:
                time.sleep(0.1)
        raise AssertionError("the feeder made no job array")

    def wait_present(self, n):
        from boincpy import shmem
        for _ in range(100):
            array = shmem.attach(self.p.cfg)
            try:
                if array.n_present >= n:
                    return
            finally:
                array.close()
            time.sleep(0.1)
        raise AssertionError("the feeder didn't cache %d jobs" % n)

    def install_script_app(self, app="example_app"):
        """See :func:`install_script_app`."""
        install_script_app(self.p, app)

    def stop_feeder(self):
        if self.feeder is not None:
            self.feeder.terminate()
            self.feeder.wait(20)
            self.feeder = None


def install_script_app(p, app="example_app"):
    """Register the apps of project ``p``'s project.xml (xadd) and SCRIPT_APP
    as ``app``'s version 1.0 for Linux (update_versions)."""
    run_tool(p, "xadd")
    app_dir = p.path("apps", app, "1.0", PLATFORM)
    os.makedirs(app_dir)
    path = os.path.join(app_dir, "%s_1.0_%s" % (app, PLATFORM))
    with open(path, "w") as f:
        f.write(SCRIPT_APP)
    os.chmod(path, 0o755)
    run_tool(p, "update_versions", "--noconfirm")


@pytest.fixture
def apache_site(apache):
    s = Site(apache)
    s.install_script_app()
    s.execute("INSERT INTO user (create_time, email_addr, name, authenticator, passwd_hash, "
              "global_prefs, project_prefs, venue, cross_project_id) VALUES "
              "(1700000000, 'tester@example.com', 'tester', %s, 'x', '', '', '', '')",
              (CLIENT_AUTH,))
    yield s
    s.stop_feeder()


