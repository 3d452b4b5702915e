"""db_dump: the XML statistics export that stats sites fetch (BOINC's sched/db_dump.cpp).

    db_dump -d 2 --dump_spec ../db_dump_spec.xml [--db_host H] [--retry_period N]

make_project installs it as a daily task (disabled, as in BOINC: enable it
in config.xml when the project wants its statistics published) and writes
BOINC's default spec to ``PROJECT/db_dump_spec.xml``.  Paths in the command
and in the spec are relative to the working directory, which for a task
run by ``bin/start`` is ``PROJECT/tmp_HOST``.

The spec (``<boinc_db_dump_spec>``)::

    <output_dir>../html/stats_tmp</output_dir>        written here first ...
    <final_output_dir>../html/stats</final_output_dir> ... then renamed to this
    [<archive_dir>DIR</archive_dir>]     where the previous final_output_dir goes
    <enumeration>                        one per file set
        <table>user|team|host|user_deleted|host_deleted</table>
        <filename>user</filename>
        [<sort>id|total_credit|expavg_credit</sort>]
        <output>                         one or more
            [<compression>gzip|zip</compression>]   FILENAME.gz / .zip, else plain
            [<recs_per_file>N</recs_per_file>]      FILENAME_0, FILENAME_1 ... of N records
            [<detail/>]                  hosts: owner and hardware; teams: member users
        </output>
    </enumeration>

Each file is ``<?xml version="1.0" encoding="utf-8"?>`` and one element
(``<users>``, ``<teams>``, ``<hosts>``, ``<users_deleted>``,
``<hosts_deleted>``) holding one record per row, written exactly as BOINC
writes them (numbers with ``%f``, text through BOINC's xml_escape, which
writes each byte above 127 as ``&#N;``).  Users and hosts with credit are
exported (not deleted accounts or hosts); if the consent type
``STATSEXPORT`` exists and is enabled, only users whose latest consent to it
is given, and their hosts.  ``tables.xml`` holds the update time, the totals,
the applications and the badges; ``db_dump.xml`` is a copy of the spec.

Publishing: the previous ``final_output_dir`` is renamed to
``FINAL_YYYY_M_D_H_M_S`` (or ``ARCHIVE_DIR/stats_...``; an empty one, as
make_project leaves it, is just removed), then
``output_dir`` becomes ``final_output_dir``: stats sites never see half a
dump.  As in BOINC, those dated copies are kept; remove old ones (or point
``archive_dir`` somewhere with room).  The whole dump reads one consistent
snapshot of the database (``replica_db_*`` settings, ``--db_host``
overriding the host).

Not exported: per-application credit (``credit_by_app``), which BOINC
delegates to the PHP script export_credit_by_app.php and the project's PHP
sub-project list; with ``credit_by_app`` set, tables.xml does not announce
it and a warning is logged.
"""

import fcntl
import gzip
import hashlib
import os
import shutil
import time
import zipfile
from dataclasses import dataclass, field

from boincpy.cli import option
from boincpy.daemons.base import Daemon, progress
from boincpy.db import connect
from boincpy.errors import BoincpyError, ToolError
from boincpy.xml import tree, xml_escape

CONSENT_TO_STATISTICS_EXPORT = "STATSEXPORT"
LOCK_FILE = "db_dump.lock"

# table -> the element enclosing its records
TABLE_TAGS = {"user": "users", "team": "teams", "host": "hosts",
              "user_deleted": "users_deleted", "host_deleted": "hosts_deleted"}
SORTS = {"": "", "id": "id", "total_credit": "total_credit DESC",
         "expavg_credit": "expavg_credit DESC"}
COMPRESSIONS = ("", "gzip", "zip")

# BOINC's sched/db_dump_spec.xml: what make_project installs as PROJECT/db_dump_spec.xml.
DEFAULT_SPEC = """<boinc_db_dump_spec>
    <output_dir>../html/stats_tmp</output_dir>
    <final_output_dir>../html/stats</final_output_dir>
    <enumeration>
        <table>user</table>
        <filename>user</filename>
        <output>
            <compression>gzip</compression>
        </output>
    </enumeration>
    <enumeration>
        <table>user_deleted</table>
        <filename>user_deleted</filename>
        <output>
            <compression>gzip</compression>
        </output>
    </enumeration>
    <enumeration>
        <table>host</table>
        <filename>host</filename>
        <output>
            <compression>gzip</compression>
            <detail/>
        </output>
    </enumeration>
    <enumeration>
        <table>host_deleted</table>
        <filename>host_deleted</filename>
        <output>
            <compression>gzip</compression>
            <detail/>
        </output>
    </enumeration>
    <enumeration>
        <table>team</table>
        <filename>team</filename>
        <output>
            <compression>gzip</compression>
        </output>
    </enumeration>
</boinc_db_dump_spec>
"""


# ---------------------------------------------------------------------------
# The spec file

@dataclass
class Output:
    """One <output> of an enumeration."""
    compression: str = ""
    recs_per_file: int = 0
    detail: bool = False


@dataclass
class Enumeration:
    """One <enumeration>: a table written to one or more outputs."""
    table: str
    filename: str
    sort: str = ""
    outputs: list = field(default_factory=list)


@dataclass
class DumpSpec:
    """A parsed db_dump spec file."""
    output_dir: str
    final_output_dir: str
    archive_dir: str = ""
    enumerations: list = field(default_factory=list)


def parse_dump_spec(data, path="db_dump_spec.xml"):
    """Parse a spec file's text; raise ToolError naming the file and what is wrong."""
    try:
        root = tree.parse(data)
    except tree.XmlError as exc:
        raise ToolError("%s: not well-formed XML (%s)" % (path, exc)) from None
    if root.tag != "boinc_db_dump_spec":
        raise ToolError("%s: the root element is <%s>, not <boinc_db_dump_spec>"
                        % (path, root.tag))
    spec = DumpSpec(tree.text(root, "output_dir"), tree.text(root, "final_output_dir"),
                    tree.text(root, "archive_dir"))
    for tag in ("output_dir", "final_output_dir"):
        if not getattr(spec, tag):
            raise ToolError("%s: <%s> is missing" % (path, tag))
    if os.path.normpath(spec.output_dir) == os.path.normpath(spec.final_output_dir):
        raise ToolError("%s: <output_dir> and <final_output_dir> must differ" % path)
    for n, node in enumerate(root.findall("enumeration"), 1):
        where = "%s: <enumeration> %d" % (path, n)
        table = tree.text(node, "table")
        if table not in TABLE_TAGS:
            raise ToolError("%s: <table> is %r, not one of %s"
                            % (where, table, ", ".join(TABLE_TAGS)))
        filename = tree.text(node, "filename")
        if not filename or "/" in filename or filename.startswith("."):
            raise ToolError("%s: <filename> %r must be a plain file name" % (where, filename))
        sort = tree.text(node, "sort")
        if sort not in SORTS:
            raise ToolError("%s: <sort> is %r, not id, total_credit or expavg_credit"
                            % (where, sort))
        e = Enumeration(table, filename, sort)
        for out in node.findall("output"):
            compression = tree.text(out, "compression")
            if compression not in COMPRESSIONS:
                raise ToolError("%s: <compression> is %r, not gzip or zip"
                                % (where, compression))
            recs = tree.text(out, "recs_per_file") or "0"
            try:
                recs_per_file = int(recs)
            except ValueError:
                recs_per_file = -1
            if recs_per_file < 0:
                raise ToolError("%s: <recs_per_file> is %r, not a number" % (where, recs))
            e.outputs.append(Output(compression, recs_per_file, out.find("detail") is not None))
        if not e.outputs:
            raise ToolError("%s (%s): no <output>" % (where, table))
        spec.enumerations.append(e)
    return spec


# ---------------------------------------------------------------------------
# Output files

class DumpFile:
    """One XML file: header and enclosing element, plain, gzip (PATH.gz) or
    zip (PATH.zip holding PATH)."""

    def __init__(self, path, tag, compression):
        self.path = path
        self.tag = tag
        self.compression = compression
        try:
            if compression == "gzip":
                self.f = gzip.open(path + ".gz", "wb", compresslevel=6)
            else:
                self.f = open(path, "wb")
        except OSError as exc:
            raise ToolError("Couldn't open %s for output: %s" % (path, exc.strerror)) from None
        self.write('<?xml version="1.0" encoding="utf-8"?>\n<%s>\n' % tag)

    def write(self, text):
        try:
            self.f.write(text.encode("utf-8", "surrogateescape"))
        except OSError as exc:
            raise ToolError("Couldn't write %s: %s" % (self.path, exc.strerror)) from None

    def close(self):
        self.write("</%s>\n" % self.tag)
        try:
            self.f.close()
            if self.compression == "zip":
                with zipfile.ZipFile(self.path + ".zip", "w", zipfile.ZIP_DEFLATED) as z:
                    z.write(self.path, arcname=os.path.basename(self.path))
                os.unlink(self.path)
        except OSError as exc:
            raise ToolError("Couldn't finish %s: %s" % (self.path, exc.strerror)) from None


class OutputFiles:
    """What one <output> writes to: one file, or a new ``PATH_N`` file every
    recs_per_file records."""

    def __init__(self, path, tag, out):
        self.path = path
        self.tag = tag
        self.out = out
        self.current = None
        self.filenum = -1
        if not out.recs_per_file:
            self.current = DumpFile(path, tag, out.compression)

    def write(self, n, text):
        """Write record number ``n`` (counted from 0)."""
        if self.out.recs_per_file:
            filenum = n // self.out.recs_per_file
            if filenum != self.filenum:
                if self.current is not None:
                    self.current.close()
                self.current = DumpFile("%s_%d" % (self.path, filenum), self.tag,
                                        self.out.compression)
                self.filenum = filenum
        self.current.write(text)

    def close(self):
        if self.current is not None:
            self.current.close()
            self.current = None


# ---------------------------------------------------------------------------
# Records, as BOINC's write_user, write_team, write_host ... print them

def esc(value):
    """BOINC's xml_escape of a column value (None is empty)."""
    if value is None:
        return ""
    if not isinstance(value, bytes):
        value = str(value).encode("utf-8")
    return xml_escape(value).decode("ascii")


def _s(value):
    return "" if value is None else str(value)


def user_cpid(row):
    """The exported cross-project id: md5(cross_project_id + email_addr)."""
    text = _s(row["cross_project_id"]) + _s(row["email_addr"])
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def user_record(row, cfg):
    """A <user> record."""
    parts = ["<user>\n"
             " <id>%d</id>\n"
             " <name>%s</name>\n"
             " <create_time>%d</create_time>\n"
             " <total_credit>%f</total_credit>\n"
             " <expavg_credit>%f</expavg_credit>\n"
             " <expavg_time>%f</expavg_time>\n"
             " <cpid>%s</cpid>\n"
             % (row["id"], esc(row["name"]), row["create_time"], row["total_credit"],
                row["expavg_credit"], row["expavg_time"], user_cpid(row))]
    if cfg.user_country and row["country"]:
        parts.append(" <country>%s</country>\n" % esc(row["country"]))
    if cfg.user_url and row["url"]:
        parts.append(" <url>%s</url>\n" % esc(row["url"]))
    if row["teamid"]:
        parts.append(" <teamid>%d</teamid>\n" % row["teamid"])
    if row["has_profile"]:
        parts.append(" <has_profile/>\n")
    parts.append("</user>\n")
    return "".join(parts)


def _cdata(text):
    # "]]>" would end the section early: split it across two sections
    return _s(text).replace("]]>", "]]]]><![CDATA[>")


def host_record(row, detail, log=None):
    """A <host> record; ``detail``: owner (if the user shows hosts) and hardware."""
    parts = ["<host>\n    <id>%d</id>\n" % row["id"]]
    if detail:
        if row["owner_id"] is None:
            if log:
                log.critical("user lookup of user %d for host %d: not found"
                             % (row["userid"], row["id"]))
        elif row["owner_show_hosts"]:
            parts.append("    <userid>%d</userid>\n" % row["userid"])
    parts.append("    <total_credit>%f</total_credit>\n"
                 "    <expavg_credit>%f</expavg_credit>\n"
                 "    <expavg_time>%f</expavg_time>\n"
                 "    <p_vendor>%s</p_vendor>\n"
                 "    <p_model>%s</p_model>\n"
                 "    <os_name>%s</os_name>\n"
                 "    <os_version>%s</os_version>\n"
                 "    <misc><![CDATA[%s]]></misc>\n"
                 % (row["total_credit"], row["expavg_credit"], row["expavg_time"],
                    esc(row["p_vendor"]), esc(row["p_model"]), esc(row["os_name"]),
                    esc(row["os_version"]), _cdata(row["misc"])))
    if detail:
        parts.append("  <create_time>%d</create_time>\n"
                     "  <rpc_time>%d</rpc_time>\n"
                     "  <timezone>%d</timezone>\n"
                     "  <ncpus>%d</ncpus>\n"
                     "  <p_fpops>%f</p_fpops>\n"
                     "  <p_iops>%f</p_iops>\n"
                     "  <p_membw>%f</p_membw>\n"
                     "  <m_nbytes>%f</m_nbytes>\n"
                     "  <m_cache>%f</m_cache>\n"
                     "  <m_swap>%f</m_swap>\n"
                     "  <d_total>%f</d_total>\n"
                     "  <d_free>%f</d_free>\n"
                     "  <n_bwup>%f</n_bwup>\n"
                     "  <n_bwdown>%f</n_bwdown>\n"
                     "  <avg_turnaround>%f</avg_turnaround>\n"
                     "  <credit_per_cpu_sec>%f</credit_per_cpu_sec>\n"
                     "  <host_cpid>%s</host_cpid>\n"
                     % (row["create_time"], row["rpc_time"], row["timezone"], row["p_ncpus"],
                        row["p_fpops"], row["p_iops"], row["p_membw"], row["m_nbytes"],
                        row["m_cache"], row["m_swap"], row["d_total"], row["d_free"],
                        row["n_bwup"], row["n_bwdown"], row["avg_turnaround"],
                        row["credit_per_cpu_sec"], esc(row["host_cpid"])))
    parts.append("</host>\n")
    return "".join(parts)


def team_record(row, members=None, cfg=None):
    """A <team> record; ``members`` (detail): the <user> records of its users."""
    parts = ["<team>\n"
             " <id>%d</id>\n"
             " <type>%d</type>\n"
             " <name>%s</name>\n"
             " <userid>%d</userid>\n"
             " <total_credit>%f</total_credit>\n"
             " <expavg_credit>%f</expavg_credit>\n"
             " <expavg_time>%f</expavg_time>\n"
             % (row["id"], row["type"], esc(row["name"]), row["userid"], row["total_credit"],
                row["expavg_credit"], row["expavg_time"])]
    if row["founder_id"] is not None:
        # the founder's name: the founder may no longer be a member
        parts.append("  <founder_name>%s</founder_name>\n" % esc(row["founder_name"]))
    parts.append(" <create_time>%d</create_time>\n" % row["create_time"])
    if row["url"]:
        parts.append(" <url>%s</url>\n" % esc(row["url"]))
    if row["name_html"]:
        parts.append("<name_html>%s</name_html>\n" % esc(row["name_html"]))
    if row["description"]:
        parts.append("<description>%s</description>\n" % esc(row["description"]))
    parts.append(" <country>%s</country>\n" % esc(row["country"]))
    for member in members or ():
        parts.append(user_record(member, cfg))
    parts.append("</team>\n")
    return "".join(parts)


def user_deleted_record(row):
    return ("<user>\n    <id>%d</id>\n    <cpid>%s</cpid>\n</user>\n"
            % (row["userid"], esc(row["public_cross_project_id"])))


def host_deleted_record(row):
    return ("<host>\n    <id>%d</id>\n    <host_cpid>%s</host_cpid>\n</host>\n"
            % (row["hostid"], esc(row["public_cross_project_id"])))


# ---------------------------------------------------------------------------
# The task

USER_COLUMNS = ("user.id, user.name, user.create_time, user.total_credit, user.expavg_credit,"
                " user.expavg_time, user.cross_project_id, user.email_addr, user.country,"
                " user.url, user.teamid, user.has_profile")
# users whose latest STATSEXPORT consent (BOINC's latest_consent view) is given
CONSENT_JOIN = (" INNER JOIN (SELECT DISTINCT c.userid FROM consent c"
                " WHERE c.consent_type_id = %s AND c.consent_flag = 1 AND NOT EXISTS"
                " (SELECT 1 FROM consent f WHERE f.userid = c.userid"
                " AND f.consent_type_id = c.consent_type_id"
                " AND f.consent_time > c.consent_time)) lc ON lc.userid = {owner}")


class DbDump(Daemon):
    """The db_dump task."""

    name = "db_dump"
    one_shot = True
    supports_mod = False
    description = ("Write the project's statistics (users, teams, hosts) as the XML files "
                   "stats sites fetch, as configured by a dump spec file.  Run it about "
                   "once a day.")

    @classmethod
    def add_options(cls, params):
        params.append(option("dump_spec", metavar="FILE",
                             help="the spec file (a task: ../db_dump_spec.xml)"))
        params.append(option("db_host", metavar="H",
                             help="read from the database server on host H"))
        params.append(option("retry_period", type=int, default=0, metavar="N",
                             help="if the database can't be reached, retry "
                                  "every N seconds instead of failing"))

    def initialise(self):
        args = self.args
        if not args.dump_spec:
            raise ToolError("no spec file given (--dump_spec FILE)")
        try:
            with open(args.dump_spec, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ToolError("can't read the spec file %s (in %s): %s"
                            % (args.dump_spec, os.getcwd(), exc.strerror)) from None
        self.spec = parse_dump_spec(data, args.dump_spec)
        # one run at a time (BOINC locks a file in the working directory too)
        self.lock_fd = self._lock(LOCK_FILE)
        self.db = self._connect()
        self.counts = {}
        self.member_db = None

    def shutdown(self):
        if self.member_db is not None:
            self.member_db.close()
        super().shutdown()
        fd = getattr(self, "lock_fd", None)
        if fd is not None:
            os.close(fd)

    def _lock(self, path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o664)
        except OSError as exc:
            raise ToolError("can't create the lock file %s: %s" % (path, exc.strerror)) from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise ToolError("Another copy of db_dump is already running (%s is locked)"
                            % path) from None
        return fd

    def _connect(self):
        if self.args.db_host:
            self.cfg.replica_db_host = self.args.db_host
        while True:
            try:
                return connect(self.cfg, replica=True)
            except BoincpyError as exc:
                if self.args.retry_period <= 0:
                    raise
                self.log.critical("Can't open DB: %s" % exc)
                self.sleep(self.args.retry_period)
                if self.stop_requested():
                    raise ToolError("stopped while waiting for the database") from None

    def one_pass(self):
        spec, log = self.spec, self.log
        tmp_dir = spec.output_dir
        if os.path.isdir(tmp_dir) and os.listdir(tmp_dir):
            log.warning("%s holds files of an unfinished run; they are overwritten"
                        % tmp_dir)
        try:
            os.makedirs(tmp_dir, exist_ok=True)
        except OSError as exc:
            raise ToolError("can't create %s: %s" % (tmp_dir, exc.strerror)) from None
        db = self.db
        # one snapshot for every file, so that the totals agree with the files
        db.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        try:
            for e in spec.enumerations:
                if self.stop_requested():
                    break
                self.dump(e, tmp_dir)
            if not self.stop_requested() and self.tables_file(tmp_dir):
                self.badge_files(tmp_dir)
        except BaseException:
            # the connection may be mid-result: don't let a failing COMMIT hide the error
            db.close()
            raise
        db.execute("COMMIT")
        if self.stop_requested():
            log.normal("Exiting: %s; nothing published" % self._stop_reason())
            return False
        try:
            shutil.copyfile(self.args.dump_spec, os.path.join(tmp_dir, "db_dump.xml"))
        except OSError as exc:
            raise ToolError("can't copy %s to %s: %s" % (self.args.dump_spec, tmp_dir,
                                                        exc.strerror)) from None
        self.publish()
        log.normal("db_dump finished")
        return True

    # -- enumerations --------------------------------------------------------

    def _consent_type_id(self):
        row = self.db.query_one("SELECT id, enabled FROM consent_type WHERE shortname = %s",
                                (CONSENT_TO_STATISTICS_EXPORT,))
        return row["id"] if row and row["enabled"] else None

    def dump(self, e, tmp_dir):
        """Write one enumeration's files."""
        path = os.path.join(tmp_dir, e.filename)
        tag = TABLE_TAGS[e.table]
        outputs = [OutputFiles(path, tag, out) for out in e.outputs]
        order = " ORDER BY %s.%s" % (e.table, SORTS[e.sort]) if e.sort else ""
        cfg = self.cfg
        n = 0
        if e.table == "user":
            where = " WHERE user.total_credit > 0 AND user.authenticator NOT LIKE %s"
            params = ["deleted%"]
            totals = self.db.query_one(
                "SELECT COUNT(*) AS n, SUM(total_credit) AS total FROM user" + where, params)
            self.counts["nusers_total"] = totals["n"]
            self.counts["total_credit"] = totals["total"] or 0.0
            join, jparams = "", []
            ctid = self._consent_type_id()
            if ctid is not None:
                join, jparams = CONSENT_JOIN.format(owner="user.id"), [ctid]
            rows = self.db.stream("SELECT %s FROM user%s%s%s" % (USER_COLUMNS, join, where, order),
                                  jparams + params)
            with progress(totals["n"], e.filename) as bar:
                for row in rows:
                    text = user_record(row, cfg)
                    for o in outputs:
                        o.write(n, text)
                    n += 1
                    if not n % 1000:
                        bar.update(1000)
        elif e.table == "host":
            where = " WHERE host.total_credit > 0 AND host.domain_name != 'deleted'" \
                    " AND host.userid != 0"
            self.counts["nhosts_total"] = self.db.query_value(
                "SELECT COUNT(*) FROM host" + where)
            join, jparams = "", []
            ctid = self._consent_type_id()
            if ctid is not None:
                join, jparams = CONSENT_JOIN.format(owner="host.userid"), [ctid]
            rows = self.db.stream(
                "SELECT host.*, owner.id AS owner_id, owner.show_hosts AS owner_show_hosts"
                " FROM host%s LEFT JOIN user owner ON owner.id = host.userid%s%s"
                % (join, where, order), jparams)
            with progress(self.counts["nhosts_total"], e.filename) as bar:
                for row in rows:
                    plain = detailed = None
                    for o in outputs:
                        if o.out.detail:
                            detailed = detailed or host_record(row, True, self.log)
                            o.write(n, detailed)
                        else:
                            plain = plain or host_record(row, False)
                            o.write(n, plain)
                    n += 1
                    if not n % 1000:
                        bar.update(1000)
        elif e.table == "team":
            detail = any(o.detail for o in e.outputs)
            rows = self.db.stream(
                "SELECT team.*, founder.id AS founder_id, founder.name AS founder_name"
                " FROM team LEFT JOIN user founder ON founder.id = team.userid"
                " WHERE team.total_credit > 0" + order)
            for row in rows:
                members = self.team_members(row["id"]) if detail else None
                for o in outputs:
                    o.write(n, team_record(row, members if o.out.detail else None, cfg))
                n += 1
            self.counts["nteams_total"] = n
        else:
            key = "userid" if e.table == "user_deleted" else "hostid"
            record = user_deleted_record if e.table == "user_deleted" else host_deleted_record
            for row in self.db.stream("SELECT %s, public_cross_project_id FROM %s ORDER BY %s"
                                      % (key, e.table, key)):
                text = record(row)
                for o in outputs:
                    o.write(n, text)
                n += 1
            self.counts["n%ss_deleted_total" % e.table.split("_")[0]] = n
        for o in outputs:
            o.close()
        self.log.normal("%s: %d record%s" % (e.filename, n, "" if n == 1 else "s"))

    def team_members(self, teamid):
        """A team's users (for <detail/>), read on a second connection while
        the teams stream on the first."""
        if self.member_db is None:
            self.member_db = connect(self.cfg, replica=True)
        return self.member_db.query("SELECT %s FROM user WHERE teamid = %%s ORDER BY id"
                                    % USER_COLUMNS, (teamid,))

    # -- tables.xml and badges ------------------------------------------------

    def _has_table(self, name):
        return bool(self.db.query_value(
            "SELECT COUNT(*) FROM information_schema.tables"
            " WHERE table_schema = DATABASE() AND table_name = %s", (name,)))

    def tables_file(self, tmp_dir):
        """Write tables.xml; return True if the project has badges."""
        f = DumpFile(os.path.join(tmp_dir, "tables.xml"), "tables", "")
        f.write("    <update_time>%d</update_time>\n" % int(time.time()))
        if self.cfg.credit_by_app:
            self.log.warning("credit_by_app is set, but per-application credit "
                             "(export_credit_by_app.php: user_work.gz, team_work.gz) is not "
                             "exported; tables.xml does not announce it")
        for key in ("nusers_total", "nteams_total", "nhosts_total", "nusers_deleted_total",
                    "nhosts_deleted_total"):
            if self.counts.get(key):
                f.write("    <%s>%d</%s>\n" % (key, self.counts[key], key))
        if self.counts.get("total_credit"):
            f.write("    <total_credit>%f</total_credit>\n" % self.counts["total_credit"])
        f.write("    <applications>\n")
        for app in self.db.query("SELECT user_friendly_name FROM app ORDER BY id"):
            f.write("        <application>\n            <name>%s</name>\n"
                    "        </application>\n" % esc(app["user_friendly_name"]))
        f.write("    </applications>\n")
        badges = []
        if self._has_table("badge"):
            badges = self.db.query("SELECT id, name, title, image_url FROM badge ORDER BY id")
        f.write("    <badges>\n")
        for b in badges:
            f.write("       <badge>\n"
                    "           <id>%d</id>\n"
                    "           <name>%s</name>\n"
                    "           <title>%s</title>\n"
                    "           <image_url>%s</image_url>\n"
                    "       </badge>\n"
                    % (b["id"], esc(b["name"]), esc(b["title"]), esc(b["image_url"])))
        f.write("    </badges>\n")
        f.close()
        return bool(badges)

    def badge_files(self, tmp_dir):
        """badge_user.gz and badge_team.gz: who holds which badge."""
        for table, owner in (("badge_user", "user_id"), ("badge_team", "team_id")):
            f = DumpFile(os.path.join(tmp_dir, table), table + "s", "gzip")
            if self._has_table(table):
                for row in self.db.stream("SELECT %s, badge_id, create_time FROM %s"
                                          % (owner, table)):
                    f.write(" <%s>\n    <%s>%d</%s>\n    <badge_id>%d</badge_id>\n"
                            "    <create_time>%.0f</create_time>\n </%s>\n"
                            % (table, owner, row[owner], owner, row["badge_id"],
                               row["create_time"], table))
            f.close()

    # -- publishing ----------------------------------------------------------------

    def publish(self):
        """Move the previous final_output_dir aside (dated), then output_dir into its place."""
        spec = self.spec
        final = spec.final_output_dir.rstrip("/")
        if os.path.isdir(final) and not os.path.islink(final) and not os.listdir(final):
            os.rmdir(final)         # nothing worth keeping (make_project's empty one)
        if os.path.lexists(final):
            t = time.localtime()
            base = os.path.join(spec.archive_dir, "stats") if spec.archive_dir else final
            dated = "%s_%d_%d_%d_%d_%d_%d" % (base, t.tm_year, t.tm_mon, t.tm_mday,
                                              t.tm_hour, t.tm_min, t.tm_sec)
            target, k = dated, 1
            while os.path.lexists(target):
                k += 1
                target = "%s_%d" % (dated, k)
            try:
                shutil.move(final, target)
            except OSError as exc:
                raise ToolError("Can't rename old stats %s to %s: %s"
                                % (final, target, exc.strerror or exc)) from None
            self.log.normal("Previous statistics moved to %s" % os.path.abspath(target))
        try:
            os.rename(spec.output_dir, final)
        except OSError as exc:
            raise ToolError("Can't rename new stats %s to %s: %s"
                            % (spec.output_dir, final, exc.strerror)) from None
        self.log.normal("Statistics written to %s" % os.path.abspath(final))
