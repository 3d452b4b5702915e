"""A project prepared for scheduler tests: keys, an app version, users, jobs.

Built on conftest's ``mini_project`` (schema, platform x86_64-pc-linux-gnu,
app example_app).  Test modules import the fixtures they use from here.
"""

import os
import time

import MySQLdb
import MySQLdb.cursors
import pytest

FIXTURES = "/work/shared/fixtures"
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
        self.conn = MySQLdb.connect(db=self.cfg.db_name, autocommit=True, **db_root_params)

    def reload(self):
        from boincpy.config import load_config
        self.cfg = load_config(str(self.root))
        return self.cfg

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


class StubJobArray:
    """Stands in for the feeder's job array until boincpy.shmem exists: it
    only says whether any job is cached."""

    def __init__(self, has_work=False):
        self._has_work = has_work
        self.have_apps_for_proc_type = [True, False, False, False, False]

    def no_work(self, pid=None):
        return not self._has_work


def fixture_text(*parts):
    with open(os.path.join(*parts), "rb") as f:
        return f.read()


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
    env.conn.close()
