"""Teams and news in a real browser (headless Chromium over WebDriver)
against a project made by make_project under a private Apache, through the
pages' own links and forms:

* a volunteer creates a team; a second one finds it with the search form,
  joins it; the founder removes them again;
* the operator posts a news item on the ops page news.php; old_news.php and
  rss_main.php show it;
* the same pages once more with the project switched to the persistent mode
  (FastCGI workers);
* the stock 7.20.5 client, attached, finds the notices feed in gui_urls.xml
  (sent by the scheduler), fetches notices.php and lists the news item.

One Apache serves the module.  Screenshots go to tests/artifacts/site-screens/."""

import os
import secrets

import pytest

from site_util import browser_logout, browser_site, login_as, with_credentials
from webdriver import Browser

pytestmark = pytest.mark.slow

SCREENS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts", "site-screens")
WORD = "otter" + secrets.token_hex(3)
TEAM = "Team %s" % WORD
NEWS = "Spring release %s" % secrets.token_hex(3)


@pytest.fixture(scope="module")
def web(db_root_params):
    # served_project stops running.server, the last one started (see the last test)
    with browser_site(db_root_params, ("founder", "joiner")) as running:
        yield running


def shot(browser, name):
    return browser.screenshot(os.path.join(SCREENS, name + ".png"))


def login(b, web, who):
    user = login_as(b, web, who, "team.php")
    assert user.name in b.body_text()
    return user


def logout(b, web):
    browser_logout(b, web.master_url)
    assert "logged out" in b.body_text()


def teamid_of(web, user):
    return web.db.query_value("SELECT teamid FROM user WHERE id = %s", (user.id,))


def ops_url(web, page):
    return with_credentials(web.ops_url + page, web.ops_user, web.ops_passwd)


def test_create_join_remove_team(web):
    with Browser.start() as b:
        founder = login(b, web, "founder")
        assert "Find a team" in b.body_text()
        b.link("create a team").follow()
        b.find("#name").send_keys(TEAM)
        b.find("#description").send_keys("We <b>like</b> %s." % WORD)
        shot(b, "01-team-create-form")
        b.find('form[action="team_create_action.php"] button').follow()
        assert TEAM in b.title
        text = b.body_text()
        assert "We <b>like</b> %s." % WORD in text          # shown as typed, not as markup
        shot(b, "02-team-display")
        teamid = teamid_of(web, founder)
        assert teamid
        logout(b, web)

        joiner = login(b, web, "joiner")
        b.find("#keywords").send_keys(WORD)
        b.find('form[action="team_search.php"] button').follow()
        shot(b, "03-team-search")
        b.link(TEAM).follow()
        b.link("Join this team").follow()
        shot(b, "04-team-join-form")
        b.find('form[action="team_join_action.php"] button').follow()
        assert "You have joined" in b.body_text()
        assert teamid_of(web, joiner) == teamid
        b.link(TEAM).follow()
        assert joiner.name in b.body_text()
        logout(b, web)

        login(b, web, "founder")
        b.get(web.master_url + "team_display.php?teamid=%d" % teamid)
        b.link("Administer team").follow()
        shot(b, "05-team-manage")
        b.link("Remove members").follow()
        assert joiner.name in b.body_text()
        b.find("#remove_0").click()
        shot(b, "06-team-remove-form")
        b.find('form[action="team_remove_inactive_action.php"] button').follow()
        assert "has been removed" in b.body_text()
        shot(b, "07-team-removed")
        assert teamid_of(web, joiner) == 0
        assert teamid_of(web, founder) == teamid


def test_ops_posts_news_and_volunteers_read_it(web):
    founder = web.users["founder"][0]
    with Browser.start() as b:
        b.get(ops_url(web, "news.php"))
        assert "News" in b.title
        b.find("#title").send_keys(NEWS)
        b.find("#content").send_keys("Version 2 is out: [b]faster[/b] <script>x</script>")
        b.find("#author").send_keys(str(founder.id))
        shot(b, "08-ops-news-form")
        b.find('form.filters button[type="submit"]').follow()
        assert "posted" in b.body_text()
        shot(b, "09-ops-news-posted")

        b.get(web.master_url + "old_news.php")
        text = b.body_text()
        assert NEWS in text and "<script>x</script>" in text     # as text
        shot(b, "10-old-news")
        b.get(web.master_url + "rss_main.php")
        assert NEWS in b.source


@pytest.mark.parametrize("mode", ["persistent"])
def test_pages_in_persistent_mode(web, mode):
    from boincpy.tools import server_mode
    from boincpy.tools.httpd import PrivateApache
    web.server.stop(graceful=False)
    server_mode.set_mode(web.project.root, mode, processes=2)
    server = PrivateApache(web.project.root, web.project.port)
    server.start()
    web.server = server
    teamid = teamid_of(web, web.users["founder"][0])
    with Browser.start() as b:
        b.get(web.master_url + "old_news.php")
        assert NEWS in b.body_text()
        b.get(web.master_url + "rss_main.php")
        assert NEWS in b.source
        login(b, web, "joiner")
        b.get(web.master_url + "team_display.php?teamid=%d" % teamid)
        b.link("Join this team").follow()
        b.find('form[action="team_join_action.php"] button').follow()
        assert "You have joined" in b.body_text()
        shot(b, "11-persistent-joined")
    assert teamid_of(web, web.users["joiner"][0]) == teamid
    assert server_mode.persistent_pids(web.project.root)


@pytest.fixture
def news_client(request):
    """A stock client that fetches notices (the tests' default turns that
    off with no_info_fetch)."""
    from boincpy.testing.client import DEFAULT_LOG_FLAGS, StockClient
    failed_before = request.session.testsfailed
    client = StockClient(options={"no_info_fetch": 0},
                         log_flags=DEFAULT_LOG_FLAGS + ("notice_debug",)).start()
    yield client
    client.close(failed=request.session.testsfailed > failed_before)


def test_stock_client_shows_news_as_notice(web, news_client):
    """The stock 7.20.5 client, attached, gets gui_urls.xml's feed from the
    scheduler, fetches notices.php and shows the news item in its notices."""
    from test_stock_client_accounts import running_feeder
    import time
    from boincpy.db import forum
    from boincpy.web.user.news import news_forum
    url, client = web.master_url, news_client
    founder = web.users["founder"][0]
    mark = secrets.token_hex(4)
    with web.db.transaction():
        forum.insert_thread(web.db, news_forum(web.db)["id"], founder.id, "Notice " + mark,
                            "Shown in the [b]Notices[/b] tab: %s" % mark, int(time.time()))
    if not web.db.query_value("SELECT COUNT(*) FROM platform WHERE name = "
                              "'x86_64-pc-linux-gnu'"):
        web.db.execute("INSERT INTO platform (create_time, name, user_friendly_name) "
                       "VALUES (1, 'x86_64-pc-linux-gnu', 'Linux on x86_64')")
    with running_feeder(web.project):
        client.project_attach(url, founder.authenticator)
        client.wait_for(lambda: client.hostid(url), 120, "a host id from the scheduler")

        def shown():
            # boinccmd prints each notice's description
            return "<b>Notices</b> tab: " + mark in client.boinccmd("--get_notices", "0").stdout
        client.wait_for(shown, 120, "the news item among the client's notices", interval=2)
    log = client.log_text()
    assert "[notice] start fetch from %snotices.php?userid=%d&auth=" % (url, founder.id) in log


def test_team_message_board(web):
    """The founder makes the team's message board through team_manage.php's
    link (team_forum.php), names it, and posts the first thread on it."""
    founder = web.users["founder"][0]
    teamid = teamid_of(web, founder)
    assert teamid, "the first test made the founder's team"
    board = "Board %s" % WORD
    # a founder who has computed (forum_need_credit_to_post)
    web.db.execute("UPDATE user SET total_credit = 10, expavg_credit = 1 WHERE id = %s",
                   (founder.id,))
    with Browser.start() as b:
        login(b, web, "founder")
        b.get(web.master_url + "team_display.php?teamid=%d" % teamid)
        b.link("Administer team").follow()
        b.link("Team message board").follow()
        assert "Create Message Board" in b.title, (b.url, b.body_text()[:500])
        b.find('form[action="team_forum.php"] button').follow()
        assert "Team Message Board" in b.title
        b.find("#title").clear()
        b.find("#title").send_keys(board)
        b.find('form[action="team_forum.php"] button[type="submit"]:not(.danger)').follow()
        assert "Update successful" in b.body_text()
        b.link("Go to the board").follow()
        assert board in b.body_text()
        b.link("New thread").follow()
        assert b.find_all("#title"), b.body_text()[-600:]
        b.find("#title").send_keys("Welcome " + WORD)
        b.find("#content").send_keys("Our own [b]board[/b]")
        b.find("#post").follow()
        assert "Welcome " + WORD in b.title or "Welcome " + WORD in b.body_text()
        shot(b, "12-team-board-thread")
        b.get(web.master_url + "team_display.php?teamid=%d" % teamid)
        b.link(board).follow()
        assert "Welcome " + WORD in b.body_text()
