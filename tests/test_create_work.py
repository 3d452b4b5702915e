"""bin/stage_file and bin/create_work against a real database."""

import hashlib
import io
import os
import subprocess
import sys

import MySQLdb

from boincpy.tools import create_work, stage_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _db(project, db_root_params):
    from boincpy.config import load_config
    cfg = load_config(str(project))
    return MySQLdb.connect(db=cfg.db_name, **db_root_params)


def _rows(project, db_root_params, sql, params=()):
    conn = _db(project, db_root_params)
    cur = conn.cursor(MySQLdb.cursors.DictCursor)
    cur.execute(sql, params)
    rows = cur.fetchall()
    conn.close()
    return rows


def _stage(project, name, data):
    src = project / ("src_" + name)
    src.write_bytes(data)
    old = os.getcwd()
    os.chdir(project)
    try:
        stage_file.stage_main(["--copy", str(src)])
    except SystemExit as e:
        assert e.code in (0, None)
    finally:
        os.chdir(old)
    return src


def _run(project, argv, stdin_text=""):
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(project)
    try:
        try:
            status = create_work.run(argv, stdin=io.StringIO(stdin_text), stdout=out,
                                     stderr=err)
        except Exception as exc:  # BoincpyError: what main() would print
            status, err = getattr(exc, "exit_code", 99), io.StringIO(str(exc))
    finally:
        os.chdir(old)
    return status, out.getvalue(), err.getvalue()


def test_stage_file_puts_file_in_fanout_dir_with_md5(mini_project):
    data = b"hello world\n"
    _stage(mini_project, "in_1.txt", data)
    from boincpy.files import dir_hier_path
    path = dir_hier_path(str(mini_project / "download"), "src_in_1.txt", 1024)
    assert open(path, "rb").read() == data
    md5 = hashlib.md5(data).hexdigest()
    assert open(path + ".md5").read().split() == [md5, str(len(data))]


def test_create_one_job_row_is_what_boinc_writes(mini_project, db_root_params):
    _stage(mini_project, "a.txt", b"abc\n")
    status, out, err = _run(mini_project, ["--appname", "example_app", "--wu_name", "wu1",
                                           "--min_quorum", "2", "--target_nresults", "2",
                                           "--delay_bound", "3600", "src_a.txt"])
    assert status == 0, err
    wu = _rows(mini_project, db_root_params, "SELECT * FROM workunit")[0]
    assert wu["name"] == "wu1"
    assert wu["min_quorum"] == 2 and wu["target_nresults"] == 2
    assert wu["delay_bound"] == 3600
    # BOINC's defaults for what neither option nor template sets
    assert wu["rsc_fpops_est"] == 3600e9 and wu["rsc_fpops_bound"] == 86400e9
    assert wu["rsc_memory_bound"] == 5e8 and wu["rsc_disk_bound"] == 1e9
    # backend_lib.h defaults are 1; target_nresults 2 raises total and success to 2
    assert wu["max_error_results"] == 1 and wu["max_total_results"] == 2
    assert wu["max_success_results"] == 2
    assert wu["result_template_file"] == "templates/example_app_out"
    assert wu["transition_time"] > 0 and wu["transitioner_flags"] == 0
    doc = wu["xml_doc"].decode()
    md5 = hashlib.md5(b"abc\n").hexdigest()
    assert "<name>src_a.txt</name>" in doc
    assert "<url>http://127.0.0.1/test/download/" in doc
    assert "<md5_cksum>%s</md5_cksum>" % md5 in doc
    assert "<nbytes>4</nbytes>" in doc
    assert "<open_name>in</open_name>" in doc
    assert "<command_line>\n-cpu_time 30\n</command_line>" in doc   # as BOINC writes it
    assert doc.index("<file_info>") < doc.index("<workunit>")


def test_stdin_creates_many_jobs_in_one_transaction(mini_project, db_root_params):
    for k in range(3):
        _stage(mini_project, "f%d" % k, b"x" * (k + 1))
    lines = "".join("--wu_name job_%d src_f%d\n" % (k, k % 3) for k in range(300))
    status, out, err = _run(mini_project, ["--appname", "example_app", "--stdin"], lines)
    assert status == 0, err
    n = _rows(mini_project, db_root_params, "SELECT COUNT(*) AS n FROM workunit")[0]["n"]
    assert n == 300


def test_bad_line_in_stdin_creates_nothing(mini_project, db_root_params):
    _stage(mini_project, "g", b"y")
    lines = "--wu_name ok_1 src_g\n--wu_name ok_2 no_such_file\n"
    status, out, err = _run(mini_project, ["--appname", "example_app", "--stdin"], lines)
    assert status != 0
    assert "no_such_file" in err and "line 2" in err
    n = _rows(mini_project, db_root_params, "SELECT COUNT(*) AS n FROM workunit")[0]["n"]
    assert n == 0


def test_duplicate_names_rejected_without_partial_rows(mini_project, db_root_params):
    _stage(mini_project, "h", b"z")
    assert _run(mini_project, ["--appname", "example_app", "--wu_name", "dup", "src_h"])[0] == 0
    status, _, err = _run(mini_project, ["--appname", "example_app", "--stdin"],
                          "--wu_name new1 src_h\n--wu_name dup src_h\n")
    assert status != 0 and "dup" in err
    names = {r["name"] for r in _rows(mini_project, db_root_params,
                                       "SELECT name FROM workunit")}
    assert names == {"dup"}


def test_unknown_app_and_broken_template(mini_project, db_root_params):
    _stage(mini_project, "i", b"q")
    status, _, err = _run(mini_project, ["--appname", "nope", "src_i"])
    assert status != 0 and "nope" in err
    (mini_project / "templates" / "broken_in").write_text(
        "<input_template>\n<file_info>\n<number>0</number>\n</workunit>\n")
    status, _, err = _run(mini_project, ["--appname", "example_app", "--wu_template",
                                         "templates/broken_in", "src_i"])
    assert status != 0 and "broken_in" in err
    assert _rows(mini_project, db_root_params, "SELECT COUNT(*) AS n FROM workunit")[0]["n"] == 0


def test_targeted_job_gets_assignment_row(mini_project, db_root_params):
    _stage(mini_project, "j", b"t")
    status, _, err = _run(mini_project, ["--appname", "example_app", "--wu_name", "tj",
                                         "--target_host", "7", "src_j"])
    assert status == 0, err
    wu = _rows(mini_project, db_root_params, "SELECT * FROM workunit")[0]
    a = _rows(mini_project, db_root_params, "SELECT * FROM assignment")[0]
    assert a["workunitid"] == wu["id"] and a["target_type"] == 1 and a["target_id"] == 7
    assert wu["transitioner_flags"] == 2


def test_bin_create_work_as_subprocess(mini_project, db_root_params):
    _stage(mini_project, "k", b"kk")
    env = dict(os.environ)
    r = subprocess.run([sys.executable, os.path.join(REPO, "bin", "create_work"),
                        "--appname", "example_app", "--wu_name", "sub1", "src_k"],
                       cwd=str(mini_project), env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, os.path.join(REPO, "bin", "create_work"),
                        "--appname", "example_app", "--wu_name", "sub2", "missing"],
                       cwd=str(mini_project), env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "missing" in r.stderr
    names = {x["name"] for x in _rows(mini_project, db_root_params,
                                       "SELECT name FROM workunit")}
    assert names == {"sub1"}


# ---------------------------------------------------------------------------
# <cache_md5_info/>: FILE.md5 next to each input file (process_input_template.cpp
# got_md5_info / write_md5_info), read by later create_work runs.

def _md5_cache_on(project, on=True):
    from boincpy.config import load_config, write_config
    options = load_config(str(project)).as_options()
    options["cache_md5_info"] = on
    write_config(str(project), options)


def _place(project, name, data):
    """An input file put straight into the hierarchy (stage_file would also
    write the .md5 file, which these tests must control)."""
    from boincpy.files import dir_hier_path
    path = dir_hier_path(str(project / "download"), name, 1024, create=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _job_doc(project, db_root_params, wu_name, infile):
    status, out, err = _run(project, ["--appname", "example_app", "--wu_name", wu_name,
                                      infile])
    assert status == 0, err
    rows = _rows(project, db_root_params, "SELECT xml_doc FROM workunit WHERE name = %s",
                 (wu_name,))
    return rows[0]["xml_doc"].decode(), err


def _age(path, seconds):
    st = os.stat(path)
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def test_md5_cache_written_then_read_by_next_job(mini_project, db_root_params):
    _md5_cache_on(mini_project)
    data = b"big input\n" * 100
    path = _place(mini_project, "big.dat", data)
    doc, _ = _job_doc(mini_project, db_root_params, "job_1", "big.dat")
    md5 = hashlib.md5(data).hexdigest()
    assert "<md5_cksum>%s</md5_cksum>\n    <nbytes>1000</nbytes>" % md5 in doc
    # BOINC's format: "%s %.15e\n"
    assert open(path + ".md5").read() == "%s 1.000000000000000e+03\n" % md5
    # the next job (another create_work run) takes the md5 from the cache
    # without reading the file: a cache saying otherwise is believed
    fake = "0123456789abcdef0123456789abcdef"
    with open(path + ".md5", "w") as f:
        f.write("%s 1000\n" % fake)
    doc, _ = _job_doc(mini_project, db_root_params, "job_2", "big.dat")
    assert "<md5_cksum>%s</md5_cksum>\n    <nbytes>1000</nbytes>" % fake in doc


def test_md5_cache_older_than_file_is_removed_and_rebuilt(mini_project, db_root_params):
    _md5_cache_on(mini_project)
    path = _place(mini_project, "changing.dat", b"version one\n")
    _job_doc(mini_project, db_root_params, "job_a", "changing.dat")
    assert os.path.exists(path + ".md5")
    _age(path + ".md5", 100)
    new = b"version two, longer\n"
    with open(path, "wb") as f:          # the file changes: size differs, newer mtime
        f.write(new)
    doc, _ = _job_doc(mini_project, db_root_params, "job_b", "changing.dat")
    md5 = hashlib.md5(new).hexdigest()
    assert "<md5_cksum>%s</md5_cksum>\n    <nbytes>%d</nbytes>" % (md5, len(new)) in doc
    assert open(path + ".md5").read() == "%s %.15e\n" % (md5, len(new))


def test_md5_cache_giving_another_size_is_rebuilt(mini_project, db_root_params):
    # BOINC's got_md5_info compares only modification times (seconds): a file
    # replaced with its old mtime kept (cp -p) would keep its stale cache.
    # boincpy also compares the size.
    _md5_cache_on(mini_project)
    old = b"12345"
    path = _place(mini_project, "kept.dat", old)
    _job_doc(mini_project, db_root_params, "job_a", "kept.dat")
    new = b"123456789"
    with open(path, "wb") as f:
        f.write(new)
    _age(path, 100)
    doc, _ = _job_doc(mini_project, db_root_params, "job_b", "kept.dat")
    md5 = hashlib.md5(new).hexdigest()
    assert "<md5_cksum>%s</md5_cksum>\n    <nbytes>9</nbytes>" % md5 in doc
    assert open(path + ".md5").read() == "%s %.15e\n" % (md5, len(new))


def test_malformed_md5_cache_is_reported_and_left(mini_project, db_root_params, capfd):
    _md5_cache_on(mini_project)
    data = b"abc"
    path = _place(mini_project, "odd.dat", data)
    with open(path + ".md5", "w") as f:
        f.write("%s 3\nextra\n" % hashlib.md5(data).hexdigest())
    doc, _ = _job_doc(mini_project, db_root_params, "job_a", "odd.dat")
    assert "<md5_cksum>%s</md5_cksum>" % hashlib.md5(data).hexdigest() in doc
    assert "bad MD5 cache file %s.md5" % path in capfd.readouterr().err
    # write_md5_info never replaces an existing file
    assert open(path + ".md5").read().endswith("extra\n")


def test_without_cache_md5_info_no_md5_file_is_read_or_written(mini_project, db_root_params):
    data = b"plain\n"
    path = _place(mini_project, "plain.dat", data)
    doc, _ = _job_doc(mini_project, db_root_params, "job_a", "plain.dat")
    assert not os.path.exists(path + ".md5")
    with open(path + ".md5", "w") as f:
        f.write("0123456789abcdef0123456789abcdef 99\n")
    doc, _ = _job_doc(mini_project, db_root_params, "job_b", "plain.dat")
    assert "<md5_cksum>%s</md5_cksum>\n    <nbytes>6</nbytes>" % hashlib.md5(data).hexdigest() \
        in doc
