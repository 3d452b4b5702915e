"""bin/xadd and bin/update_versions against MariaDB (the mini_project fixture).

The app_version xml_doc is compared with the text BOINC's tools/update_versions
(PHP) writes for the same files, spelled out here by hand, and with the app
version the C++ reference server sent to the stock client (fixtures).  Its
signatures are checked with code_sign_public, by boincpy and by BOINC's own
C++ code.
"""

import gzip
import io
import os
import re
import stat
import subprocess
import sys

import pytest

from tests.shared_fixtures import fixture_path

from boincpy import crypto
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.tools import apps
from cxx_crypt import boinc_crypt  # noqa: F401  (fixture)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINUX = "x86_64-pc-linux-gnu"
DL = "http://127.0.0.1/test/download"

PROJECT_XML = """<boinc>
    <platform>
        <name>x86_64-pc-linux-gnu</name>
        <user_friendly_name>Linux running on an AMD x86_64 or Intel EM64T CPU</user_friendly_name>
    </platform>
    <platform>
        <name>windows_x86_64</name>
        <user_friendly_name>Microsoft Windows running on an AMD x86_64 or Intel EM64T CPU</user_friendly_name>
    </platform>
    <platform>
        <name>i686-pc-linux-gnu</name>
        <user_friendly_name>Linux running on an Intel x86-compatible CPU</user_friendly_name>
        <deprecated/>
    </platform>
    <app>
        <name>example_app</name>
        <user_friendly_name>Example app</user_friendly_name>
    </app>
    <app>
        <name>worker</name>
        <user_friendly_name>Worker &amp; friends</user_friendly_name>
        <min_version>105</min_version>
        <beta/>
        <weight>2.5</weight>
        <homogeneous_redundancy>2</homogeneous_redundancy>
        <target_nresults>3</target_nresults>
        <non_cpu_intensive>1</non_cpu_intensive>
        <fraction_done_exact/>
        <homogeneous_app_version>0</homogeneous_app_version>
        <locality_scheduling>1</locality_scheduling>
        <n_size_classes>4</n_size_classes>
        <host_scale_check/>
    </app>
</boinc>
"""


def _fixtures():
    """The reference server's captured fixtures."""
    return fixture_path("reference-server")


def tool(name, *args, cwd=None, input=""):
    return subprocess.run([sys.executable, os.path.join(REPO, "bin", name)]
                          + [str(a) for a in args], cwd=cwd, input=input,
                          capture_output=True, text=True)


def rows(root, sql, params=()):
    db = connect(load_config(str(root)))
    try:
        return db.query(sql, params)
    finally:
        db.close()


def count(root, table):
    return rows(root, "SELECT COUNT(*) AS n FROM %s" % table)[0]["n"]


# ---------------------------------------------------------------------------
# xadd

def test_xadd_inserts_platforms_and_apps(mini_project):
    (mini_project / "project.xml").write_text(PROJECT_XML)
    proc = tool("xadd", cwd=mini_project)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert "platform x86_64-pc-linux-gnu already in DB" not in out   # its friendly name differed
    assert "updated user friendly name of platform x86_64-pc-linux-gnu" in out
    assert "added platform: windows_x86_64" in out
    assert "added platform: i686-pc-linux-gnu" in out
    assert "app example_app already in DB" in out
    assert "added app: worker" in out
    plats = {r["name"]: r for r in rows(mini_project, "SELECT * FROM platform")}
    assert set(plats) == {LINUX, "windows_x86_64", "i686-pc-linux-gnu"}
    assert plats[LINUX]["user_friendly_name"] == \
        "Linux running on an AMD x86_64 or Intel EM64T CPU"
    assert plats["i686-pc-linux-gnu"]["deprecated"] == 1
    assert plats["windows_x86_64"]["deprecated"] == 0
    assert plats["windows_x86_64"]["create_time"] > 1700000000
    w = rows(mini_project, "SELECT * FROM app WHERE name = 'worker'")[0]
    assert w["user_friendly_name"] == "Worker & friends"
    assert (w["min_version"], w["beta"], w["weight"], w["homogeneous_redundancy"],
            w["target_nresults"], w["non_cpu_intensive"], w["fraction_done_exact"],
            w["homogeneous_app_version"], w["locality_scheduling"], w["n_size_classes"],
            w["host_scale_check"], w["deprecated"]) == (105, 1, 2.5, 2, 3, 1, 1, 0, 1, 4, 1, 0)


def test_xadd_is_idempotent_and_updates_like_boinc(mini_project):
    (mini_project / "project.xml").write_text(PROJECT_XML)
    assert tool("xadd", cwd=mini_project).returncode == 0
    before = rows(mini_project, "SELECT * FROM app ORDER BY id"), \
        rows(mini_project, "SELECT * FROM platform ORDER BY id")
    again = tool("xadd", cwd=mini_project)
    assert again.returncode == 0
    assert again.stdout.splitlines() == [
        "platform x86_64-pc-linux-gnu already in DB", "platform windows_x86_64 already in DB",
        "platform i686-pc-linux-gnu already in DB", "app example_app already in DB",
        "app worker already in DB"]
    assert (rows(mini_project, "SELECT * FROM app ORDER BY id"),
            rows(mini_project, "SELECT * FROM platform ORDER BY id")) == before
    # friendly name and min_version are brought up to date; other fields are kept
    changed = PROJECT_XML.replace("Worker &amp; friends", "Worker").replace(
        "<min_version>105", "<min_version>106").replace("<weight>2.5", "<weight>7")
    (mini_project / "project.xml").write_text(changed)
    proc = tool("xadd", cwd=mini_project)
    assert proc.returncode == 0
    assert "updated user friendly name of app worker" in proc.stdout
    assert "updated min_version of app worker" in proc.stdout
    assert "not changed: weight (DB 2.5, project.xml 7)" in proc.stdout
    w = rows(mini_project, "SELECT * FROM app WHERE name = 'worker'")[0]
    assert (w["user_friendly_name"], w["min_version"], w["weight"]) == ("Worker", 106, 2.5)
    assert count(mini_project, "app") == 2


@pytest.mark.parametrize("text, where, what", [
    ("<boinc><platform><name>a</name></platform>\n<app><name>b</name>\n</boinc>",
     "line 3", "malformed XML"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<app>\n<nmae>x</nmae></app></boinc>",
     "line 4", "unknown element <nmae>"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<app><user_friendly_name>x"
     "</user_friendly_name></app></boinc>", "line 3", "without a <name>"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<app><name>a</name>\n"
     "<min_version>1.5</min_version></app></boinc>", "line 4", "must be an integer"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<app><name>a</name>\n"
     "<beta>yes</beta></app></boinc>", "line 4", "must be empty or a number"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<app><name>a</name>\n"
     "<target_nresults>99999</target_nresults></app></boinc>", "line 4", "out of range"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<platform><name>p1</name>"
     "</platform></boinc>", "line 3", "already listed at line 2"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<app><name>my app</name></app></boinc>",
     "line 3", "letters, digits"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<platform><name>linux__mt</name>"
     "</platform></boinc>", "line 3", "'__'"),
    ("<projects>\n<platform><name>p1</name></platform></projects>", "line 1", "expected <boinc>"),
    ("<boinc>\n<platform><name>p1</name></platform>\n<user><name>x</name></user></boinc>",
     "line 3", "unknown element <user>"),
])
def test_xadd_malformed_project_xml_changes_nothing(mini_project, text, where, what):
    (mini_project / "project.xml").write_text(text)
    before = count(mini_project, "platform"), count(mini_project, "app")
    proc = tool("xadd", cwd=mini_project)
    assert proc.returncode == 1
    path = str(mini_project / "project.xml")
    assert proc.stderr.startswith("xadd: %s %s" % (path, where)), proc.stderr
    assert what in proc.stderr
    assert (count(mini_project, "platform"), count(mini_project, "app")) == before


def test_xadd_is_one_transaction(mini_project, db_root_params, scratch_db_name):
    """A database failure after some inserts leaves none of them."""
    import MySQLdb
    (mini_project / "project.xml").write_text(PROJECT_XML)
    conn = MySQLdb.connect(db=scratch_db_name, **db_root_params)
    conn.cursor().execute(
        "CREATE TRIGGER no_workers BEFORE INSERT ON app FOR EACH ROW "
        "IF NEW.name = 'worker' THEN SIGNAL SQLSTATE '45000' "
        "SET MESSAGE_TEXT = 'refused by test'; END IF")
    conn.close()
    proc = tool("xadd", cwd=mini_project)
    assert proc.returncode == 1 and "refused by test" in proc.stderr
    assert count(mini_project, "platform") == 1
    assert rows(mini_project, "SELECT user_friendly_name FROM platform")[0][
        "user_friendly_name"] == "Linux on x86_64"


def test_xadd_missing_project_xml_and_arguments(mini_project, tmp_path):
    proc = tool("xadd", cwd=mini_project)
    assert proc.returncode == 1 and "project.xml" in proc.stderr
    assert tool("xadd", "--bogus", cwd=mini_project).returncode == 1
    (mini_project / "project.xml").write_text(PROJECT_XML)
    elsewhere = tool("xadd", "--project_dir", mini_project, cwd=tmp_path)
    assert elsewhere.returncode == 0 and "added platform: windows_x86_64" in elsewhere.stdout
    outside = tool("xadd", cwd=tmp_path)
    assert outside.returncode == 1 and "project directory" in outside.stderr


# ---------------------------------------------------------------------------
# update_versions

@pytest.fixture
def project(mini_project):
    """mini_project with project.xml applied and a code-signing key pair."""
    (mini_project / "project.xml").write_text(PROJECT_XML)
    assert tool("xadd", cwd=mini_project).returncode == 0
    keys = mini_project / "keys"
    crypto.generate_key_pair(str(keys / "code_sign_private"), str(keys / "code_sign_public"))
    return mini_project


def put(path, data, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def signature_of(project, path):
    """The signature BOINC's sign_executable prints for this file with the project key."""
    proc = tool("sign_executable", path, project / "keys" / "code_sign_private")
    assert proc.returncode == 0
    return proc.stdout


def run_update(project, *args, input=""):
    return tool("update_versions", *args, cwd=project, input=input)


def app_versions(project):
    return rows(project, "SELECT av.*, p.name AS platform FROM app_version av "
                         "JOIN platform p ON p.id = av.platformid ORDER BY av.id")


def download_listing(project):
    return sorted(os.listdir(project / "download"))


def make_three_versions(project):
    """example_app 1.0 for Linux (one file), Windows (version.xml, two files, one
    with a .sig) and Linux__mt (flags, mirror URL, gzip)."""
    base = project / "apps" / "example_app" / "1.0"
    linux = put(base / LINUX / "example_app_1.0_x86_64-pc-linux-gnu",
                b"\x7fELF fake linux app\x00API_VERSION_8.3.0\x00rest" * 50, 0o755)
    win = base / "windows_x86_64"
    exe = put(win / "example_app_1.0_windows_x86_64.exe", b"MZ windows app" * 300, 0o644)
    dll = put(win / "boinc_1.0_windows_x86_64.dll", b"MZ a dll" * 100, 0o644)
    (win / "boinc_1.0_windows_x86_64.dll.sig").write_text(signature_of(project, dll))
    (win / "version.xml").write_text("""<version>
    <file>
        <physical_name>example_app_1.0_windows_x86_64.exe</physical_name>
        <main_program/>
    </file>
    <file>
        <physical_name>boinc_1.0_windows_x86_64.dll</physical_name>
        <logical_name>boinc.dll</logical_name>
        <copy_file/>
    </file>
    <api_version>7.22.0</api_version>
</version>
""")
    mt = base / (LINUX + "__mt")
    mtexe = put(mt / "example_app_1.0_x86_64-pc-linux-gnu__mt", b"mt app " * 2000, 0o755)
    data = put(mt / "example_data_1.0.txt", b"data file\n" * 100, 0o644)
    (mt / "version.xml").write_text("""<version>
    <file>
        <physical_name>example_app_1.0_x86_64-pc-linux-gnu__mt</physical_name>
        <main_program>1</main_program>
        <url>http://mirror.example.org/a/example_app_1.0_x86_64-pc-linux-gnu__mt</url>
        <url>http://127.0.0.1/test/download/example_app_1.0_x86_64-pc-linux-gnu__mt</url>
    </file>
    <file>
        <physical_name>example_data_1.0.txt</physical_name>
        <logical_name>data.txt</logical_name>
        <gzip/>
    </file>
    <dont_throttle/>
    <needs_network/>
    <is_wrapper/>
    <beta/>
    <file_prefix>pre_</file_prefix>
    <api_version>7.21.0</api_version>
</version>
""")
    return linux, exe, dll, mtexe, data


def test_update_versions_installs_three_platforms(project, boinc_crypt):
    linux, exe, dll, mtexe, data = make_three_versions(project)
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("App version added successfully") == 3
    avs = {(r["platform"], r["plan_class"]): r for r in app_versions(project)}
    assert set(avs) == {(LINUX, ""), ("windows_x86_64", ""), (LINUX, "mt")}
    appid = rows(project, "SELECT id FROM app WHERE name = 'example_app'")[0]["id"]
    for r in avs.values():
        assert (r["appid"], r["version_num"], r["min_core_version"], r["max_core_version"],
                r["deprecated"]) == (appid, 100, 0, 0, 0)
        assert r["create_time"] > 1700000000
    assert avs[(LINUX, "mt")]["beta"] == 1 and avs[(LINUX, "")]["beta"] == 0

    # xml_doc exactly as BOINC's update_versions lays it out
    def sig(p):
        return signature_of(project, p)

    assert avs[(LINUX, "")]["xml_doc"] == (
        "<file_info>\n"
        "    <name>example_app_1.0_x86_64-pc-linux-gnu</name>\n"
        "    <url>%s/example_app_1.0_x86_64-pc-linux-gnu</url>\n"
        "    <executable/>\n"
        "    <file_signature>\n%s"
        "    </file_signature>\n"
        "    <nbytes>%d</nbytes>\n"
        "</file_info>\n"
        "<app_version>\n"
        "    <app_name>example_app</app_name>\n"
        "    <version_num>100</version_num>\n"
        "    <api_version>8.3.0</api_version>\n"
        "<file_ref>\n"
        "    <file_name>example_app_1.0_x86_64-pc-linux-gnu</file_name>\n"
        "    <main_program/>\n"
        "</file_ref>\n"
        "</app_version>\n" % (DL, sig(linux), linux.stat().st_size))
    assert avs[("windows_x86_64", "")]["xml_doc"] == (
        "<file_info>\n"
        "    <name>example_app_1.0_windows_x86_64.exe</name>\n"
        "    <url>%s/example_app_1.0_windows_x86_64.exe</url>\n"
        "    <executable/>\n"
        "    <file_signature>\n%s"
        "    </file_signature>\n"
        "    <nbytes>%d</nbytes>\n"
        "</file_info>\n"
        "<file_info>\n"
        "    <name>boinc_1.0_windows_x86_64.dll</name>\n"
        "    <url>%s/boinc_1.0_windows_x86_64.dll</url>\n"
        "    <file_signature>\n%s"
        "    </file_signature>\n"
        "    <nbytes>%d</nbytes>\n"
        "</file_info>\n"
        "<app_version>\n"
        "    <app_name>example_app</app_name>\n"
        "    <version_num>100</version_num>\n"
        "    <api_version>7.22.0</api_version>\n"
        "<file_ref>\n"
        "    <file_name>example_app_1.0_windows_x86_64.exe</file_name>\n"
        "    <main_program/>\n"
        "</file_ref>\n"
        "<file_ref>\n"
        "    <file_name>boinc_1.0_windows_x86_64.dll</file_name>\n"
        "    <open_name>boinc.dll</open_name>\n"
        "    <copy_file/>\n"
        "</file_ref>\n"
        "</app_version>\n" % (DL, sig(exe), exe.stat().st_size, DL, sig(dll),
                              dll.stat().st_size))
    gz = project / "download" / "example_data_1.0.txt.gz"
    assert avs[(LINUX, "mt")]["xml_doc"] == (
        "<file_info>\n"
        "    <name>example_app_1.0_x86_64-pc-linux-gnu__mt</name>\n"
        "    <url>http://mirror.example.org/a/example_app_1.0_x86_64-pc-linux-gnu__mt</url>\n"
        "    <url>%s/example_app_1.0_x86_64-pc-linux-gnu__mt</url>\n"
        "    <executable/>\n"
        "    <file_signature>\n%s"
        "    </file_signature>\n"
        "    <nbytes>%d</nbytes>\n"
        "</file_info>\n"
        "<file_info>\n"
        "    <name>example_data_1.0.txt</name>\n"
        "    <url>%s/example_data_1.0.txt</url>\n"
        "    <gzipped_url>%s/example_data_1.0.txt.gz</gzipped_url>\n"
        "    <file_signature>\n%s"
        "    </file_signature>\n"
        "    <nbytes>%d</nbytes>\n"
        "    <gzipped_nbytes>%d</gzipped_nbytes>\n"
        "</file_info>\n"
        "<app_version>\n"
        "    <app_name>example_app</app_name>\n"
        "    <version_num>100</version_num>\n"
        "    <api_version>7.21.0</api_version>\n"
        "<file_ref>\n"
        "    <file_name>example_app_1.0_x86_64-pc-linux-gnu__mt</file_name>\n"
        "    <main_program/>\n"
        "</file_ref>\n"
        "<file_ref>\n"
        "    <file_name>example_data_1.0.txt</file_name>\n"
        "    <open_name>data.txt</open_name>\n"
        "</file_ref>\n"
        "    <dont_throttle/>\n"
        "    <needs_network/>\n"
        "    <is_wrapper/>\n"
        "    <file_prefix>pre_</file_prefix>\n"
        "</app_version>\n" % (DL, sig(mtexe), mtexe.stat().st_size, DL, DL, sig(data),
                              data.stat().st_size, gz.stat().st_size))

    # files: flat in download/, identical, executables executable, .gz decompresses
    assert download_listing(project) == sorted([
        "example_app_1.0_x86_64-pc-linux-gnu", "example_app_1.0_windows_x86_64.exe",
        "boinc_1.0_windows_x86_64.dll", "example_app_1.0_x86_64-pc-linux-gnu__mt",
        "example_data_1.0.txt", "example_data_1.0.txt.gz"])
    for src in (linux, exe, dll, mtexe, data):
        dst = project / "download" / src.name
        assert dst.read_bytes() == src.read_bytes()
        assert dst.stat().st_mode & 0o004                       # Apache can read it
    assert os.stat(project / "download" / linux.name).st_mode & stat.S_IXUSR
    assert gzip.decompress(gz.read_bytes()) == data.read_bytes()
    assert (project / "reread_db").exists()

    # every signature verifies with code_sign_public, by boincpy and by BOINC's C++ code
    public = crypto.read_public_key(str(project / "keys" / "code_sign_public"))
    for r in avs.values():
        doc = r["xml_doc"]
        for name, sigtext in re.findall(r"<name>(.*?)</name>.*?<file_signature>\n(.*?)    "
                                        r"</file_signature>", doc, re.S):
            path = project / "download" / name
            assert crypto.verify_file(str(path), sigtext, public)
            (project / "sig.tmp").write_text(sigtext)
            assert boinc_crypt.verify_file(path, project / "sig.tmp",
                                           project / "keys" / "code_sign_public") == (0, True)


def test_xml_doc_matches_the_reference_servers_app_version(project):
    """The app version the C++ server sent to the stock client is BOINC's xml_doc
    (up to </file_ref>) plus the scheduler's platform/avg_ncpus/flops lines."""
    reply = open(os.path.join(_fixtures(), "sched/01_attach_first_rpc.reply.xml")).read()
    start = reply.index("<file_info>\n    <name>example_app_1.0")
    end = reply.index("    <platform>", start)
    expected = reply[start:end] + "</app_version>\n"
    cfg_text = (project / "config.xml").read_text().replace(
        DL, "http://127.0.0.1:8800/refproj/download")
    (project / "config.xml").write_text(cfg_text)
    # the reference app was linked with BOINC 8.3.0's API library
    app = put(project / "apps" / "example_app" / "1.0" / LINUX /
              "example_app_1.0_x86_64-pc-linux-gnu",
              os.urandom(3000) + b"\x00API_VERSION_8.3.0\x00" + os.urandom(3000), 0o755)
    assert run_update(project, "--noconfirm").returncode == 0
    doc = app_versions(project)[0]["xml_doc"]
    sig = signature_of(project, app)
    expected = re.sub(r"<file_signature>\n.*?    </file_signature>",
                      "<file_signature>\n%s    </file_signature>" % sig.replace("\\", r"\\"),
                      expected, flags=re.S)
    expected = re.sub(r"<nbytes>\d+</nbytes>", "<nbytes>%d</nbytes>" % app.stat().st_size,
                      expected)
    assert doc == expected


def test_update_versions_is_idempotent(project):
    make_three_versions(project)
    assert run_update(project, "--noconfirm").returncode == 0
    before = app_versions(project), download_listing(project)
    mtimes = {n: os.stat(project / "download" / n).st_mtime_ns for n in before[1]}
    os.unlink(project / "reread_db")
    again = run_update(project, "--noconfirm")
    assert again.returncode == 0
    assert "no new app versions" in again.stdout
    assert (app_versions(project), download_listing(project)) == before
    assert {n: os.stat(project / "download" / n).st_mtime_ns for n in before[1]} == mtimes
    assert (project / "reread_db").exists()
    # a new version next to the installed ones is added alone
    put(project / "apps" / "example_app" / "1.5" / LINUX / "example_app_1.5_x86_64-pc-linux-gnu",
        b"new", 0o755)
    third = run_update(project, "--noconfirm")
    assert third.returncode == 0 and third.stdout.count("added successfully") == 1
    assert [r["version_num"] for r in app_versions(project)][-1] == 105


def test_same_file_already_in_download_is_reused(project):
    app = put(project / "apps" / "example_app" / "2" / LINUX / "shared_name", b"same", 0o755)
    put(project / "download" / "shared_name", b"same")
    assert run_update(project, "--noconfirm").returncode == 0
    (r,) = app_versions(project)
    assert r["version_num"] == 2
    assert (project / "download" / "shared_name").read_bytes() == app.read_bytes()


def state(project):
    """Everything update_versions may change."""
    listing = {}
    for dirpath, _, files in os.walk(project / "download"):
        for f in files:
            p = os.path.join(dirpath, f)
            listing[os.path.relpath(p, project / "download")] = open(p, "rb").read()
    return app_versions(project), listing, (project / "reread_db").exists()


BAD_CASES = {
    "unknown app": (lambda p: put(p / "apps" / "nosuchapp" / "1.0" / LINUX / "f", b"x", 0o755),
                    "nosuchapp is not an app"),
    "unknown platform": (lambda p: put(p / "apps" / "example_app" / "1.0" / "amiga_os" / "f",
                                       b"x", 0o755), "no platform amiga_os"),
    "bad version": (lambda p: put(p / "apps" / "example_app" / "1.x" / LINUX / "f", b"x"),
                    "1.x is not a version number"),
    "minor too big": (lambda p: put(p / "apps" / "example_app" / "1.100" / LINUX / "f", b"x"),
                      "1.100 is not a version number"),
    "bad plan class": (lambda p: put(p / "apps" / "example_app" / "1.0" / (LINUX + "__") / "f",
                                     b"x"), "bad plan class"),
    "missing file": (lambda p: (put(p / "apps/example_app/1.0" / LINUX / "a", b"x"),
                                (p / "apps/example_app/1.0" / LINUX / "version.xml").write_text(
                                    "<version>\n<file>\n<physical_name>a</physical_name>\n"
                                    "<main_program/>\n</file>\n<file>\n"
                                    "<physical_name>b</physical_name>\n</file>\n</version>\n")),
                     "file b is listed in version.xml (line 6) but not present"),
    "malformed version.xml": (lambda p: (put(p / "apps/example_app/1.0" / LINUX / "a", b"x"),
                                         (p / "apps/example_app/1.0" / LINUX / "version.xml")
                                         .write_text("<version>\n<file>\n<physical_name>a"
                                                     "</physical_name>\n</fil>\n</version>\n")),
                              "version.xml line 4: malformed XML"),
    "bad flag": (lambda p: (put(p / "apps/example_app/1.0" / LINUX / "a", b"x"),
                            (p / "apps/example_app/1.0" / LINUX / "version.xml").write_text(
                                "<version>\n<file>\n<physical_name>a</physical_name>\n"
                                "<main_program>yes</main_program>\n</file>\n</version>\n")),
                 "version.xml line 4: <main_program> must be empty or a number"),
    "no main program": (lambda p: (put(p / "apps/example_app/1.0" / LINUX / "a", b"x"),
                                   put(p / "apps/example_app/1.0" / LINUX / "b", b"y")),
                        "no file is marked as the main program"),
    "bad file name": (lambda p: put(p / "apps/example_app/1.0" / LINUX / "my app", b"x"),
                      "can't be sent to clients"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_update_versions_bad_input_changes_nothing(project, case):
    make, message = BAD_CASES[case]
    # a good version in the same run must not be installed either
    put(project / "apps" / "example_app" / "3.0" / "windows_x86_64" / "good_3.0.exe", b"ok")
    make(project)
    before = state(project)
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1, proc
    assert message in proc.stderr, proc.stderr
    assert "nothing was changed" in proc.stderr
    assert state(project) == before


def test_key_problems_change_nothing(project, tmp_path):
    put(project / "apps" / "example_app" / "1.0" / LINUX / "app_1.0", b"app", 0o755)
    keys = project / "keys"
    good = (keys / "code_sign_private").read_text()
    before = state(project)
    cases = [
        (good[:500], "truncated"),
        ((keys / "code_sign_public").read_text(), "is a public key"),
        ("nonsense\n", "not a BOINC key file"),
        (good.replace(good.split("\n")[20], "0" * 64), "inconsistent"),
    ]
    for text, message in cases:
        (keys / "code_sign_private").write_text(text)
        proc = run_update(project, "--noconfirm")
        assert proc.returncode == 1 and message in proc.stderr, (message, proc.stderr)
        assert str(keys / "code_sign_private") in proc.stderr
        assert state(project) == before
    (keys / "code_sign_private").write_text(crypto.generate_key_pair()[0])
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "the two key files are not a pair" in proc.stderr
    assert state(project) == before
    os.unlink(keys / "code_sign_private")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "no code signing private key" in proc.stderr
    assert "app_1.0" in proc.stderr and state(project) == before
    # with a .sig file the private key is not needed at all
    (keys / "code_sign_private").write_text(good)
    sig = signature_of(project, project / "apps/example_app/1.0" / LINUX / "app_1.0")
    os.unlink(keys / "code_sign_private")
    (project / "apps/example_app/1.0" / LINUX / "app_1.0.sig").write_text(sig)
    assert run_update(project, "--noconfirm").returncode == 0
    assert len(app_versions(project)) == 1


def test_signature_that_does_not_verify_is_refused(project, tmp_path):
    app = put(project / "apps" / "example_app" / "1.0" / LINUX / "app_1.0", b"app", 0o755)
    other_priv, _ = crypto.generate_key_pair()
    (tmp_path / "other").write_text(other_priv)
    sig = subprocess.run([sys.executable, os.path.join(REPO, "bin", "sign_executable"), app,
                          tmp_path / "other"], capture_output=True, text=True).stdout
    (app.parent / "app_1.0.sig").write_text(sig)
    before = state(project)
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "does not verify" in proc.stderr
    assert "app_1.0.sig" in proc.stderr and state(project) == before
    # a stale .sig (the file changed after signing) is caught the same way
    (app.parent / "app_1.0.sig").write_text(signature_of(project, app))
    app.write_bytes(b"app, rebuilt")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "does not verify" in proc.stderr
    (app.parent / "app_1.0.sig").write_text("0123\n.\n")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "2-byte signature" in proc.stderr
    assert state(project) == before


def test_different_file_with_same_name_is_refused(project):
    put(project / "apps" / "example_app" / "1.0" / LINUX / "app_x", b"new build", 0o755)
    put(project / "download" / "app_x", b"old build")
    before = state(project)
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "BOINC files are immutable" in proc.stderr
    assert state(project) == before
    # two new versions of this run with one name for two different files
    os.unlink(project / "download" / "app_x")
    put(project / "apps" / "example_app" / "1.0" / "windows_x86_64" / "app_x", b"other build")
    before = state(project)
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "different files with the same name app_x" in proc.stderr
    assert state(project) == before


def test_database_failure_removes_copied_files(project, db_root_params, scratch_db_name):
    import MySQLdb
    make_three_versions(project)
    put(project / "download" / "example_data_1.0.txt", b"data file\n" * 100)  # pre-existing
    conn = MySQLdb.connect(db=scratch_db_name, **db_root_params)
    conn.cursor().execute(
        "CREATE TRIGGER no_mt BEFORE INSERT ON app_version FOR EACH ROW "
        "IF NEW.plan_class = 'mt' THEN SIGNAL SQLSTATE '45000' "
        "SET MESSAGE_TEXT = 'refused by test'; END IF")
    conn.close()
    before = state(project)
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "refused by test" in proc.stderr
    assert state(project) == before
    assert (project / "download" / "example_data_1.0.txt").exists()   # not ours to remove


def test_confirmation_questions(project):
    put(project / "apps" / "example_app" / "1.0" / LINUX / "app_l", b"l", 0o755)
    put(project / "apps" / "example_app" / "1.0" / "windows_x86_64" / "app_w.exe", b"w")
    before = state(project)
    # declining to sign changes nothing (a script without --noconfirm reads EOF: no)
    for answer in ("n\n", ""):
        proc = run_update(project, input=answer)
        assert proc.returncode == 1, proc
        assert "NOTICE: files will be signed" in proc.stdout
        assert "not confirmed" in proc.stderr and state(project) == before
    # sign, then decline Windows and add Linux (directories in name order)
    proc = run_update(project, input="y\nn\ny\n")
    assert proc.returncode == 0, proc.stderr
    assert "Found new app version for: example_app 1.0 x86_64-pc-linux-gnu" in proc.stdout
    assert "Do you want to add this app version (y/n)?" in proc.stdout
    assert "        app_l (main program)" in proc.stdout
    assert [r["platform"] for r in app_versions(project)] == [LINUX]
    assert download_listing(project) == ["app_l"]


def test_in_process_api_and_verbose(project):
    make_three_versions(project)
    cfg = load_config(str(project))
    out = io.StringIO()
    answers = iter(["y", "y", "y", "y"])
    added = apps.update_versions(cfg, verbose=True, ask=lambda prompt: next(answers), out=out)
    assert [label for label, _ in added] == [
        "example_app 1.0 windows_x86_64", "example_app 1.0 x86_64-pc-linux-gnu",
        "example_app 1.0 x86_64-pc-linux-gnu__mt"]
    text = out.getvalue()
    assert "App example_app:" in text and "   Version 1.0:" in text
    assert "API version: 8.3.0" in text
    assert apps.update_versions(cfg, confirm=False, out=io.StringIO()) == []


def test_missing_apps_dir_and_bad_arguments(project):
    os.rmdir(project / "apps")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 1 and "can't open" in proc.stderr
    bad = run_update(project, "--frobnicate")
    assert bad.returncode == 1 and "No such option '--frobnicate'" in bad.stderr
    assert run_update(project, "--help").returncode == 0


def test_unknown_version_xml_elements_are_reported(project):
    d = project / "apps" / "example_app" / "1.0" / LINUX
    put(d / "a", b"x", 0o755)
    (d / "version.xml").write_text("<version>\n<file><physical_name>a</physical_name>"
                                   "<main_programme/></file>\n<cmdline>x</cmdline>\n"
                                   "<min_core_version>71000</min_core_version>\n</version>\n")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 0, proc.stderr
    assert "version.xml line 2: <main_programme> in <file> is not an update_versions" \
        in proc.stdout
    assert "version.xml line 3: <cmdline> is not an update_versions element" in proc.stdout
    assert app_versions(project)[0]["min_core_version"] == 71000


# -- pieces ------------------------------------------------------------------------

@pytest.mark.parametrize("name, num", [("1.0", 100), ("1.5", 105), ("1.05", 105),
                                       ("1.23", 123), ("7", 7), ("10.99", 1099),
                                       ("1.x", None), ("1.0.1", None), ("v1", None),
                                       ("1.100", None), ("", None)])
def test_version_numbers(name, num):
    assert apps.parse_version_dir(name) == num


def test_api_version_found_like_strings_grep(tmp_path):
    p = tmp_path / "bin"
    p.write_bytes(b"\x00\x01API_VERSION_\x00xAPI_VERSION_7.1.2 and more\x00"
                  b"libAPI_VERSION_8.3.0\x00API_VERSION_9.9.9\x00")
    assert apps.find_api_version(str(p)) == "8.3.0"
    p.write_bytes(b"nothing here")
    assert apps.find_api_version(str(p)) == ""


def test_subdirectory_files_listed_in_version_xml(project):
    d = project / "apps" / "example_app" / "1.0" / LINUX
    put(d / "main_1.0", b"m", 0o755)
    put(d / "lib" / "helper_1.0.so", b"h")
    (d / "version.xml").write_text(
        "<version><file><physical_name>main_1.0</physical_name><main_program/></file>"
        "<file><physical_name>lib/helper_1.0.so</physical_name></file></version>")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 0, proc.stderr
    assert (project / "download" / "lib" / "helper_1.0.so").read_bytes() == b"h"
    doc = app_versions(project)[0]["xml_doc"]
    assert "<url>%s/lib/helper_1.0.so</url>" % DL in doc


def test_without_code_sign_public_signatures_are_not_checked_but_said(project):
    put(project / "apps" / "example_app" / "1.0" / LINUX / "app_1.0", b"app", 0o755)
    os.unlink(project / "keys" / "code_sign_public")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 0, proc.stderr
    assert "code_sign_public not found: signatures are not checked" in proc.stdout
    (project / "keys" / "code_sign_public").write_text("1024\n00\n.\n")
    put(project / "apps" / "example_app" / "1.1" / LINUX / "app_1.1", b"app", 0o755)
    damaged = run_update(project, "--noconfirm")
    assert damaged.returncode == 1 and "code_sign_public" in damaged.stderr
    assert len(app_versions(project)) == 1


def test_wrapper_version_is_installed_with_its_warnings(project):
    """A wrapper app version (wrapper, job.xml, program): logical names,
    <copy_file/> and <is_wrapper/> reach the xml_doc; a program that isn't
    executable, a task naming a file the version lacks and a main program
    without an API version are warned about, and installed anyway as BOINC's
    tool would."""
    d = project / "apps" / "example_app" / "1.0" / LINUX
    put(d / "wrapper_1.0", b"\x7fELF dynamically linked, no api string", 0o755)
    put(d / "job_1.0.xml", b"<job_desc>\n<task><application>prog.sh</application></task>\n"
                           b"<task>\n<application>missing.sh</application>\n"
                           b"<stdout_file>out</stdout_file></task>\n</job_desc>\n")
    put(d / "prog_1.0.sh", b"#!/bin/sh\necho hi\n", 0o644)
    put(d / "table_1.0.txt", b"1 2 3\n")
    (d / "version.xml").write_text("""<version>
    <file><physical_name>wrapper_1.0</physical_name><main_program/></file>
    <file><physical_name>job_1.0.xml</physical_name><logical_name>job.xml</logical_name></file>
    <file><physical_name>prog_1.0.sh</physical_name><logical_name>prog.sh</logical_name></file>
    <file><physical_name>table_1.0.txt</physical_name><logical_name>table.txt</logical_name>
        <copy_file/></file>
    <is_wrapper/>
</version>
""")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "prog_1.0.sh: the program prog.sh is not executable" in out
    assert "job_1.0.xml line 3: <application>missing.sh</application> is not a file" in out
    assert "no API version in wrapper_1.0 and none in version.xml" in out
    assert ("job_1.0.xml line 5: <stdout_file> in <task> is not a wrapper element; the "
            "wrapper ignores it") in out
    doc = app_versions(project)[0]["xml_doc"]
    assert "    <file_name>job_1.0.xml</file_name>\n    <open_name>job.xml</open_name>\n" in doc
    assert ("    <file_name>table_1.0.txt</file_name>\n    <open_name>table.txt</open_name>\n"
            "    <copy_file/>\n") in doc
    assert doc.endswith("    <is_wrapper/>\n</app_version>\n")
    assert "<api_version>" not in doc

    # the same layout done right: no warnings
    d2 = project / "apps" / "example_app" / "1.1" / LINUX
    d2.mkdir(parents=True)
    for name in ("wrapper_1.0", "job_1.0.xml", "table_1.0.txt"):
        (d2 / name).write_bytes((d / name).read_bytes())
    os.chmod(d2 / "wrapper_1.0", 0o755)
    (d2 / "job_1.0.xml").write_text("<job_desc><task><application>prog.sh</application>"
                                    "</task></job_desc>\n")
    put(d2 / "prog_1.1.sh", b"#!/bin/sh\necho hi\n", 0o755)
    (d2 / "version.xml").write_text((d / "version.xml").read_text()
                                    .replace("prog_1.0.sh", "prog_1.1.sh")
                                    .replace("job_1.0.xml", "job_1.1.xml")
                                    .replace("<is_wrapper/>", "<is_wrapper/><api_version>7.20.5"
                                             "</api_version>"))
    os.rename(d2 / "job_1.0.xml", d2 / "job_1.1.xml")
    proc = run_update(project, "--noconfirm")
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stdout, proc.stdout
