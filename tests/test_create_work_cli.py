"""bin/create_work's command line, parsed by click (boincpy/cli.py) with
BOINC's spellings: input files in the order given, ``-opt`` as ``--opt``,
errors naming the bad argument (and the --stdin line), --help."""

import io

import pytest
from click.testing import CliRunner

from boincpy.backend_lib import JobDesc
from boincpy.states import AssignType
from boincpy.templates import InputFile
from boincpy.tools import create_work

from test_create_work import _rows, _stage


def _values(args):
    return CliRunner().invoke(create_work._command(), args, standalone_mode=False,
                              catch_exceptions=False).return_value


def _main(args, capsys, stdin_text=None):
    """bin/create_work in-process: (exit status, stdout, stderr)."""
    old = create_work.sys.stdin
    if stdin_text is not None:
        create_work.sys.stdin = io.StringIO(stdin_text)
    try:
        with pytest.raises(SystemExit) as exit_:
            create_work.main(args)
    finally:
        create_work.sys.stdin = old
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


REMOTE = InputFile(is_remote=True, url="http://x/f", nbytes=10.0, md5="abc")


def test_input_files_keep_the_order_given():
    values = _values(["--appname", "a", "f1", "--remote_file", "http://x/f", "10", "abc",
                      "f2"])
    assert values["infiles"] == (InputFile(name="f1"), REMOTE, InputFile(name="f2"))
    job = create_work.parse_args(["--remote_file", "http://x/f", "10", "abc", "f1", "f2",
                                  "--appname", "a"]).job
    assert job.infiles == [REMOTE, InputFile(name="f1"), InputFile(name="f2")]
    # a --stdin line keeps its order too, after the run's own files
    base = JobDesc(infiles=[InputFile(name="run")])
    line = create_work.split_line("f1 -remote_file http://x/f 10 abc --wu_name w f2")
    job = create_work.parse_stdin_line(base, line, 1)
    assert job.infiles == [InputFile(name="run"), InputFile(name="f1"), REMOTE,
                           InputFile(name="f2")]
    assert job.name == "w" and base.infiles == [InputFile(name="run")]


def test_single_dash_spelling_is_the_same_option():
    double = ["--appname", "a", "--wu_name", "w", "--priority", "3", "--config_dir", "/p",
              "--min_quorum", "2", "--target_host", "7", "--verbose", "--keywords", "1 2",
              "f1"]
    single = [a[1:] if a.startswith("--") else a for a in double]
    assert _values(single) == _values(double)
    ro = create_work.parse_args(single + ["-d", "4"])
    assert (ro.appname, ro.config_dir, ro.verbose, ro.debug_level) == ("a", "/p", True, 4)
    jd = ro.job
    assert jd.name == "w" and not ro.show_wu_name
    assert jd.options == {"priority": 3, "min_quorum": 2, "keywords": "1 2"}
    assert (jd.assign_flag, jd.assign_type, jd.assign_id) == (True, AssignType.HOST, 7)
    assert create_work.parse_args(["-project_dir", "/q"]).config_dir == "/q"


def test_bad_number_is_named_and_nothing_runs(capsys):
    status, out, err = _main(["--appname", "example_app", "--priority", "x", "f1"], capsys)
    assert status == 1 and out == ""
    assert err == "create_work: ERROR: bad value for --priority: 'x'\n"
    status, _, err = _main(["-appname", "a", "-remote_file", "u", "ten", "m"], capsys)
    assert status == 1 and "bad value for --remote_file: 'ten'" in err
    status, _, err = _main(["--appname", "a", "--target_user", "0"], capsys)
    assert status == 1 and "nonzero database ID" in err and "--target_user" in err
    status, _, err = _main(["--appname", "a", "--bogus_option", "f1"], capsys)
    assert status == 1 and "bad argument '--bogus_option'" in err
    status, _, err = _main(["--appname", "a", "--target_host", "1", "--broadcast"], capsys)
    assert status == 1 and "can't be given together" in err
    status, _, err = _main(["--appname", "a", "--remote_file", "u", "1"], capsys)
    assert status == 1 and "--remote_file" in err


def test_bad_stdin_line_names_its_line_and_writes_nothing(mini_project, db_root_params,
                                                          capsys):
    _stage(mini_project, "s", b"s")
    run = ["--appname", "example_app", "--project_dir", str(mini_project), "--stdin"]
    status, out, err = _main(run, capsys, "--wu_name ok1 src_s\n--priority x src_s\n")
    assert status == 1
    assert err == "create_work: ERROR: line 2: bad value for --priority: 'x'\n"
    status, _, err = _main(run, capsys, "--wu_name ok1 src_s\n\n--appname b src_s\n")
    assert status == 1 and "line 3: bad stdin argument '--appname'" in err
    status, _, err = _main(run, capsys, "--target_team 3 src_s\n")
    assert status == 1 and "line 1: bad stdin argument '--target_team'" in err
    assert _rows(mini_project, db_root_params,
                 "SELECT COUNT(*) AS n FROM workunit")[0]["n"] == 0
    # with --continue_on_error the bad line is skipped, the others made
    status, out, err = _main(run + ["--continue_on_error"], capsys,
                             "--wu_name ok1 src_s\n-priority x src_s\n-wu_name ok3 src_s\n")
    assert status == 0, err
    assert "skipped line 2: bad value for --priority: 'x'" in err
    names = {r["name"] for r in _rows(mini_project, db_root_params,
                                       "SELECT name FROM workunit")}
    assert names == {"ok1", "ok3"}


def test_help_prints_the_usage(capsys):
    for spelling in ("--help", "-help"):
        status, out, err = _main([spelling], capsys)
        assert (status, out, err) == (0, create_work.USAGE, "")
    # before any other argument is converted
    status, out, _ = _main(["--priority", "x", "--help"], capsys)
    assert (status, out) == (0, create_work.USAGE)
    # no --appname: the usage on stderr, status 1
    status, out, err = _main(["f1"], capsys)
    assert (status, out, err) == (1, "", create_work.USAGE)
