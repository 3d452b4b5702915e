"""make_project against the real MariaDB: layout, config.xml, keys, database,
refusals and clean failure."""

import grp
import os
import pwd
import secrets
import stat
import subprocess
import sys

import MySQLdb
import pytest
from lxml import etree

from boincpy import crypto
from boincpy.config import find_project_dir, load_config
from boincpy.errors import BoincpyError
from boincpy.tools import make_project
from boincpy.web import master

from conftest import TEST_BASE, _db_root_args, drop_db_and_user

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WWW_GID = grp.getgrnam("www-data").gr_gid


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def _repo_files(d):
    out = set()
    for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, d)):
        dirnames[:] = [x for x in dirnames if x != "__pycache__"]
        for name in filenames:
            if name not in (".keep", "make_project") and not name.endswith(".pyc"):
                out.add(os.path.relpath(os.path.join(dirpath, name), os.path.join(REPO, d)))
    return out


def test_layout_and_permissions(made_project):
    p = made_project
    host = p.cfg.host
    for d in ("bin", "cgi-bin", "templates", "apps", "download", "upload", "keys",
              "html/user", "html/ops", "html/cache", "sample_results",
              "log_" + host, "pid_" + host, "tmp_" + host):
        assert os.path.isdir(p.path(d)), d
    # Written by Apache's children and the operator: setgid, group www-data, 2770.
    for d in ("upload", "log_" + host, "html/cache", "time_stats_log"):
        st = os.stat(p.path(d))
        assert st.st_gid == WWW_GID and _mode(p.path(d)) == 0o2770, d
    buckets = os.listdir(p.path("upload"))
    assert len(buckets) == 1024 and "3ff" in buckets and "0" in buckets
    assert all(_mode(p.path("upload", b)) == 0o2770 and
               os.stat(p.path("upload", b)).st_gid == WWW_GID for b in buckets)
    # config.xml holds the database password: owner and www-data group only.
    assert _mode(p.path("config.xml")) == 0o640
    assert os.stat(p.path("config.xml")).st_gid == WWW_GID
    assert _mode(p.path("keys")) == 0o750 and os.stat(p.path("keys")).st_gid == WWW_GID
    for pair in ("upload", "code_sign"):
        assert _mode(p.path("keys", pair + "_private")) == 0o600
        assert _mode(p.path("keys", pair + "_public")) == 0o644
    assert _mode(p.path("html/ops/.htpasswd")) == 0o640
    assert os.stat(p.path("html/ops/.htpasswd")).st_gid == WWW_GID

    # Every repository file of bin/, cgi-bin/, html/ is copied; python
    # scripts point at this interpreter.
    for d in ("bin", "cgi-bin", "html/user", "html/ops"):
        for rel in _repo_files(d):
            assert os.path.isfile(p.path(d, rel)), (d, rel)
    assert not os.path.exists(p.path("bin", "make_project"))
    for d in ("bin", "cgi-bin"):
        for name in _repo_files(d):
            path = p.path(d, name)
            with open(path) as f:
                first = f.readline().rstrip("\n")
            # the CGIs start without site's hooks (-S), its paths on their third line
            assert first == "#!" + sys.executable + (" -S" if d == "cgi-bin" else ""), path
            assert _mode(path) == 0o755
    # ... and import what they need, and no .pth hook or sitecustomize
    probe = p.path("cgi-bin", "probe_imports")
    with open(p.path("cgi-bin", "cgi")) as f:
        head = f.readline() + f.readline() + f.readline()
    with open(probe, "w") as f:
        f.write(head + "import sys, boincpy.sched.handler, boincpy.upload, MySQLdb\n"
                "print(sorted(m for m in ('site', 'sitecustomize', '_distutils_hack')\n"
                "             if m in sys.modules))\n")
    os.chmod(probe, 0o755)
    out = subprocess.run([probe], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and out.stdout == "[]\n", out.stdout + out.stderr
    os.unlink(probe)
    assert os.path.isfile(p.path("cgi-bin", "file_upload_handler"))

    # Master page and scheduler list: both forms, flush left, short lines.
    sched = p.cgi_url + "cgi"
    assert _mode(p.path("html/user/index.php")) == 0o755
    assert not os.path.exists(p.path("html/user/index.html"))
    lines = master.page(load_config(p.root)).splitlines()
    assert '<link rel="boinc_scheduler" href="%s">' % sched in lines
    assert "<!-- <scheduler>%s</scheduler> -->" % sched in lines
    assert all(len(line.encode()) < 256 for line in lines)
    assert p.long_name in "\n".join(lines)
    with open(p.path("html/user/schedulers.txt")) as f:
        assert f.read() == ("<!-- <scheduler>%s</scheduler> -->\n"
                            '<link rel="boinc_scheduler" href="%s">\n' % (sched, sched))

    # project.xml for xadd: BOINC's format, standard platforms, the test app.
    tree = etree.parse(p.path("project.xml"))
    assert tree.getroot().tag == "boinc"
    platforms = tree.xpath("/boinc/platform/name/text()")
    assert "x86_64-pc-linux-gnu" in platforms and "anonymous" in platforms
    assert tree.xpath("/boinc/app/name/text()") == ["example_app"]
    assert os.path.isfile(p.path("templates", "example_app_in"))
    assert os.path.isfile(p.path("templates", "example_app_out"))
    assert os.path.isfile(p.path(p.short_name + ".httpd.conf"))
    assert os.path.isfile(p.path(p.short_name + ".readme"))
    # Nothing left beside the project (the staging directory was renamed).
    assert os.listdir(os.path.dirname(p.root)) == [p.short_name]


def test_config_xml_defaults(made_project):
    p = made_project
    cfg = load_config(p.root)
    base = "http://127.0.0.1:%d/" % p.port
    short = p.short_name
    assert cfg.master_url == base + short + "/"
    assert cfg.download_url == base + short + "/download"
    assert cfg.upload_url == base + short + "_cgi/file_upload_handler"
    assert cfg.cgi_url == base + short + "_cgi/"
    assert cfg.long_name == p.long_name
    assert cfg.db_name == p.db_name and cfg.db_user == p.db_user
    assert cfg.db_passwd == p.db_passwd and cfg.db_passwd
    assert cfg.uldl_dir_fanout == 1024
    assert cfg.download_dir == p.path("download") and cfg.upload_dir == p.path("upload")
    assert cfg.key_dir == p.path("keys") and cfg.app_dir == p.path("apps")
    assert cfg.log_dir == p.path("log_" + cfg.host)
    assert cfg.host == os.uname().nodename.split(".")[0]
    assert cfg.httpd_user == "www-data"
    # boincpy's safe defaults
    assert cfg.one_result_per_user_per_wu is True
    assert cfg.ignore_upload_certificates is False
    assert cfg.dont_generate_upload_certificates is False
    # BOINC make_project's settings
    assert (cfg.min_sendwork_interval, cfg.max_wus_to_send, cfg.daily_result_quota) == (6, 50, 500)
    assert cfg.cache_md5_info and cfg.send_result_abort and cfg.show_results
    assert cfg.sched_debug_level == 3 and cfg.fuh_debug_level == 3
    assert cfg.shmem_key >> 16 == 0x1111 and cfg.shmem_key & 0xffff
    assert [d.cmd for d in cfg.daemons] == [
        "feeder -d 3", "transitioner -d 3", "file_deleter -d 3",
        "sample_trivial_validator -d 3 --app example_app",
        "sample_dummy_assimilator -d 3 --app example_app"]
    tasks = {t.cmd_name(): t for t in cfg.tasks}
    assert tasks["antique_file_deleter"].period == 86400 and not tasks["antique_file_deleter"].disabled
    assert tasks["db_dump"].disabled
    assert not cfg.unknown


def test_keys_are_valid_pairs(made_project):
    texts = set()
    for pair in ("upload", "code_sign"):
        private = crypto.read_key(made_project.path("keys", pair + "_private"))
        public = crypto.read_key(made_project.path("keys", pair + "_public"))
        sig = crypto.sign_string("<name>x</name>", private)
        assert crypto.verify_string("<name>x</name>", sig, public)
        assert not crypto.verify_string("<name>y</name>", sig, public)
        texts.add(open(made_project.path("keys", pair + "_public")).read())
    assert len(texts) == 2


def test_database_and_project_user(made_project, db_root_params):
    from boincpy.db.schema import check_schema
    with made_project.connect() as db:       # as the project's user, with its password
        check_schema(db)
        assert db.query_value("SELECT COUNT(*) FROM platform") == 0
        db.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                   "VALUES (1, 'x', 'y')")
    conn = MySQLdb.connect(**db_root_params)
    cur = conn.cursor()
    cur.execute("SELECT Host FROM mysql.user WHERE User = %s", (made_project.db_user,))
    assert sorted(r[0] for r in cur.fetchall()) == ["127.0.0.1", "localhost"]
    conn.close()
    # As www-data (what Apache's CGIs are): reads config.xml through the
    # group and logs in over the socket with the password.
    code = ("from boincpy.config import load_config; from boincpy.db import connect; "
            "db = connect(load_config()); "
            "print(db.query_value('SELECT COUNT(*) FROM platform'))")
    proc = subprocess.run(["runuser", "-u", "www-data", "--", sys.executable, "-c", code],
                          cwd=made_project.path("cgi-bin"), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"
    # ... but not the private keys.
    proc = subprocess.run(["runuser", "-u", "www-data", "--", "cat",
                           made_project.path("keys", "upload_private")], capture_output=True)
    assert proc.returncode != 0
    proc = subprocess.run(["runuser", "-u", "nobody", "--", "cat",
                           made_project.path("config.xml")], capture_output=True)
    assert proc.returncode != 0


def test_find_project_dir_from_web_directories(made_project, monkeypatch):
    monkeypatch.delenv("BOINC_PROJECT_DIR", raising=False)
    for d in ("cgi-bin", "html/user", "html/ops", "."):
        monkeypatch.chdir(made_project.path(d))
        assert find_project_dir() == made_project.root


def _argv(root, short, db_name, db_user, db_root_params, *extra, passwd=None):
    argv = ["--project_root", root, "--db_name", db_name, "--db_user", db_user,
            "--no_query", "--verbose", "0", "--url_base", "http://127.0.0.1:1/"]
    if passwd:
        argv += ["--db_passwd", passwd]
    return argv + _db_root_args(db_root_params) + list(extra) + [short]


def _run(argv):
    spec = make_project.plan(argv)
    make_project.make_project(spec)
    return spec


def _db_exists(db_root_params, name):
    conn = MySQLdb.connect(**db_root_params)
    try:
        cur = conn.cursor()
        cur.execute("SHOW DATABASES LIKE %s", (name,))
        return cur.fetchone() is not None
    finally:
        conn.close()


def _user_exists(db_root_params, user):
    conn = MySQLdb.connect(**db_root_params)
    try:
        cur = conn.cursor()
        cur.execute("SELECT COUNT(*) FROM mysql.user WHERE User = %s", (user,))
        return cur.fetchone()[0] > 0
    finally:
        conn.close()


@pytest.fixture
def names(db_root_params):
    """Root, short name, db name and db user for a test that runs make_project itself."""
    import shutil
    import tempfile
    os.makedirs(TEST_BASE, exist_ok=True)
    token = secrets.token_hex(4)
    base = tempfile.mkdtemp(prefix="mp-", dir=TEST_BASE)
    os.chmod(base, 0o755)
    n = {"base": base, "root": os.path.join(base, "proj"), "short": "mp" + token,
         "db_name": "bpt_" + token, "db_user": "bpu_" + token}
    yield n
    drop_db_and_user(db_root_params, n["db_name"], n["db_user"])
    shutil.rmtree(base, ignore_errors=True)


def test_refuses_existing_project(made_project, names, db_root_params):
    marker = made_project.path("marker")
    open(marker, "w").write("keep me")
    argv = _argv(made_project.root, made_project.short_name, names["db_name"],
                 names["db_user"], db_root_params)
    with pytest.raises(BoincpyError, match="already exists.*--delete_prev_inst"):
        _run(argv)
    assert open(marker).read() == "keep me"
    assert not _db_exists(db_root_params, names["db_name"])
    assert not _user_exists(db_root_params, names["db_user"])


def test_delete_prev_inst_and_drop_db_first(names, db_root_params):
    passwd = secrets.token_urlsafe(10)
    argv = _argv(names["root"], names["short"], names["db_name"], names["db_user"],
                 db_root_params, passwd=passwd)
    _run(argv)
    old_key = open(os.path.join(names["root"], "keys", "upload_public")).read()
    open(os.path.join(names["root"], "marker"), "w").write("old")
    conn = MySQLdb.connect(db=names["db_name"], **db_root_params)
    conn.cursor().execute("INSERT INTO app (create_time, name, user_friendly_name) "
                          "VALUES (1, 'old_app', 'Old')")
    conn.commit()
    conn.close()

    # --delete_prev_inst alone: the database is still refused, the old project kept.
    with pytest.raises(BoincpyError, match="database .* already exists.*--drop_db_first"):
        _run(argv + ["--delete_prev_inst"])
    assert os.path.exists(os.path.join(names["root"], "marker"))

    _run(argv + ["--delete_prev_inst", "--drop_db_first"])
    assert not os.path.exists(os.path.join(names["root"], "marker"))
    assert open(os.path.join(names["root"], "keys", "upload_public")).read() != old_key
    conn = MySQLdb.connect(db=names["db_name"], **db_root_params)
    cur = conn.cursor()
    cur.execute("SELECT COUNT(*) FROM app")
    assert cur.fetchone()[0] == 0
    conn.close()
    assert sorted(os.listdir(names["base"])) == ["proj"]
    # the reused account still logs in with its password
    MySQLdb.connect(user=names["db_user"], passwd=passwd, db=names["db_name"],
                    unix_socket=db_root_params.get("unix_socket")).close()


def test_drop_db_first_replaces_a_database(names, db_root_params):
    conn = MySQLdb.connect(**db_root_params)
    conn.cursor().execute("CREATE DATABASE `%s`" % names["db_name"])
    conn.cursor().execute("CREATE TABLE `%s`.leftover (x INT)" % names["db_name"])
    conn.close()
    argv = _argv(names["root"], names["short"], names["db_name"], names["db_user"],
                 db_root_params)
    with pytest.raises(BoincpyError, match="already exists"):
        _run(argv)
    assert not os.path.exists(names["root"])
    _run(argv + ["--drop_db_first"])
    conn = MySQLdb.connect(db=names["db_name"], **db_root_params)
    cur = conn.cursor()
    cur.execute("SHOW TABLES")
    tables = {r[0] for r in cur.fetchall()}
    conn.close()
    assert "leftover" not in tables and "workunit" in tables


def test_no_db(names, db_root_params):
    _run(_argv(names["root"], names["short"], names["db_name"], names["db_user"],
               db_root_params, "--no_db"))
    assert not _db_exists(db_root_params, names["db_name"])
    assert not _user_exists(db_root_params, names["db_user"])
    cfg = load_config(names["root"])
    assert cfg.db_name == names["db_name"] and cfg.db_passwd


def test_existing_db_user_is_reused_never_repassworded(names, db_root_params):
    passwd = secrets.token_urlsafe(10)
    conn = MySQLdb.connect(**db_root_params)
    conn.cursor().execute("CREATE USER %s@'localhost' IDENTIFIED BY %s",
                          (names["db_user"], passwd))
    conn.close()
    base = _argv(names["root"], names["short"], names["db_name"], names["db_user"],
                 db_root_params)
    with pytest.raises(BoincpyError, match="already exists: give its password"):
        _run(base)
    with pytest.raises(BoincpyError, match="another password"):
        _run(base[:-1] + ["--db_passwd", "wrong"] + base[-1:])
    assert not os.path.exists(names["root"])
    assert not _db_exists(db_root_params, names["db_name"])
    _run(base[:-1] + ["--db_passwd", passwd] + base[-1:])
    MySQLdb.connect(user=names["db_user"], passwd=passwd, db=names["db_name"],
                    unix_socket=db_root_params.get("unix_socket")).close()


def _leftovers(names, db_root_params):
    return (os.listdir(names["base"]), _db_exists(db_root_params, names["db_name"]),
            _user_exists(db_root_params, names["db_user"]))


@pytest.mark.parametrize("extra, message", [
    (["--url_base", "ftp://example.org/"], "--url_base"),
    (["--httpd_user", "no_such_user_here"], "--httpd_user"),
    (["--ops_user", "admin"], "--ops_passwd"),
    (["--db_root_user", "no_such_admin"], "as no_such_admin (--db_root_user"),
    (["--db_user", "root"], "--db_user root"),
    (["--db_name", "bad-name"], "invalid database name"),
    (["--no_such_option"], "No such option '--no_such_option'"),
    (["--key_dir", '/tmp/a"b'], "--key_dir"),
])
def test_bad_options_change_nothing(names, db_root_params, extra, message):
    argv = _argv(names["root"], names["short"], names["db_name"], names["db_user"],
                 db_root_params)
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "make_project")]
                          + argv[:-1] + extra + argv[-1:], capture_output=True, text=True)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
    assert _leftovers(names, db_root_params) == ([], False, False)


def test_failing_step_removes_everything(names, db_root_params):
    # --key_dir names an existing file: key generation fails after the
    # database and its user were created.
    key_file = os.path.join(names["base"], "not_a_dir")
    open(key_file, "w").close()
    argv = _argv(names["root"], names["short"], names["db_name"], names["db_user"],
                 db_root_params, "--key_dir", os.path.join(key_file, "keys"), "--verbose", "1")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "make_project")] + argv,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "make_project: ERROR:" in proc.stderr and "not_a_dir" in proc.stderr
    assert "Setting up database" in proc.stdout          # it did get that far
    assert _leftovers(names, db_root_params) == (["not_a_dir"], False, False)


def test_cli_single_dash_options_and_help(names, db_root_params):
    script = os.path.join(REPO, "bin", "make_project")
    proc = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "--project_root" in proc.stdout
    argv = _argv(names["root"], names["short"], names["db_name"], names["db_user"],
                 db_root_params, "--no_db")
    argv = [a[1:] if a.startswith("--") and a != "--verbose" else a for a in argv]
    # a password may start with '-'
    argv[-1:-1] = ["-db_passwd", "-starts-with-a-dash"]
    proc = subprocess.run([sys.executable, script] + argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    cfg = load_config(names["root"])
    assert cfg.master_url == "http://127.0.0.1:1/%s/" % names["short"]
    assert cfg.db_passwd == "-starts-with-a-dash"


def test_url_base_drives_every_url(names, db_root_params):
    argv = _argv(names["root"], names["short"], names["db_name"], names["db_user"],
                 db_root_params, "--no_db", "--url_base", "https://boinc.example.org/sub")
    spec = _run(argv)
    short = names["short"]
    cfg = load_config(names["root"])
    base = "https://boinc.example.org/sub/"
    assert cfg.master_url == base + short + "/"
    assert cfg.download_url == base + short + "/download"
    assert cfg.upload_url == base + short + "_cgi/file_upload_handler"
    assert cfg.cgi_url == base + short + "_cgi/"
    assert spec.ops_url == base + short + "_ops/"
    conf = open(os.path.join(names["root"], short + ".httpd.conf")).read()
    root = names["root"]
    assert 'Alias "/sub/%s" "%s/html/user"' % (short, root) in conf
    assert 'Alias "/sub/%s/download" "%s/download"' % (short, root) in conf
    assert 'ScriptAlias "/sub/%s_cgi" "%s/cgi-bin"' % (short, root) in conf
    assert 'Alias "/sub/%s_ops" "%s/html/ops"' % (short, root) in conf
    # the more specific download alias must come before the master page's
    assert conf.index("/sub/%s/download" % short) < conf.index('"/sub/%s" ' % short)
    assert "<scheduler>%s_cgi/cgi</scheduler>" % (base + short) in open(
        os.path.join(root, "html/user/schedulers.txt")).read()


def test_web_only(names, db_root_params):
    _run(_argv(names["root"], names["short"], names["db_name"], names["db_user"],
               db_root_params, "--no_db", "--web_only"))
    root = names["root"]
    assert not os.path.exists(os.path.join(root, "keys"))
    assert os.listdir(os.path.join(root, "cgi-bin")) == []
    assert load_config(root).no_computing is True
    assert os.path.isfile(os.path.join(root, "html/user/index.php"))
    # no computing: no schedulers.txt, so the master page lists no scheduler
    assert not os.path.exists(os.path.join(root, "html/user/schedulers.txt"))
    assert "scheduler" not in master.page(load_config(root))


def test_generated_password_and_owner_group(names, db_root_params):
    spec = _run(_argv(names["root"], names["short"], names["db_name"], names["db_user"],
                      db_root_params))
    assert spec.db_passwd_generated and len(spec.db_passwd) >= 20
    cfg = load_config(names["root"])
    assert cfg.db_passwd == spec.db_passwd
    MySQLdb.connect(user=names["db_user"], passwd=spec.db_passwd, host="127.0.0.1",
                    db=names["db_name"]).close()
    assert os.stat(os.path.join(names["root"], "config.xml")).st_uid == os.geteuid()
    assert pwd.getpwuid(os.stat(os.path.join(names["root"], "upload")).st_uid)


def test_not_root_says_what_the_operator_must_do(names):
    """Run as an ordinary user (nobody): the chgrp to www-data fails, make_project
    still makes the project and prints the command to run as root."""
    nobody = pwd.getpwnam("nobody")
    os.chown(names["base"], nobody.pw_uid, nobody.pw_gid)
    proc = subprocess.run(
        ["runuser", "-u", "nobody", "--", sys.executable,
         os.path.join(REPO, "bin", "make_project"), "--project_root", names["root"],
         "--no_db", "--no_query", "--url_base", "http://127.0.0.1:1/", names["short"]],
        capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    root = names["root"]
    assert "NOTE: could not give these to group www-data" in proc.stdout
    line = [ln for ln in proc.stdout.splitlines() if "chgrp -R www-data" in ln][0]
    listed = set(line.split()[3:])
    for path in ("config.xml", "upload", "keys", "log_" + load_config(root).host,
                 "html/cache", "html/ops/.htpasswd"):
        if os.path.exists(os.path.join(root, path)):
            assert os.path.join(root, path) in listed, path
    assert os.path.join(root, "upload", "0") not in listed      # covered by -R
    assert os.stat(os.path.join(root, "config.xml")).st_uid == nobody.pw_uid
    assert _mode(os.path.join(root, "config.xml")) == 0o640
    assert _mode(os.path.join(root, "keys", "upload_private")) == 0o600


def test_project_tools_work_in_the_made_project(made_project):
    """The copied bin/ tools run with the project's interpreter: xadd reads
    project.xml into the database, stage_file and create_work make a job."""
    p = made_project
    proc = subprocess.run([p.bin("xadd")], cwd=p.root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with p.connect() as db:
        names = {r["name"] for r in db.query("SELECT name FROM platform")}
        assert names == {name for name, _ in make_project.PLATFORMS}
        assert db.query_value("SELECT name FROM app") == "example_app"
    src = os.path.join(p.root, "tmp_" + p.cfg.host, "in_1")
    with open(src, "w") as f:
        f.write("input\n")
    for argv in ([p.bin("stage_file"), src],
                 [p.bin("create_work"), "--appname", "example_app", "--wu_name", "wu_1", "in_1"]):
        proc = subprocess.run(argv, cwd=p.root, capture_output=True, text=True)
        assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
    with p.connect() as db:
        assert db.query_value("SELECT COUNT(*) FROM workunit WHERE name = 'wu_1'") == 1


def test_warns_when_www_data_cannot_reach_the_project(names, db_root_params):
    """A project under a 0700 directory: made, and the run ends with a warning
    naming the directory and the chmod that fixes it."""
    import io
    os.chmod(names["base"], 0o700)
    spec = make_project.plan(_argv(names["root"], names["short"], names["db_name"],
                                   names["db_user"], db_root_params, "--no_db"))
    out = io.StringIO()
    make_project.make_project(spec, out=out)
    text = out.getvalue()
    assert os.path.exists(os.path.join(names["root"], "config.xml"))
    assert ("WARNING: the web server's user www-data can't reach the project (%s)"
            % names["root"]) in text
    assert "%s (mode 0700) is not searchable by www-data" % names["base"] in text
    assert text.rstrip().endswith("    chmod o+x %s" % names["base"])
    # the chmod it names is the fix
    os.chmod(names["base"], 0o700 | 0o001)
    assert make_project.traversal_warning("www-data", names["root"],
                                          make_project.PACKAGE_DIR) == ""
    # the web server's group needs g+x, the owner u+x
    www = pwd.getpwnam("www-data")
    os.chown(names["base"], 0, www.pw_gid)
    os.chmod(names["base"], 0o705)
    assert make_project.untraversable_dirs(names["root"], "www-data") == [
        (names["base"], 0o705, "g+x")]


def test_no_warning_when_www_data_can_reach_the_project(names, db_root_params):
    import io
    spec = make_project.plan(_argv(names["root"], names["short"], names["db_name"],
                                   names["db_user"], db_root_params, "--no_db"))
    out = io.StringIO()
    make_project.make_project(spec, out=out)
    assert "WARNING" not in out.getvalue()
