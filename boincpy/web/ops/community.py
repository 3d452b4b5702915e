"""The ops pages of the volunteers' community: profile screening and badges
(BOINC's html/ops/profile_screen_form.php, profile_screen_action.php and
badge_admin.php).

* ``profile_screen_form.php``: up to 20 profiles waiting for screening, each
  shown as its readers would see it, with accept / skip / reject
  (fields ``user{i}`` = 1, 0, -1 and ``userid{i}``, ``n``: BOINC's).  With
  config.xml's profile_screening every unscreened profile waits; without it
  (screening then only picks users of the day) BOINC's choice: profiles with
  a picture and an answer, recent credit, never user of the day, the most
  recommended first.
* ``profile_screen_action.php``: the verdicts (a POST with the form's token;
  BOINC took a GET).
* ``badge_admin.php``: add, edit and delete badges (POSTs with the token).
"""

import os

from boincpy.db import badge as badge_table
from boincpy.db import profile as profile_table
from boincpy.web import bbcode
from boincpy.web.markup import Markup, fmt, join, link
from boincpy.web.page import PageError, notice, num, render
from boincpy.web.user import profile as profiles
from boincpy.web.user.badges import safe_image_url

SCREEN_BATCH = 20


def _waiting(ctx):
    if ctx.cfg.profile_screening:
        sql = ("SELECT p.*, u.name, u.expavg_credit FROM profile p JOIN user u "
               "ON u.id = p.userid WHERE p.verification = 0 ORDER BY p.userid LIMIT %d"
               % SCREEN_BATCH)
    else:
        sql = ("SELECT p.*, u.name, u.expavg_credit FROM profile p JOIN user u "
               "ON u.id = p.userid WHERE p.has_picture > 0 AND p.verification = 0 "
               "AND (p.uotd_time IS NULL OR p.uotd_time = 0) AND u.expavg_credit > 1 "
               "AND (p.response1 <> '' OR p.response2 <> '') "
               "ORDER BY p.recommend DESC LIMIT %d" % SCREEN_BATCH)
    return ctx.db.query(sql)


def _radio(i, value, label, checked=False):
    return fmt('<label><input type="radio" name="user{}" value="{}"{}> {}</label><br>',
               i, value, Markup(" checked") if checked else Markup(""), label)


def _shown(ctx, p):
    parts = []
    if p["has_picture"] and os.path.exists(
            profiles.image_path(ctx.cfg, p["userid"])):
        parts.append(fmt('<p><img src="{}" alt="picture" class="profile"></p>',
                         ctx.cfg.master_url + profiles.image_url(p["userid"])))
    for heading, text in ((profiles.HEADING1, p["response1"]),
                          (profiles.heading2(ctx.cfg), p["response2"])):
        if text:
            parts.append(fmt("<h3>{}</h3><div>{}</div>", heading, bbcode.render(text, False)))
    return join(parts) if parts else fmt('<p class="muted">{}</p>', "(empty profile)")


def profile_screen_form(ctx):
    """profile_screen_form.php: the next profiles to screen."""
    rows = _waiting(ctx)
    if not rows:
        return render(ctx, "Screen profiles", fmt("<p>No more profiles to screen.</p>"))
    items = []
    for i, p in enumerate(rows):
        verdicts = join([_radio(i, 0, "skip"), _radio(i, 1, "accept", True),
                         _radio(i, -1, "reject")])
        facts = fmt("<p>Name: {}<br>Recommends: {}<br>Rejects: {}<br>Recent average credit: "
                    "{}</p>", link(ctx.cfg.master_url + "view_profile.php?userid=%d"
                                   % p["userid"], p["name"]),
                    p["recommend"], p["reject"], num(float(p["expavg_credit"] or 0)))
        items.append(fmt('<tr><td>{}{}<input type="hidden" name="userid{}" value="{}"></td>'
                         '<td>{}</td></tr>', verdicts, facts, i, p["userid"], _shown(ctx, p)))
    body = fmt('<form method="post" action="profile_screen_action.php">{}<table>{}</table>'
               '<input type="hidden" name="n" value="{}">'
               '<button type="submit" id="screen_ok">OK</button></form>',
               ctx.token_field("profile_screen_action.php"), join(items), len(rows))
    return render(ctx, "Screen profiles", body)


def profile_screen_action(ctx):
    """profile_screen_action.php: store the verdicts of the form."""
    ctx.require_action()
    n = ctx.int_arg("n", 0, post=True, minimum=0, maximum=1000)
    verdicts = []
    for i in range(n):
        userid = ctx.int_arg("userid%d" % i, None, post=True, minimum=1, maximum=2 ** 31 - 1)
        value = ctx.int_arg("user%d" % i, 0, post=True, minimum=-1, maximum=1)
        if userid is None:
            raise PageError("userid%d is missing; nothing was changed." % i)
        verdicts.append((userid, value))
    lines = []
    for userid, value in verdicts:
        if value == 0:
            lines.append("%d is skipped" % userid)
        elif profile_table.set_verification(ctx.db, userid, value):
            lines.append("%d is %s" % (userid, "accepted" if value == 1 else "rejected"))
        else:
            lines.append("%d has no profile" % userid)
    body = fmt("<ul>{}</ul><p>{}</p>", join(fmt("<li>{}</li>", x) for x in lines),
               link("profile_screen_form.php", "Next %d" % SCREEN_BATCH))
    return render(ctx, "Screen profiles", body)


# ---------------------------------------------------------------------------
# badge_admin.php

_FIELDS = badge_table.TEXT_COLUMNS


def _badge_values(ctx):
    values = {}
    for name in _FIELDS:
        text = ctx.req.post(name).strip()
        if len(text) > 255:
            raise PageError("%s: at most 255 characters; nothing was changed." % name)
        values[name] = text
    if not values["name"]:
        raise PageError("name: a badge needs a name; nothing was changed.")
    badge_type = ctx.int_arg("type", 0, post=True, minimum=0, maximum=1)
    return badge_type, values


def _badge_row(ctx, b, counts):
    cells = [fmt('<input name="{}" value="{}" size="14">', f, b[f] if b else "")
             for f in ("name", "title", "image_url")]
    cells.append(fmt('<input name="type" value="{}" size="3">', b["type"] if b else ""))
    cells += [fmt('<input name="{}" value="{}" size="12">', f, b[f] if b else "")
              for f in ("description", "level", "tags", "sql_rule")]
    if b:
        picture = Markup("")
        src = safe_image_url(b["image_url"])
        if src:
            if not src.startswith("http"):
                src = ctx.cfg.master_url + src
            picture = fmt(' <img src="{}" alt="" height="32">', src)
        head = fmt('{}<input type="hidden" name="id" value="{}"><br><small>{} users, {} teams'
                   '</small>{}', b["id"], b["id"], counts[0], counts[1], picture)
        buttons = fmt('<button type="submit" name="update" value="1">Update</button> '
                      '<button type="submit" name="delete" value="1" class="danger">Delete'
                      '</button>')
    else:
        head = Markup("new")
        buttons = fmt('<button type="submit" name="add_badge" value="1" id="add_badge">Create '
                      'badge</button>')
    return fmt('<form method="post" action="badge_admin.php" class="inline"><p>{} {} {} {}</p>'
               '</form>', ctx.token_field("badge_admin.php"), head, join(cells, " "), buttons)


def badge_admin(ctx):
    """badge_admin.php: the badges, each editable; add, update, delete."""
    req = ctx.req
    done = None
    if req.method == "POST":
        ctx.require_action()
        if req.post("add_badge"):
            badge_type, values = _badge_values(ctx)
            badge_id = badge_table.insert_badge(ctx.db, ctx.now, badge_type, values)
            done = "Badge %d created." % badge_id
        elif req.post("update") or req.post("delete"):
            badge_id = ctx.int_arg("id", None, post=True, minimum=1)
            if badge_id is None or not ctx.db.query_one("SELECT id FROM badge WHERE id = %s",
                                                         (badge_id,)):
                raise PageError("id: no such badge; nothing was changed.")
            if req.post("delete"):
                badge_table.delete_badge(ctx.db, badge_id)
                done = "Badge %d deleted, with its assignments." % badge_id
            else:
                badge_type, values = _badge_values(ctx)
                badge_table.update_badge(ctx.db, badge_id, badge_type, values)
                done = "Badge %d updated." % badge_id
        else:
            raise PageError("Say what to do: add_badge, update or delete.")
    badges = ctx.db.query("SELECT * FROM badge ORDER BY id")
    users = {r["badge_id"]: r["n"] for r in ctx.db.query(
        "SELECT badge_id, COUNT(*) AS n FROM badge_user GROUP BY badge_id")}
    teams = {r["badge_id"]: r["n"] for r in ctx.db.query(
        "SELECT badge_id, COUNT(*) AS n FROM badge_team GROUP BY badge_id")}
    parts = []
    if done:
        parts.append(notice("ok", done))
    parts.append(fmt("<p>The badges the project issues. bin/badge_assign (a daily task) grants "
                     "the percentile badges; fields: name, title, image URL (relative to the "
                     "master URL, or http(s)://), type (0 user, 1 team), description, level, "
                     "tags, SQL rule (the last four are not used by badge_assign).</p>"))
    parts.extend(_badge_row(ctx, b, (users.get(b["id"], 0), teams.get(b["id"], 0)))
                 for b in badges)
    parts.append(fmt("<h2>New badge</h2>"))
    parts.append(_badge_row(ctx, None, None))
    return render(ctx, "Manage badges", join(parts))
