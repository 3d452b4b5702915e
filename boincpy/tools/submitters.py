"""Operator tools for remote job submission's submitters.

manage_privileges: who may submit and manage jobs (BOINC's tools/manage_privileges).

    manage_privileges list
    manage_privileges grant USERID {APPNAME|all}      the manage privilege (BOINC's)
    manage_privileges revoke USERID {APPNAME|all}
    manage_privileges grant_submit USERID {APPNAME|all} [--quota X] [--max_jobs_in_progress N]
    manage_privileges revoke_submit USERID {APPNAME|all}

Run in the project directory (or with --project_dir).  ``grant`` and
``revoke`` are BOINC's: the manage privilege for one app or all apps (a
manager may submit to the app and act on other submitters' batches of it).
``grant_submit`` and ``revoke_submit`` do what BOINC leaves to SQL or its
web pages: the right to submit jobs of one app or of all, with the
submitter's quota (their share of the project against the other submitters'
quotas) and limit on jobs in progress.  A refused request changes nothing.

adjust_user_priority: a submitter's logical start time after FLOPs of work
(BOINC's sched/adjust_user_priority).

    adjust_user_priority [--no_update] --user USERID --flops N --app APPNAME

prints the new logical start time (what a batch submitted with
allocation_priority gets as its logical end time).
"""

import click

from boincpy.cli import click_main
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.errors import ToolError
from boincpy.submit import privileges
from boincpy.submit.privileges import submitters
from boincpy.web.accounts import lookup_user_by_id


def _project(project_dir):
    cfg = load_config(project_dir)
    return connect(cfg)


def _user(db, userid):
    user = lookup_user_by_id(db, userid)
    if user is None:
        raise ToolError("no such user: %d" % userid)
    return user


def _app_id(db, name):
    if name == "all":
        return 0
    app_id = db.query_value("SELECT id FROM app WHERE name = %s", (name,))
    if app_id is None:
        raise ToolError("no such app: %s" % name)
    return app_id


project_dir_option = click.option("--project_dir", default=None, metavar="DIR",
                                  help="project directory (default: found as BOINC finds it)")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """Grant and revoke the right to submit and manage jobs (remote job submission)."""


@cli.command("list")
@project_dir_option
def list_privileges(project_dir):
    """Every user with submission rights: quota, limits, apps."""
    db = _project(project_dir)
    try:
        rows = submitters(db)
    finally:
        db.close()
    if not rows:
        click.echo("No users have job submission privileges.")
        return
    for user, us, apps in rows:
        rights = []
        if us.submit_all:
            rights.append("submit: all apps")
        if us.manage_all:
            rights.append("manage: all apps")
        for usa, app_name in apps:
            rights.append("%s: %s" % ("manage" if usa.manage else "submit",
                                      app_name or "app %d" % usa.app_id))
        click.echo("%d %s <%s>  quota %g, max jobs in progress %s; %s" % (
            user["id"], user["name"], user["email_addr"], us.quota,
            us.max_jobs_in_progress or "unlimited", "; ".join(rights) or "file access only"))


def _manage(userid, appname, project_dir, grant):
    db = _project(project_dir)
    try:
        user = _user(db, userid)
        app_id = _app_id(db, appname)
        done = (privileges.grant_manage if grant else privileges.revoke_manage)(
            db, user.id, app_id)
    finally:
        db.close()
    what = "global manage access" if not app_id else "manage access for %s" % appname
    if not done:
        raise ToolError("User %d %s %s" % (userid, "already has" if grant else "does not have",
                                            what))
    click.echo("Done.")


@cli.command()
@click.argument("userid", type=int)
@click.argument("appname")
@project_dir_option
def grant(userid, appname, project_dir):
    """Give USERID the manage privilege for APPNAME (or all apps)."""
    _manage(userid, appname, project_dir, True)


@cli.command()
@click.argument("userid", type=int)
@click.argument("appname")
@project_dir_option
def revoke(userid, appname, project_dir):
    """Take back USERID's manage privilege for APPNAME (or all apps)."""
    _manage(userid, appname, project_dir, False)


@cli.command("grant_submit")
@click.argument("userid", type=int)
@click.argument("appname")
@click.option("--quota", type=click.FloatRange(min=0), default=None,
              help="share of the project, relative to the other submitters' quotas")
@click.option("--max_jobs_in_progress", type=click.IntRange(min=0), default=None,
              help="at most this many unfinished jobs (0: no limit)")
@project_dir_option
def grant_submit(userid, appname, quota, max_jobs_in_progress, project_dir):
    """Let USERID submit jobs of APPNAME (or of all apps)."""
    db = _project(project_dir)
    try:
        user = _user(db, userid)
        privileges.grant_submit(db, user.id, _app_id(db, appname), quota, max_jobs_in_progress)
    finally:
        db.close()
    click.echo("Done.")


@cli.command("revoke_submit")
@click.argument("userid", type=int)
@click.argument("appname")
@project_dir_option
def revoke_submit(userid, appname, project_dir):
    """Take back USERID's right to submit jobs of APPNAME (all: every right)."""
    db = _project(project_dir)
    try:
        user = _user(db, userid)
        if not privileges.revoke_submit(db, user.id, _app_id(db, appname)):
            raise ToolError("User %d has no submission rights for %s" % (userid, appname))
    finally:
        db.close()
    click.echo("Done.")


def manage_privileges_main(argv=None):
    """Entry point of bin/manage_privileges."""
    return click_main(cli, argv, "manage_privileges")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--user", "userid", type=int, required=True, help="the submitter's user id")
@click.option("--flops", type=click.FloatRange(min=0, min_open=True), required=True,
              help="FLOPs of the work submitted")
@click.option("--app", "appname", required=True, help="the app (its min_avg_pfc scales FLOPs)")
@click.option("--no_update", is_flag=True, help="print the new value, don't store it")
@project_dir_option
def adjust_user_priority_cmd(userid, flops, appname, no_update, project_dir):
    """Advance a submitter's logical start time by FLOPs of work; print it."""
    db = _project(project_dir)
    try:
        _user(db, userid)
        app = db.query_one("SELECT id, min_avg_pfc FROM app WHERE name = %s", (appname,))
        if app is None:
            raise ToolError("no such app %s" % appname)
        if privileges.user_submit(db, userid) is None:
            raise ToolError("unauthorized user %d" % userid)
        value = privileges.adjust_user_priority(db, userid, flops, app["min_avg_pfc"],
                                                update=not no_update)
    finally:
        db.close()
    click.echo("%f" % value)


def adjust_user_priority_main(argv=None):
    """Entry point of bin/adjust_user_priority."""
    return click_main(adjust_user_priority_cmd, argv, "adjust_user_priority")
