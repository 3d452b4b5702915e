"""Remote job submission in the ops area: the batch table's rows and a batch's
page (for ``db_action.php?table=batch``), ``batch_action.php`` (abort or
retire a batch) and ``manage_privileges.php`` (who may submit and manage
jobs: what ``bin/manage_privileges`` does).

Every change is a POST carrying the admin's form token; a GET of an action
only shows what it would do.  A refused change says why and changes nothing.
"""

from boincpy.db.rows import Batch
from boincpy.states import BatchState
from boincpy.submit import batch as batches
from boincpy.submit import privileges
from boincpy.web import batch_view as view
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import names as N
from boincpy.web.ops.lookups import Catalog, names_by_id
from boincpy.web.page import (PageError, hidden, kv_table, notice, num, render, select,
                                  table, text_input)

STATE_CHOICES = tuple((int(s), "[%d] %s" % (int(s), batches.state_text(s))) for s in BatchState)

LIST_COLUMNS = ("id, user_id, app_id, name, state, njobs, nerror_jobs, fraction_done, "
                "create_time, completion_time, est_completion_time, credit_canonical")


def _user_link(users, uid):
    return link(url("db_action.php", table="user", id=uid), users.get(uid, "user %d" % uid))


def list_batches(ctx, db, catalog, rows, head=None):
    """The rows of db_action.php?table=batch."""
    users = names_by_id(db, "user", "name", (r["user_id"] for r in rows))
    out = []
    for r in rows:
        when = (N.time_text(r["completion_time"]) if r["completion_time"] else
                "est. " + N.time_text(r["est_completion_time"], "unknown")
                if r["state"] == BatchState.IN_PROGRESS else "---")
        out.append((link(url("db_action.php", table="batch", id=r["id"]), r["id"]), r["name"],
                    _user_link(users, r["user_id"]), catalog.app_name(r["app_id"]),
                    batches.state_text(r["state"]), r["njobs"], r["nerror_jobs"],
                    "%d%%" % int(r["fraction_done"] * 100), N.time_text(r["create_time"]), when,
                    num(r["credit_canonical"]),
                    link(url("db_action.php", table="workunit", batch=r["id"]), "jobs")))
    return table(("ID", "Name", "Submitter", "App", "State", "Jobs", "Failed", "Done",
                  "Created", "Completed", "Credit", ""), out, empty="no batches match",
                 head=head)


def show_batch(ctx, db, catalog, row):
    """A batch's page: figures and progress (brought up to date), actions, jobs."""
    b = Batch.from_row(row)
    progress = batches.refresh(db, b, ctx.now)
    users = names_by_id(db, "user", "name", [b.user_id])
    pairs = [("ID", b.id)] + view.summary_pairs(
        progress, catalog.app_name(b.app_id), _user_link(users, b.user_id),
        view.output_size(db, ctx.cfg, b.id))
    links = [link(url("db_action.php", table="workunit", batch=b.id), "Workunits"),
             link(url("db_action.php", table="result", batch=b.id), "Results")]
    for action in _allowed(b):
        links.append(link(url("batch_action.php", action=action, batch_id=b.id),
                          "%s this batch..." % action.capitalize()))
    jobs = view.jobs_table(progress, lambda j: link(url("db_action.php", table="workunit",
                                                         id=j.id), j.name))
    return fmt("<p>{}</p>{}<h2>Jobs</h2>{}", join(links, " | "), kv_table(pairs), jobs)


def _allowed(b):
    if b.state in (BatchState.INIT, BatchState.IN_PROGRESS):
        return ["abort"]
    if b.state in (BatchState.COMPLETE, BatchState.ABORTED):
        return ["retire"]
    return []


WHAT = {"abort": ("aborted", "Its unsent jobs are never sent, and hosts running the others "
                             "are told to abort them."),
        "retire": ("retired", "Its unsent jobs are cancelled and its input files released; "
                              "db_purge removes it later.")}


def batch_action(ctx):
    """``batch_action.php?batch_id=N&action=abort|retire``: GET shows what
    would happen, a POST with the form token does it."""
    req = ctx.req
    post = req.method == "POST"
    action = req.post("action") if post else req.get("action")
    if action not in WHAT:
        raise PageError("action: abort or retire")
    batch_id = ctx.int_arg("batch_id", minimum=1, post=post)
    b = batches.lookup(ctx.db, batch_id=batch_id) if batch_id else None
    if b is None:
        raise PageError("no batch %s" % batch_id, "404 Not Found", "Not found")
    if action not in _allowed(b):
        raise PageError("Batch %d is %s: it can't be %s; nothing was changed."
                        % (b.id, batches.state_text(b.state), WHAT[action][0]),
                        "409 Conflict", "Action refused")
    back = link(url("db_action.php", table="batch", id=b.id), "Batch %d" % b.id)
    if post:
        ctx.require_action()
        if action == "abort":
            batches.abort(ctx.db, b, ctx.now)
        else:
            batches.retire(ctx.db, b, ctx.cfg.project_dir, ctx.now)
        return render(ctx, "Batch %s" % WHAT[action][0], fmt(
            "{}<p>{}</p>", notice("ok", "Batch %d (%s) %s." % (b.id, b.name, WHAT[action][0])),
            back))
    body = fmt('<p>{} ({}, {} jobs, {}). {}</p><form method="post" action="batch_action.php">'
               '{}{}{}<button type="submit" class="danger" id="confirm">{} batch {}</button>'
               '</form>', back, b.name, b.njobs, batches.state_text(b.state), WHAT[action][1],
               ctx.token_field(), hidden("batch_id", b.id), hidden("action", action),
               action.capitalize(), b.id)
    return render(ctx, "Confirm: %s batch %d" % (action, b.id), body)


# ---------------------------------------------------------------------------
# manage_privileges.php

ACTIONS = ("grant_submit", "revoke_submit", "grant_manage", "revoke_manage")


def _number(ctx, name, kind):
    text = ctx.req.post(name)
    if text == "":
        return None
    try:
        value = kind(text)
    except ValueError:
        raise PageError("%s: %r is not a number" % (name, text)) from None
    if not 0 <= value < float("inf"):
        raise PageError("%s: %s must be 0 or more" % (name, text))
    return value


def _change(ctx, catalog):
    """Apply the posted change; the message saying what was done."""
    ctx.require_action()
    db = ctx.db
    action = ctx.req.post("action")
    if action not in ACTIONS:
        raise PageError("action: one of %s" % ", ".join(ACTIONS))
    uid = ctx.int_arg("user_id", post=True, minimum=1)
    who = db.query_one("SELECT id, name FROM user WHERE id = %s", (uid,)) if uid else None
    if who is None:
        raise PageError("No user %s; nothing was changed." % (uid or "given"))
    app_id = ctx.int_arg("app_id", 0, post=True, minimum=0)
    if app_id and app_id not in catalog.apps:
        raise PageError("No application %d; nothing was changed." % app_id)
    what = catalog.app_name(app_id) if app_id else "every app"
    quota = _number(ctx, "quota", float)
    max_jobs = _number(ctx, "max_jobs_in_progress", int)
    name = who["name"]
    if action == "grant_submit":
        privileges.grant_submit(db, uid, app_id, quota, max_jobs)
        return "%s may submit jobs of %s." % (name, what)
    if action == "revoke_submit":
        if not privileges.revoke_submit(db, uid, app_id):
            raise PageError("%s has no submission rights for %s; nothing was changed."
                            % (name, what), "409 Conflict", "Nothing to do")
        return "%s may no longer submit jobs of %s." % (name, what)
    grant = action == "grant_manage"
    done = (privileges.grant_manage if grant else privileges.revoke_manage)(db, uid, app_id)
    if not done:
        raise PageError("%s %s manage %s; nothing was changed." % (
            name, "may already" if grant else "may not", what), "409 Conflict", "Nothing to do")
    return "%s %s manage %s." % (name, "may now" if grant else "may no longer", what)


def manage_privileges(ctx):
    """Who may submit and manage jobs; a form to grant and revoke."""
    db = ctx.db
    catalog = Catalog(db)
    parts = []
    if ctx.req.method == "POST":
        parts.append(notice("ok", _change(ctx, catalog)))
    rows = []
    for user, us, apps in privileges.submitters(db):
        submit = ["all apps"] if us.submit_all else [
            name or "app %d" % usa.app_id for usa, name in apps]
        manage = ["all apps"] if us.manage_all else [
            name or "app %d" % usa.app_id for usa, name in apps if usa.manage]
        rows.append((link(url("db_action.php", table="user", id=user["id"]), user["id"]),
                     user["name"], user["email_addr"], ", ".join(submit) or "---",
                     ", ".join(manage) or "---", num(us.quota, 3),
                     us.max_jobs_in_progress or "no limit",
                     N.time_text(us.logical_start_time, "---"),
                     link(url("db_action.php", table="batch", user_id=user["id"]), "batches")))
    parts.append(fmt("<h2>Users who may submit jobs</h2>{}", table(
        ("ID", "Name", "Email", "May submit to", "Manages", "Quota", "Max jobs in progress",
         "Logical start time", ""), rows, empty="nobody yet")))
    apps = [(0, "all apps")] + catalog.app_choices()
    parts.append(fmt(
        '<h2>Grant or revoke</h2><form class="filters" method="post" '
        'action="manage_privileges.php">{}'
        '<label for="action">Change</label><div>{}</div>'
        '<label for="user_id">User ID</label><div>{}</div>'
        '<label for="app_id">Application</label><div>{}</div>'
        '<label for="quota">Quota</label><div>{} <span class="muted small">when granting '
        'submission: the share of the project against other submitters\' quotas '
        '(empty: unchanged, 1 for a new submitter)</span></div>'
        '<label for="max_jobs_in_progress">Max jobs in progress</label><div>{} '
        '<span class="muted small">0: no limit; empty: unchanged</span></div>'
        '<span></span><div><button type="submit">Apply</button></div></form>'
        '<p class="muted small">Managing an app lets a user see, abort and retire other '
        'submitters\' batches of it. Revoking submission for all apps removes every right of '
        'the user. The same from a shell: <code>bin/manage_privileges</code>.</p>',
        ctx.token_field(),
        select("action", [(a, a.replace("_", " ")) for a in ACTIONS], ctx.req.post("action")),
        text_input("user_id", ctx.req.post("user_id"), 8, "number"),
        select("app_id", apps, ctx.req.post("app_id") or 0),
        text_input("quota", "", 8), text_input("max_jobs_in_progress", "", 8, "number")))
    return render(ctx, "Job submitters", join(parts, Markup("\n")))
