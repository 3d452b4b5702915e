"""The tasks and computers pages in Chromium, through their own links and
forms, on a project served by a private Apache (classic CGIs, and the
persistent mode): log in, home -> computers -> a computer -> its tasks -> a
task; then merge the computer's two records through the merge form.
Screenshots go to tests/artifacts/site-tasks-screens/."""

import os
import time

import pytest

import webdriver
from backend_rows import add_result, add_workunit
from boincpy import passwords
from site_util import screenshot
from webdriver import Browser

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not webdriver.available(),
                                 reason="chromium and chromedriver are not installed")]

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts",
                       "site-tasks-screens")
EMAIL = "cruncher@example.com"
PASSWD = "crunch all day"
NOW = int(time.time())
DAY = 86400


def populate(project):
    """A volunteer with two records of one machine (the newer one active),
    the older one's tasks; returns their ids."""
    db = project.connect()
    try:
        uid = db.insert(
            "INSERT INTO user (create_time, email_addr, name, authenticator, country, "
            "postal_code, global_prefs, project_prefs, venue, url, signature, "
            "cross_project_id, passwd_hash) VALUES (%s, %s, 'Cruncher', %s, '', '', '', '', "
            "'', '', '', '0', %s)",
            (NOW - 200 * DAY, EMAIL, passwords.random_string(),
             passwords.password_hash(passwords.client_passwd_hash(PASSWD, EMAIL))))
        hosts = []
        for created, contact, total in ((NOW - 90 * DAY, NOW - 60 * DAY, 100.0),
                                        (NOW - 50 * DAY, NOW - 600, 50.0)):
            hosts.append(db.insert(
                "INSERT INTO host (create_time, userid, rpc_time, total_credit, "
                "expavg_credit, expavg_time, domain_name, p_ncpus, p_vendor, p_model, "
                "os_name, os_version, misc) VALUES (%s, %s, %s, %s, 1, %s, %s, 2, "
                "'AuthenticAMD', 'AMD Ryzen', 'Linux Debian', '6.1', '')",
                (created, uid, contact, total, NOW - DAY, "rig<b>&amp;</b>")))
        app = db.insert("INSERT INTO app (create_time, name, user_friendly_name) "
                        "VALUES (%s, 'browser_app', 'Browser app')", (NOW,))
        results = []
        for i in range(3):
            wu = add_workunit(db, "browser_wu_%d" % i, app)
            rid, _ = add_result(db, project.root, wu, "browser_task_%d" % i, hostid=hosts[0],
                                userid=uid, validate_state=1, output_names=(),
                                granted_credit=5.0, stderr_out="<script>boom()</script> ok",
                                sent_time=NOW - 61 * DAY - i)
            results.append(rid)
        return uid, hosts, results
    finally:
        db.close()


def shot(b, name):
    screenshot(b, SCREENS, name)


@pytest.mark.parametrize("apache", ["cgi", "persistent"], indirect=True)
def test_computers_tasks_and_merging_in_chromium(apache):
    project = apache.project
    uid, (old, new), results = populate(project)
    mode = "persistent" if os.path.exists(project.path("fcgi")) else "cgi"
    with Browser.start() as b:
        b.get(apache.master_url + "home.php")
        assert "Log in" in b.title
        b.find("#email_addr").send_keys(EMAIL)
        b.find("#passwd").send_keys(PASSWD)
        b.find("form button[type=submit]").follow()
        assert "home.php" in b.url
        shot(b, mode + "-01-home")

        b.link("Computers").follow()
        assert "Your computers" in b.title
        text = b.body_text()
        assert "rig<b>&amp;</b>" in text             # shown as text, not markup
        assert "ID: %d" % new in text and "ID: %d" % old not in text   # active ones only
        shot(b, mode + "-02-computers")
        b.link("All computers").follow()
        assert "ID: %d" % old in b.body_text()

        b.find("a[href='show_host_detail.php?hostid=%d']" % old).follow()
        assert "Computer %d" % old in b.title
        assert "rig<b>&amp;</b>" in b.body_text()
        shot(b, mode + "-03-computer")

        b.find("a[href='results.php?hostid=%d']" % old).follow()
        assert "tasks for computer %d" % old in b.title
        text = b.body_text()
        assert "Completed and validated" in text and "Valid (3)" in text
        shot(b, mode + "-04-tasks")

        b.find("a[href='result.php?resultid=%d']" % results[0]).follow()
        assert "Task %d" % results[0] in b.title
        assert b.find("pre").text == "<script>boom()</script> ok"
        shot(b, mode + "-05-task")

        # merge the two records of the machine through the computer's own forms
        b.get(apache.master_url + "show_host_detail.php?hostid=%d" % new)
        b.link("Merge").follow()
        assert "Merge computers" in b.title
        box = b.find("input[type=checkbox][value='%d']" % old)
        box.click()
        shot(b, mode + "-06-merge-form")
        b.find("form button[type=submit]").follow()
        assert "Merged %d into %d" % (old, new) in b.body_text()
        shot(b, mode + "-07-merged")

        b.link("Return to list of your computers").follow()
        b.link("All computers").follow()
        text = b.body_text()
        assert "ID: %d" % new in text and "ID: %d" % old not in text

    db = project.connect()
    try:
        merged = db.query_one("SELECT * FROM host WHERE id = %s", (old,))
        kept = db.query_one("SELECT * FROM host WHERE id = %s", (new,))
        assert merged["userid"] == 0 and merged["rpc_seqno"] == new
        assert kept["total_credit"] == 150.0
        assert db.query_value("SELECT COUNT(*) FROM result WHERE hostid = %s", (new,)) == 3
    finally:
        db.close()
