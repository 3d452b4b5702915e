"""Profiles: what volunteers tell about themselves, their picture, and the
user of the day (BOINC's html/user profile pages, html/inc/profile.inc and
uotd.inc).

=======================  ======================================================
``create_profile.php``   the form (multipart: ``response1``, ``response2``,
                         ``language``, ``picture``, ``delete_pic``) and, on a
                         POST with ``submit``, the change; needs the project's
                         ``profile_min_credit`` of recent average credit
``view_profile.php``     ``userid=N``: a profile (texts as BBCode, rendered by
                         :mod:`boincpy.web.bbcode`), the picture, the badges
``delete_profile.php``   a confirmation form; its POST removes the profile and
                         the pictures
``profile_menu.php``     the user of the day, the lists update_profile_pages
                         writes, a random profile (``cmd=rand&pic=-1|0|1``)
=======================  ======================================================

Pictures are stored as BOINC stores them: ``html/user_profile/images/ID.jpg``
(at most 640x480) and ``ID_sm.jpg`` (at most 64x64), ID the account's number
(never a name the browser sent), re-encoded as JPEG by Pillow from a JPEG,
PNG or GIF upload of at most :data:`MAX_PICTURE_BYTES` and
:data:`MAX_SOURCE_PIXELS`.

Screening (config.xml ``<profile_screening>``): a profile is shown to others
only once the project accepted it (``profile.verification`` 1, ops page
profile_screen_form.php); until then only its owner sees it, with a note.
Every change of a screened profile sends it back to screening.  (BOINC hides
only the unscreened picture, and screens only profiles with pictures; here
the whole profile waits, since text is what spammers post.)
"""

import os
import random
import time
import warnings

from boincpy.db import profile as profile_table
from boincpy.db import user as user_table
from boincpy.errors import DatabaseError
from boincpy.web import accounts, bbcode
from boincpy.web.markup import Markup, fmt, join, link, url
from boincpy.web.page import PageError, Redirect, kv_table, notice, num, render, select, table
from boincpy.web.user.badges import badges_html
from boincpy.web.user.common import date_str, required_id

SMALL_SIZE = (64, 64)                 # profile.inc SMALL_IMG_WIDTH/HEIGHT
BIG_SIZE = (640, 480)                 # profile.inc MAX_IMG_WIDTH/HEIGHT
MAX_PICTURE_BYTES = 50 * 1024         # the size BOINC's form asks for ("50KB or less")
MAX_SOURCE_PIXELS = 4096 * 4096       # a larger picture is refused before it is decoded
PICTURE_FORMATS = ("JPEG", "PNG", "GIF")
MAX_RESPONSE_CHARS = 20000            # per answer, a clear error beyond
SUMMARY_CHARS = 150                   # the user of the day's excerpt (uotd.inc)

IMAGE_DIR = ("html", "user_profile", "images")      # BOINC's IMAGE_PATH
PROFILE_DIR = ("html", "user_profile")              # BOINC's PROFILE_PATH
IMAGE_URL = "user_profile/images/"                  # relative to the master URL
PROFILE_URL = "user_profile/"

LANGUAGES = ("English", "Arabic", "Bulgarian", "Catalan", "Chinese", "Croatian", "Czech",
             "Danish", "Dutch", "Esperanto", "Estonian", "Finnish", "French", "German",
             "Greek", "Hebrew", "Hindi", "Hungarian", "Indonesian", "Italian", "Japanese",
             "Korean", "Latvian", "Lithuanian", "Norwegian", "Persian", "Polish",
             "Portuguese", "Romanian", "Russian", "Serbian", "Slovak", "Slovenian",
             "Spanish", "Swedish", "Turkish", "Ukrainian", "Vietnamese", "Other")

HEADING1 = "Your personal background"
QUESTION1 = ("Tell the other volunteers about yourself: where you live, what you do, "
             "what you enjoy.")
HEADING2 = "Your opinion about the project"


def heading2(cfg):
    return "Your opinion about %s" % (cfg.long_name or "the project")


# ---------------------------------------------------------------------------
# Pictures

def image_path(cfg, userid, small=False):
    """Where a user's picture (or its thumbnail) is kept (profile_image_path)."""
    return cfg.project_path(*IMAGE_DIR, "%d%s.jpg" % (int(userid), "_sm" if small else ""))


def image_url(userid, small=False):
    """The picture's address relative to the master URL (IMAGE_URL)."""
    return "%s%d%s.jpg" % (IMAGE_URL, int(userid), "_sm" if small else "")


def delete_pictures(cfg, userid):
    """Remove a user's picture and thumbnail (delete_user_pictures)."""
    for small in (False, True):
        try:
            os.unlink(image_path(cfg, userid, small))
        except FileNotFoundError:
            pass


def _bad_picture(why):
    return PageError("picture: %s; nothing was changed." % why)


def make_pictures(source_path, size):
    """(picture, thumbnail) Pillow images from an uploaded file, or PageError
    saying why the file is refused."""
    from PIL import Image
    if size > MAX_PICTURE_BYTES:
        raise _bad_picture("the file has %d bytes; a picture may have at most %d KB"
                           % (size, MAX_PICTURE_BYTES // 1024))
    if size == 0:
        raise _bad_picture("the file is empty")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(source_path) as img:
                if img.format not in PICTURE_FORMATS:
                    raise _bad_picture("the file is a %s image; use a JPEG, PNG or GIF picture"
                                       % (img.format or "unknown"))
                width, height = img.size
                if width < 1 or height < 1 or width * height > MAX_SOURCE_PIXELS:
                    raise _bad_picture("the picture is %dx%d pixels; at most %d pixels in all"
                                       % (width, height, MAX_SOURCE_PIXELS))
                img.load()
                picture = img.convert("RGB")
    except PageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _bad_picture("the picture has too many pixels (at most %d in all)"
                           % MAX_SOURCE_PIXELS) from None
    except (OSError, SyntaxError, ValueError, EOFError):
        raise _bad_picture("the file is not a JPEG, PNG or GIF picture") from None
    thumb = picture.copy()
    thumb.thumbnail(SMALL_SIZE)
    picture.thumbnail(BIG_SIZE)
    return picture, thumb


def store_pictures(cfg, userid, picture, thumb):
    """Write ``ID.jpg`` and ``ID_sm.jpg`` (each replaced whole)."""
    folder = cfg.project_path(*IMAGE_DIR)
    os.makedirs(folder, exist_ok=True)
    for img, small in ((picture, False), (thumb, True)):
        final = image_path(cfg, userid, small)
        partial = final + ".part"
        img.save(partial, "JPEG", quality=85)
        os.chmod(partial, 0o664)
        os.replace(partial, final)


# ---------------------------------------------------------------------------
# Who sees what

def visible_to_others(cfg, profile):
    """Whether a profile may be shown to anyone but its owner (screening)."""
    if cfg.profile_screening:
        return int(profile["verification"] or 0) == 1
    return True


def picture_shown(cfg, profile):
    """Whether the public lists may show this profile's picture."""
    return bool(profile["has_picture"]) and visible_to_others(cfg, profile)


def screening_note(verification):
    """What the owner is told about an unscreened or rejected profile
    (offensive_profile_warning)."""
    if int(verification or 0) == -1:
        return notice("bad", "Your profile was marked as unacceptable by the project: nobody "
                             "else sees it. Please change it.")
    return notice("warn", "Your profile will be shown to other people once the project has "
                          "approved it; this may take a few days.")


def images_allowed(db, viewer):
    """Whether [img] pictures are shown to ``viewer`` (forum preference
    images_as_links)."""
    if viewer is None:
        return True
    row = db.query_one("SELECT images_as_links FROM forum_preferences WHERE userid = %s",
                       (viewer.id,))
    return not (row and row["images_as_links"])


def profile_summary(profile, name, max_chars=SUMMARY_CHARS, base=""):
    """A linked name and the first words of the first answer
    (get_profile_summary); ``base``: the master URL, for pages elsewhere."""
    text = bbcode.summary(profile["response1"] or "", max_chars)
    words = fmt(' ("{}")', text) if text else Markup("")
    return fmt("{}{}", link(base + url("view_profile.php", userid=profile["userid"]), name),
               words)


# ---------------------------------------------------------------------------
# The user of the day

def current_uotd(db):
    """The profile last chosen as user of the day (with the user's name), or None."""
    found = db.query(
        "SELECT p.*, u.name FROM profile p JOIN user u ON u.id = p.userid "
        "WHERE p.uotd_time IS NOT NULL AND p.uotd_time > 0 "
        "ORDER BY p.uotd_time DESC LIMIT 1")
    return found[0] if found else None


def uotd_box(db, cfg):
    """The user of the day: thumbnail, name, first words (show_uotd), or "";
    one short line each (the master page is read in 256-byte lines)."""
    profile = current_uotd(db)
    if profile is None or not visible_to_others(cfg, profile):
        return Markup("")
    lines = [fmt('<div class="uotd"><h2>User of the day ({})</h2>',
                 time.strftime("%B %d, %Y", time.gmtime(int(profile["uotd_time"]))))]
    if profile["has_picture"] and os.path.exists(image_path(cfg, profile["userid"], True)):
        lines.append(fmt('<a href="{}"><img src="{}" alt="User profile" class="uotd"></a>',
                         url("view_profile.php", userid=profile["userid"]),
                         image_url(profile["userid"], True)))
    lines.append(fmt("<p>{}</p></div>", profile_summary(profile, profile["name"])))
    return join(lines, Markup("\n"))


# ---------------------------------------------------------------------------
# create_profile.php

def _min_credit_check(ctx, user):
    min_credit = ctx.cfg.profile_min_credit
    if min_credit and user.expavg_credit < min_credit:
        raise PageError("To prevent spam, a recent average credit of %g or more is needed to "
                        "create or edit a profile." % min_credit, "403 Forbidden",
                        "Not enough credit")


def _profile_form(ctx, user, profile, values=None):
    values = values or {}
    r1 = values.get("response1", profile["response1"] if profile else "") or ""
    r2 = values.get("response2", profile["response2"] if profile else "") or ""
    lang = values.get("language", profile["language"] if profile else "English") or "English"
    languages = list(LANGUAGES)
    if lang not in languages:
        languages.append(lang)
    parts = []
    if profile and ctx.cfg.profile_screening and int(profile["verification"] or 0) != 1:
        parts.append(screening_note(profile["verification"]))
    parts.append(fmt(
        "<p>Your profile lets you share your background and opinions with the other "
        "volunteers of {}. You may format the texts with BBCode tags such as [b]bold[/b], "
        "[i]italic[/i], [url=https://...]a link[/url], [quote], [list][*]...[/list].</p>",
        ctx.cfg.long_name or "this project"))
    if profile and profile["has_picture"]:
        pic = fmt('<p><a href="{}"><img src="{}" alt="Your picture"></a> Your picture. '
                  'To replace it, choose another file; to remove it, tick {} '
                  '<label for="delete_pic">remove the picture</label>.</p>',
                  image_url(user.id), image_url(user.id, True),
                  Markup('<input type="checkbox" name="delete_pic" id="delete_pic">'))
    else:
        pic = Markup("")
    parts.append(fmt(
        '<form method="post" action="create_profile.php" enctype="multipart/form-data">{}'
        '<h2>{}</h2><p><label for="response1">{}</label></p>'
        '<p><textarea name="response1" id="response1" rows="10" cols="70">{}</textarea></p>'
        '<h2>{}</h2><p><label for="response2">Tell us what you think of the project and why '
        'you take part.</label></p>'
        '<p><textarea name="response2" id="response2" rows="10" cols="70">{}</textarea></p>'
        '<h2>Language</h2><p><label for="language">The language your profile is written '
        'in:</label> {}</p>'
        '<h2>Picture</h2>{}<p><label for="picture">A JPEG, PNG or GIF picture of at most {} KB '
        '(it is shown at most {}x{} pixels):</label> '
        '<input type="file" name="picture" id="picture" accept="image/jpeg,image/png,'
        'image/gif"></p>'
        '<p><button type="submit" name="submit" value="1" id="submit_profile">Create/edit '
        'profile</button></p></form>',
        ctx.token_field("create_profile.php"), HEADING1, QUESTION1, r1, heading2(ctx.cfg), r2,
        select("language", [(x, x) for x in languages], lang), pic,
        MAX_PICTURE_BYTES // 1024, BIG_SIZE[0], BIG_SIZE[1]))
    if profile:
        parts.append(fmt("<p>{} &middot; {}</p>",
                         link(url("view_profile.php", userid=user.id), "View your profile"),
                         link("delete_profile.php", "Delete your profile")))
    return render(ctx, "Edit your profile" if profile else "Create a profile", join(parts))


def _uploaded_picture(req):
    for f in req.files:
        if f.field == "picture" and (f.size > 0 or f.filename):
            return f
    return None


def create_profile(ctx):
    """create_profile.php: the form, and (POST with ``submit``) its action."""
    user = ctx.require_login()
    _min_credit_check(ctx, user)
    req = ctx.req
    profile = profile_table.lookup(ctx.db, user.id)
    if req.method != "POST":
        return _profile_form(ctx, user, profile)
    if req.body_error:
        raise PageError("The form could not be read (%s); nothing was changed." % req.body_error)
    ctx.require_action()
    if not req.post("submit"):
        return _profile_form(ctx, user, profile)
    response1 = req.post("response1")
    response2 = req.post("response2")
    language = req.post("language").strip() or "English"
    for name, text in (("response1", response1), ("response2", response2)):
        if len(text) > MAX_RESPONSE_CHARS:
            raise PageError("%s: at most %d characters (got %d); nothing was changed."
                            % (name, MAX_RESPONSE_CHARS, len(text)))
    if language not in LANGUAGES and (profile is None or language != profile["language"]):
        raise PageError("language: %r is not one of the form's languages; nothing was changed."
                        % language[:60])
    upload = _uploaded_picture(req)
    delete_pic = bool(req.post("delete_pic"))
    if not response1 and not response2 and not delete_pic and upload is None:
        raise PageError("Your profile submission was empty.")
    pictures = make_pictures(upload.path, upload.size) if upload is not None else None
    has_picture = bool(profile and profile["has_picture"])
    verification = int(profile["verification"] or 0) if profile else 0
    if delete_pic:
        delete_pictures(ctx.cfg, user.id)
        has_picture = False
        verification = 0
    if pictures is not None:
        store_pictures(ctx.cfg, user.id, *pictures)
        has_picture = True
        verification = 0
    if ctx.cfg.profile_screening:
        verification = 0            # every change is screened again
    if profile:
        profile_table.update_profile(ctx.db, user.id, language, response1, response2,
                                     has_picture, verification)
    else:
        profile_table.insert_profile(ctx.db, user.id, language, response1, response2,
                                     has_picture)
    if not user.has_profile:
        user_table.update_user_columns(ctx.db, user.id, {"has_profile": 1})
    body = [notice("ok", "Your profile was saved.")]
    if ctx.cfg.profile_screening:
        body.append(screening_note(0))
    body.append(fmt("<p>{}</p>", link(url("view_profile.php", userid=user.id),
                                      "View your profile")))
    return render(ctx, "Profile saved", join(body))


# a file part larger than this is not even spooled (the page refuses over
# MAX_PICTURE_BYTES with its own message; anything far larger is cut off here)
create_profile.uploads = 20 * MAX_PICTURE_BYTES


# ---------------------------------------------------------------------------
# view_profile.php

def view_profile(ctx):
    """view_profile.php?userid=N."""
    user = accounts.lookup_user_by_id(ctx.db, required_id(ctx, "userid"))
    if user is None or "deleted" in (user.authenticator or ""):
        raise PageError("No such user.", "404 Not Found", "No such user")
    profile = profile_table.lookup(ctx.db, user.id)
    if profile is None:
        if user.has_profile:
            user_table.update_user_columns(ctx.db, user.id, {"has_profile": 0})
        raise PageError("This user has no profile.", "404 Not Found", "No profile")
    if not user.has_profile:
        user_table.update_user_columns(ctx.db, user.id, {"has_profile": 1})
    viewer = ctx.logged_in_user()
    own = viewer is not None and viewer.id == user.id
    min_credit = ctx.cfg.profile_min_credit
    if viewer is None and min_credit and user.expavg_credit < min_credit:
        raise PageError("To prevent spam, profiles of users with a recent average credit of "
                        "less than %g are shown only to logged-in users." % min_credit,
                        "403 Forbidden", "Log in to see this profile")
    if not own and not visible_to_others(ctx.cfg, profile):
        raise PageError("This profile has not been approved by the project yet.",
                        "404 Not Found", "No profile")
    return render(ctx, "Profile: %s" % user.name, _profile_html(ctx, user, profile, viewer))


def _profile_html(ctx, user, profile, viewer):
    """A profile as its readers see it (show_profile): the owner's links and
    screening note, the picture, the answers as BBCode, account and badges."""
    own = viewer is not None and viewer.id == user.id
    parts = []
    if own:
        if ctx.cfg.profile_screening and int(profile["verification"] or 0) != 1:
            parts.append(screening_note(profile["verification"]))
        parts.append(fmt("<p>{} &middot; {}</p>", link("create_profile.php", "Edit your profile"),
                         link("delete_profile.php", "Delete your profile")))
    if profile["has_picture"] and os.path.exists(image_path(ctx.cfg, user.id)):
        parts.append(fmt('<p><img src="{}" alt="{}" class="profile"></p>', image_url(user.id),
                         "Picture of %s" % user.name))
    images = images_allowed(ctx.db, viewer)
    if profile["response1"]:
        parts.append(fmt('<h2>{}</h2><div class="profile-text">{}</div>', HEADING1,
                         bbcode.render(profile["response1"], images)))
    if profile["response2"]:
        parts.append(fmt('<h2>{}</h2><div class="profile-text">{}</div>', heading2(ctx.cfg),
                         bbcode.render(profile["response2"], images)))
    info = [("Account", link(url("show_user.php", userid=user.id), "View")),
            ("Language", profile["language"] or "")]
    badges = badges_html(ctx.db, user.id)
    if badges:
        info.append(("Badges", badges))
    parts.append(kv_table(info))
    return join(parts)


# ---------------------------------------------------------------------------
# uotd.php, profile_search_action.php

def uotd_page(ctx):
    """uotd.php: today's user of the day, the whole profile."""
    profile = current_uotd(ctx.db)
    user = accounts.lookup_user_by_id(ctx.db, profile["userid"]) if profile else None
    if user is None or not visible_to_others(ctx.cfg, profile):
        return render(ctx, "No user of the day", fmt("<p>{}</p>",
                                                      "No user of the day has been chosen."))
    day = time.strftime("%d %B %Y", time.gmtime(int(profile["uotd_time"])))
    return render(ctx, "User of the day for %s: %s" % (day, user.name),
                  _profile_html(ctx, user, profile, ctx.logged_in_user()))


SEARCH_PAGE = 10                # profile_search_action.php: $count
MAX_SEARCH_CHARS = 200


def profile_search_action(ctx):
    """profile_search_action.php?search_string=WORDS[&offset=N]: profiles whose
    answers match (BOINC's fulltext MATCH ... AGAINST), 10 a page."""
    words = ctx.req.get("search_string").strip()
    if not words:
        raise PageError("search_string: give the words to look for")
    if len(words) > MAX_SEARCH_CHARS:
        raise PageError("search_string: at most %d characters" % MAX_SEARCH_CHARS)
    offset = ctx.int_arg("offset", 0, minimum=0, maximum=10 ** 6)
    shown = " AND p.verification = 1" if ctx.cfg.profile_screening else ""
    columns = ("SELECT p.userid, u.name, u.create_time, u.country, u.total_credit, "
               "u.expavg_credit FROM profile p JOIN user u ON u.id = p.userid WHERE ")
    try:
        found = ctx.rdb.query(columns + "MATCH (p.response1, p.response2) AGAINST (%s)"
                              + shown + " LIMIT %s, %s", (words, offset, SEARCH_PAGE))
    except DatabaseError:
        # a database made before the fulltext index: a plain substring search
        like = "%" + words.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        found = ctx.rdb.query(columns + "(p.response1 LIKE %s OR p.response2 LIKE %s)" + shown
                              + " ORDER BY p.userid LIMIT %s, %s",
                              (like, like, offset, SEARCH_PAGE))
    rows = [(link(url("view_profile.php", userid=r["userid"]), r["name"]),
             date_str(r["create_time"]),
             r["country"] or "", num(int(r["total_credit"] or 0)),
             num(int(r["expavg_credit"] or 0))) for r in found]
    parts = [table(["User name", "Joined project", "Country", "Total credit", "Recent credit"],
                   rows, empty="No profiles found containing '%s'." % words)]
    if len(found) == SEARCH_PAGE:
        parts.append(fmt("<p>{}</p>", link(url("profile_search_action.php", search_string=words,
                                                offset=offset + SEARCH_PAGE),
                                            "Next %d" % SEARCH_PAGE)))
    return render(ctx, "Profiles containing '%s'" % words, join(parts))


# ---------------------------------------------------------------------------
# delete_profile.php

def delete_profile(ctx):
    """delete_profile.php: GET asks; POST (with its token) deletes."""
    user = ctx.require_login()
    if ctx.req.method != "POST":
        if profile_table.lookup(ctx.db, user.id) is None:
            return render(ctx, "Delete your profile",
                          fmt("<p>You have no profile. {}</p>",
                              link("create_profile.php", "Create one")))
        return render(ctx, "Delete your profile", fmt(
            "<h2>Are you sure?</h2><p>A deleted profile is gone for good, picture and all: "
            "you would have to write a new one.</p>"
            '<form method="post" action="delete_profile.php">{}'
            '<button type="submit" name="cmd" value="delete" class="danger" '
            'id="delete_profile">Yes, delete my profile</button> {}</form>',
            ctx.token_field("delete_profile.php"), link("home.php", "No, keep it")))
    ctx.require_action()
    profile_table.delete_profile(ctx.db, user.id)
    delete_pictures(ctx.cfg, user.id)
    user_table.update_user_columns(ctx.db, user.id, {"has_profile": 0})
    return render(ctx, "Profile deleted", notice("ok", "Your profile has been deleted."))


# ---------------------------------------------------------------------------
# profile_menu.php

ALPHABET = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _random_profile(ctx):
    pic = ctx.req.get_int("pic", True)
    where = {0: "has_picture = 0", 1: "has_picture = 1", -1: "1 = 1"}.get(pic)
    if where is None:
        raise PageError("pic: give -1 (any), 0 (without pictures) or 1 (with pictures)")
    if ctx.cfg.profile_screening:
        where += " AND verification = 1"
    rows = ctx.rdb.query("SELECT userid FROM profile WHERE %s LIMIT 1000" % where)
    if not rows:
        return render(ctx, "No profiles", "<p>No profile matched your query.</p>")
    raise Redirect(url("view_profile.php", userid=random.choice(rows)["userid"]))


def profile_menu(ctx):
    """profile_menu.php: the user of the day and the ways to browse profiles."""
    cmd = ctx.req.get("cmd")
    if cmd == "rand":
        return _random_profile(ctx)
    if cmd:
        raise PageError("cmd: only 'rand' is known")
    pages = ctx.cfg.project_path(*PROFILE_DIR)
    letters = []
    for ch in ALPHABET:
        if os.path.exists(os.path.join(pages, "profile_%s_1.html" % ch)):
            letters.append(link("%sprofile_%s_1.html" % (PROFILE_URL, ch), ch))
        else:
            letters.append(fmt("{}", ch))
    if os.path.exists(os.path.join(pages, "profile_other_1.html")):
        letters.append(link("%sprofile_other_1.html" % PROFILE_URL, "Other"))
    body = fmt(
        "<p>Profiles let volunteers share their backgrounds and opinions with the {} "
        "community. {}</p>{}<h2>Browse the profiles</h2><ul>"
        "<li>{}</li><li>{}</li><li>At random: {}, {}, {}</li>"
        "<li>By name: {}</li></ul>"
        '<h2>Search profile text</h2><form method="get" action="profile_search_action.php">'
        '<input type="text" name="search_string" id="search_string" size="30"> '
        '<button type="submit">Search</button></form>',
        ctx.cfg.long_name or "project", link("create_profile.php", "Create or edit yours."),
        uotd_box(ctx.db, ctx.cfg),
        link(PROFILE_URL + "user_gallery_1.html", "The picture gallery"),
        link(PROFILE_URL + "profile_country.html", "By country"),
        link(url("profile_menu.php", cmd="rand", pic=-1), "any profile"),
        link(url("profile_menu.php", cmd="rand", pic=1), "with a picture"),
        link(url("profile_menu.php", cmd="rand", pic=0), "without a picture"),
        join(letters, " "))
    return render(ctx, "Profiles", body)


PAGES = {
    "create_profile.php": create_profile,
    "view_profile.php": view_profile,
    "delete_profile.php": delete_profile,
    "profile_menu.php": profile_menu,
    "uotd.php": uotd_page,
    "profile_search_action.php": profile_search_action,
}
