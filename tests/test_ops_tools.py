"""The operator tools with BOINC's names and options, run as an operator runs
them (PROJECT/bin/TOOL in a project made by make_project): cancel_jobs,
delete_file, get_file, put_file, appmgr, dir_hier_move, run_in_ops.  Each
with --help, with good input, and with bad input that must change nothing;
the file messages are also followed into a scheduler reply."""

import os
import re
import secrets
import subprocess

import pytest

from sched_env import sched_env  # noqa: F401

TOOLS = ("cancel_jobs", "delete_file", "get_file", "put_file", "appmgr", "dir_hier_move",
         "run_in_ops")


def tool(p, name, *args, cwd=None):
    return subprocess.run([p.bin(name)] + [str(a) for a in args], cwd=cwd or p.root,
                          capture_output=True, text=True, timeout=120)


def q(p, sql, params=()):
    db = p.connect()
    try:
        return db.query(sql, params)
    finally:
        db.close()


def tag():
    return "t" + secrets.token_hex(3)


@pytest.mark.parametrize("name", TOOLS)
def test_each_tool_has_help(shared_project, name):
    proc = tool(shared_project, name, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage: %s" % name in proc.stdout


def _job(p, name):
    """A job made the operator's way: stage its input, create_work, one
    transitioner pass (its first result, unsent).  xadd first: it adds
    project.xml's example_app, and changes nothing when it is there."""
    _ok(tool(p, "xadd"))
    src = p.path("tmp_" + p.cfg.host, "in_" + name)
    with open(src, "w") as f:
        f.write("input of %s\n" % name)
    for argv in (("stage_file", src),
                 ("create_work", "--appname", "example_app", "--wu_name", name, "in_" + name)):
        proc = tool(p, *argv)
        assert proc.returncode == 0, proc.stderr + proc.stdout
    wuid = q(p, "SELECT id FROM workunit WHERE name = %s", (name,))[0]["id"]
    proc = tool(p, "transitioner", "--wu_id", wuid)
    assert proc.returncode == 0, proc.stderr
    return wuid


def _states(p, wuids):
    marks = ", ".join(["%s"] * len(wuids))
    return (q(p, "SELECT id, error_mask FROM workunit WHERE id IN (%s) ORDER BY id" % marks,
              wuids),
            q(p, "SELECT id, server_state, outcome FROM result WHERE workunitid IN (%s) "
                 "ORDER BY id" % marks, wuids))


def test_cancel_jobs(shared_project):
    p = shared_project
    t = tag()
    wuids = [_job(p, "%s_%d" % (t, i)) for i in range(3)]
    before = _states(p, wuids)
    for args, message in ((("5", "3"), "0 < MIN_ID <= MAX_ID"),
                          (("abc", "3"), "must be workunit IDs"),
                          (("7",), "MIN_ID MAX_ID or --name"),
                          (("--name", t + "_nosuch"), "No workunit named"),
                          (("1", "2", "--name", t + "_0"), "either"),
                          (("999999990", "999999999"), "no workunit has an ID")):
        proc = tool(p, "cancel_jobs", *args)
        assert proc.returncode != 0 and message in proc.stderr, (args, proc.stderr)
    assert _states(p, wuids) == before
    proc = tool(p, "cancel_jobs", "--name", t + "_0")
    assert proc.returncode == 0, proc.stderr
    assert "1 workunit(s), 1 unsent result(s)" in proc.stdout
    proc = tool(p, "cancel_jobs", "-name", t + "_0")        # BOINC's single dash, again
    assert proc.returncode == 0
    proc = tool(p, "cancel_jobs", wuids[1], wuids[2])
    assert proc.returncode == 0 and "2 workunit(s), 2 unsent" in proc.stdout
    wus, results = _states(p, wuids)
    assert all(w["error_mask"] & 16 for w in wus)
    assert all((r["server_state"], r["outcome"]) == (5, 5) for r in results)


def _host(p, name):
    db = p.connect()
    try:
        return db.insert("INSERT INTO host (create_time, userid, domain_name, misc) "
                         "VALUES (0, 0, %s, '')", (name,))
    finally:
        db.close()


def _messages(p, hostid):
    return q(p, "SELECT variety, handled, xml FROM msg_to_host WHERE hostid = %s ORDER BY id",
             (hostid,))


def test_delete_file(shared_project):
    p = shared_project
    host = _host(p, tag())
    for args in (("--host_id", host, "--file_name", "../../etc/passwd"),
                 ("--host_id", host, "--file_name", "a<b>"),
                 ("--host_id", 999999999, "--file_name", "x"),
                 ("--host_id", host),
                 ("--file_name", "x"),
                 ("--host_id", "two", "--file_name", "x")):
        proc = tool(p, "delete_file", *args)
        assert proc.returncode != 0 and proc.stderr, args
    assert _messages(p, host) == []
    proc = tool(p, "delete_file", "-host_id", host, "-file_name", "old_data.bin")
    assert proc.returncode == 0, proc.stderr
    assert "<msg_to_host/>" in proc.stderr          # reminder: the scheduler needs it
    assert _messages(p, host) == [{"variety": "delete_file", "handled": 0,
                                   "xml": "<delete_file_info>old_data.bin</delete_file_info>\n"}]


def test_get_file_with_an_upload_certificate(shared_project):
    from boincpy import crypto
    p = shared_project
    host = _host(p, tag())
    for args in (("--url", "ftp://example.org/x"), ("--max_nbytes", "0"),
                 ("--max_latency", "-5"), ("--file_name", "a/b")):
        base = {"--host_id": host, "--file_name": "checkpoint.dat"}
        base[args[0]] = args[1]
        proc = tool(p, "get_file", *[x for kv in base.items() for x in kv])
        assert proc.returncode != 0 and proc.stderr, args
    assert _messages(p, host) == []
    proc = tool(p, "get_file", "--host_id", host, "--file_name", "checkpoint.dat",
                "--max_nbytes", "5e6")
    assert proc.returncode == 0, proc.stderr
    (msg,) = _messages(p, host)
    xml = msg["xml"]
    assert msg["variety"] == "file_xfer"
    assert "<url>%s</url>" % p.cfg.upload_url in xml
    assert "<name>upload_checkpoint.dat</name>" in xml
    assert "<max_nbytes>5000000</max_nbytes>" in xml
    sig = re.search(r"<xml_signature>\n(.*?)</xml_signature>", xml, re.S).group(1)
    key = crypto.read_public_key(os.path.join(p.cfg.key_dir, "upload_public"))
    assert crypto.verify_upload_certificate("checkpoint.dat", 5e6, sig, key)
    assert not crypto.verify_upload_certificate("checkpoint.dat", 5e9, sig, key)


def test_put_file_local_and_remote(shared_project):
    from boincpy.files import dir_hier_url, md5_file
    p = shared_project
    host = _host(p, tag())
    name = tag() + "_table.dat"
    proc = tool(p, "put_file", "--host_id", host, "--file_name", name)
    assert proc.returncode != 0 and "file not found" in proc.stderr
    proc = tool(p, "put_file", "--host_id", host, "--file_name", name,
                "--url", "http://mirror.example.org/" + name)
    assert proc.returncode != 0 and "--md5" in proc.stderr
    assert _messages(p, host) == []
    src = p.path("tmp_" + p.cfg.host, name)
    with open(src, "wb") as f:
        f.write(b"lookup table\n" * 100)
    assert tool(p, "stage_file", src).returncode == 0
    proc = tool(p, "put_file", "--host_id", host, "--file_name", name)
    assert proc.returncode == 0, proc.stderr
    md5, size = md5_file(p.path("download", _bucket(p, name), name))
    xml = _messages(p, host)[0]["xml"]
    assert "<url>%s</url>" % dir_hier_url(p.cfg.download_url, name, 1024) in xml
    assert "<md5_cksum>%s</md5_cksum>\n    <nbytes>%d</nbytes>\n    <sticky/>" % (md5, size) in xml
    proc = tool(p, "put_file", "--host_id", host, "--file_name", "remote.dat",
                "--url", "http://mirror.example.org/remote.dat", "--md5", "0" * 32,
                "--nbytes", "10")
    assert proc.returncode == 0, proc.stderr
    assert "<url>http://mirror.example.org/remote.dat</url>" in _messages(p, host)[1]["xml"]


def _bucket(p, name):
    from boincpy.files import bucket
    return bucket(name, p.cfg.uldl_dir_fanout)


def test_file_tools_stop_on_the_stop_daemons_file(shared_project):
    p = shared_project
    host = _host(p, tag())
    path = p.path("stop_daemons")
    open(path, "w").close()
    try:
        proc = tool(p, "delete_file", "--host_id", host, "--file_name", "x")
    finally:
        os.unlink(path)
    assert proc.returncode == 0 and "Found stop file" in proc.stderr
    assert _messages(p, host) == []


def test_file_messages_reach_the_host_in_the_scheduler_reply(sched_env):  # noqa: F811
    """What the tools queue, the scheduler sends: put_file's sticky download,
    get_file's upload and delete_file's deletion, all in one reply."""
    from test_sched_handler import attach, workfetch
    from boincpy.tools import file_xfer
    env = sched_env
    env.set_options(msg_to_host=1)
    attach(env)
    root = str(env.root)
    with open(os.path.join(root, "download", "tbl.dat"), "wb") as f:
        f.write(b"0123456789")
    env.set_options(msg_to_host=1, uldl_dir_fanout=0)
    for main, extra in ((file_xfer.put_file_main, []), (file_xfer.get_file_main, []),
                        (file_xfer.delete_file_main, [])):
        assert main(["--host_id", "1", "--file_name", "tbl.dat", "--project_dir", root]
                    + extra) == 0
    r = workfetch(env)
    infos = r.root.findall("file_info")
    assert [i.findtext("name") for i in infos][-2:] == ["tbl.dat", "tbl.dat"]
    download = infos[-2]
    assert download.findtext("md5_cksum") == "781e5e245d69b566979b86e28d23f2c7"
    assert download.find("sticky") is not None
    assert "upload_tbl.dat" in [w.findtext("name") for w in r.root.findall("workunit")]
    assert r.root.findtext("delete_file_info") == "tbl.dat"
    assert env.row("SELECT COUNT(*) AS n FROM msg_to_host WHERE handled = 0")["n"] == 0


# ---------------------------------------------------------------------------

def _version_dir(p, app, platform="x86_64-pc-linux-gnu"):
    d = p.path("apps", app, "1.0", platform)
    os.makedirs(d)
    path = os.path.join(d, "%s_1.0_%s" % (app, platform))
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# API_VERSION_7.20.5\necho hi\n")
    os.chmod(path, 0o755)
    return path


def test_appmgr(made_project):
    p = made_project
    _ok(tool(p, "xadd"))
    ok = lambda *a: _ok(tool(p, "appmgr", *a))      # noqa: E731
    out = ok("add", "tool_app", "Tool app", "--weight", "2", "--hr", "fine")
    assert "Added app tool_app" in out
    app = q(p, "SELECT * FROM app WHERE name = 'tool_app'")[0]
    assert (app["weight"], app["homogeneous_redundancy"]) == (2.0, 1)
    assert os.path.exists(p.path("reread_db"))
    _version_dir(p, "tool_app")
    _ok(tool(p, "update_versions", "--noconfirm"))
    av = q(p, "SELECT * FROM app_version WHERE appid = %s", (app["id"],))[0]
    download = p.path("download", "tool_app_1.0_x86_64-pc-linux-gnu")
    assert os.path.isfile(download)
    out = ok("list")
    assert "tool_app: Tool app" in out and "Fine-grained homogeneous redundancy." in out
    assert "\t 1.00 x86_64-pc-linux-gnu" in out
    ok("update", "tool_app", "--beta", "--weight", "3")
    app = q(p, "SELECT * FROM app WHERE name = 'tool_app'")[0]
    assert (app["beta"], app["weight"], app["homogeneous_redundancy"]) == (1, 3.0, 1)
    ok("update_appver", "tool_app", "--platform", "x86_64-pc-linux-gnu",
       "--min_core_version", "7.20.5", "--deprecated")
    av2 = q(p, "SELECT * FROM app_version WHERE id = %s", (av["id"],))[0]
    assert (av2["min_core_version"], av2["deprecated"]) == (72005, 1)
    ok("add_platform", "tool_plat", "A test platform")
    assert "tool_plat" in ok("list_platform", "--short").split()
    ok("update_platform", "tool_plat", "--deprecated")
    assert "tool_plat: A test platform (Deprecated)" in ok("list_platform")

    # bad input: a message, and nothing changes
    snapshot = (q(p, "SELECT * FROM app ORDER BY id"), q(p, "SELECT * FROM app_version"),
                q(p, "SELECT * FROM platform ORDER BY id"))
    _job(p, "appmgr_job")
    for args, message in ((("add", "bad name", "x"), "letters, digits"),
                          (("add", "tool_app", "again"), "already exists"),
                          (("update", "nosuch", "--beta"), "No such application"),
                          (("update", "tool_app"), "nothing to update"),
                          (("update", "tool_app", "--hr", "medium"), "medium"),
                          (("update_appver", "tool_app", "--min_core_version", "seven"),
                           "7.20.5"),
                          (("update_appver", "tool_app", "--platform", "nosuch",
                            "--deprecated"), "Unknown platform"),
                          (("delete", "example_app"), "deprecate it instead"),
                          (("delete_platform", "x86_64-pc-linux-gnu"), "still application"),
                          (("add_platform", "a__b", "x"), "plan class"),
                          (("frobnicate",), "No such command")):
        proc = tool(p, "appmgr", *args)
        assert proc.returncode != 0 and message in proc.stderr, (args, proc.stderr)
    assert (q(p, "SELECT * FROM app ORDER BY id"), q(p, "SELECT * FROM app_version"),
            q(p, "SELECT * FROM platform ORDER BY id")) == snapshot

    out = ok("delete", "tool_app", "--version", "1.0")
    assert "Removed app version tool_app 1.00 x86_64-pc-linux-gnu" in out
    assert not q(p, "SELECT * FROM app_version WHERE appid = %s", (app["id"],))
    assert not os.path.exists(download) and not os.path.exists(p.path("apps", "tool_app", "1.0"))
    assert "Removed app tool_app" in ok("delete", "tool_app")
    assert "Deleted platform tool_plat" in ok("delete_platform", "tool_plat")
    ok("delete_platform", "windows_x86_64")
    out = ok("add_standard_platforms")
    assert "Added platform windows_x86_64" in out and "x86_64-pc-linux-gnu" not in out


def _ok(proc):
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc.stdout


def test_dir_hier_move(shared_project, tmp_path):
    p = shared_project
    src = tmp_path / "flat"
    src.mkdir()
    names = ["%s_%d.in" % (tag(), i) for i in range(5)]
    for n in names:
        (src / n).write_text(n)
    (src / "sub").mkdir()                                   # directories are not moved
    taken = p.path("download", _bucket(p, names[0]), names[0])
    with open(taken, "w") as f:
        f.write("another file")
    proc = tool(p, "dir_hier_move", src, p.path("download"), "1024")
    assert proc.returncode == 1 and "nothing was moved" in proc.stderr
    assert sorted(os.listdir(src)) == sorted(names + ["sub"])
    os.unlink(taken)
    for args in ((src, p.path("download"), "0"), (src, p.path("download"), "many"),
                 (tmp_path / "none", p.path("download"), "1024"), (src, p.path("download"))):
        proc = tool(p, "dir_hier_move", *args)
        assert proc.returncode == 1 and proc.stderr, args
    assert len(os.listdir(src)) == 6
    proc = tool(p, "dir_hier_move", src, p.path("download"), "1024")
    assert proc.returncode == 0 and "moved 5 file(s)" in proc.stdout
    assert os.listdir(src) == ["sub"]
    for n in names:
        where = tool(p, "dir_hier_path", n).stdout.strip()
        assert open(where).read() == n


def test_run_in_ops(shared_project):
    p = shared_project
    tmp = p.path("tmp_" + p.cfg.host)       # where bin/start runs tasks
    env = dict(os.environ, PATH=p.path("bin") + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(["run_in_ops", "size_census.php"], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Starting:" in proc.stdout and "Finished:" in proc.stdout
    proc = tool(p, "run_in_ops", "dbinfo.php", "sort=rows", "order=desc")
    assert proc.returncode == 0 and "Database and disk usage" in proc.stdout
    wuid = _job(p, tag())       # a workunit of its own: the session's project may have none
    before = q(p, "SELECT id, error_mask FROM workunit")
    proc = tool(p, "run_in_ops", "cancel_wu_action.php", "wuid1=%d" % wuid, "wuid2=%d" % wuid)
    assert "Confirm: cancel jobs" in proc.stdout          # a GET shows, never acts
    assert q(p, "SELECT id, error_mask FROM workunit") == before
    for args, message in ((("team_import.php",), "volunteer web site"),
                          (("no_such_script.php",), "no ops script"),
                          (("../../bin/start",), "not the name"),
                          (("dbinfo.php", "sort"), "name=value"),
                          (("dbinfo.php", "sort=nosuch"), "answered 400")):
        proc = tool(p, "run_in_ops", *args)
        assert proc.returncode == 1 and message in proc.stderr, (args, proc.stderr)
