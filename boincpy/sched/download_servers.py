"""Download mirrors by time zone: <replace_download_url_by_timezone> and
<max_download_urls_per_file> (BOINC's sched/sched_timezone.cpp).

With ``replace_download_url_by_timezone`` set to a string S, every ``<url>``
of a sent app version's and workunit's file_infos whose text contains S is
replaced by one ``<url>`` per line of PROJECT/download_servers (``ZONE URL``
pairs, ZONE the mirror's offset from UTC in seconds): URL followed by the
text after S, mirrors nearest the host's time zone first (24 hours wrap
around; ties broken per host by an md5 of URL and host id, so equally near
mirrors share the load), at most ``max_download_urls_per_file`` of them
(0: all).  URLs that would grow the document past BOINC's 64 KB blob size are
left out, and if not even one fits, the original URL stays.  A missing or
empty download_servers file leaves the document as it was (logged).

The original's add_download_servers copies the text between URLs with
strlcpy(dst, src, n), which since a 2016 clean-up (strncpy -> strlcpy)
writes a NUL in place of the last character before each ``<url>`` and so
truncates the document sent; boincpy does what the code was written to do
(the pre-2016 behaviour): the document intact, only the URLs replaced.

Only the scheduler imports this module, and only when the option is set.
"""

import hashlib
import re

from boincpy.xml import xml_unescape

BLOB_SIZE = 65536                 # db/boinc_db_types.h: workunit/app_version xml_doc
DOWNLOAD_SERVERS_FILE = "download_servers"
_TWELVE_HOURS = 12 * 3600
# fscanf(fp, "%d %s"): an integer, then a run of non-space characters
_PAIR = re.compile(rb"\s*([+-]?\d+)\s*(\S+)")


def parse_download_servers(data):
    """[(zone, url)] from the download_servers file's bytes, read as BOINC's
    fscanf loop does: pairs until the first that does not parse."""
    servers = []
    pos = 0
    while True:
        m = _PAIR.match(data, pos)
        if not m:
            return servers
        servers.append((int(m.group(1)), m.group(2)))
        pos = m.end()


def _distance(tz, zone):
    d = abs(tz - zone)
    return 2 * _TWELVE_HOURS - d if d > _TWELVE_HOURS else d


def _tie_break(url, hostid):
    # BOINC: md5 of "<url><hostid>", hex digits 1..7 read as a number
    digest = hashlib.md5(url + str(hostid).encode()).hexdigest()
    return int(digest[1:8], 16)


def sort_servers(servers, tz, hostid):
    """The mirrors in BOINC's order for a host in time zone ``tz`` (seconds)."""
    return sorted(servers, key=lambda s: (_distance(tz, s[0]), _tie_break(s[1], hostid)))


def download_list(servers, rest, lim, max_urls):
    """The ``<url>`` elements replacing one URL (BOINC's make_download_list):
    each mirror + ``rest``, separated by a newline and four spaces, stopping
    at ``max_urls`` (0: no limit) or before the text reaches ``lim`` bytes."""
    out = []
    length = 0
    for i, (_zone, url) in enumerate(servers):
        if max_urls and i >= max_urls:
            break
        item = (b"\n    " if i else b"") + b"<url>" + url + rest + b"</url>"
        length += len(item)
        if length >= lim:
            break
        out.append(item)
    return b"".join(out)


def _url_text(doc, start):
    # BOINC's parse_str(q, "<url>", ...): up to the next '<', at most 1023
    # bytes, white space stripped, entities decoded
    p = start + len(b"<url>")
    q = doc.find(b"<", p)
    if q < 0:
        return None
    return xml_unescape(doc[p:min(q, p + 1023)].strip())


def add_download_servers(doc, marker, servers, max_urls):
    """``doc`` (bytes) with each ``<url>`` containing ``marker`` replaced by
    the (already sorted) mirrors; None if a ``<url>`` is not closed."""
    total_free = BLOB_SIZE - len(doc)
    out = []
    p = 0
    while True:
        q = doc.find(b"<url>", p)
        if q < 0:
            break
        out.append(doc[p:q])
        r = doc.find(b"</url>", q)
        if r < 0:
            return None
        r += len(b"</url>")
        path = _url_text(doc, q)
        if path is None:
            return None
        s = path.find(marker)
        if s < 0:
            out.append(doc[q:r])
        else:
            # BOINC's room for the list, computed as it does; where that comes
            # out negative its unsigned limit would let the list overrun the
            # 64 KB buffer: keep the URL instead, as for a list that won't fit
            lim = total_free - ((q - p) - p)
            urls = download_list(servers, path[s + len(marker):], lim, max_urls) \
                if lim > 0 else b""
            out.append(urls if urls else doc[q:r])
        p = r
    out.append(doc[p:])
    return b"".join(out)


class DownloadServers:
    """One request's view of the mirrors: the file read and sorted once for
    this host, as BOINC's scheduler (one process per request) does."""

    def __init__(self, cfg, host, log=None):
        self.cfg = cfg
        self.tz = int((host or {}).get("timezone") or 0)
        self.hostid = int((host or {}).get("id") or 0)
        self.log = log
        self._servers = None

    def servers(self):
        """The sorted [(zone, url)], or None (missing, unreadable, no entries)."""
        if self._servers is None:
            path = self.cfg.project_path(DOWNLOAD_SERVERS_FILE)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                self._critical("File %s not found or unreadable!" % path)
                return None
            servers = parse_download_servers(data)
            if not servers:
                self._critical("File %s contained no valid entries!\nFormat of this file is "
                               "one or more lines containing:\nTIMEZONE_OFFSET_IN_SEC   "
                               "http://some.url.path" % path)
                return None
            self._servers = sort_servers(servers, self.tz, self.hostid)
            if self.log is not None:
                self.log.debug("Sorted list of URLs follows [host timezone: UTC%+d]" % self.tz)
                for zone, url in self._servers:
                    self.log.debug("zone=%+06d url=%s" % (zone, url.decode("utf-8", "replace")))
        return self._servers

    def rewrite(self, doc, what):
        """``doc`` (str) with its URLs replaced; unchanged (and logged) if
        that fails.  ``what`` names the document in the log ("WU", "APP version")."""
        servers = self.servers()
        new = None
        if servers is not None:
            marker = self.cfg.replace_download_url_by_timezone.encode()
            new = add_download_servers(doc.encode(), marker, servers,
                                       self.cfg.max_download_urls_per_file)
        if new is None:
            self._critical("add_download_servers(to %s) failed" % what)
            return doc
        return new.decode("utf-8", "replace")

    def _critical(self, message):
        if self.log is not None:
            self.log.critical(message)

