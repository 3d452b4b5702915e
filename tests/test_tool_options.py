"""bin/ tools parse their command lines with click, keeping BOINC's spellings
(``-opt`` and ``--opt``), usage texts and exit statuses."""

import pytest
from click.testing import CliRunner

from boincpy.tools import control, crypt_prog, make_project, stage_file, wu_check


def _invoke(command, args):
    return CliRunner().invoke(command, args, standalone_mode=False, catch_exceptions=False)


def test_control_last_action_flag_wins_and_short_flags_cluster():
    assert _invoke(control._command(), ["-e", "-d"]).return_value["action"] == "disable"
    opts = _invoke(control._command(), ["-sv", "--fork-delay", "2"]).return_value
    assert (opts["action"], opts["verbose"], opts["fork_delay"]) == ("status", True, 2.0)
    assert _invoke(control._command(), ["--cron-tasks"]).return_value["action"] == "cron_tasks"


def test_control_bad_option_is_one_line_and_status_1(capsys):
    assert control.main(["--fork-delay", "soon"], prog="status") == 1
    err = capsys.readouterr().err
    assert "needs a number of seconds, not 'soon'" in err and "Use 'status --help'" in err


def test_crypt_prog_takes_one_operation_with_its_arguments(capsys, tmp_path):
    assert crypt_prog.run(["-sign"]) == 1
    assert capsys.readouterr().err == crypt_prog.USAGE       # BOINC's: the usage only
    assert crypt_prog.run(["-sign", "a", "k", "-verify", "a", "s", "k"]) == 1
    assert capsys.readouterr().err == crypt_prog.USAGE
    priv, pub = tmp_path / "priv", tmp_path / "pub"
    assert crypt_prog.run(["-genkey", "1024", str(priv), str(pub)]) == 0
    capsys.readouterr()
    # a value starting with a dash is the operation's argument, not an option
    assert crypt_prog.run(["--sign_string", "-leading-dash", str(priv)]) == 0
    signature = tmp_path / "sig"
    signature.write_text(capsys.readouterr().out)
    assert crypt_prog.run(["-verify_string", "-leading-dash", str(signature), str(pub)]) == 0
    assert crypt_prog.run(["-verify_string", "-other", str(signature), str(pub)]) != 0


@pytest.mark.parametrize("main, argv, status, words", [
    (stage_file.stage_main, [], 1, "usage: stage_file"),
    (stage_file.stage_main, ["-h"], 1, "usage: stage_file"),
    (stage_file.dir_hier_path_main, ["a", "b"], 1, "Usage: dir_hier_path"),
    (stage_file.dir_hier_move_main, ["--help"], 0, "Usage: dir_hier_move"),
    (wu_check.main, ["--frobnicate"], 1, "Looks for results with missing input files"),
    (wu_check.main, ["-help"], 0, "Usage: wu_check"),
])
def test_usage_texts_and_statuses_are_boincs(capsys, main, argv, status, words):
    assert main(argv) == status
    captured = capsys.readouterr()
    assert words in captured.out + captured.err


def test_make_project_single_dash_options_and_values_starting_with_a_dash():
    args = _invoke(make_project._command(),
                   ["-db_passwd", "-x-", "proj", "Long Name", "-v", "-no_db",
                    "--processes", "3"]).return_value
    assert (args.short_name, args.long_name, args.db_passwd, args.no_db, args.processes,
            args.verbose) == ("proj", "Long Name", "-x-", True, 3, 2)
    from boincpy.errors import ToolError
    with pytest.raises(ToolError, match="No such option '--bogus'"):
        make_project.plan(["proj", "--bogus"])
