"""The schema's revision: PROJECT/db_revision, BOINC's updates, the schema check.

BOINC numbers its database schema by the updates of html/ops/db_update.php
(``$db_updates``: revision, function).  A project records the last one its
database has in ``PROJECT/db_revision`` (make_project writes the newest;
upgrade_db.php rewrites it after each update it applies).  boincpy's
schema.sql is BOINC's schema at revision :data:`LATEST`; :data:`UPDATES`
brings an older BOINC (or boincpy) database up to it.

Each update is written from what BOINC's function does (which tables,
columns and indexes it adds, changes or drops), but declared by name only:
the definitions come from schema.sql, so an updated database ends exactly as
a new one.  DDL commits by itself in MariaDB and MySQL, so an update cannot
be one transaction; instead every step looks at the live database first and
does only what is missing (an update interrupted half way is simply run
again).  Where boincpy's schema.sql leaves out something BOINC's update adds
(donation_paypal's index, sent_email_userid beside sent_email's primary key
on the same column, consent's foreign key, the latest_consent view and the
consent_type rows of update_9_12_2018), the update leaves it out too.

How the schema.sql side is read (for the updates' definitions and for
:func:`check_schema`): every table of schema.sql is created in the
project's own database under a scratch prefix (``bpchk_XXXX_``), read back
with information_schema (the same two queries as the live side) and SHOW
CREATE TABLE, and dropped; so both sides come in the server's own
spelling and no CREATE TABLE parser is needed.  Measured and chosen: a
scratch database beside the project's would need CREATE on another
database, which the project's account (GRANT ALL ON project.*) lacks;
TEMPORARY tables need no more than that grant, but neither information_schema
nor InnoDB (no FULLTEXT on temporary tables) serves them, and MariaDB 10.11
answering SHOW COLUMNS for each of them (and of the live tables), hundreds
per run, under load failed to make its internal temporary table ("Error on
delete of '/tmp/#sql-temptable-...MAD'") and at times crashed.  Real copies
take about 1 s for the ~50 tables on an idle machine; a run killed half way
leaves copies the next one drops, and nothing else reads them (live_tables
and _read_tables leave them out).

What :func:`check_schema` compares: tables (and views), columns, column
types and NULL-ability, indexes (kind, columns, prefix lengths); defaults
only when asked.  Not compared: column order, character sets and collations
(boincpy makes utf8mb4_general_ci databases, BOINC utf8mb4_unicode_ci),
engines, foreign keys.
"""

import os
import re
import secrets
from dataclasses import dataclass, field

from boincpy.db.schema import schema_statements
from boincpy.errors import DatabaseError
from boincpy.files import atomic_write

REVISION_FILE = "db_revision"

# The newest revision of BOINC's db_update.php (update_5_2_2026b) at the
# commit schema.sql follows (c5c6cb79).
LATEST = 27032

# The revision a database must have reached before UPDATES can take it on:
# the schema of mid-2009, before BOINC numbered its updates (the first in
# $db_updates is 18490; upgrade_db.php takes a project without db_revision
# to be at 0 and applies them all).  A number below it is refused.
OLDEST = 18489

# Columns a database at OLDEST has (its revision can't be inferred without).
BASE_COLUMNS = (("app", "target_nresults"), ("team", "joinable"))

# Tables every BOINC database has had since long before OLDEST: a database
# with none of them is not a BOINC project's.
BOINC_TABLES = ("platform", "app", "app_version", "user", "team", "host",
                "workunit", "result")

# Tables of boincpy's schema.sql that BOINC's db/schema.sql does not create
# (locality scheduling's, db/schema_condor.sql's, boincpy's own login
# throttle).  No BOINC revision makes them: apply_updates adds them after
# the updates, harmless to BOINC's programs.
BOINCPY_TABLES = ("fileset", "sched_trigger", "batch_file_assoc", "login_failure")
# ... and boincpy's own indexes on BOINC's tables (the message boards' lists).
BOINCPY_INDEXES = (("thread", ("thread_forum",)), ("subscriptions", ("sub_thread",)))

# What BOINC's db/schema.sql and constraints.sql make at LATEST that
# boincpy's schema.sql lacked until 2026-11-29: a database boincpy made
# before gets it from apply_updates (after the updates), as a BOINC database
# gets BOINCPY_TABLES.  (batch.id is BOINC's 'serial' there: boincpy had an
# integer.)
BOINC_TABLES_ADDED = ("donation_items", "donation_paypal")
BOINC_INDEXES_ADDED = (("credited_job", ("credited_job_user",)),
                       ("profile", ("profile_userid",)),
                       ("sent_email", ("sent_email_userid",)),
                       ("consent", ("consent_type_id",)))
BOINC_VIEWS = ("latest_consent",)

# update_5_2_2026b: the tables BOINC converts to utf8mb4.
UTF8MB4_TABLES = (
    "platform", "app", "app_version", "user", "team", "host", "workunit", "result",
    "batch", "job_file", "msg_from_host", "msg_to_host", "profile", "category",
    "forum", "thread", "post", "forum_preferences", "private_messages",
    "donation_items", "donation_paypal", "friend", "badge", "token", "consent",
    "consent_type")

_PREFIX = "bpchk_"


class RevisionError(DatabaseError):
    """db_revision is unreadable, the database is not one boincpy can bring
    up to date, or an update failed."""


# ---------------------------------------------------------------------------
# PROJECT/db_revision

def revision_path(project_dir):
    return os.path.join(project_dir, REVISION_FILE)


def read_revision(project_dir):
    """The revision in PROJECT/db_revision, or None if there is no such file.

    BOINC writes the bare number, with a newline (make_project) or without
    (upgrade_db.php); anything else is refused rather than read as 0 the way
    PHP's (int) would, which would make every update look pending.
    """
    path = revision_path(project_dir)
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RevisionError("can't read %s: %s" % (path, exc.strerror)) from None
    value = text.strip()
    if not value.isdigit():
        raise RevisionError("%s: expected a revision number (like %d), found %r"
                            % (path, LATEST, value[:40]))
    return int(value)


def write_revision(project_dir, revision):
    """Write PROJECT/db_revision (atomically: a reader sees the old or the new)."""
    revision = int(revision)
    atomic_write(revision_path(project_dir), "%d\n" % revision, mode=0o644)


# ---------------------------------------------------------------------------
# The shape of tables, live and as schema.sql declares them

@dataclass
class Column:
    type: str
    null: bool
    default: object
    extra: str
    collation: str = ""      # of a text column
    definition: str = ""     # as SHOW CREATE TABLE spells it (schema.sql side)


@dataclass
class Index:
    unique: bool
    kind: str                # BTREE, FULLTEXT ...
    parts: tuple             # ("col", "col(191)", ...)
    definition: str = ""

    def describe(self):
        word = "FULLTEXT" if self.kind == "FULLTEXT" else ("UNIQUE" if self.unique else "KEY")
        return "%s (%s)" % (word, ", ".join(self.parts))


@dataclass
class Table:
    name: str
    columns: dict = field(default_factory=dict)     # name -> Column, in order
    indexes: dict = field(default_factory=dict)     # name -> Index
    view: bool = False


def _read_tables(db, prefix=""):
    """{name: Table} of the connected database's tables whose names start
    with ``prefix`` (the prefix taken off; expected_schema's copies left out
    when it is empty), read in two information_schema queries: one SHOW per
    table made MariaDB 10.11 run out of internal temporary tables under
    load, and crash."""
    tables = {}

    def wanted(real):
        return real.startswith(prefix) if prefix else not real.startswith(_PREFIX)

    for r in db.query(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, EXTRA, "
            "COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
            "ORDER BY TABLE_NAME, ORDINAL_POSITION"):
        if wanted(r["TABLE_NAME"]):
            name = r["TABLE_NAME"][len(prefix):]
            t = tables.setdefault(name, Table(name))
            t.columns[r["COLUMN_NAME"]] = Column(
                r["COLUMN_TYPE"], r["IS_NULLABLE"] == "YES", r["COLUMN_DEFAULT"],
                r["EXTRA"] or "", r["COLLATION_NAME"] or "")
    parts = {}
    for r in db.query(
            "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, SEQ_IN_INDEX, COLUMN_NAME, SUB_PART, "
            "INDEX_TYPE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()"):
        name = r["TABLE_NAME"][len(prefix):]
        if not wanted(r["TABLE_NAME"]) or name not in tables:
            continue
        key = r["INDEX_NAME"]
        col = r["COLUMN_NAME"] + ("(%s)" % r["SUB_PART"] if r["SUB_PART"] else "")
        parts.setdefault((name, key), []).append((int(r["SEQ_IN_INDEX"]), col))
        tables[name].indexes[key] = Index(not int(r["NON_UNIQUE"]), r["INDEX_TYPE"], ())
    for (name, key), cols in parts.items():
        tables[name].indexes[key].parts = tuple(c for _, c in sorted(cols))
    return tables


def _read_definitions(db, real, t):
    """Each column's and index's definition as SHOW CREATE TABLE spells it."""
    text = db.query("SHOW CREATE TABLE `%s`" % real)[0].get("Create Table") or ""
    for line in text.splitlines()[1:]:
        line = line.strip().rstrip(",")
        m = re.match(r"`([^`]+)` ", line)
        if m and m.group(1) in t.columns:
            t.columns[m.group(1)].definition = line
            continue
        m = re.match(r"(?:PRIMARY KEY|(?:UNIQUE |FULLTEXT |SPATIAL )?KEY `([^`]+)`)", line)
        if m:
            key = m.group(1) or "PRIMARY"
            if key in t.indexes:
                t.indexes[key].definition = line


def _statement_table(stmt):
    words = stmt.split("(", 1)[0].split()
    return words[2] if words[:2] == ["create", "table"] and len(words) == 3 else None


def _statement_view(stmt):
    words = stmt.split(None, 3)
    return words[2] if words[:2] == ["create", "view"] and len(words) > 2 else None


def expected_views():
    """The views schema.sql creates, by name: their CREATE statements."""
    return {_statement_view(stmt): stmt for stmt in schema_statements()
            if _statement_view(stmt)}


def expected_schema(db):
    """{table: Table} of boincpy's schema.sql, in its order, read back from
    copies made in ``db``'s database under a scratch prefix (dropped again)."""
    for stale in live_tables(db, scratch=True):
        db.execute("DROP TABLE IF EXISTS `%s`" % stale)     # of a run killed half way
    prefix = "%s%s_" % (_PREFIX, secrets.token_hex(2))
    made, order = [], []
    try:
        for stmt in schema_statements():
            name = _statement_table(stmt)
            if name is None:
                continue
            copy = prefix + name
            db.execute("CREATE TABLE `%s` (%s" % (copy, stmt.split("(", 1)[1]))
            made.append(copy)
            order.append(name)
        read = _read_tables(db, prefix)
        tables = {name: read[name] for name in order}
        for name, t in tables.items():
            _read_definitions(db, prefix + name, t)
    except DatabaseError as exc:
        raise RevisionError("can't read schema.sql's tables back from copies in the "
                            "project's database (may its account CREATE and DROP "
                            "tables?): %s" % exc) from None
    finally:
        for copy in made:
            try:
                db.execute("DROP TABLE IF EXISTS `%s`" % copy)
            except DatabaseError:
                pass
    return tables


def live_tables(db, scratch=False):
    """{name: 'BASE TABLE' | 'VIEW'} of the connected database (without
    expected_schema's copies; only those with ``scratch``)."""
    rows = db.query("SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = DATABASE()")
    return {r["TABLE_NAME"]: r["TABLE_TYPE"] for r in rows
            if r["TABLE_NAME"].startswith(_PREFIX) == scratch}


class _Live:
    """The live database's tables, read on demand and forgotten after DDL."""

    def __init__(self, db):
        self.db = db
        self.forget()

    def forget(self):
        self._tables = None
        self._collations = None

    def names(self):
        return set(self._all())

    def _all(self):
        if self._tables is None:
            views = {n for n, kind in live_tables(self.db).items() if kind == "VIEW"}
            self._tables = {n: t for n, t in _read_tables(self.db).items() if n not in views}
        return self._tables

    def collation(self, name):
        """The table's default collation ('' if unknown)."""
        if self._collations is None:
            self._collations = {r["TABLE_NAME"]: r["TABLE_COLLATION"] or "" for r in self.db.query(
                "SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = DATABASE()")}
        return self._collations.get(name, "")

    def table(self, name):
        """The live Table, or None if the database has no such table."""
        return self._all().get(name)


# ---------------------------------------------------------------------------
# The steps an update is made of.  Each says what it would run against the
# live database as it is (nothing: that part is done).

def _expect(expected, table):
    try:
        return expected[table]
    except KeyError:
        raise RevisionError("schema.sql declares no table %s" % table) from None


def _create(table, expected):
    """CREATE TABLE as schema.sql declares it."""
    _expect(expected, table)
    for stmt in schema_statements():
        if _statement_table(stmt) == table:
            return [stmt]
    raise RevisionError("schema.sql declares no table %s" % table)


@dataclass(frozen=True)
class CreateTables:
    tables: tuple

    def statements(self, live, expected):
        out = []
        for t in self.tables:
            if live.table(t) is None:
                out += _create(t, expected)
        return out


@dataclass(frozen=True)
class CreateViews:
    """Views schema.sql creates that the database lacks (a table or view of
    that name already there is left alone)."""
    views: tuple

    def statements(self, live, expected):
        present = live_tables(live.db)
        made = expected_views()
        out = []
        for name in self.views:
            if name not in made:
                raise RevisionError("schema.sql declares no view %s" % name)
            if name not in present:
                out.append(made[name])
        return out


@dataclass(frozen=True)
class AddColumns:
    table: str
    columns: tuple

    def statements(self, live, expected):
        cur = live.table(self.table)
        if cur is None:
            return _create(self.table, expected)
        want = _expect(expected, self.table)
        order = list(want.columns)
        adds = []
        for col in self.columns:
            if col in cur.columns:
                continue
            # keep schema.sql's order: after the nearest earlier column present
            before = [c for c in order[:order.index(col)] if c in cur.columns]
            where = " AFTER `%s`" % before[-1] if before else " FIRST"
            # a new text column is made utf8mb4 at once: in a latin1 table
            # update_5_2_2026b would turn a TEXT into a MEDIUMTEXT later
            coll = live.collation(self.table)
            coll = coll if coll.startswith("utf8mb4") else "utf8mb4_unicode_ci"
            adds.append("ADD COLUMN %s%s" % (_collated(want.columns[col], coll), where))
        return ["ALTER TABLE `%s` %s" % (self.table, ", ".join(adds))] if adds else []


@dataclass(frozen=True)
class DropColumns:
    """Columns an update removes (BOINC's experiments it later undid)."""
    table: str
    columns: tuple

    def statements(self, live, expected):
        cur = live.table(self.table)
        if cur is None:
            return []
        drops = ["DROP COLUMN `%s`" % c for c in self.columns if c in cur.columns]
        return ["ALTER TABLE `%s` %s" % (self.table, ", ".join(drops))] if drops else []


@dataclass(frozen=True)
class ConformColumns:
    """BOINC's 'alter table ... modify': MODIFY, to schema.sql's definition,
    the columns that differ from it in what the update changes (``aspects``:
    "type", "null", "default"), and only in that: a C++ database whose
    column matches in those but not in another (mod_time allowing NULL) has
    had the update."""
    table: str
    columns: tuple
    aspects: tuple = ("type", "null", "default")

    def _differs(self, have, need):
        pick = {"type": lambda c: c.type, "null": lambda c: c.null,
                "default": lambda c: (c.default, c.extra)}
        return any(pick[a](have) != pick[a](need) for a in self.aspects)

    def statements(self, live, expected):
        cur = live.table(self.table)
        if cur is None:
            return _create(self.table, expected)
        want = _expect(expected, self.table)
        out = []
        for col in self.columns:
            have, need = cur.columns.get(col), want.columns[col]
            if have is None:
                out.append("ALTER TABLE `%s` ADD COLUMN %s" % (self.table, need.definition))
            elif self._differs(have, need):
                out.append(_Narrowing(self.table, col, have.type, need.type))
                out.append("ALTER TABLE `%s` MODIFY %s" % (self.table, _keeping(have, need)))
        return out


@dataclass(frozen=True)
class SetDefaults:
    """schema.sql's defaults on the columns that have none.  BOINC's own
    schema.sql gives its NOT NULL columns no default (its programs name every
    column they insert); boincpy's INSERTs leave the columns they don't set
    to the defaults, which MariaDB's strict mode refuses without one.  Adding
    a default changes nothing for BOINC's programs or pages."""

    def statements(self, live, expected):
        out = []
        for name, want in expected.items():
            cur = live.table(name)
            if cur is None:
                continue
            sets = ["ALTER COLUMN `%s` SET DEFAULT %s" % (col, _default_literal(need.default))
                    for col, need in want.columns.items()
                    if col in cur.columns and cur.columns[col].default is None
                    and need.default not in (None, "NULL") and not need.extra]
            if sets:
                out.append("ALTER TABLE `%s` %s" % (name, ", ".join(sets)))
        return out


def _default_literal(value):
    """A default as information_schema gives it, as SQL: MariaDB spells it
    as SQL already ('' quoted, numbers bare); MySQL gives the bare value."""
    text = str(value)
    if re.fullmatch(r"'.*'|-?[0-9][0-9.eE+-]*", text, re.S):
        return text
    return "'%s'" % text.replace("\\", "\\\\").replace("'", "''")


def _keeping(have, need):
    """schema.sql's definition of a column, in the live column's collation:
    a MODIFY would otherwise move it to the table's default, and a column
    sharing a FULLTEXT index with others must keep their character set
    (update_5_2_2026b converts them all together)."""
    return _collated(need, have.collation)


def _collated(need, collation):
    """schema.sql's definition of a text column, in ``collation``."""
    head = "`%s` %s" % (need.definition.split("`")[1], need.type)
    if collation and need.collation and need.definition.startswith(head):
        return "%s COLLATE %s%s" % (head, collation, need.definition[len(head):])
    return need.definition


@dataclass(frozen=True)
class _Narrowing:
    """A check before a column is made shorter: rows that would not fit are
    refused by name instead of cut (MariaDB cuts them outside strict mode)."""
    table: str
    column: str
    have: str
    need: str

    def run(self, db):
        old, new = _length(self.have), _length(self.need)
        if old is None or new is None or new >= old:
            return
        n = db.query_value("SELECT COUNT(*) FROM `%s` WHERE CHAR_LENGTH(`%s`) > %%s"
                           % (self.table, self.column), (new,), default=0)
        if n:
            raise RevisionError("%s.%s: %d rows are longer than %d characters, the %s "
                                "it must become; shorten them first"
                                % (self.table, self.column, n, new, self.need))


def _length(type_):
    m = re.match(r"(?:var)?char\((\d+)\)", type_ or "")
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class RenameColumn:
    table: str
    old: str
    new: str

    def statements(self, live, expected):
        cur = live.table(self.table)
        if cur is None:
            return _create(self.table, expected)
        if self.old in cur.columns and self.new not in cur.columns:
            need = _expect(expected, self.table).columns[self.new]
            return ["ALTER TABLE `%s` CHANGE `%s` %s" % (self.table, self.old, need.definition)]
        return []


@dataclass(frozen=True)
class AddIndexes:
    table: str
    indexes: tuple

    def statements(self, live, expected):
        cur = live.table(self.table)
        if cur is None:
            return _create(self.table, expected)
        want = _expect(expected, self.table)
        adds = ["ADD " + want.indexes[i].definition
                for i in self.indexes if i not in cur.indexes]
        return ["ALTER TABLE `%s` %s" % (self.table, ", ".join(adds))] if adds else []


@dataclass(frozen=True)
class DropIndexes:
    table: str
    indexes: tuple

    def statements(self, live, expected):
        cur = live.table(self.table)
        if cur is None:
            return []
        drops = ["DROP INDEX `%s`" % i for i in self.indexes if i in cur.indexes]
        return ["ALTER TABLE `%s` %s" % (self.table, ", ".join(drops))] if drops else []


@dataclass(frozen=True)
class Utf8mb4:
    """update_5_2_2026b: tables (those present) whose table or columns are not
    utf8mb4 are converted to utf8mb4_unicode_ci, as BOINC does (TEXT columns
    of a one-byte character set become MEDIUMTEXT on the way, as with BOINC's)."""
    tables: tuple

    def statements(self, live, expected):
        present = live.names()
        tables = [t for t in self.tables if t in present]
        if not tables:
            return []
        marks = ", ".join(["%s"] * len(tables))
        bad = {r["TABLE_NAME"] for r in live.db.query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
            "AND TABLE_NAME IN (%s) AND LEFT(TABLE_COLLATION, 7) <> 'utf8mb4' "
            "UNION SELECT TABLE_NAME FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (%s) "
            "AND CHARACTER_SET_NAME IS NOT NULL AND CHARACTER_SET_NAME <> 'utf8mb4'"
            % (marks, marks), tables + tables)}
        return ["ALTER TABLE `%s` CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
                % t for t in tables if t in bad]


# ---------------------------------------------------------------------------
# The updates

@dataclass(frozen=True)
class Update:
    """One entry of BOINC's $db_updates: its revision, its function's name in
    db_update.php, and the steps that do what that function does."""
    revision: int
    name: str
    steps: tuple

    def needed(self, db, expected=None, live=None):
        """The statements this update would run now ([] once it is applied)."""
        expected = expected if expected is not None else expected_schema(db)
        live = live or _Live(db)
        out = []
        for step in self.steps:
            out += step.statements(live, expected)
        return [s for s in out if isinstance(s, str)]

    def done(self, db, expected=None, live=None):
        return not self.needed(db, expected, live)

    def apply(self, db, expected=None, log=None):
        """Do what is missing of this update; return the statements run."""
        expected = expected if expected is not None else expected_schema(db)
        live = _Live(db)
        ran = []
        for step in self.steps:
            ran += _run_step(db, step, live, expected,
                             lambda stmt: log and log("  " + " ".join(stmt.split())))
        return ran


def _run_step(db, step, live, expected, say):
    """Do what is missing of one step: a narrowing runs its own check, every
    other statement is said (``say(stmt)``) and executed.  The statements
    executed."""
    ran = []
    for stmt in step.statements(live, expected):
        if isinstance(stmt, _Narrowing):
            stmt.run(db)
            continue
        say(stmt)
        db.execute(stmt)
        ran.append(stmt)
    live.forget()
    return ran


_TYPE = ("type",)


def _u(revision, name, *steps):
    return Update(revision, name, steps)


UPDATES = (
    # a table schema.sql doesn't have (state_counts, MyISAM)
    _u(18490, "update_6_16_2009"),
    _u(19001, "update_9_3_2009",
       AddColumns("result", ("elapsed_time", "flops_estimate", "app_version_id"))),
    _u(20807, "update_3_5_2010", AddColumns("workunit", ("fileset_id",))),
    # (app's max_jobs_in_progress ... are left out: update_6_10_2010 drops them)
    _u(20932, "update_3_17_2010",
       CreateTables(("host_app_version",)),
       AddColumns("app_version", ("pfc_n", "pfc_avg", "pfc_scale", "expavg_credit",
                                  "expavg_time")),
       AddColumns("app", ("min_avg_pfc", "host_scale_check"))),
    _u(21226, "update_4_21_2010",
       DropColumns("host_app_version", ("host_scale_time", "scale_probation", "error_rate")),
       AddColumns("host_app_version", ("consecutive_valid",))),
    _u(21728, "update_6_10_2010",
       DropColumns("app", ("max_jobs_in_progress", "max_gpu_jobs_in_progress",
                           "max_jobs_per_rpc", "max_jobs_per_day_init"))),
    _u(23635, "update_6_3_2011",
       AddColumns("app", ("homogeneous_app_version",)),
       AddColumns("workunit", ("app_version_id",))),
    _u(23762, "update_6_20_2011", CreateTables(("batch", "user_submit", "user_submit_app"))),
    _u(23881, "update_7_26_2011",
       AddColumns("batch", ("fraction_done", "nerror_jobs", "state", "completion_time",
                            "credit_estimate", "credit_canonical", "credit_total", "name",
                            "app_id"))),
    # user_submit's create_apps and create_app_versions: update_9_20_2011 drops them
    _u(24137, "update_9_6_2011"),
    _u(24225, "update_9_15_2011", AddColumns("result", ("runtime_outlier",))),
    _u(24248, "update_9_20_2011",
       DropColumns("user_submit", ("all_apps", "create_apps", "create_app_versions")),
       AddColumns("user_submit", ("submit_all", "manage_all")),
       AddColumns("user_submit_app", ("manage",))),
    _u(25169, "update_1_30_2012",
       AddColumns("workunit", ("transitioner_flags",)),
       AddIndexes("assignment", ("asgn_target",))),
    _u(25734, "update_6_4_2012", AddColumns("batch", ("project_state", "description"))),
    _u(26060, "update_8_24_2012", AddColumns("app", ("non_cpu_intensive",))),
    _u(26062, "update_8_26_2012", AddColumns("app", ("locality_scheduling",))),
    _u(27000, "update_11_25_2012", CreateTables(("job_file",))),
    _u(27001, "update_4_26_2013",
       AddColumns("app", ("n_size_classes",)),
       AddColumns("workunit", ("size_class",)),
       AddColumns("result", ("size_class",))),
    _u(27002, "update_5_23_2013", AddColumns("host", ("product_name",))),
    _u(27003, "update_9_10_2013",
       ConformColumns("workunit", ("mod_time",), ("type", "default")),
       ConformColumns("result", ("mod_time",), ("type", "default"))),
    _u(27004, "update_9_17_2013", AddColumns("batch", ("expire_time",))),
    _u(27005, "update_12_22_2013", CreateTables(("badge", "badge_user", "badge_team"))),
    _u(27006, "update_1_13_2014", AddColumns("user_submit", ("max_jobs_in_progress",))),
    _u(27007, "update_3_6_2014", AddColumns("host", ("gpu_active_frac",))),
    _u(27008, "update_4_2_2014",
       AddColumns("result", ("peak_working_set_size", "peak_swap_size", "peak_disk_usage"))),
    _u(27009, "update_5_3_2014", AddColumns("app", ("fraction_done_exact",))),
    _u(27010, "update_6_5_2014", AddColumns("app_version", ("beta",))),
    _u(27011, "update_8_15_2014", CreateTables(("credit_user", "credit_team"))),
    _u(27012, "update_10_8_2014",
       AddIndexes("user_submit", ("PRIMARY",)),
       AddIndexes("user_submit_app", ("PRIMARY",))),
    _u(27013, "update_4_15_2015",
       ConformColumns("forum", ("timestamp", "threads", "posts", "rate_min_expavg_credit",
                                "rate_min_total_credit", "post_min_interval",
                                "post_min_expavg_credit", "post_min_total_credit",
                                "parent_type"), ("default",))),
    _u(27014, "update_1_27_2016", AddColumns("team", ("mod_time",))),
    # job_file's md5 becomes name; BOINC keeps the old index on it ('md5'
    # from update_11_25_2012, or constraints.sql's unique 'jf_md5' in a
    # project made then), schema.sql has constraints.sql's unique jf_name
    _u(27015, "update_2_17_2017",
       RenameColumn("job_file", "md5", "name"),
       AddIndexes("job_file", ("jf_name",)),
       DropIndexes("job_file", ("md5", "jf_md5"))),
    _u(27016, "update_3_17_2017",
       AddIndexes("credit_user", ("cu_total", "cu_avg")),
       AddIndexes("credit_team", ("ct_total", "ct_avg"))),
    _u(27017, "update_6_13_2017", AddColumns("host", ("p_ngpus", "p_gpu_fpops"))),
    _u(27018, "update_7_21_2017", AddColumns("workunit", ("keywords",))),
    _u(27019, "update_8_9_2017", AddColumns("workunit", ("app_version_num",))),
    _u(27020, "update_10_25_2017", AddColumns("user", ("login_token", "login_token_time"))),
    _u(27021, "update_3_8_2018", ConformColumns("user", ("login_token", "login_token_time"),
                                                    ("type", "null", "default"))),
    _u(27022, "update_4_5_2018", CreateTables(("token",))),
    _u(27023, "update_4_6_2018",
       ConformColumns("team", ("total_credit", "expavg_credit", "seti_id"), ("default",))),
    _u(27024, "update_4_18_2018", ConformColumns("token", ("create_time",), ("null",))),
    _u(27025, "update_4_19_2018",
       AddColumns("user", ("previous_email_addr", "email_addr_change_time")),
       AddIndexes("user", ("user_email_time",))),
    # schema.sql has no donation tables, and sent_email's primary key is on
    # userid already: BOINC's donation_paypal_userid and sent_email_userid
    # are left out
    _u(27026, "update_5_9_2018",
       CreateTables(("user_deleted", "host_deleted")),
       AddIndexes("team_delta", ("team_delta_userid",)),
       AddIndexes("banishment_vote", ("banishment_vote_userid",)),
       AddIndexes("post_ratings", ("post_ratings_user",)),
       AddIndexes("msg_from_host", ("message_hostid",))),
    _u(27027, "update_8_23_2018",
       AddIndexes("host", ("host_userid_cpid", "host_domain_name")),
       DropIndexes("host", ("host_user",))),
    # without the foreign key, the latest_consent view and the two
    # consent_type rows (none of them in schema.sql)
    _u(27028, "update_9_12_2018", CreateTables(("consent_type", "consent"))),
    _u(27029, "update_2_15_2025",
       DropIndexes("result", ("res_wu_user",)),
       AddIndexes("workunit", ("wu_batch",)),
       AddIndexes("result", ("res_batch",))),
    _u(27030, "update_11_23_2025", AddColumns("host", ("misc",))),
    _u(27031, "update_5_2_2026a",
       ConformColumns("platform", ("name",), _TYPE),
       ConformColumns("app", ("name",), _TYPE),
       ConformColumns("app_version", ("plan_class",), _TYPE),
       ConformColumns("user", ("email_addr", "name", "authenticator"), _TYPE),
       ConformColumns("team", ("name",), _TYPE),
       ConformColumns("workunit", ("name",), _TYPE),
       ConformColumns("result", ("name",), _TYPE),
       ConformColumns("job_file", ("name",), _TYPE),
       ConformColumns("category", ("name",), _TYPE),
       ConformColumns("forum", ("title",), _TYPE),
       ConformColumns("token", ("token",), _TYPE),
       ConformColumns("consent_type", ("shortname",), _TYPE)),
    _u(27032, "update_5_2_2026b", Utf8mb4(UTF8MB4_TABLES)),
)

assert UPDATES[-1].revision == LATEST and UPDATES[0].revision > OLDEST


def pending(revision):
    """The updates a database at ``revision`` lacks, oldest first."""
    return [u for u in UPDATES if u.revision > revision]


# ---------------------------------------------------------------------------
# Recognising a database

@dataclass
class Recognition:
    revision: int
    inferred: bool           # no db_revision file: read from the schema
    note: str
    # updates db_revision counts as done whose additions the database lacks
    # (BOINC's upgrade_db.php recorded revisions after failed updates, #2481)
    missing: list = field(default_factory=list)


def infer_revision(db, expected=None):
    """The newest revision up to which every update's additions are present
    (OLDEST if none is), or None if the database is older than OLDEST."""
    expected = expected if expected is not None else expected_schema(db)
    live = _Live(db)
    # the last unnumbered updates of 2008 (update_6_3_2008, update_10_7_2008)
    for table, column in BASE_COLUMNS:
        if column not in live.table(table).columns:
            return None
    revision = OLDEST
    for u in UPDATES:
        if not u.done(db, expected, live):
            break
        revision = u.revision
    return revision


def recognise(db, project_dir, expected=None):
    """Check that ``db`` is a BOINC project's database boincpy can bring up to
    date; return its Recognition (the revision, and where it came from).

    Raises RevisionError for a database without BOINC's tables, one older
    than OLDEST or newer than LATEST, or an unreadable db_revision.
    """
    present = set(live_tables(db))
    missing = [t for t in BOINC_TABLES if t not in present]
    where = "database %s" % (db.params.get("db") or "?")
    if len(missing) == len(BOINC_TABLES):
        raise RevisionError("%s is not a BOINC project's database: it has none of BOINC's "
                            "tables (%s)" % (where, ", ".join(BOINC_TABLES)))
    if missing:
        raise RevisionError("%s lacks BOINC tables (%s): not a BOINC project's database, "
                            "or a damaged one" % (where, ", ".join(missing)))
    revision = read_revision(project_dir)
    path = revision_path(project_dir)
    if revision is None:
        revision = infer_revision(db, expected)
        if revision is None:
            raise RevisionError("%s lacks %s: its schema is older than BOINC's of 2009 "
                                "(revision %d), the oldest boincpy can bring up to date; "
                                "upgrade it with BOINC's tools first"
                                % (where, " and ".join("%s.%s" % tc for tc in BASE_COLUMNS),
                                   OLDEST))
        return Recognition(revision, True, "no %s: inferred revision %d from the schema "
                           "of %s" % (path, revision, where))
    if revision < OLDEST:
        raise RevisionError("%s says revision %d, older than %d (BOINC's schema of 2009), "
                            "the oldest boincpy can bring up to date; upgrade it with "
                            "BOINC's tools first" % (path, revision, OLDEST))
    if revision > LATEST:
        raise RevisionError("%s says revision %d, newer than %d, the newest boincpy knows: "
                            "this database was upgraded by a newer BOINC" % (path, revision, LATEST))
    expected = expected if expected is not None else expected_schema(db)
    live = _Live(db)
    missing = [u for u in UPDATES if u.revision <= revision
               and not u.done(db, expected, live)]
    note = "%s says revision %d" % (path, revision)
    if missing:
        note += "; the database lacks part of %s" % ", ".join(u.name for u in missing)
    return Recognition(revision, False, note, missing)


# ---------------------------------------------------------------------------
# Applying the updates

def apply_updates(db, project_dir, log=print):
    """Bring the database to LATEST: the updates newer than its revision, in
    order, each idempotent; db_revision is written after each one that
    succeeded and never after a failure (BOINC #2481).  Then boincpy's own
    tables (BOINCPY_TABLES) are added if missing.

    Updates db_revision counts as done but whose additions the database
    lacks (Recognition.missing) are completed first, db_revision unchanged.

    Returns the updates applied.  Raises RevisionError naming the update and
    the database's error at the first failure; the updates before it stay
    applied and recorded.
    """
    expected = expected_schema(db)
    rec = recognise(db, project_dir, expected)
    log(rec.note)
    log("DB version: %d" % rec.revision)
    for u in rec.missing:
        log("completing update %s (revision %d), which db_revision counts as done"
            % (u.name, u.revision))
        try:
            u.apply(db, expected, log)
        except DatabaseError as exc:
            raise RevisionError("completing update %s (revision %d) failed: %s; db_revision "
                                "stays at %d" % (u.name, u.revision, exc, rec.revision)) from None
    todo = pending(rec.revision)
    for u in todo:
        log("need update %s" % u.name)
    if not todo:
        log("No updates needed")
    applied = []
    for u in todo:
        log("performing update %s (revision %d)" % (u.name, u.revision))
        try:
            u.apply(db, expected, log)
        except DatabaseError as exc:
            last = applied[-1].revision if applied else rec.revision
            raise RevisionError("update %s (revision %d) failed: %s; db_revision stays at "
                                "%d" % (u.name, u.revision, exc, last)) from None
        write_revision(project_dir, u.revision)
        applied.append(u)
    if rec.inferred and not applied:
        write_revision(project_dir, rec.revision)
    _boincpy_additions(db, expected, log)
    return applied


def describe_pending(db, project_dir):
    """What apply_updates would do, without doing it (a dry run): the
    recognition's note, then per pending update its name and the statements
    it would run on the database as it is now (an update's statements may
    change once the ones before it have run)."""
    expected = expected_schema(db)
    rec = recognise(db, project_dir, expected)
    lines = [rec.note]
    live = _Live(db)
    for u in rec.missing + pending(rec.revision):
        stmts = u.needed(db, expected, live)
        lines.append("update %s (revision %d)%s" % (u.name, u.revision,
                                                    "" if stmts else ": nothing to do"))
        lines += ["  " + " ".join(s.split()) for s in stmts]
    # (on the database as it is now: an update above may already make some)
    additions = [" ".join(stmt.split()) for _, step in _additions()
                 for stmt in step.statements(live, expected)
                 if not isinstance(stmt, _Narrowing)]
    if additions:
        lines.append("boincpy's own tables, indexes and column defaults, and BOINC's "
                     "this database lacks:")
        lines += ["  " + stmt for stmt in additions]
    if len(lines) == 1:
        lines.append("No updates needed")
    return lines


def _additions():
    """The steps adding what boincpy's schema.sql has beyond BOINC's, then what
    BOINC's has that a database boincpy made before lacks: (label, step)."""
    ours = [CreateTables(BOINCPY_TABLES)] + [AddIndexes(t, i) for t, i in BOINCPY_INDEXES] \
        + [SetDefaults()]
    boincs = [CreateTables(BOINC_TABLES_ADDED)] \
        + [AddIndexes(t, i) for t, i in BOINC_INDEXES_ADDED] \
        + [ConformColumns("batch", ("id",), aspects=("type",)), CreateViews(BOINC_VIEWS)]
    return [("adding boincpy's own", step) for step in ours] \
        + [("adding BOINC's", step) for step in boincs]


def _boincpy_additions(db, expected, log):
    """Add what boincpy's schema.sql has beyond BOINC's (no revision of BOINC's
    makes it, and BOINC's programs never see it), and BOINC's own that an
    older boincpy database lacks."""
    live = _Live(db)
    for label, step in _additions():
        try:
            _run_step(db, step, live, expected,
                      lambda stmt: log("%s: %s" % (label, " ".join(stmt.split())[:100])))
        except RevisionError:
            raise                   # a narrowing's: it names the rows in the way
        except DatabaseError as exc:
            raise RevisionError("%s tables, indexes or views failed: %s"
                                % (label, exc)) from None


# ---------------------------------------------------------------------------
# Comparing the live database with schema.sql

def check_schema(db, defaults=False):
    """The differences between the live database and schema.sql, one line
    each (empty when they agree): tables and views, columns, column types
    and NULL-ability, indexes; column defaults too with ``defaults=True``.

    Two differences that BOINC's own schema and boincpy's make on the same
    revision are not counted: an index on a column's first characters
    against one on the whole column (boincpy's schema.sql indexes a few long
    columns by a prefix, BOINC's constraints.sql whole), and a timestamp
    column's NULL-ability (MariaDB makes BOINC's 'timestamp default
    current_timestamp' nullable or not by its explicit_defaults_for_timestamp).
    """
    expected = expected_schema(db)
    views = expected_views()
    kinds = live_tables(db)
    live = _read_tables(db)
    lines = []
    for name, want in expected.items():
        if kinds.get(name) != "BASE TABLE":
            lines.append("%s: table is missing" % name)
            continue
        lines += _compare(name, live[name], want, defaults)
    for name in views:
        if kinds.get(name) != "VIEW":
            lines.append("%s: view is missing" % name)
    for name in sorted(kinds):
        if name not in expected and name not in views:
            kind = "view" if kinds[name] == "VIEW" else "table"
            lines.append("%s: %s is extra" % (name, kind))
    return lines


def _whole_columns(parts):
    """An index's columns without their prefix lengths: ("host_cpid(191)",) ->
    ("host_cpid",)."""
    return tuple(p.split("(", 1)[0] for p in parts)


def _nullity(null):
    return "NULL" if null else "NOT NULL"


def _compare(name, have, want, defaults):
    lines = []
    for col, need in want.columns.items():
        got = have.columns.get(col)
        if got is None:
            lines.append("%s: column %s is missing" % (name, col))
            continue
        if got.type != need.type:
            lines.append("%s.%s: type %s, expected %s" % (name, col, got.type, need.type))
        if got.null != need.null and need.type != "timestamp":
            lines.append("%s.%s: %s, expected %s" % (name, col, _nullity(got.null),
                                                      _nullity(need.null)))
        if defaults and (got.default, got.extra) != (need.default, need.extra):
            lines.append("%s.%s: default %s%s, expected %s%s"
                         % (name, col, got.default, " " + got.extra if got.extra else "",
                            need.default, " " + need.extra if need.extra else ""))
    lines += ["%s: column %s is extra" % (name, c) for c in have.columns if c not in want.columns]
    for key, need in want.indexes.items():
        got = have.indexes.get(key)
        if got is None:
            lines.append("%s: index %s is missing" % (name, key))
        elif (got.unique, got.kind, _whole_columns(got.parts)) \
                != (need.unique, need.kind, _whole_columns(need.parts)):
            lines.append("%s: index %s is %s, expected %s"
                         % (name, key, got.describe(), need.describe()))
    lines += ["%s: index %s is extra" % (name, k) for k in have.indexes if k not in want.indexes]
    return lines
