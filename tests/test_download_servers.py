"""<replace_download_url_by_timezone> and <max_download_urls_per_file>: the
file URLs of sent app versions and workunits become the project's mirrors
nearest the host (sched/sched_timezone.cpp) -- over real scheduler replies."""

import hashlib
import sys

from boincpy.sched.download_servers import (BLOB_SIZE, add_download_servers, download_list,
                                            parse_download_servers, sort_servers)
import tests.sched_env as _env
from tests.test_sched_handler import attach, workfetch

sched_env = _env.sched_env       # the fixture

MARKER = "http://127.0.0.1/test/download/"
SERVERS = """-18000 http://us.example.org/dl/
3600   http://eu1.example.org/dl/
7200 http://eu2.example.org/dl/
43200 http://nz.example.org/dl/
"""


def tie(url, hostid):
    return int(hashlib.md5(("%s%d" % (url, hostid)).encode()).hexdigest()[1:8], 16)


# -- the pieces ---------------------------------------------------------------------

def test_download_servers_file_is_read_like_fscanf():
    assert parse_download_servers(b"3600 http://a/\n  -7200\thttp://b/ 0 http://c/\n") == [
        (3600, b"http://a/"), (-7200, b"http://b/"), (0, b"http://c/")]
    # reading stops at the first pair that does not parse
    assert parse_download_servers(b"3600 http://a/\n# comment\n0 http://c/\n") == [
        (3600, b"http://a/")]
    assert parse_download_servers(b"+60 x\n5") == [(60, b"x")]
    assert parse_download_servers(b"") == []


def test_mirrors_sorted_by_time_zone_distance_around_the_clock():
    servers = parse_download_servers(SERVERS.encode())
    urls = [u for _, u in sort_servers(servers, 3600, 1)]
    assert urls == [b"http://eu1.example.org/dl/", b"http://eu2.example.org/dl/",
                    b"http://us.example.org/dl/", b"http://nz.example.org/dl/"]
    # Hawaii (UTC-10): New Zealand (UTC+12) is 2 hours away across the date line
    urls = [u for _, u in sort_servers(servers, -36000, 1)]
    assert urls[0] == b"http://nz.example.org/dl/"
    assert urls[1] == b"http://us.example.org/dl/"


def test_equally_near_mirrors_ordered_per_host_by_md5():
    servers = [(0, b"http://m%d/" % i) for i in range(6)]
    for hostid in (1, 2, 77):
        order = [u for _, u in sort_servers(servers, 0, hostid)]
        assert order == sorted((u for _, u in servers),
                               key=lambda u: tie(u.decode(), hostid))
    assert ([u for _, u in sort_servers(servers, 0, 1)]
            != [u for _, u in sort_servers(servers, 0, 2)])


def test_url_list_limits():
    servers = [(0, b"http://a/"), (0, b"http://b/"), (0, b"http://c/")]
    assert download_list(servers, b"x", 10 ** 6, 0) == (
        b"<url>http://a/x</url>\n    <url>http://b/x</url>\n    <url>http://c/x</url>")
    assert download_list(servers, b"x", 10 ** 6, 2) == (
        b"<url>http://a/x</url>\n    <url>http://b/x</url>")
    # stop before the text reaches the space left in the 64 KB blob
    assert download_list(servers, b"x", 42, 0) == b"<url>http://a/x</url>"
    assert download_list(servers, b"x", 21, 0) == b""


def test_only_urls_containing_the_marker_are_replaced():
    doc = (b"<file_info>\n    <name>a</name>\n    <url> http://main/dl/a&amp;b </url>\n"
           b"    <url>http://elsewhere/a</url>\n</file_info>\n<workunit>\n</workunit>")
    servers = [(0, b"http://m1/"), (0, b"http://m2/")]
    out = add_download_servers(doc, b"http://main/dl/", servers, 0)
    # the URL's text is read as BOINC's parse_str: stripped, entities decoded
    assert out == (b"<file_info>\n    <name>a</name>\n    <url>http://m1/a&b</url>\n"
                   b"    <url>http://m2/a&b</url>\n    <url>http://elsewhere/a</url>\n"
                   b"</file_info>\n<workunit>\n</workunit>")
    assert add_download_servers(b"<url>http://main/dl/a", b"http://main/dl/", servers, 0) \
        is None
    # BOINC's room for the list: 64 KB - the document's size - the text before
    # the URL + where that text starts; one URL <url>http://m1/a&b</url> is 24 bytes
    before = doc.index(b"<url>")
    for free, n in ((before + 25, 1), (before + 24, 0), (before - 1, 0)):
        big = doc + b" " * (BLOB_SIZE - len(doc) - free)
        out = add_download_servers(big, b"http://main/dl/", servers, 0)
        assert out.count(b"<url>http://m") == n and (n or out == big)


# -- in scheduler replies --------------------------------------------------------------

def send_one_job(env, timezone=3600):
    """Attach host 1 in ``timezone``, queue job 'mirrored', fetch work: the reply."""
    attach(env, timezone=str(timezone))
    env.add_job("mirrored")
    env.job_array(refill=True)
    r = workfetch(env, rpc_seqno=1, timezone=str(timezone))
    assert r.names("result") == ["mirrored_0"], r.log
    return r


def file_urls(r):
    """URLs of the file_infos of the reply (all of them: BOINC writes app
    version and workunit file_infos as top-level <file_info>s)."""
    return [[u.text for u in fi.findall("url")] for fi in r.root.findall("file_info")]


def test_reply_urls_replaced_by_nearest_mirrors(sched_env):
    env = sched_env
    (env.root / "download_servers").write_text(SERVERS)
    env.set_options(replace_download_url_by_timezone=MARKER)
    r = send_one_job(env, timezone=3600)
    assert env.row("SELECT timezone FROM host WHERE id = 1")["timezone"] == 3600
    urls = file_urls(r)
    order = ["eu1", "eu2", "us", "nz"]
    # the app version's executable and the job's input file
    assert ["http://%s.example.org/dl/example_app_1.0_x86_64-pc-linux-gnu" % m
            for m in order] in urls
    assert ["http://%s.example.org/dl/1a/in_mirrored.txt" % m for m in order] in urls
    # the output file's upload URL is not a download URL
    assert r.raw.count("<url>http://127.0.0.1/test_cgi/file_upload_handler</url>") == 1
    # BOINC's layout: the replacement list sits where the one URL was
    assert ("    <url>http://eu1.example.org/dl/1a/in_mirrored.txt</url>\n"
            "    <url>http://eu2.example.org/dl/1a/in_mirrored.txt</url>\n"
            "    <url>http://us.example.org/dl/1a/in_mirrored.txt</url>\n"
            "    <url>http://nz.example.org/dl/1a/in_mirrored.txt</url>\n"
            "    <md5_cksum>") in r.raw
    # the stored documents are untouched
    assert MARKER in env.row("SELECT xml_doc FROM workunit")["xml_doc"]
    assert "Sorted list of URLs follows [host timezone: UTC+3600]" not in r.log  # debug only


def test_max_download_urls_per_file(sched_env):
    env = sched_env
    (env.root / "download_servers").write_text(SERVERS)
    env.set_options(replace_download_url_by_timezone=MARKER, max_download_urls_per_file=2)
    r = send_one_job(env, timezone=-36000)
    urls = file_urls(r)
    assert ["http://nz.example.org/dl/1a/in_mirrored.txt",
            "http://us.example.org/dl/1a/in_mirrored.txt"] in urls
    assert all(len(u) <= 2 for u in urls)


def test_max_download_urls_alone_changes_nothing(sched_env):
    env = sched_env
    (env.root / "download_servers").write_text(SERVERS)
    env.set_options(max_download_urls_per_file=1)
    r = send_one_job(env)
    assert [MARKER + "1a/in_mirrored.txt"] in file_urls(r)


def test_missing_download_servers_file_keeps_the_urls_and_logs(sched_env):
    env = sched_env
    env.set_options(replace_download_url_by_timezone=MARKER)
    r = send_one_job(env)
    assert [MARKER + "1a/in_mirrored.txt"] in file_urls(r)
    assert [MARKER + "example_app_1.0_x86_64-pc-linux-gnu"] in file_urls(r)
    assert "download_servers not found or unreadable!" in r.log
    assert "add_download_servers(to WU) failed" in r.log
    assert "add_download_servers(to APP version) failed" in r.log


def test_option_off_does_not_load_the_module(sched_env):
    env = sched_env
    (env.root / "download_servers").write_text(SERVERS)
    sys.modules.pop("boincpy.sched.download_servers", None)
    r = send_one_job(env)
    assert [MARKER + "1a/in_mirrored.txt"] in file_urls(r)
    assert "boincpy.sched.download_servers" not in sys.modules
