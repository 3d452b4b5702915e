"""wu_check: a consistency report of workunits and results (BOINC's sched/wu_check.cpp).

    wu_check [--repair] [--project_dir DIR]

As in BOINC, for every UNSENT result and then every IN_PROGRESS result: its
workunit must exist (``ERROR: can't find WU W for result R``) and the input
files the workunit's XML points into the download hierarchy must be there
(``no file PATH for result R``); each section ends with ``N out of M
errors``.  Unlike BOINC, which looks only at the first ``<name>``, every
``<file_info>`` is checked, by the path its ``<url>`` (and ``<gzipped_url>``)
names under ``download_url`` (so make_work's renamed clones are checked
against the file they really download); files served from elsewhere
(``--remote_file``) are not checked.

Two more sections follow: workunits whose canonical result does not exist
or belongs to another workunit, and results in other states whose workunit
does not exist.

``--repair``: UNSENT results with missing input files become OVER /
COULDNT_SEND (as BOINC does), and their workunit is made due for the
transitioner, which then marks it COULDNT_SEND_RESULT and passes it to the
assimilator.
"""

import os
import sys
import time

import click

from boincpy.cli import boinc_option, click_main, project_dir_option, usage_help_option
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.db.result import mark_result_couldnt_send
from boincpy.db.workunit import set_transition_time
from boincpy.errors import BoincpyError
from boincpy.states import ServerState
from boincpy.xml.scan import blocks, leaf_list

BATCH = 1000

USAGE = """Looks for results with missing input files, and other inconsistencies

Usage: wu_check [OPTION]

Options:
  [ --repair ]                   change unsent results with missing input files
                                 to server_state OVER, outcome COULDNT_SEND
  [ --project_dir DIR ]          the project (default: found as BOINC finds it)
  [ -h | --help ]                Shows this help text
"""


def input_file_paths(xml_doc, cfg):
    """Local paths of the files a workunit's XML has clients download from
    this project's download hierarchy."""
    base = cfg.download_url.rstrip("/") + "/"
    paths = []
    for info in blocks((xml_doc or "").encode("utf-8"), "file_info"):
        for tag, url in leaf_list(info):
            if tag not in ("url", "gzipped_url") or not url:
                continue
            url = url.decode("utf-8", "replace")
            if base != "/" and url.startswith(base):
                rel = url[len(base):]
                if rel and ".." not in rel.split("/"):
                    paths.append(os.path.join(cfg.download_dir, rel))
    return paths


class Checker:
    """Runs the checks, printing BOINC's lines to ``out``."""

    def __init__(self, cfg, db, repair, out):
        self.cfg = cfg
        self.db = db
        self.repair = repair
        self.out = out
        self._exists = {}
        self._wu_paths = {}

    def say(self, text):
        self.out.write(text + "\n")

    def exists(self, path):
        hit = self._exists.get(path)
        if hit is None:
            hit = self._exists[path] = os.path.exists(path)
        return hit

    def results(self, state):
        """One section: results in ``state``; returns (results, errors)."""
        n = nerr = 0
        last = 0
        while True:
            rows = self.db.query(
                "SELECT r.id, r.workunitid, w.id AS wu_id, w.xml_doc FROM result r "
                "LEFT JOIN workunit w ON w.id = r.workunitid "
                "WHERE r.server_state = %s AND r.id > %s ORDER BY r.id LIMIT %s",
                (int(state), last, BATCH))
            if not rows:
                break
            last = rows[-1]["id"]
            for row in rows:
                n += 1
                if not self.check_result(row, state):
                    nerr += 1
        return n, nerr

    def check_result(self, row, state):
        if row["wu_id"] is None:
            self.say("ERROR: can't find WU %d for result %d" % (row["workunitid"], row["id"]))
            return False
        paths = self._wu_paths.get(row["wu_id"])
        if paths is None:
            paths = self._wu_paths[row["wu_id"]] = input_file_paths(row["xml_doc"], self.cfg)
        missing = [p for p in paths if not self.exists(p)]
        if not missing:
            return True
        for path in missing:
            self.say("no file %s for result %d" % (path, row["id"]))
        if self.repair and state == ServerState.UNSENT:
            with self.db.transaction():
                if mark_result_couldnt_send(self.db, row["id"]):
                    set_transition_time(self.db, row["wu_id"], int(time.time()))
        return False

    def canonical_results(self):
        n = self.db.query_value("SELECT COUNT(*) FROM workunit WHERE canonical_resultid <> 0",
                                None, 0)
        bad = self.db.query(
            "SELECT w.id, w.name, w.canonical_resultid, r.workunitid FROM workunit w "
            "LEFT JOIN result r ON r.id = w.canonical_resultid "
            "WHERE w.canonical_resultid <> 0 AND (r.id IS NULL OR r.workunitid <> w.id) "
            "ORDER BY w.id")
        for row in bad:
            if row["workunitid"] is None:
                self.say("WU %d %s: canonical result %d doesn't exist"
                         % (row["id"], row["name"], row["canonical_resultid"]))
            else:
                self.say("WU %d %s: canonical result %d belongs to WU %d"
                         % (row["id"], row["name"], row["canonical_resultid"],
                            row["workunitid"]))
        return n, len(bad)

    def orphans(self):
        states = (int(ServerState.UNSENT), int(ServerState.IN_PROGRESS))
        n = self.db.query_value("SELECT COUNT(*) FROM result WHERE server_state NOT IN (%s, %s)",
                                states, 0)
        bad = self.db.query(
            "SELECT r.id, r.workunitid FROM result r LEFT JOIN workunit w ON w.id = r.workunitid "
            "WHERE w.id IS NULL AND r.server_state NOT IN (%s, %s) ORDER BY r.id", states)
        for row in bad:
            self.say("ERROR: can't find WU %d for result %d" % (row["workunitid"], row["id"]))
        return n, len(bad)

    def run(self):
        """All sections; returns the number of problems found."""
        total = 0
        for title, check in (
                ("Unsent results:", lambda: self.results(ServerState.UNSENT)),
                ("In progress results:", lambda: self.results(ServerState.IN_PROGRESS)),
                ("Workunits with a canonical result:", self.canonical_results),
                ("Other results:", self.orphans)):
            self.say(title)
            n, nerr = check()
            self.say("%d out of %d errors" % (nerr, n))
            total += nerr
        return total


def main(argv=None, out=None):
    """Entry point of bin/wu_check; returns the exit status (0 even when
    problems are found, as BOINC's)."""
    return click_main(_command(out or sys.stdout), argv, "wu_check", USAGE)


def _command(out):
    @click.command(add_help_option=False)
    @usage_help_option(USAGE, err=True)
    @boinc_option("repair", is_flag=True)
    @project_dir_option()
    def wu_check(repair, project_dir):
        return check(project_dir, repair, out)
    return wu_check


def check(project_dir, repair, out):
    """Run the checks (and repairs); returns the exit status."""
    try:
        cfg = load_config(project_dir)
        db = connect(cfg)
        try:
            Checker(cfg, db, repair, out).run()
        finally:
            db.close()
    except BoincpyError as exc:
        out.flush()
        sys.stderr.write("wu_check: %s\n" % exc.message)
        return exc.exit_code or 1
    out.flush()
    return 0
