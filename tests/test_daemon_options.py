"""The daemons' command lines: click, with BOINC's spellings (boincpy.daemons.base)."""

import pytest

from boincpy.daemons.base import parse_args, run_daemon
from boincpy.daemons.db_purge import DbPurge
from boincpy.daemons.feeder import Feeder
from boincpy.daemons.purge_trickles import PurgeTrickles
from boincpy.daemons.sample_validators import SubstrValidator
from boincpy.daemons.size_regulator import SizeRegulator


def test_one_and_two_dash_spellings_mean_the_same():
    one = parse_args(Feeder, ["-d", "4", "-one_pass", "-mod", "3", "1", "-sleep_interval", "2",
                              "-wmod", "2", "0", "-appids", "1,2"])
    two = parse_args(Feeder, ["--debug_level", "4", "--one_pass", "--mod", "3", "1",
                              "--sleep_interval", "2", "--wmod", "2", "0", "--appids", "1,2"])
    assert vars(one) == vars(two)
    assert (one.debug_level, one.one_pass, one.mod, one.sleep_interval, one.wmod) == \
        (4, True, (3, 1), 2.0, (2, 0))
    assert parse_args(Feeder, ["-d3"]).debug_level == 3
    assert parse_args(Feeder, ["--d", "1"]).debug_level == 1


def test_defaults():
    args = parse_args(Feeder, [])
    assert (args.debug_level, args.one_pass, args.mod, args.sleep_interval,
            args.project_dir) == (3, False, None, None, None)


def test_store_const_groups_set_their_destination():
    assert parse_args(DbPurge, ["-gzip"]).compression == "gzip"
    assert parse_args(DbPurge, []).compression is None
    assert parse_args(DbPurge, ["--sleep", "7"]).sleep_interval == 7.0
    assert parse_args(SizeRegulator, ["-priority_asc"]).order == "priority_asc"
    assert parse_args(SizeRegulator, ["-debug_leveld", "4"]).debug_level == 4


def test_repeatable_and_positional_options():
    args = parse_args(SubstrValidator, ["-app", "a", "-stderr_string", "x",
                                        "--stderr_string", "y"])
    assert list(args.stderr_string) == ["x", "y"]
    args = parse_args(PurgeTrickles, ["msg_to_host", "2"])
    assert (args.table, args.handled) == ("msg_to_host", 2)
    assert parse_args(PurgeTrickles, []).table is None


@pytest.mark.parametrize("cls, argv, words", [
    (DbPurge, ["-zip", "-gzip"], "can't be given together"),
    (Feeder, ["-random_order", "--priority_order"], "can't be given together"),
    (Feeder, ["--mod", "2", "2"], "--mod N I"),
    (Feeder, ["-d", "x"], "'x' is not a valid integer"),
    (Feeder, ["--no_such_option"], "No such option"),
    (SubstrValidator, [], "--app"),
    (PurgeTrickles, ["nonesuch", "1"], "nonesuch"),
])
def test_bad_command_line_exits_1_with_a_message(capsys, cls, argv, words):
    assert run_daemon(cls, argv) == 1
    err = capsys.readouterr().err
    assert words in err and "Usage: %s" % cls.name in err


def test_help_exits_0_and_runs_nothing(capsys):
    assert run_daemon(Feeder, ["--help"]) == 0
    out = capsys.readouterr().out
    assert "-mod, --mod N I" in out and "-random_order" in out
