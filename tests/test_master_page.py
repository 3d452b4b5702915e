"""The master page (index.php) as a volunteer's front page: the site's links
and the latest news, escaped, on lines the client reads; still the scheduler
list when the database can't be read."""

import time

from boincpy.config import load_config
from boincpy.db import connect
from boincpy.db import forum as forum_table
from boincpy.resident import Resident
from boincpy.web import master
from boincpy.web.http import Request
from boincpy.web.user import news


def test_front_page_links_the_site_and_shows_the_latest_news(made_project):
    cfg = load_config(made_project.root, aux=False)
    db = connect(cfg)
    try:
        news_forum = news.news_forum(db)
        assert news_forum is not None            # make_project made it
        now = int(time.time())
        for i in range(7):
            forum_table.insert_thread(db, news_forum["id"], 0, "News %d" % i, "text %d" % i,
                                      now + i)
        forum_table.insert_thread(db, news_forum["id"], 0, "<script>alert(1)</script>" + "x" * 200,
                                  "hostile", now + 100)
    finally:
        db.close()
    resident = Resident(made_project.root)
    try:
        resp = master.handle(cfg, Request.of(resident=resident))
    finally:
        resident.close()
    text = resp.text
    for href in ("create_account_form.php", "login_form.php", "home.php", "team.php",
                 "forum_index.php", "server_status.php"):
        assert 'href="%s"' % href in text
    # the newest five, newest first, the hostile title escaped and cut short
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>" not in text
    assert text.index("&lt;script&gt;") < text.index("News 6") < text.index("News 3")
    assert "News 2" not in text
    lines = text.splitlines()
    assert all(len(line.encode()) < 256 for line in lines)
    assert any('rel="boinc_scheduler"' in line for line in lines)


def test_front_page_without_a_database_still_lists_the_schedulers(made_project):
    cfg = load_config(made_project.root, aux=False)
    cfg.db_passwd = "wrong"
    resident = Resident(made_project.root)
    try:
        text = master.handle(cfg, Request.of(resident=resident)).text
    finally:
        resident.close()
    assert 'rel="boinc_scheduler"' in text and 'href="home.php"' in text
    assert "<h2>News</h2>" not in text
