"""The periodic tasks make_project installs: update_stats, antique_file_deleter,
db_dump -- against the real MariaDB, with real files."""

import contextlib
import gzip
import hashlib
import io
import os
import pwd
import re
import subprocess
import sys
import time
import zipfile

import pytest
from lxml import etree

from backend_util import REPO, bin_env, insert, make_result, make_wu, project_db
from boincpy.config import load_config, write_config
from boincpy.daemons import update_stats as update_stats_module
from boincpy.daemons.antique_file_deleter import AntiqueFileDeleter, antique_limit
from boincpy.daemons.base import run_daemon
from boincpy.daemons.db_dump import DEFAULT_SPEC, DbDump, parse_dump_spec
from boincpy.daemons.update_stats import UpdateStats
from boincpy.errors import ToolError

DAY = 86400.0
WEEK = 7 * DAY


def run_task(cls, project, *args, cwd=None):
    """Run a task in-process (as bin/NAME would); return (status, log text)."""
    err = io.StringIO()
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stderr(err):
            status = run_daemon(cls, ["--project_dir", str(project)] + list(args))
    finally:
        os.chdir(old)
    return status, err.getvalue()


def set_options(project, **options):
    cfg = load_config(str(project))
    opts = cfg.as_options()
    opts.update(options)
    write_config(str(project), opts, cfg.daemons, cfg.tasks)


def make_user(db, name, **cols):
    values = dict(email_addr=name + "@example.org", name=name, authenticator="auth_" + name,
                  cross_project_id="xp" + name)
    values.update(cols)
    return insert(db, "user", values)


def make_host(db, userid, **cols):
    values = dict(userid=userid, misc="", domain_name="h%d" % userid)
    values.update(cols)
    return insert(db, "host", values)


def row(db, table, rid):
    return db.query_one("SELECT * FROM %s WHERE id = %%s" % table, (rid,))


# ---------------------------------------------------------------------------
# update_stats

def test_update_stats_decays_idle_averages_with_a_week_half_life(mini_project):
    cfg, db = project_db(mini_project)
    now = time.time()
    week_ago = make_user(db, "week", expavg_credit=100.0, expavg_time=now - WEEK)
    recent = make_user(db, "recent", expavg_credit=100.0, expavg_time=now - 3600)
    tiny = make_user(db, "tiny", expavg_credit=0.05, expavg_time=now - 30 * DAY)
    never = make_user(db, "never", expavg_credit=10.0, expavg_time=0)
    host = make_host(db, week_ago, expavg_credit=80.0, expavg_time=now - 2 * WEEK)
    team = insert(db, "team", dict(name="t1", userid=week_ago, expavg_credit=40.0,
                                   expavg_time=now - WEEK, nusers=5))
    quiet_team = insert(db, "team", dict(name="t2", userid=recent, expavg_credit=0.05,
                                         expavg_time=now - WEEK, nusers=7))
    db.execute("UPDATE user SET teamid = %s WHERE id IN (%s, %s)", (team, week_ago, recent))
    av = insert(db, "app_version", dict(appid=1, version_num=100, platformid=1,
                                        expavg_credit=0.05, expavg_time=now - WEEK))

    status, log = run_task(UpdateStats, mini_project, "-d", "3")
    assert status == 0, log
    after = time.time()

    # one half-life: half; two: a quarter (to the second the row was written)
    u = row(db, "user", week_ago)
    assert now - 1 <= u["expavg_time"] <= after
    assert u["expavg_credit"] == pytest.approx(
        100.0 * 0.5 ** ((u["expavg_time"] - (now - WEEK)) / WEEK), rel=1e-9)
    assert u["expavg_credit"] == pytest.approx(50.0, abs=0.01)
    h = row(db, "host", host)
    assert h["expavg_credit"] == pytest.approx(20.0, abs=0.01)
    t = row(db, "team", team)
    assert t["expavg_credit"] == pytest.approx(20.0, abs=0.01)
    a = row(db, "app_version", av)
    assert a["expavg_credit"] == pytest.approx(0.025, abs=1e-5)      # avs: any credit > 0
    # credited an hour ago (< --min_age 1 day): left alone
    assert row(db, "user", recent)["expavg_credit"] == 100.0
    assert row(db, "user", recent)["expavg_time"] == pytest.approx(now - 3600)
    # at most 0.1: left alone
    assert row(db, "user", tiny)["expavg_credit"] == 0.05
    # no expavg_time yet: BOINC's update_average keeps the average, starts the clock
    n = row(db, "user", never)
    assert n["expavg_credit"] == 10.0 and now - 1 <= n["expavg_time"] <= after
    # nusers recounted for active teams only, the change logged as BOINC logs it
    assert t["nusers"] == 2
    assert "updating member count for [TEAM#%d]: database has 5 users, count shows 2" % team \
        in log
    assert row(db, "team", quiet_team)["nusers"] == 7
    for what in ("users", "hosts", "teams", "app versions"):
        assert "Updated %s" % what in log
    assert "[normal] Finished" in log and "CRITICAL" not in log.replace(
        "[CRITICAL] updating member count", "")
    db.close()


def test_update_stats_options_choose_tables_and_min_age(mini_project):
    cfg, db = project_db(mini_project)
    now = time.time()
    u = make_user(db, "u", expavg_credit=100.0, expavg_time=now - 3600)
    h = make_host(db, u, expavg_credit=100.0, expavg_time=now - WEEK)
    status, log = run_task(UpdateStats, mini_project, "--update_users", "-min_age", "0")
    assert status == 0, log
    user = row(db, "user", u)
    # an hour of decay: 2^(-1/168)
    assert user["expavg_credit"] == pytest.approx(
        100.0 * 2 ** (-(user["expavg_time"] - (now - 3600)) / WEEK), rel=1e-9)
    assert 99.58 < user["expavg_credit"] < 99.59
    assert row(db, "host", h)["expavg_credit"] == 100.0     # hosts not asked for
    assert "Updated hosts" not in log and "Updated users (1 row decayed)" in log
    # a run right after finds nothing to do under the default min_age
    status, log = run_task(UpdateStats, mini_project)
    assert status == 0 and "Updated users (0 rows decayed)" in log
    assert "Updated hosts (1 row decayed)" in log
    db.close()


def test_update_stats_works_in_batches_across_many_rows(mini_project):
    cfg, db = project_db(mini_project)
    now = time.time()
    n = 2 * update_stats_module.BATCH + 37
    db.insert_many("host", ("userid", "misc", "expavg_credit", "expavg_time"),
                   [(1, "", 10.0 + i, now - WEEK) for i in range(n)])
    status, log = run_task(UpdateStats, mini_project, "--update_hosts")
    assert status == 0, log
    assert "Updated hosts (%d rows decayed)" % n in log
    rows = db.query("SELECT expavg_credit, expavg_time FROM host ORDER BY id")
    assert len(rows) == n
    for i, r in enumerate(rows):
        assert r["expavg_credit"] == pytest.approx(
            (10.0 + i) * 0.5 ** ((r["expavg_time"] - (now - WEEK)) / WEEK), rel=1e-9)
    db.close()


def test_update_stats_never_overwrites_credit_granted_meanwhile(mini_project, monkeypatch):
    """A validator granting credit between update_stats' read and write wins."""
    cfg, db = project_db(mini_project)
    now = time.time()
    granted = make_user(db, "granted", expavg_credit=100.0, expavg_time=now - WEEK)
    idle = make_user(db, "idle", expavg_credit=100.0, expavg_time=now - WEEK)
    real = update_stats_module.decay_averages
    other = project_db(mini_project)[1]

    def grant_then_write(db_, table, *args, **kw):
        if table == "user":
            # what the validator's transaction writes for a grant right now
            other.execute("UPDATE user SET expavg_credit = 150, expavg_time = %s,"
                          " total_credit = total_credit + 10 WHERE id = %s",
                          (time.time(), granted))
        return real(db_, table, *args, **kw)

    monkeypatch.setattr(update_stats_module, "decay_averages", grant_then_write)
    status, log = run_task(UpdateStats, mini_project, "--update_users")
    assert status == 0, log
    assert row(db, "user", granted)["expavg_credit"] == 150.0
    assert row(db, "user", idle)["expavg_credit"] == pytest.approx(50.0, abs=0.01)
    assert "Updated users (1 row decayed)" in log
    other.close()
    db.close()


def test_update_stats_command_line(mini_project):
    env = bin_env(mini_project)
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "update_stats"),
                           "--update_everything"], env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "--update_everything" in proc.stderr
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "update_stats"),
                           "--min_age", "-5"], env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "--min_age must be 0 or more" in proc.stderr
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "update_stats"), "-h"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0
    for opt in ("--update_users", "--update_teams", "--update_hosts", "--update_avs",
                "--min_age"):
        assert opt in proc.stdout
    # BOINC's stop trigger: the task does nothing
    (mini_project / "stop_daemons").write_text("")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bin", "update_stats")],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "found trigger file stop_daemons" in proc.stderr
    assert "Updated users" not in proc.stderr


# ---------------------------------------------------------------------------
# antique_file_deleter

ME = pwd.getpwuid(os.getuid()).pw_name


def put_file(project, name, age_days, owner_uid=None):
    """A file in the upload hierarchy's bucket 0, modified ``age_days`` ago."""
    path = project / "upload" / "0" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("output\n")
    t = time.time() - age_days * DAY
    os.utime(path, (t, t))
    if owner_uid is not None:
        os.chown(path, owner_uid, -1)
    return path


@pytest.fixture
def antiques(mini_project):
    """mini_project whose web server user is this test's user, with a live
    workunit created 40 days ago and a nodelete one 100 days ago."""
    set_options(mini_project, httpd_user=ME)
    cfg, db = project_db(mini_project)
    now = time.time()
    live_wu = make_wu(db, "live_wu", create_time=int(now - 40 * DAY))
    make_result(db, live_wu, "live_wu_0", create_time=int(now - 39 * DAY))
    make_wu(db, "old_nodelete_wu", create_time=int(now - 100 * DAY))
    files = {
        "orphan": put_file(mini_project, "purged_res_0", 60),
        "orphan2": put_file(mini_project, "other_purged_0", 45),
        "young": put_file(mini_project, "recent_res_0", 10),
        "live_recent": put_file(mini_project, "live_wu_0_0", 35),
        "live_old": put_file(mini_project, "live_wu_0_1", 50),
        "dotfile": put_file(mini_project, ".hidden", 60),
    }
    (mini_project / "upload" / "0" / "a_dir").mkdir()
    os.symlink(files["orphan"], mini_project / "upload" / "0" / "a_link")
    yield mini_project, files, db
    db.close()


def test_antique_limit_is_boincs_rule():
    now = 1_800_000_000
    # a young oldest workunit: 32 days
    assert antique_limit(now, now - 5 * DAY) == now - 32 * 86400
    # an old one: a day before it
    assert antique_limit(now, now - 40 * DAY) == now - 41 * 86400


def test_antique_file_deleter_deletes_only_files_no_job_needs(antiques):
    project, files, db = antiques
    status, log = run_task(AntiqueFileDeleter, project, "--dry_run", "-d", "4")
    assert status == 0, log
    assert all(p.exists() for p in files.values())
    would = re.findall(r"Would delete '([^']+)'", log)
    assert sorted(would) == sorted([str(files["orphan"]), str(files["orphan2"])])
    assert "Would delete 2 antique files" in log

    status, log = run_task(AntiqueFileDeleter, project, "--usleep", "0", "-d", "3")
    assert status == 0, log
    assert not files["orphan"].exists() and not files["orphan2"].exists()
    # younger than 32 days, or than the live workunit (40 days) less a day
    assert files["young"].exists() and files["live_recent"].exists()
    # older, but its result is still in the database: the file deleter's business
    assert files["live_old"].exists()
    assert "Keeping '%s': result live_wu_0 is still in the database" % files["live_old"] in log
    assert files["dotfile"].exists()
    assert (project / "upload" / "0" / "a_dir").is_dir()
    assert os.path.islink(project / "upload" / "0" / "a_link")
    assert "Deleted 2 antique files" in log and "[normal] Done" in log


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_antique_file_deleter_keeps_files_of_other_owners(antiques):
    project, files, db = antiques
    nobody = pwd.getpwnam("nobody").pw_uid
    foreign = put_file(project, "operators_file_0", 60, owner_uid=nobody)
    status, log = run_task(AntiqueFileDeleter, project, "--usleep", "0", "-d", "4")
    assert status == 0, log
    assert foreign.exists() and not files["orphan"].exists()
    assert "wrong owner: id %d" % nobody in log


def test_antique_file_deleter_without_workunits_deletes_nothing(mini_project):
    set_options(mini_project, httpd_user=ME)
    old = put_file(mini_project, "x_0", 400)
    status, log = run_task(AntiqueFileDeleter, mini_project, "--usleep", "0")
    assert status == 0, log
    assert old.exists() and "No workunits in the database" in log


def test_antique_file_deleter_without_fanout_scans_upload_itself(mini_project):
    set_options(mini_project, httpd_user=ME, uldl_dir_fanout=0)
    cfg, db = project_db(mini_project)
    make_wu(db, "wu", create_time=int(time.time()))
    db.close()
    old = mini_project / "upload" / "gone_0"
    old.write_text("x")
    t = time.time() - 40 * DAY
    os.utime(old, (t, t))
    status, log = run_task(AntiqueFileDeleter, mini_project, "--usleep", "0")
    assert status == 0, log
    assert not old.exists()


def test_antique_file_deleter_unknown_web_user_is_a_clear_error(mini_project):
    cfg, db = project_db(mini_project)
    make_wu(db, "wu", create_time=int(time.time()))
    db.close()
    set_options(mini_project, httpd_user="no_such_user_here")
    old = put_file(mini_project, "x_0", 400)
    status, log = run_task(AntiqueFileDeleter, mini_project)
    assert status == 1
    assert "Couldn't find http_user 'no_such_user_here'" in log and old.exists()


# ---------------------------------------------------------------------------
# db_dump

def read_gz(path):
    with gzip.open(path, "rb") as f:
        return f.read().decode("ascii")


@pytest.fixture
def stats_project(mini_project):
    """mini_project with users, hosts, teams (some not exported), the default
    spec in PROJECT/db_dump_spec.xml and a tmp_HOST working directory."""
    (mini_project / "db_dump_spec.xml").write_text(DEFAULT_SPEC)
    (mini_project / "tmp_test").mkdir()
    (mini_project / "html").mkdir()
    cfg, db = project_db(mini_project)
    ids = {}
    ids["u1"] = make_user(db, "Zo\u00eb <A&B>", email_addr="zoe@example.org",
                          cross_project_id="abc123", total_credit=100.5,
                          expavg_credit=12.25, expavg_time=1700000000.5, create_time=1600000000,
                          country="Germany", url="example.org/?a=1&b=2", has_profile=1,
                          show_hosts=1)
    ids["u2"] = make_user(db, "hidden hosts", total_credit=7.0, show_hosts=0)
    ids["u_nocredit"] = make_user(db, "no credit", total_credit=0.0)
    ids["u_deleted"] = make_user(db, "gone", total_credit=5.0, authenticator="deleted_17")
    ids["t1"] = insert(db, "team", dict(name="Team & Co", userid=ids["u1"], total_credit=60.0,
                                        expavg_credit=3.0, expavg_time=1700000001.0,
                                        create_time=1500000000, type=1, country="France",
                                        url="", name_html="<b>T</b>", description=""))
    ids["t_nocredit"] = insert(db, "team", dict(name="Idle", userid=ids["u2"]))
    db.execute("UPDATE user SET teamid = %s WHERE id = %s", (ids["t1"], ids["u1"]))
    ids["h1"] = make_host(db, ids["u1"], total_credit=50.0, expavg_credit=1.5,
                          expavg_time=1700000002.0, p_vendor="GenuineIntel",
                          p_model="Xeon <E5>", os_name="Linux", os_version="6.1",
                          misc="odd ]]> text", create_time=1650000000, rpc_time=1700000000,
                          timezone=3600, p_ncpus=8, p_fpops=4e9, host_cpid="cafe01")
    ids["h2"] = make_host(db, ids["u2"], total_credit=3.0)
    ids["h_deleted"] = make_host(db, ids["u2"], total_credit=3.0, domain_name="deleted")
    ids["h_orphan"] = make_host(db, 0, total_credit=3.0)
    insert(db, "user_deleted", dict(userid=900, public_cross_project_id="pcpid900"))
    insert(db, "host_deleted", dict(hostid=800, public_cross_project_id="hcpid800"))
    db.close()
    return mini_project, ids


def test_db_dump_writes_boincs_files_and_publishes_them(stats_project):
    project, ids = stats_project
    status, log = run_task(DbDump, project, "-d", "3", "--dump_spec", "../db_dump_spec.xml",
                           cwd=project / "tmp_test")
    assert status == 0, log
    assert "db_dump finished" in log and "CRITICAL" not in log
    stats = project / "html" / "stats"
    assert sorted(os.listdir(stats)) == [
        "db_dump.xml", "host.gz", "host_deleted.gz", "tables.xml", "team.gz", "user.gz",
        "user_deleted.gz"]
    assert not (project / "html" / "stats_tmp").exists()
    assert (stats / "db_dump.xml").read_text() == DEFAULT_SPEC

    users = read_gz(stats / "user.gz")
    etree.fromstring(users.encode())                # well-formed
    cpid = hashlib.md5(b"abc123zoe@example.org").hexdigest()
    # no <sort>: in the server's order
    assert users.startswith('<?xml version="1.0" encoding="utf-8"?>\n<users>\n<user>\n')
    assert users.endswith("</user>\n</users>\n")
    records = sorted(re.findall(r"<user>\n.*?</user>\n", users, re.S),
                     key=lambda r: int(re.search(r"<id>(\d+)</id>", r).group(1)))
    assert "".join(records) == (
        "<user>\n"
        " <id>%d</id>\n"
        " <name>Zo&#195;&#171; &lt;A&amp;B></name>\n"
        " <create_time>1600000000</create_time>\n"
        " <total_credit>100.500000</total_credit>\n"
        " <expavg_credit>12.250000</expavg_credit>\n"
        " <expavg_time>1700000000.500000</expavg_time>\n"
        " <cpid>%s</cpid>\n"
        " <country>Germany</country>\n"
        " <url>example.org/?a=1&amp;b=2</url>\n"
        " <teamid>%d</teamid>\n"
        " <has_profile/>\n"
        "</user>\n"
        "<user>\n"
        " <id>%d</id>\n"
        " <name>hidden hosts</name>\n"
        " <create_time>0</create_time>\n"
        " <total_credit>7.000000</total_credit>\n"
        " <expavg_credit>0.000000</expavg_credit>\n"
        " <expavg_time>0.000000</expavg_time>\n"
        " <cpid>%s</cpid>\n"
        "</user>\n" % (ids["u1"], cpid, ids["t1"], ids["u2"],
                        hashlib.md5(b"xphidden hostshidden hosts@example.org").hexdigest()))

    hosts = read_gz(stats / "host.gz")
    tree = etree.fromstring(hosts.encode())
    assert [int(x) for x in tree.xpath("/hosts/host/id/text()")] == [ids["h1"], ids["h2"]]
    h1 = hosts[hosts.index("<host>"):hosts.index("</host>") + 8]
    assert h1 == (
        "<host>\n"
        "    <id>%d</id>\n"
        "    <userid>%d</userid>\n"
        "    <total_credit>50.000000</total_credit>\n"
        "    <expavg_credit>1.500000</expavg_credit>\n"
        "    <expavg_time>1700000002.000000</expavg_time>\n"
        "    <p_vendor>GenuineIntel</p_vendor>\n"
        "    <p_model>Xeon &lt;E5></p_model>\n"
        "    <os_name>Linux</os_name>\n"
        "    <os_version>6.1</os_version>\n"
        "    <misc><![CDATA[odd ]]]]><![CDATA[> text]]></misc>\n"
        "  <create_time>1650000000</create_time>\n"
        "  <rpc_time>1700000000</rpc_time>\n"
        "  <timezone>3600</timezone>\n"
        "  <ncpus>8</ncpus>\n"
        "  <p_fpops>4000000000.000000</p_fpops>\n"
        "  <p_iops>0.000000</p_iops>\n"
        "  <p_membw>0.000000</p_membw>\n"
        "  <m_nbytes>0.000000</m_nbytes>\n"
        "  <m_cache>0.000000</m_cache>\n"
        "  <m_swap>0.000000</m_swap>\n"
        "  <d_total>0.000000</d_total>\n"
        "  <d_free>0.000000</d_free>\n"
        "  <n_bwup>0.000000</n_bwup>\n"
        "  <n_bwdown>0.000000</n_bwdown>\n"
        "  <avg_turnaround>0.000000</avg_turnaround>\n"
        "  <credit_per_cpu_sec>0.000000</credit_per_cpu_sec>\n"
        "  <host_cpid>cafe01</host_cpid>\n"
        "</host>\n" % (ids["h1"], ids["u1"]))
    assert tree.xpath("/hosts/host/misc/text()")[0] == "odd ]]> text"
    # the owner of h2 doesn't show hosts: no <userid>
    assert tree.xpath("/hosts/host[id=%d]/userid" % ids["h2"]) == []

    teams = read_gz(stats / "team.gz")
    assert teams == (
        '<?xml version="1.0" encoding="utf-8"?>\n<teams>\n'
        "<team>\n"
        " <id>%d</id>\n"
        " <type>1</type>\n"
        " <name>Team &amp; Co</name>\n"
        " <userid>%d</userid>\n"
        " <total_credit>60.000000</total_credit>\n"
        " <expavg_credit>3.000000</expavg_credit>\n"
        " <expavg_time>1700000001.000000</expavg_time>\n"
        "  <founder_name>Zo&#195;&#171; &lt;A&amp;B></founder_name>\n"
        " <create_time>1500000000</create_time>\n"
        "<name_html>&lt;b>T&lt;/b></name_html>\n"
        " <country>France</country>\n"
        "</team>\n"
        "</teams>\n" % (ids["t1"], ids["u1"]))
    assert read_gz(stats / "user_deleted.gz") == (
        '<?xml version="1.0" encoding="utf-8"?>\n<users_deleted>\n'
        "<user>\n    <id>900</id>\n    <cpid>pcpid900</cpid>\n</user>\n</users_deleted>\n")
    assert read_gz(stats / "host_deleted.gz") == (
        '<?xml version="1.0" encoding="utf-8"?>\n<hosts_deleted>\n'
        "<host>\n    <id>800</id>\n    <host_cpid>hcpid800</host_cpid>\n</host>\n"
        "</hosts_deleted>\n")

    tables = (stats / "tables.xml").read_text()
    update_time = int(re.search(r"<update_time>(\d+)</update_time>", tables).group(1))
    assert abs(update_time - time.time()) < 60
    assert tables == (
        '<?xml version="1.0" encoding="utf-8"?>\n<tables>\n'
        "    <update_time>%d</update_time>\n"
        "    <nusers_total>2</nusers_total>\n"
        "    <nteams_total>1</nteams_total>\n"
        "    <nhosts_total>2</nhosts_total>\n"
        "    <nusers_deleted_total>1</nusers_deleted_total>\n"
        "    <nhosts_deleted_total>1</nhosts_deleted_total>\n"
        "    <total_credit>107.500000</total_credit>\n"
        "    <applications>\n"
        "        <application>\n"
        "            <name>Example app</name>\n"
        "        </application>\n"
        "    </applications>\n"
        "    <badges>\n"
        "    </badges>\n"
        "</tables>\n" % update_time)

    # the next run moves the previous export aside, dated
    time.sleep(1.1)
    status, log = run_task(DbDump, project, "--dump_spec", "../db_dump_spec.xml",
                           cwd=project / "tmp_test")
    assert status == 0, log
    dated = [d for d in os.listdir(project / "html") if d.startswith("stats_")]
    assert len(dated) == 1 and re.fullmatch(r"stats_\d{4}(_\d{1,2}){5}", dated[0])
    assert (project / "html" / dated[0] / "user.gz").exists()
    assert (stats / "user.gz").exists()


def test_db_dump_keeps_every_dated_copy_as_boinc_does(stats_project):
    """BOINC's db_dump (sched/db_dump.cpp) has no retention option: each run
    moves the previous export to FINAL_DATE (or ARCHIVE_DIR/stats_DATE) and
    removes none of them.  Four runs leave three dated copies."""
    project, _ = stats_project
    html = project / "html"

    def dump(spec="../db_dump_spec.xml"):
        status, log = run_task(DbDump, project, "--dump_spec", spec, cwd=project / "tmp_test")
        assert status == 0, log
        return log

    for _ in range(3):
        dump()
    dated = sorted(d for d in os.listdir(html) if d.startswith("stats_"))
    assert len(dated) == 2 and all((html / d / "user.gz").exists() for d in dated)
    # with <archive_dir> the previous export goes there, the old copies stay
    (project / "archive").mkdir()
    (project / "spec_archive.xml").write_text(DEFAULT_SPEC.replace(
        "<final_output_dir>", "<archive_dir>../archive</archive_dir>\n<final_output_dir>", 1))
    log = dump("../spec_archive.xml")
    archived = os.listdir(project / "archive")
    assert len(archived) == 1 and re.fullmatch(r"stats(_\d+){6,7}", archived[0])
    assert "Previous statistics moved to %s" % (project / "archive" / archived[0]) in log
    assert sorted(d for d in os.listdir(html) if d.startswith("stats_")) == dated
    assert (html / "stats" / "user.gz").exists()


def test_db_dump_exports_only_consenting_users_when_statsexport_is_on(stats_project):
    project, ids = stats_project
    cfg, db = project_db(project)
    ct = insert(db, "consent_type", dict(shortname="STATSEXPORT", enabled=1))
    # u1 consented, then withdrew; u2 refused, then consented
    for userid, when, flag in ((ids["u1"], 100, 1), (ids["u1"], 200, 0),
                               (ids["u2"], 100, 0), (ids["u2"], 300, 1)):
        insert(db, "consent", dict(userid=userid, consent_type_id=ct, consent_time=when,
                                   consent_flag=flag))
    db.close()
    status, log = run_task(DbDump, project, "--dump_spec", "../db_dump_spec.xml",
                           cwd=project / "tmp_test")
    assert status == 0, log
    stats = project / "html" / "stats"
    users = etree.fromstring(read_gz(stats / "user.gz").encode())
    assert [int(x) for x in users.xpath("/users/user/id/text()")] == [ids["u2"]]
    hosts = etree.fromstring(read_gz(stats / "host.gz").encode())
    assert [int(x) for x in hosts.xpath("/hosts/host/id/text()")] == [ids["h2"]]
    # the totals still count every user and host with credit
    tables = (stats / "tables.xml").read_text()
    assert "<nusers_total>2</nusers_total>" in tables
    assert "<nhosts_total>2</nhosts_total>" in tables


def test_db_dump_sorting_numbered_files_zip_and_team_detail(stats_project):
    project, ids = stats_project
    cfg, db = project_db(project)
    make_user(db, "third", total_credit=500.0)
    db.close()
    (project / "spec2.xml").write_text("""<boinc_db_dump_spec>
    <output_dir>../html/out_tmp</output_dir>
    <final_output_dir>../html/out</final_output_dir>
    <enumeration>
        <table>user</table>
        <filename>user_total</filename>
        <sort>total_credit</sort>
        <output>
            <recs_per_file>2</recs_per_file>
        </output>
        <output>
            <compression>zip</compression>
        </output>
    </enumeration>
    <enumeration>
        <table>team</table>
        <filename>team_id</filename>
        <sort>id</sort>
        <output>
            <detail/>
        </output>
    </enumeration>
</boinc_db_dump_spec>
""")
    status, log = run_task(DbDump, project, "--dump_spec", "../spec2.xml",
                           cwd=project / "tmp_test")
    assert status == 0, log
    out = project / "html" / "out"
    assert sorted(os.listdir(out)) == ["db_dump.xml", "tables.xml", "team_id",
                                       "user_total.zip", "user_total_0", "user_total_1"]
    first = etree.parse(str(out / "user_total_0"))
    second = etree.parse(str(out / "user_total_1"))
    credits = [float(x) for x in first.xpath("/users/user/total_credit/text()")
               + second.xpath("/users/user/total_credit/text()")]
    assert credits == [500.0, 100.5, 7.0]
    with zipfile.ZipFile(out / "user_total.zip") as z:
        assert z.namelist() == ["user_total"]
        whole = etree.fromstring(z.read("user_total"))
    assert len(whole.xpath("/users/user")) == 3
    teams = etree.parse(str(out / "team_id"))
    # detail: the team's member users inside the team record
    assert [int(x) for x in teams.xpath("/teams/team/user/id/text()")] == [ids["u1"]]


@pytest.mark.parametrize("spec, message", [
    ("<boinc_db_dump_spec><final_output_dir>x</final_output_dir></boinc_db_dump_spec>",
     "<output_dir> is missing"),
    ("<boinc_db_dump_spec><output_dir>a</output_dir><final_output_dir>b</final_output_dir>"
     "<enumeration><table>result</table><filename>r</filename><output/></enumeration>"
     "</boinc_db_dump_spec>", "<enumeration> 1: <table> is 'result'"),
    ("<boinc_db_dump_spec><output_dir>a</output_dir><final_output_dir>b</final_output_dir>"
     "<enumeration><table>user</table><filename>u</filename><output><compression>rar"
     "</compression></output></enumeration></boinc_db_dump_spec>", "<compression> is 'rar'"),
    ("<boinc_db_dump_spec><output_dir>a</output_dir>", "not well-formed XML"),
])
def test_dump_spec_errors_name_the_problem(spec, message):
    with pytest.raises(ToolError) as info:
        parse_dump_spec(spec.encode(), "spec.xml")
    assert info.value.message.startswith("spec.xml: ") and message in info.value.message


def test_default_spec_is_boincs():
    spec = parse_dump_spec(DEFAULT_SPEC.encode())
    assert (spec.output_dir, spec.final_output_dir) == ("../html/stats_tmp", "../html/stats")
    assert [(e.table, e.filename, e.outputs[0].compression, e.outputs[0].detail)
            for e in spec.enumerations] == [
        ("user", "user", "gzip", False), ("user_deleted", "user_deleted", "gzip", False),
        ("host", "host", "gzip", True), ("host_deleted", "host_deleted", "gzip", True),
        ("team", "team", "gzip", False)]


def test_db_dump_bad_or_missing_spec_fails_clearly_and_publishes_nothing(stats_project):
    project, ids = stats_project
    status, log = run_task(DbDump, project, "--dump_spec", "../nothing.xml",
                           cwd=project / "tmp_test")
    assert status == 1 and "can't read the spec file ../nothing.xml" in log
    status, log = run_task(DbDump, project, cwd=project / "tmp_test")
    assert status == 1 and "no spec file given" in log
    assert not (project / "html" / "stats").exists()


# ---------------------------------------------------------------------------
# The project make_project makes

def test_every_configured_command_is_in_the_projects_bin(made_project):
    """No daemon or task of a new project's config.xml names a program its bin/ lacks."""
    p = made_project
    commands = [spec.cmd for spec in p.cfg.daemons] + [spec.cmd for spec in p.cfg.tasks]
    assert {"update_stats", "antique_file_deleter", "db_dump"} <= {
        c.split()[0] for c in commands}
    for cmd in commands:
        words = cmd.split()
        program = words[1] if words[0] == "run_in_ops" else words[0]
        path = p.bin(program)
        assert os.path.isfile(path) and os.access(path, os.X_OK), cmd
        # and it accepts the options config.xml gives it
        proc = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (cmd, proc.stderr)
        for word in words[1:]:
            if word.startswith("-") and not re.fullmatch(r"-\d+", word):
                assert word.lstrip("-") in proc.stdout, (cmd, word)
    assert os.path.isfile(p.path("db_dump_spec.xml")) and os.path.isdir(p.path("html/stats"))
    assert parse_dump_spec(open(p.path("db_dump_spec.xml"), "rb").read()).enumerations
    conf = open(p.path(p.short_name + ".httpd.conf")).read()
    assert 'Alias "/%s/stats" "%s/html/stats"' % (p.short_name, p.root) in conf
    assert conf.index("/%s/stats" % p.short_name) < conf.index('Alias "/%s" ' % p.short_name)


def _wait_for_logs(log_dir, finished, timeout=120):
    """Wait until each log file holds its final line; return the logs."""
    def read():
        return {name: open(os.path.join(log_dir, name)).read()
                for name in finished if os.path.exists(os.path.join(log_dir, name))}
    deadline = time.time() + timeout
    while time.time() < deadline:
        logs = read()
        if all(last in logs.get(name, "") for name, last in finished.items()):
            break
        time.sleep(0.3)
    logs = read()
    for name, last in finished.items():
        assert last in logs.get(name, ""), logs
        assert "CRITICAL" not in logs[name] and "Traceback" not in logs[name], logs[name]
    return logs


def test_start_cron_runs_the_daily_tasks_of_a_made_project(made_project, apache):
    """bin/start --cron in a new project runs update_stats and
    antique_file_deleter, and skips the disabled db_dump without a word; once
    enabled, db_dump runs too.  Each finishes without an error; Apache serves
    the statistics."""
    p = made_project
    cfg = p.cfg
    host = cfg.local_host
    for d in cfg.daemons:
        d.disabled = True                    # tasks only: no feeder etc.
    write_config(p.path("config.xml"), cfg.as_options(), cfg.daemons, cfg.tasks, mode=0o640)
    db = p.connect()
    now = time.time()
    user = make_user(db, "volunteer", total_credit=20.0, expavg_credit=10.0,
                     expavg_time=now - WEEK)
    make_host(db, user, total_credit=20.0, expavg_credit=10.0, expavg_time=now - WEEK)
    db.close()
    env = dict(os.environ)
    env.pop("BOINC_PROJECT_DIR", None)

    def start(*args):
        proc = subprocess.run([p.bin("start")] + list(args), cwd=p.root, capture_output=True,
                              text=True, env=env, timeout=120)
        assert proc.returncode == 0 and not proc.stderr, proc.stdout + proc.stderr
        return proc.stdout

    start()
    out = start("--cron", "-v")
    assert "Running task: update_stats" in out
    assert "Running task: antique_file_deleter -d 2" in out
    assert "db_dump" not in out                      # disabled: not run, no complaint
    log_dir = p.path("log_" + host)
    _wait_for_logs(log_dir, {"update_stats.out": "[normal] Finished",
                             "antique_file_deleter.out": "[normal] Done"})
    assert not os.path.exists(os.path.join(log_dir, "db_dump.out"))
    with p.connect() as db:
        assert db.query_value("SELECT expavg_credit FROM user WHERE id = %s",
                              (user,)) == pytest.approx(5.0, abs=0.01)

    for t in cfg.tasks:
        t.disabled = False
    write_config(p.path("config.xml"), cfg.as_options(), cfg.daemons, cfg.tasks, mode=0o640)
    out = start("--cron", "-v")
    assert "Running task: db_dump -d 2 --dump_spec ../db_dump_spec.xml" in out
    assert "Not running task because not time yet: update_stats" in out
    _wait_for_logs(log_dir, {"db_dump.out": "db_dump finished"})
    tables = open(p.path("html", "stats", "tables.xml")).read()
    assert "<nusers_total>1</nusers_total>" in tables
    # make_project's empty html/stats was replaced, not archived
    assert [d for d in os.listdir(p.path("html")) if d.startswith("stats")] == ["stats"]
    state = open(p.path("run_state_%s.xml" % host)).read()
    for t in cfg.tasks:
        assert "<cmd>%s</cmd>" % t.cmd in state
    # what stats sites fetch, at MASTER_URL/stats/
    import urllib.request
    with urllib.request.urlopen(p.master_url + "stats/tables.xml", timeout=30) as r:
        assert r.read() == tables.encode()
    with urllib.request.urlopen(p.master_url + "stats/user.gz", timeout=30) as r:
        body = r.read()
    users = etree.fromstring(gzip.decompress(body))
    assert users.xpath("/users/user/name/text()") == ["volunteer"]
