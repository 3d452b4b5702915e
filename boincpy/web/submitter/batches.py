"""``submit.php``: a submitter's batches and jobs, as BOINC's submit.php shows them.

=============================  ===============================================
``action=`` (none) or          the logged-in submitter's batches: in progress
``show_user_batches``          (progress, completion estimate, credit),
                               completed, aborted; the most recent 20 of each
``show_all_batches``           every batch in one state (``state``), the
                               user's own (``userid``) or, for a manager, an
                               app's (``appid``, 0: every app)
``query_batch``                a batch: figures, progress, its jobs (``status``
                               filters them), the zip of its outputs, abort or
                               retire
``query_job``                  a job: its instances and their output files,
                               its input files
``abort_batch``,               GET: a confirmation with a form; POST (with the
``retire_batch``               form's token): done
``retire_multi``               POST: retire the ticked completed or aborted
                               batches
``admin``                      a manager's apps; ``show_batches_admin_app``
                               (``app_id``) and ``admin_all`` their batches
=============================  ===============================================

Outputs are fetched through ``get_output2.php`` (the login cookie
authenticates).  Unlike BOINC's page, a batch and its jobs are shown only to
their submitter and the managers of their app, a batch is aborted only while
it runs and retired only once it is over, and actions are POSTs carrying a
form token.
"""

from boincpy.db.rows import Batch
from boincpy.states import BatchState
from boincpy.submit import batch as batches
from boincpy.submit import privileges
from boincpy.web import batch_view as view
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.ops import names as N
from boincpy.web.ops.lookups import names_by_id
from boincpy.web.page import PageError, kv_table, notice, num, render, table

PAGE_SIZE = 20

ORDERS = {"sub_asc": ("submission time", "ascending"), "sub_desc": ("submission time", "descending"),
          "comp_asc": ("completion time", "ascending"),
          "comp_desc": ("completion time", "descending")}

NO_RIGHTS = ("You are not allowed to submit jobs to this project. Ask the project's "
             "administrators for access (they grant it with bin/manage_privileges or "
             "the ops pages' Job submitters page).")


def _submitter(ctx):
    """The logged-in user, who must have submission rights."""
    user = ctx.require_login()
    if privileges.user_submit(ctx.db, user.id) is None:
        raise PageError(NO_RIGHTS, "403 Forbidden", "No job submission rights")
    return user


def _app_names(db):
    return {r["id"]: r["name"] for r in db.query("SELECT id, name FROM app")}


def _batch(ctx, user, batch_id=None):
    """The batch named by ``batch_id`` if the user may see and control it."""
    batch_id = batch_id if batch_id is not None else ctx.int_arg("batch_id", minimum=1)
    if batch_id is None:
        raise PageError("missing parameter batch_id")
    b = batches.lookup(ctx.db, batch_id=batch_id)
    if b is None:
        raise PageError("No batch %d." % batch_id, "404 Not Found", "No such batch")
    if not privileges.may_control_batch(ctx.db, user.id, b):
        raise PageError("Batch %d is not yours, and you don't manage its application." % b.id,
                        "403 Forbidden", "No access")
    return b


def _order(ctx):
    order = ctx.req.get("order") or "sub_desc"
    if order not in ORDERS:
        raise PageError("order: one of %s" % ", ".join(ORDERS))
    return order


def _sorted(items, order):
    key = "create_time" if order.startswith("sub") else "completion_time"
    return sorted(items, key=lambda b: (getattr(b, key), b.id), reverse=order.endswith("desc"))


def _order_links(base, order):
    items = []
    for name, (what, how) in ORDERS.items():
        items.append(Markup(fmt("<b>{} {}</b>", what, how)) if name == order
                     else link("%s&order=%s" % (base, name), "%s %s" % (what, how)))
    return fmt('<p class="small">Order by: {}</p>', join(items, Markup(" &middot; ")))


def _batch_link(b, text=None):
    return link(url("submit.php", action="query_batch", batch_id=b.id),
                b.name if text is None else text)


def _show_all_link(n, limit, state, userid, appid):
    if not limit or n <= limit:
        return ""
    return fmt("<p>Showing the most recent {} of {}. {}</p>", limit, n, link(
        url("submit.php", action="show_all_batches", state=state, userid=userid, appid=appid),
        "Show all %d" % n))


def batch_tables(ctx, items, order, limit=PAGE_SIZE, userid=0, appid=0, only_state=None):
    """In progress, completed and aborted batches (counts brought up to date),
    with the submitter's name when ``userid`` is 0 (a manager's view)."""
    db = ctx.db
    apps = _app_names(db)
    users = names_by_id(db, "user", "name", (b.user_id for b in items)) if not userid else {}
    parts = []

    def names(b):
        cells = [_batch_link(b), b.id]
        if not userid:
            cells.append(users.get(b.user_id, "user %d" % b.user_id))
        app = apps.get(b.app_id, "unknown app %d" % b.app_id)
        cells.append(app + (" (%s)" % b.description if b.description else ""))
        return cells
    who = [] if userid else ["Submitter"]

    # counts brought up to date first: a batch may be complete by now
    progress = {b.id: batches.refresh(db, b, ctx.now) for b in items
                if b.state == BatchState.IN_PROGRESS}
    running = [b for b in items if b.state in (BatchState.INIT, BatchState.IN_PROGRESS)]
    if only_state in (None, int(BatchState.IN_PROGRESS)):
        # completion times don't exist yet: order by submission
        run_order = order.replace("comp", "sub")
        rows = []
        for b in _sorted(running, run_order)[:limit or None]:
            bar = (view.progress_bar(progress[b.id], 160, 10) if b.id in progress
                   else Markup(""))
            rows.append(names(b) + [
                b.njobs, fmt("{} {}", view.percent_done(b), bar),
                N.time_text(b.create_time),
                N.time_text(b.est_completion_time, "not yet known")
                if b.state == BatchState.IN_PROGRESS else "new",
                num(b.credit_canonical)])
        parts.append(fmt("<h2>Batches in progress ({})</h2>{}{}", len(running),
                         _show_all_link(len(running), limit, int(BatchState.IN_PROGRESS),
                                        userid, appid),
                         table(["Name", "ID"] + who + ["App", "Jobs", "Progress", "Submitted",
                                                      "Estimated completion", "Credit"],
                               rows, empty="none")))
    for state, title, when in ((BatchState.COMPLETE, "Completed batches", "Completed"),
                               (BatchState.ABORTED, "Aborted batches", "Aborted")):
        if only_state not in (None, int(state)):
            continue
        these = [b for b in items if b.state == state]
        if not these and state == BatchState.ABORTED:
            continue
        rows = [names(b) + [b.njobs, b.nerror_jobs, N.time_text(b.create_time),
                            N.time_text(b.completion_time), num(b.credit_canonical),
                            fmt('<input type="checkbox" name="retire_{}" value="on" '
                                'aria-label="retire batch {}">', b.id, b.id)]
                for b in _sorted(these, order)[:limit or None]]
        listing = table(["Name", "ID"] + who + ["App", "Jobs", "Failed", "Submitted", when,
                                               "Credit", "Select"], rows, empty="none")
        if rows:
            listing = fmt('<form method="post" action="submit.php?action=retire_multi">{}{}'
                          '<button type="submit">Retire selected batches</button></form>',
                          ctx.token_field(), listing)
        parts.append(fmt("<h2>{} ({})</h2>{}{}", title, len(these),
                         _show_all_link(len(these), limit, int(state), userid, appid), listing))
    return join(parts, Markup("\n"))


# ---------------------------------------------------------------------------
# Lists of batches

def show_user_batches(ctx):
    user = _submitter(ctx)
    db = ctx.db
    order = _order(ctx)
    mine = [b for b in batches.of_user(db, user.id) if b.state != BatchState.RETIRED]
    parts = [_rights(ctx, user), _order_links("submit.php?action=show_user_batches", order),
             batch_tables(ctx, mine, order, PAGE_SIZE, userid=user.id)]
    retired = db.query_value("SELECT COUNT(*) FROM batch WHERE user_id = %s AND state = %s",
                             (user.id, int(BatchState.RETIRED)))
    if retired:
        parts.append(fmt('<p class="muted">{} retired batch(es) not shown.</p>', retired))
    return render(ctx, "Your batches", join(parts, Markup("\n")))


def _rights(ctx, user):
    """What the user may submit to and manage, in a sentence or two."""
    db = ctx.db
    us = privileges.user_submit(db, user.id)
    apps = _app_names(db)
    rows = db.query("SELECT app_id, manage FROM user_submit_app WHERE user_id = %s "
                    "ORDER BY app_id", (user.id,))
    submit = "every application" if us.submit_all else (
        ", ".join(apps.get(r["app_id"], str(r["app_id"])) for r in rows) or "no application")
    manage = ("every application" if us.manage_all else
              ", ".join(apps.get(r["app_id"], str(r["app_id"])) for r in rows if r["manage"]))
    text = fmt("<p>You may submit jobs to {}.", submit)
    if manage:
        text = fmt("{} You manage {}: {}.", text, manage,
                   link("submit.php?action=admin", "its batches"))
    return fmt("{}</p>", text)


def show_all_batches(ctx):
    user = _submitter(ctx)
    db = ctx.db
    state = ctx.int_arg("state", minimum=0, maximum=int(BatchState.RETIRED))
    if state not in (BatchState.IN_PROGRESS, BatchState.COMPLETE, BatchState.ABORTED):
        raise PageError("state: %d (in progress), %d (completed) or %d (aborted)"
                        % (BatchState.IN_PROGRESS, BatchState.COMPLETE, BatchState.ABORTED))
    userid = ctx.int_arg("userid", 0, minimum=0)
    appid = ctx.int_arg("appid", 0, minimum=0)
    order = _order(ctx)
    states = ((int(BatchState.INIT), int(BatchState.IN_PROGRESS))
              if state == BatchState.IN_PROGRESS else (state, state))
    if userid:
        if userid != user.id:
            raise PageError("You can list only your own batches this way.", "403 Forbidden",
                            "No access")
        items = [b for b in batches.of_user(db, user.id) if b.state in states]
    else:
        if not privileges.has_manage_access(db, user.id, appid):
            raise PageError("You don't manage %s." % ("every application" if not appid
                                                      else "application %d" % appid),
                            "403 Forbidden", "No access")
        items = _batches_where(db, appid, states)
    base = url("submit.php", action="show_all_batches", state=state, userid=userid, appid=appid)
    title = {1: "Batches in progress", 2: "Completed batches", 3: "Aborted batches"}[state]
    body = fmt("{}{}", _order_links(base, order),
               batch_tables(ctx, items, order, 0, userid, appid, only_state=state))
    return render(ctx, title, body)


def _batches_where(db, appid, states=None):
    """Batches of an app (0: of every app), in the given states (default: not retired)."""
    states = states or (int(BatchState.INIT), int(BatchState.IN_PROGRESS),
                        int(BatchState.COMPLETE), int(BatchState.ABORTED))
    marks = ", ".join(["%s"] * len(states))
    if appid:
        rows = db.query("SELECT * FROM batch WHERE app_id = %%s AND state IN (%s) ORDER BY id"
                        % marks, [appid] + list(states))
    else:
        rows = db.query("SELECT * FROM batch WHERE state IN (%s) ORDER BY id" % marks,
                        list(states))
    return [Batch.from_row(r) for r in rows]


def admin(ctx):
    """The apps whose batches the user manages."""
    user = _submitter(ctx)
    db = ctx.db
    us = privileges.user_submit(db, user.id)
    apps = db.query("SELECT id, name, user_friendly_name FROM app WHERE deprecated = 0 "
                    "ORDER BY id")
    if not us.manage_all:
        managed = {r["app_id"] for r in db.query(
            "SELECT app_id FROM user_submit_app WHERE user_id = %s AND manage <> 0", (user.id,))}
        apps = [a for a in apps if a["id"] in managed]
        if not apps:
            raise PageError("You don't manage any application's batches.", "403 Forbidden",
                            "No access")
    items = [fmt("<li>{} ({}): {}</li>", a["user_friendly_name"] or a["name"], a["name"],
                 link(url("submit.php", action="show_batches_admin_app", app_id=a["id"]),
                      "batches")) for a in apps]
    if us.manage_all:
        items.insert(0, fmt("<li>{}</li>", link("submit.php?action=admin_all",
                                                 "All batches (every app and user)")))
    return render(ctx, "Manage job submission", fmt("<ul>{}</ul>", join(items)))


def show_batches_admin_app(ctx):
    user = _submitter(ctx)
    db = ctx.db
    app_id = ctx.int_arg("app_id", minimum=1)
    app = db.query_one("SELECT id, name, user_friendly_name FROM app WHERE id = %s", (app_id,))
    if app is None:
        raise PageError("No application %s." % app_id, "404 Not Found", "No such app")
    if not privileges.has_manage_access(db, user.id, app_id):
        raise PageError("You don't manage %s." % app["name"], "403 Forbidden", "No access")
    order = _order(ctx)
    body = fmt("{}{}", _order_links(url("submit.php", action="show_batches_admin_app",
                                        app_id=app_id), order),
               batch_tables(ctx, _batches_where(db, app_id), order, PAGE_SIZE, 0, app_id))
    return render(ctx, "Batches of %s" % (app["user_friendly_name"] or app["name"]), body)


def admin_all(ctx):
    user = _submitter(ctx)
    if not privileges.has_manage_access(ctx.db, user.id, 0):
        raise PageError("You don't manage every application.", "403 Forbidden", "No access")
    order = _order(ctx)
    body = fmt("{}{}", _order_links("submit.php?action=admin_all", order),
               batch_tables(ctx, _batches_where(ctx.db, 0), order, PAGE_SIZE, 0, 0))
    return render(ctx, "All batches", body)


# ---------------------------------------------------------------------------
# A batch, a job

def query_batch(ctx):
    user = _submitter(ctx)
    db = ctx.db
    b = _batch(ctx, user)
    try:
        status = view.parse_status(ctx.req.get("status"))
    except ValueError as exc:
        raise PageError(str(exc)) from None
    progress = batches.refresh(db, b, ctx.now)
    owner = names_by_id(db, "user", "name", [b.user_id]).get(b.user_id, "user %d" % b.user_id)
    app = _app_names(db).get(b.app_id, "unknown app %d" % b.app_id)
    parts = [kv_table(view.summary_pairs(progress, app, owner, view.output_size(db, ctx.cfg, b.id)))]
    actions = []
    if any(j.status == batches.WU_SUCCESS for j in progress.jobs):
        actions.append(link(url("get_output2.php", cmd="batch", batch_id=b.id),
                            "Download the outputs (zip)"))
    if b.state in (BatchState.INIT, BatchState.IN_PROGRESS):
        actions.append(link(url("submit.php", action="abort_batch", batch_id=b.id),
                            "Abort batch..."))
    if b.state in (BatchState.COMPLETE, BatchState.ABORTED):
        actions.append(link(url("submit.php", action="retire_batch", batch_id=b.id),
                            "Retire batch..."))
    if actions:
        parts.append(fmt('<p class="actions">{}</p>', join(actions, " | ")))
    base = url("submit.php", action="query_batch", batch_id=b.id)
    parts.append(Markup("<h2>Jobs</h2>"))
    parts.append(view.status_filter(base, status))
    parts.append(view.jobs_table(
        progress, lambda j: link(url("submit.php", action="query_job", wuid=j.id), j.name),
        lambda j: link(url("get_output2.php", cmd="workunit", wu_id=j.id), "download"), status))
    parts.append(_return_link())
    return render(ctx, "Batch %d" % b.id, join(parts, Markup("\n")))


def query_job(ctx):
    user = _submitter(ctx)
    db = ctx.db
    wuid = ctx.int_arg("wuid", minimum=1)
    wu = db.query_one("SELECT id, name, batch, xml_doc FROM workunit WHERE id = %s", (wuid,))
    if wu is None:
        raise PageError("No job %s." % wuid, "404 Not Found", "No such job")
    if not wu["batch"]:
        raise PageError("Job %d is not in a batch." % wuid, "403 Forbidden", "No access")
    b = _batch(ctx, user, wu["batch"])
    results = db.query("SELECT id, name, server_state, outcome, validate_state, exit_status, "
                       "client_state, sent_time, received_time, xml_doc_in, xml_doc_out "
                       "FROM result WHERE workunitid = %s ORDER BY id", (wuid,))
    parts = [fmt("<p>Batch: {}</p>", _batch_link(b, "%s (%d)" % (b.name, b.id))),
             Markup("<h2>Instances</h2>"),
             view.instances_table(ctx.cfg, results, lambda r, i, name: link(
                 url("get_output2.php", cmd="file", result_id=r["id"], file_num=i), name)),
             Markup("<h2>Input files</h2>"), view.input_files_table(wu["xml_doc"]),
             _return_link()]
    return render(ctx, "Job %s" % wu["name"], join(parts, Markup("\n")))


def _return_link():
    return fmt("<p>{}</p>", link("submit.php?action=show_user_batches",
                                 "Return to your batches"))


# ---------------------------------------------------------------------------
# Abort, retire

ABORT_TEXT = ("Aborting a batch cancels its jobs: those not sent yet are never sent, and "
              "the computers running the others are told to stop them. The outputs of "
              "jobs already completed are not touched.")
RETIRE_TEXT = ("Retiring a batch ends it: its unsent jobs are cancelled and its input files "
               "released, and the project may then delete the batch, its jobs and their "
               "output files. Download the outputs you need first.")


DONE = {"abort": "aborted", "retire": "retired"}


def _act(ctx, verb, allowed, text, do):
    """GET: the confirmation; POST with the form's token: ``do(db, batch)``."""
    user = _submitter(ctx)
    b = _batch(ctx, user)
    if b.state not in allowed:
        raise PageError("Batch %d is %s: it can't be %s." % (b.id, batches.state_text(b.state),
                                                            DONE[verb]),
                        "409 Conflict", "Nothing done")
    if ctx.req.method == "POST":
        ctx.require_action()
        do(ctx.db, b)
        body = fmt("{}<p>{}</p>{}", notice("ok", "Batch %d (%s) %s." % (b.id, b.name, DONE[verb])),
                   _batch_link(b, "Show the batch"), _return_link())
        return render(ctx, "Batch %d %s" % (b.id, DONE[verb]), body)
    body = fmt('<p>Batch {} ({} jobs, {}).</p><p>{} Are you sure?</p>'
               '<form method="post" action="{}">{}<button type="submit" class="danger" '
               'id="confirm">Yes - {} batch</button></form>{}',
               _batch_link(b, "%s (%d)" % (b.name, b.id)), b.njobs, batches.state_text(b.state),
               text, url("submit.php", action="%s_batch" % verb, batch_id=b.id),
               ctx.token_field(), verb, _return_link())
    return render(ctx, "Confirm: %s batch %d" % (verb, b.id), body)


def abort_batch(ctx):
    return _act(ctx, "abort", (BatchState.INIT, BatchState.IN_PROGRESS), ABORT_TEXT,
                lambda db, b: batches.abort(db, b, ctx.now))


def retire_batch(ctx):
    return _act(ctx, "retire", (BatchState.COMPLETE, BatchState.ABORTED), RETIRE_TEXT,
                lambda db, b: batches.retire(db, b, ctx.cfg.project_dir, ctx.now))


def retire_multi(ctx):
    """POST: retire each ticked batch the user may control that is over."""
    user = _submitter(ctx)
    if ctx.req.method != "POST":
        raise PageError("Retire batches through the form on your batches page.",
                        "405 Method Not Allowed", "Nothing done")
    ctx.require_action()
    db = ctx.db
    done, skipped = [], []
    for key in sorted(ctx.req.form):
        if not key.startswith("retire_") or ctx.req.post(key) != "on":
            continue
        try:
            batch_id = int(key[len("retire_"):])
        except ValueError:
            continue
        b = batches.lookup(db, batch_id=batch_id)
        if b is None or not privileges.may_control_batch(db, user.id, b) \
                or b.state not in (BatchState.COMPLETE, BatchState.ABORTED):
            skipped.append(batch_id)
            continue
        batches.retire(db, b, ctx.cfg.project_dir, ctx.now)
        done.append(fmt("<li>retired batch {} ({})</li>", b.id, b.name))
    parts = [fmt("<ul>{}</ul>", join(done)) if done else notice("warn", "No batch retired.")]
    if skipped:
        parts.append(notice("bad", "Not retired (not yours, or not over): %s"
                            % ", ".join(str(i) for i in skipped)))
    parts.append(_return_link())
    return render(ctx, "Retiring batches", join(parts))


ACTIONS = {
    "": show_user_batches, "show_user_batches": show_user_batches,
    "show_all_batches": show_all_batches, "admin": admin,
    "show_batches_admin_app": show_batches_admin_app, "admin_all": admin_all,
    "query_batch": query_batch, "query_job": query_job,
    "abort_batch": abort_batch, "retire_batch": retire_batch, "retire_multi": retire_multi,
}


def page(ctx):
    """submit.php: the ``action`` parameter picks the page."""
    action = ctx.req.get("action")
    func = ACTIONS.get(action)
    if func is None:
        raise PageError("no such action %r" % action, "404 Not Found", "Not found")
    return func(ctx)
