"""The volunteer's preference pages (boincpy.web.user.prefs) and
am_set_host_info.php, in-process against a project made by make_project:
every field of BOINC's forms, the documents BOINC writes (byte for byte
against what BOINC's PHP site wrote), venues, keywords, and hostile input.
The scheduler's readers (sched/prefs.py, sched/request.py, sched/score.py)
read what these pages write."""

import os
import shutil
import types

import pytest

from boincpy import passwords
from boincpy.web.http import Request
from boincpy.web.user import main, prefs
from site_util import fixture, forms_of, module_project
MARKUP = '<script>alert(1)</script>"'
MOD_TIME = 1795894076       # the fixture's
GLOBAL_TAGS = (
    "idle_time_to_run run_if_user_active run_gpu_if_user_active max_ncpus_pct "
    "cpu_usage_limit suspend_cpu_usage ram_max_used_busy_pct niu_max_ncpus_pct "
    "niu_cpu_usage_limit niu_suspend_cpu_usage ram_max_used_idle_pct "
    "suspend_if_no_recent_input run_on_batteries cpu_scheduling_period_minutes "
    "disk_interval leave_apps_in_memory work_buf_min_days work_buf_additional_days "
    "start_hour end_hour disk_max_used_gb disk_min_free_gb disk_max_used_pct "
    "vm_max_used_pct max_bytes_sec_down max_bytes_sec_up daily_xfer_limit_mb "
    "daily_xfer_period_days net_start_hour net_end_hour dont_verify_images "
    "confirm_before_connecting hangup_if_dialed").split()


class Site:
    """The project, its database, and calls of its pages as a user."""

    def __init__(self, project):
        self.project = project
        self.db = project.connect()

    def user(self, name, global_prefs="", project_prefs=""):
        from boincpy.web import accounts
        email = "%s-%s@example.org" % (name, passwords.random_string()[:8])
        u = accounts.make_user(self.db, self.project.cfg, email, name + passwords.random_string()[:6],
                               passwords.client_passwd_hash("pw", email))
        self.db.execute("UPDATE user SET global_prefs = %s, project_prefs = %s WHERE id = %s",
                        (global_prefs, project_prefs, u.id))
        return self.row(u.id)

    def row(self, userid):
        from boincpy.web import accounts
        return accounts.lookup_user_by_id(self.db, userid)

    def call(self, page, user=None, get=None, post=None, now=None, environ=None):
        env = {"SCRIPT_NAME": "/x/" + page, "HTTP_HOST": "127.0.0.1",
               "QUERY_STRING": "&".join("%s=%s" % kv for kv in (get or {}).items())}
        if user is not None:
            env["HTTP_COOKIE"] = "auth=" + user.authenticator
        env.update(environ or {})
        req = Request.of("POST" if post is not None else "GET", get=get, post=post,
                         environ=env)
        resp = main.handle(page, req, self.project.root, now=now)
        assert "Traceback" not in resp.text, resp.text
        return resp

    def form(self, page, user, get, action=None, now=None):
        """(fields as {name: [values]}, field names) of the page's form."""
        resp = self.call(page, user, get=get, now=now)
        assert resp.status in ("", "200 OK"), resp.text
        form = forms_of(resp.text, action or page)[0]
        fields = {}
        for name, value in form["fields"]:
            fields.setdefault(name, []).append(value)
        return fields, form["names"]

    def submit(self, page, user, get, changes=(), drop=(), now=None, action=None):
        """Load the form, change fields, post it; the response."""
        fields, _ = self.form(page, user, get, action, now)
        for name in drop:
            fields.pop(name, None)
        for name, value in dict(changes).items():
            fields[name] = [value]
        return self.call(action or page, user, post=fields, now=now)


@pytest.fixture(scope="module")
def site(db_root_params):
    with module_project(db_root_params) as project:
        s = Site(project)
        # a CPU app version, as the reference project had: the form offers no_cpu
        appid = s.db.insert("INSERT INTO app (create_time, name, user_friendly_name) "
                            "VALUES (1, 'prefsapp', 'Prefs app')")
        platformid = (s.db.query_value("SELECT id FROM platform ORDER BY id LIMIT 1")
                      or s.db.insert("INSERT INTO platform (create_time, name) "
                                     "VALUES (1, 'x86_64-pc-linux-gnu')"))
        s.db.execute("INSERT INTO app_version (create_time, appid, version_num, platformid, "
                     "xml_doc, plan_class) VALUES (1, %s, 100, %s, '', '')", (appid, platformid))
        yield s
        s.db.close()


def saved(resp, subset):
    assert resp.status.startswith("303"), (resp.status, resp.text[-2000:])
    assert resp.header("Location").startswith("prefs.php?subset=" + subset), resp.header("Location")


# ---------------------------------------------------------------------------
# computing preferences

def test_global_form_has_every_field_of_boincs(site):
    u = site.user("formfields")
    _, names = site.form("prefs_edit.php", u, {"subset": "global"})
    assert set(GLOBAL_TAGS) <= names, set(GLOBAL_TAGS) - names
    page = site.call("prefs.php", u, get={"subset": "global"}).text
    for text in ("% of CPU time", "KB/second", "days of work", "MB every", "GB free",
                 "Add separate preferences for home", "Add separate preferences for school",
                 "Add separate preferences for work"):
        assert text in page, text


def test_global_save_is_boincs_document_byte_for_byte(site):
    """Only cpu_usage_limit changed to 67 from a fresh account's form: the
    document BOINC's site wrote, and the scheduler reads 67 and mod_time."""
    from boincpy.sched.request import parse_global_prefs, prefs_mod_time
    u = site.user("bytes")
    resp = site.submit("prefs_edit.php", u, {"subset": "global"},
                       {"cpu_usage_limit": "67"}, now=MOD_TIME)
    saved(resp, "global")
    stored = site.row(u.id).global_prefs
    assert stored == fixture("global_prefs_after_web_edit.xml")
    parsed = parse_global_prefs(stored, "", MOD_TIME)
    assert (parsed.mod_time, parsed.work_buf_min_days, parsed.max_ncpus_pct) == (MOD_TIME, 0.1, 100)
    assert prefs_mod_time(stored) == MOD_TIME
    # the page shows it, and a later save moves mod_time on
    page = site.call("prefs.php", u, get={"subset": "global", "updated": "1"}).text
    assert "67 % of CPU time" in page and "have been updated" in page
    saved(site.submit("prefs_edit.php", site.row(u.id), {"subset": "global"},
                      {"work_buf_min_days": "0.25"}, now=MOD_TIME + 100), "global")
    again = site.row(u.id).global_prefs
    assert "<mod_time>%d</mod_time>" % (MOD_TIME + 100) in again
    assert "<work_buf_min_days>0.25</work_buf_min_days>" in again
    assert "<cpu_usage_limit>67</cpu_usage_limit>" in again


def test_scaled_optional_and_range_values(site):
    u = site.user("scaled")
    saved(site.submit("prefs_edit.php", u, {"subset": "global"}, {
        "max_bytes_sec_down": "1.5", "max_bytes_sec_up": "20000", "daily_xfer_limit_mb": "2000",
        "daily_xfer_period_days": "30", "start_hour": "22", "end_hour": "6",
        "suspend_cpu_usage": "", "disk_max_used_gb": "20"}), "global")
    xml = site.row(u.id).global_prefs
    for part in ("<max_bytes_sec_down>1536</max_bytes_sec_down>",
                 "<max_bytes_sec_up>20480000</max_bytes_sec_up>",
                 "<daily_xfer_limit_mb>2000</daily_xfer_limit_mb>\n"
                 "<daily_xfer_period_days>30</daily_xfer_period_days>",
                 "<start_hour>22</start_hour>\n<end_hour>6</end_hour>",
                 "<suspend_cpu_usage>0</suspend_cpu_usage>",
                 "<disk_max_used_gb>20</disk_max_used_gb>"):
        assert part in xml, part
    # the form shows KB/s again, and the hours
    fields, _ = site.form("prefs_edit.php", site.row(u.id), {"subset": "global"})
    assert fields["max_bytes_sec_down"] == ["1.5"]
    assert fields["start_hour"] == ["22"] and fields["end_hour"] == ["6"]
    assert fields["suspend_cpu_usage"] == [""]


@pytest.mark.parametrize("field,value", [
    ("cpu_usage_limit", "abc"), ("cpu_usage_limit", "1000"), ("cpu_usage_limit", "0"),
    ("cpu_usage_limit", MARKUP), ("work_buf_min_days", "1e400"), ("idle_time_to_run", "-5"),
    ("disk_interval", "9" * 500), ("max_bytes_sec_up", "0x10"), ("start_hour", "25"),
    ("end_hour", MARKUP), ("daily_xfer_period_days", "nan"), ("max_bytes_sec_down", "1e7")])
def test_bad_values_refused_naming_the_field(site, field, value):
    u = site.user("hostile")
    resp = site.submit("prefs_edit.php", u, {"subset": "global"}, {field: value})
    assert resp.status.startswith("400"), resp.status
    assert field in resp.text and "nothing was saved" in resp.text
    assert "<script>" not in resp.text
    assert site.row(u.id).global_prefs == ""


def test_one_hour_of_a_range_is_refused(site):
    u = site.user("onehour")
    resp = site.submit("prefs_edit.php", u, {"subset": "global"}, {"net_start_hour": "3"})
    assert resp.status.startswith("400") and "net_end_hour" in resp.text
    assert site.row(u.id).global_prefs == ""


def test_stored_markup_is_shown_escaped(site):
    u = site.user("stored", global_prefs=(
        "<global_preferences>\n<mod_time>5</mod_time>\n"
        "<work_buf_min_days>&lt;script&gt;x</work_buf_min_days>\n</global_preferences>\n"),
        project_prefs="<project_preferences>\n<project_specific>\n<x>%s</x>\n"
                      "</project_specific>\n</project_preferences>\n" % "&lt;b&gt;")
    for page, get in (("prefs.php", {"subset": "global"}),
                      ("prefs_edit.php", {"subset": "global"}),
                      ("prefs.php", {"subset": "project"})):
        text = site.call(page, u, get=get).text
        assert "<script>" not in text and "<b>" not in text


def test_venues_add_edit_remove(site):
    from boincpy.sched.request import parse_global_prefs
    u = site.user("venues")
    saved(site.submit("prefs_edit.php", u, {"subset": "global"},
                      {"max_ncpus_pct": "90"}, now=1000), "global")
    # add home, starting from the defaults
    fields, _ = site.form("add_venue.php", site.row(u.id), {"subset": "global", "venue": "home"})
    assert fields["max_ncpus_pct"] == ["100"]
    saved(site.submit("add_venue.php", site.row(u.id), {"subset": "global", "venue": "home"},
                      {"max_ncpus_pct": "50"}, now=2000), "global")
    xml = site.row(u.id).global_prefs
    assert xml.startswith("<global_preferences>\n<mod_time>2000</mod_time>\n")
    home = xml[xml.index('<venue name="home">\n'):]
    assert "<max_ncpus_pct>50</max_ncpus_pct>" in home and "<mod_time>" not in home
    assert xml.endswith("</venue>\n</global_preferences>\n")
    assert parse_global_prefs(xml, "home", 2000).max_ncpus_pct == 50
    assert parse_global_prefs(xml, "", 2000).max_ncpus_pct == 90
    page = site.call("prefs.php", site.row(u.id), get={"subset": "global"}).text
    assert "Separate preferences for home" in page and "prefs_edit.php?subset=global&amp;venue=home" in page
    # add work; BOINC writes home, work, school
    saved(site.submit("add_venue.php", site.row(u.id), {"subset": "global", "venue": "work"},
                      {"max_ncpus_pct": "30"}, now=2500), "global")
    xml = site.row(u.id).global_prefs
    assert xml.index('<venue name="home">') < xml.index('<venue name="work">')
    # edit home through its own form: the default set and work untouched
    saved(site.submit("prefs_edit.php", site.row(u.id), {"subset": "global", "venue": "home"},
                      {"max_ncpus_pct": "40"}, now=3000), "global")
    xml = site.row(u.id).global_prefs
    assert parse_global_prefs(xml, "home", 3000).max_ncpus_pct == 40
    assert parse_global_prefs(xml, "work", 3000).max_ncpus_pct == 30
    assert parse_global_prefs(xml, "", 3000).max_ncpus_pct == 90
    # remove home: a confirming form, then the POST
    fields, _ = site.form("prefs_remove.php", site.row(u.id), {"subset": "global", "venue": "home"},
                          now=4000)
    resp = site.call("prefs_remove.php", site.row(u.id), post=fields, now=4000)
    saved(resp, "global")
    xml = site.row(u.id).global_prefs
    assert '<venue name="home">' not in xml and '<venue name="work">' in xml
    assert "<mod_time>4000</mod_time>" in xml
    # a venue that isn't there can't be edited; an unknown venue is refused
    resp = site.call("prefs_edit.php", site.row(u.id), get={"subset": "global", "venue": "home"})
    assert resp.status.startswith("404")
    resp = site.call("add_venue.php", site.row(u.id), get={"subset": "global", "venue": MARKUP})
    assert resp.status.startswith("400") and "<script>" not in resp.text
    # restore defaults: venues gone, BOINC's defaults written
    fields, _ = site.form("prefs_default.php", site.row(u.id), {}, now=5000)
    resp = site.call("prefs_default.php", site.row(u.id), post=fields, now=5000)
    assert resp.header("Location") == "prefs.php?subset=global&defaults=1"
    xml = site.row(u.id).global_prefs
    assert "<venue" not in xml and "<cpu_usage_limit>100</cpu_usage_limit>" in xml
    assert "<niu_max_ncpus_pct>0</niu_max_ncpus_pct>" in xml    # as BOINC's defaults


# ---------------------------------------------------------------------------
# project preferences

def test_project_save_is_boincs_document_byte_for_byte(site):
    from boincpy.sched.prefs import parse_project_prefs
    u = site.user("projbytes")
    fields, names = site.form("prefs_edit.php", u, {"subset": "project"})
    assert {"resource_share", "no_cpu", "send_email", "show_hosts", "default_venue"} <= names
    saved(site.submit("prefs_edit.php", u, {"subset": "project"},
                      {"resource_share": "250"}), "project")
    row = site.row(u.id)
    assert row.project_prefs == fixture("project_prefs_after_web_edit.xml")
    assert (row.send_email, row.show_hosts, row.venue) == (u.send_email, u.show_hosts, "")
    assert parse_project_prefs(row.project_prefs, "").dont_use_proc_type[0] is False
    # PR #7309: an empty project-specific part still gives the edit link
    page = site.call("prefs.php", row, get={"subset": "project"}).text
    assert 'href="prefs_edit.php?subset=project"' in page
    assert "250" in page


def test_project_flags_venue_and_cpu(site):
    from boincpy.sched.prefs import parse_project_prefs
    u = site.user("projflags")
    saved(site.submit("prefs_edit.php", u, {"subset": "project"},
                      {"resource_share": "10", "default_venue": "school"},
                      drop=("send_email", "show_hosts", "no_cpu")), "project")
    row = site.row(u.id)
    assert (row.send_email, row.show_hosts, row.venue) == (0, 0, "school")
    assert "<no_cpu>1</no_cpu>" in row.project_prefs
    assert parse_project_prefs(row.project_prefs, "").dont_use_proc_type[0] is True
    # a venue set of the project preferences, read by the scheduler for that venue
    saved(site.submit("add_venue.php", row, {"subset": "project", "venue": "work"},
                      {"resource_share": "30"}), "project")
    xml = site.row(u.id).project_prefs
    assert '<venue name="work">\n<resource_share>30</resource_share>\n<no_cpu>0</no_cpu>\n</venue>\n' in xml
    assert not parse_project_prefs(xml, "work").dont_use_proc_type[0]
    assert parse_project_prefs(xml, "").dont_use_proc_type[0]
    for value in ("-1", "x", "99999999"):
        resp = site.submit("prefs_edit.php", site.row(u.id), {"subset": "project"},
                           {"resource_share": value})
        assert resp.status.startswith("400") and "resource_share" in resp.text
    resp = site.submit("prefs_edit.php", site.row(u.id), {"subset": "project"},
                       {"default_venue": MARKUP})
    assert resp.status.startswith("400") and "<script>" not in resp.text
    assert site.row(u.id).project_prefs == xml


def test_app_selection_and_beta_work(site):
    """With app_select_prefs the form offers the apps; a beta app adds
    allow_beta_work; the scheduler reads what is written."""
    from boincpy.sched.prefs import parse_project_prefs
    cfg_path = site.project.path("config.xml")
    shutil.copy(cfg_path, cfg_path + ".orig")
    beta_id = site.db.insert("INSERT INTO app (create_time, name, user_friendly_name, beta) "
                             "VALUES (1, 'betaapp', %s, 1)", (MARKUP,))
    try:
        with open(cfg_path) as f:
            text = f.read()
        with open(cfg_path, "w") as f:
            f.write(text.replace("<config>", "<config>\n    <app_select_prefs>1</app_select_prefs>"
                                 "<max_jobs_pref>1</max_jobs_pref><max_cpus_pref>1</max_cpus_pref>",
                                 1))
        u = site.user("apps")
        fields, names = site.form("prefs_edit.php", u, {"subset": "project"})
        apps = [int(r["id"]) for r in site.db.query("SELECT id FROM app WHERE deprecated = 0")]
        assert {"app_id_%d" % a for a in apps} <= names
        assert {"allow_beta_work", "allow_non_preferred_apps"} <= names
        assert "<script>" not in site.call("prefs_edit.php", u, get={"subset": "project"}).text
        keep = apps[0]
        assert {"max_jobs", "max_cpus"} <= names
        changes = {"allow_beta_work": "on", "allow_non_preferred_apps": "on",
                   "max_jobs": "3", "max_cpus": "2"}
        resp = site.submit("prefs_edit.php", u, {"subset": "project"}, changes,
                           drop=["app_id_%d" % a for a in apps if a != keep])
        saved(resp, "project")
        xml = site.row(u.id).project_prefs
        assert ("<allow_beta_work>1</allow_beta_work>\n<project_specific>\n<apps_selected>\n"
                "<app_id>%d</app_id>\n</apps_selected>\n<allow_non_preferred_apps>1"
                "</allow_non_preferred_apps>\n<max_jobs>3</max_jobs>\n<max_cpus>2</max_cpus>\n"
                "</project_specific>\n" % keep) in xml
        p = parse_project_prefs(xml, "")
        assert (p.max_jobs_in_progress, p.max_cpus) == (3, 2)
        assert list(p.selected_apps) == [keep]
        assert p.allow_beta_work and p.allow_non_preferred_apps
        page = site.call("prefs.php", site.row(u.id), get={"subset": "project"}).text
        assert ": no" in page and "<script>" not in page
        fields, _ = site.form("prefs_edit.php", site.row(u.id), {"subset": "project"})
        assert fields["max_jobs"] == ["3"] and fields["max_cpus"] == ["2"]
        resp = site.submit("prefs_edit.php", site.row(u.id), {"subset": "project"},
                           {"max_cpus": "9"})
        assert resp.status.startswith("400") and "max_cpus" in resp.text
        assert site.row(u.id).project_prefs == xml
        # every app checked: no selection written (new apps run too)
        saved(site.submit("prefs_edit.php", site.row(u.id), {"subset": "project"},
                          {"app_id_%d" % a: "on" for a in apps}), "project")
        assert "<apps_selected>" not in site.row(u.id).project_prefs
    finally:
        shutil.move(cfg_path + ".orig", cfg_path)
        site.db.execute("DELETE FROM app WHERE id = %s", (beta_id,))


# ---------------------------------------------------------------------------
# safety

def test_not_logged_in_goes_to_the_login_form(site):
    for page in ("prefs.php", "prefs_edit.php", "add_venue.php", "kw_prefs.php"):
        resp = site.call(page, None, get={"subset": "global", "venue": "home"})
        assert resp.status.startswith("303")
        assert resp.header("Location").startswith("login_form.php")


def test_posts_without_a_valid_token_change_nothing(site):
    u = site.user("csrf")
    other = site.user("csrf_other")
    fields, _ = site.form("prefs_edit.php", u, {"subset": "global"})
    fields["cpu_usage_limit"] = ["55"]
    no_token = {k: v for k, v in fields.items() if k != "csrf_token"}
    resp = site.call("prefs_edit.php", u, post=no_token)
    assert resp.status.startswith("403")
    # a token made for another user, or for another form
    other_fields, _ = site.form("prefs_edit.php", other, {"subset": "global"})
    resp = site.call("prefs_edit.php", u, post=dict(fields, csrf_token=other_fields["csrf_token"]))
    assert resp.status.startswith("403")
    kw_fields, _ = site.form("kw_prefs.php", u, {})
    resp = site.call("prefs_edit.php", u, post=dict(fields, csrf_token=kw_fields["csrf_token"]))
    assert resp.status.startswith("403")
    # posted from another site
    resp = site.call("prefs_edit.php", u, post=fields,
                     environ={"HTTP_ORIGIN": "http://evil.example"})
    assert resp.status.startswith("403")
    for page in ("add_venue.php", "prefs_remove.php", "prefs_default.php", "kw_prefs.php"):
        resp = site.call(page, u, post={"subset": "global", "venue": "home", "radio1": "1"})
        assert resp.status.startswith("403"), page
    assert site.row(u.id).global_prefs == ""
    assert not os.path.exists(prefs.kw_prefs_path(site.project.cfg, u.id))
    # the right token works
    saved(site.call("prefs_edit.php", u, post=fields), "global")


def test_another_users_prefs_are_never_touched(site):
    victim = site.user("victim", global_prefs="<global_preferences>\n</global_preferences>\n",
                       project_prefs="<project_preferences>\n</project_preferences>\n")
    attacker = site.user("attacker")
    for subset in ("global", "project"):
        saved(site.submit("prefs_edit.php", attacker, {"subset": subset},
                          {"userid": str(victim.id), "id": str(victim.id),
                           "resource_share": "5"}), subset)
    fields, _ = site.form("kw_prefs.php", attacker, {})
    site.call("kw_prefs.php", attacker, post=dict(fields, userid=str(victim.id), radio1="1"))
    after = site.row(victim.id)
    assert after.global_prefs == victim.global_prefs
    assert after.project_prefs == victim.project_prefs
    assert not os.path.exists(prefs.kw_prefs_path(site.project.cfg, victim.id))
    assert "<resource_share>5</resource_share>" in site.row(attacker.id).project_prefs


def test_odd_requests_get_clear_errors(site):
    u = site.user("odd")
    for get in ({"subset": MARKUP}, {"subset": "global", "venue": "moon"}, {}):
        resp = site.call("prefs_edit.php", u, get=get)
        assert resp.status.startswith(("400", "404")), (get, resp.status)
        assert "<script>" not in resp.text
    resp = site.call("prefs.php", u, get={"subset": "x" * 5000})
    assert resp.status.startswith("400")
    # a stored document that is not XML at all still shows, with defaults
    site.db.execute("UPDATE user SET global_prefs = '<<<>>>< not xml', project_prefs = "
                    "'<project_preferences><resource_share>' WHERE id = %s", (u.id,))
    for subset in ("global", "project"):
        resp = site.call("prefs.php", site.row(u.id), get={"subset": subset})
        assert resp.status in ("", "200 OK"), resp.text


# ---------------------------------------------------------------------------
# keywords

def test_keyword_preferences_written_as_boinc_and_read_by_the_scheduler(site):
    from boincpy.sched.score import user_keywords
    u = site.user("kw")
    fields, names = site.form("kw_prefs.php", u, {})
    assert {"radio%d" % kw[0] for kw in prefs.KEYWORDS} <= names
    fields.update({"radio1": ["1"], "radio7": ["1"], "radio20": ["-1"], "radio64": ["0"]})
    resp = site.call("kw_prefs.php", u, post=fields)
    assert "Preferences saved" in resp.text
    with open(prefs.kw_prefs_path(site.project.cfg, u.id)) as f:
        assert f.read() == "1 7\n20\n"
    # the form shows the choices again
    again, _ = site.form("kw_prefs.php", u, {})
    assert again["radio1"] == ["1"] and again["radio20"] == ["-1"] and again["radio2"] == ["0"]
    work = types.SimpleNamespace(
        user_kw=None, userid=u.id, cfg=site.project.cfg,
        req=types.SimpleNamespace(user_keywords_yes=[], user_keywords_no=[]))
    assert user_keywords(work) == ({1, 7}, {20})
    bad = dict(fields, radio5=[MARKUP])
    resp = site.call("kw_prefs.php", u, post=bad)
    assert resp.status.startswith("400") and "radio5" in resp.text
    with open(prefs.kw_prefs_path(site.project.cfg, u.id)) as f:
        assert f.read() == "1 7\n20\n"


# ---------------------------------------------------------------------------
# am_set_host_info.php

def test_am_set_host_info(site):
    from boincpy.web import rpc
    owner = site.user("hostowner")
    other = site.user("hostother")
    hostid = site.db.insert("INSERT INTO host (create_time, userid, venue, misc) VALUES (1, %s, '', '')",
                            (owner.id,))

    def call(key, hid, venue):
        req = Request.of("GET", get={"account_key": key, "hostid": str(hid), "venue": venue})
        return rpc.handle("am_set_host_info", site.project.cfg, req).text

    def venue():
        return site.db.query_value("SELECT venue FROM host WHERE id = %s", (hostid,))

    assert call(other.authenticator, hostid, "home") == fixture(
        "am_set_host_info_other_users_host.xml")
    assert venue() == ""
    assert call("nobody", hostid, "home") == fixture("am_set_host_info_other_users_host.xml")
    assert call(owner.authenticator, hostid + 1000, "home") == fixture(
        "am_set_host_info_other_users_host.xml")
    assert "<error_num>-1</error_num>" in call(owner.authenticator, hostid, MARKUP)
    assert venue() == ""
    assert call(owner.authenticator, hostid, "work") == (
        '<?xml version="1.0" encoding="ISO-8859-1" ?>\n'
        "<am_set_host_info_reply>\n    <success/>\n</am_set_host_info_reply>\n")
    assert venue() == "work"
    assert "<success/>" in call(owner.authenticator, hostid, "")
    assert venue() == ""


def test_privacy_consents_on_the_project_form(site):
    """Consent types with privacypref: a checkbox each; a change is a new
    consent row (source Webform), no change adds none."""
    ctid = site.db.insert("INSERT INTO consent_type (shortname, description, enabled, "
                          "project_specific, privacypref) VALUES ('STATSEXPORT', %s, 1, 0, 1)",
                          ("Export stats " + MARKUP,))
    try:
        u = site.user("consent")
        fields, names = site.form("prefs_edit.php", u, {"subset": "project"})
        assert "consent_STATSEXPORT" in names and "consent_STATSEXPORT" not in fields
        assert "<script>" not in site.call("prefs.php", u, get={"subset": "project"}).text

        def rows():
            return [(r["consent_flag"], r["source"]) for r in site.db.query(
                "SELECT consent_flag, source FROM consent WHERE userid = %s AND "
                "consent_type_id = %s ORDER BY id", (u.id, ctid))]
        now = 10 ** 9
        for checked, expected in ((True, [(1, "Webform")]), (True, [(1, "Webform")]),
                                  (False, [(1, "Webform"), (0, "Webform")])):
            now += 10
            saved(site.submit("prefs_edit.php", u, {"subset": "project"},
                              {"consent_STATSEXPORT": "on"} if checked else {},
                              drop=() if checked else ("consent_STATSEXPORT",), now=now),
                  "project")
            assert rows() == expected
        fields, _ = site.form("prefs_edit.php", u, {"subset": "project"})
        assert "consent_STATSEXPORT" not in fields
    finally:
        site.db.execute("DELETE FROM consent_type WHERE id = %s", (ctid,))


def test_combined_view_shows_every_set_side_by_side(site):
    u = site.user("columns", global_prefs=(
        '<global_preferences>\n<mod_time>7</mod_time>\n<max_ncpus_pct>80</max_ncpus_pct>\n'
        '<venue name="school">\n<max_ncpus_pct>35</max_ncpus_pct>\n</venue>\n'
        '</global_preferences>\n'), project_prefs=(
        '<project_preferences>\n<resource_share>70</resource_share>\n<venue name="work">\n'
        '<resource_share>15</resource_share>\n</venue>\n</project_preferences>\n'))
    text = site.call("prefs.php", u, get={"subset": "global", "cols": "1"}).text
    for part in ("<th>Default</th><th>Home</th><th>School</th><th>Work</th>",
                 "<td>80 % of the CPUs</td><td>---</td><td>35 % of the CPUs</td><td>---</td>",
                 'href="add_venue.php?subset=global&amp;venue=home"',
                 'href="prefs_remove.php?subset=global&amp;venue=school"'):
        assert part in text, part
    text = site.call("prefs.php", u, get={"subset": "project", "cols": "1"}).text
    assert "<td>Resource share</td><td>70 </td><td>---</td><td>---</td><td>15 </td>" in text
    assert 'href="prefs.php?subset=project&amp;cols=0"' in text
