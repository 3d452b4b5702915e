"""cancel_jobs: cancel jobs from the shell (BOINC's tools/cancel_jobs).

    cancel_jobs MIN_ID MAX_ID        the workunits with MIN_ID <= id <= MAX_ID
    cancel_jobs --name WU_NAME       the workunit of that name

As BOINC's cancel_jobs: unsent results become OVER / DIDNT_NEED, the
workunit gets error_mask CANCELLED and transition_time now (the
transitioner finishes it, hosts running its results are told to abort them
with <send_result_abort/>).  The same as the ops pages' "Cancel jobs"
(boincpy.db.workunit.cancel_workunits_by_id).  Unlike BOINC's it says what it
did, and refuses (changing nothing) a range with no workunit or a name that
is not one.
"""

import time

import click

from boincpy.cli import click_main
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.db.workunit import cancel_workunits_by_id
from boincpy.errors import ToolError

USAGE = """Cancel jobs: cancel_jobs MIN_ID MAX_ID, or cancel_jobs --name WU_NAME.

MIN_ID and MAX_ID: workunit IDs, both included.  Unsent results are marked
not needed, the workunits cancelled; hosts running their results are told to
abort them.  Run in the project directory (or give --project_dir)."""


@click.command(help=USAGE, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("ids", nargs=-1)
@click.option("--name", "-name", "wu_name", default=None, metavar="WU_NAME",
              help="cancel the workunit of this name")
@click.option("--project_dir", default=None, metavar="DIR",
              help="project directory (default: found as BOINC finds it)")
def cancel_jobs_cmd(ids, wu_name, project_dir):
    if wu_name is not None:
        if ids:
            raise click.UsageError("give either MIN_ID MAX_ID or --name WU_NAME")
    elif len(ids) != 2:
        raise click.UsageError("give MIN_ID MAX_ID or --name WU_NAME")
    else:
        try:
            low, high = (int(x) for x in ids)
        except ValueError:
            raise click.UsageError("MIN_ID and MAX_ID must be workunit IDs (numbers)") from None
        if low < 1 or high < low:
            raise click.UsageError("need 0 < MIN_ID <= MAX_ID (got %d and %d)" % (low, high))
    db = connect(load_config(project_dir))
    try:
        if wu_name is not None:
            wuids = [r["id"] for r in db.query("SELECT id FROM workunit WHERE name = %s",
                                               (wu_name,))]
            if not wuids:
                raise ToolError("No workunit named '%s'" % wu_name)
            what = "workunit %s" % wu_name
        else:
            wuids = [r["id"] for r in db.query(
                "SELECT id FROM workunit WHERE id BETWEEN %s AND %s", (low, high))]
            if not wuids:
                raise ToolError("no workunit has an ID from %d to %d" % (low, high))
            what = "workunits %d to %d" % (low, high)
        nwu, nres = cancel_workunits_by_id(db, wuids, int(time.time()))
    finally:
        db.close()
    click.echo("cancelled %s: %d workunit(s), %d unsent result(s) marked not needed"
               % (what, nwu, nres))


def main(argv=None):
    """Entry point of bin/cancel_jobs."""
    return click_main(cancel_jobs_cmd, argv, "cancel_jobs")
