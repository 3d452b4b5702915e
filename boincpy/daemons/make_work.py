"""make_work: keep a pool of unsent jobs by cloning template workunits (for testing).

BOINC's ``sched/make_work.cpp``::

    make_work --wu_name NAME [--wu_name NAME2 ...] [--cushion N] [--max_wus N]
              [--one_pass] [--credit_from_wu] [-d N] [--sleep_interval S]

Each pass counts the unsent (INACTIVE or UNSENT) results of the first
template's app.  At most ``--cushion`` (default 300) of them: new workunits
are cloned, round-robin over the templates, until their target_nresults add
up to the shortfall (at least one); with ``--max_wus`` the daemon exits
once the project holds that many workunits.  Then, unless ``--one_pass``, it
waits until the transitioner has created a result for the last clone, so it
never runs far ahead of a transitioner that is not running.

A clone copies the template's row (as read at start-up) with: name
``wu_<start time>_<n>``; every input file renamed in the XML to
``NAME__<start time>_<n>`` (in ``<name>`` and ``<file_name>``) while its
``<url>`` still points at the template's file, so clients download the same
bytes under a new name and no file is copied; ``transition_time`` now;
``need_validate``, ``canonical_resultid``, ``hr_class``, ``error_mask``,
``file_delete_state`` and ``assimilate_state`` reset; ``canonical_credit``
reset unless ``--credit_from_wu``.  Give templates a name containing
``nodelete`` so the file deleter keeps their files.
"""

import re
import time

from boincpy.cli import option
from boincpy.daemons.base import Daemon, run_daemon
from boincpy.db.rows import Workunit
from boincpy.db.workunit import insert_workunit
from boincpy.errors import DatabaseError, ToolError
from boincpy.states import ServerState

_NAME_RE = re.compile(r"<name>(.*?)</name>")
_FILE_NAME_RE = re.compile(r"<file_name>(.*?)</file_name>")
_ER_DUP_ENTRY = 1062
RESULT_WAIT_SECONDS = 10


def rename_input_files(xml_doc, new_name_for):
    """The workunit XML with each input file renamed: ``new_name_for(old)``
    gives the new name; ``<name>`` and ``<file_name>`` lines naming the file
    change, URLs do not."""
    lines = xml_doc.split("\n")
    renames = {}
    for line in lines:
        m = _NAME_RE.search(line)
        if m:
            old = m.group(1).strip()
            if old not in renames:
                renames[old] = new_name_for(old)

    def swap(m, tag):
        old = m.group(1).strip()
        if old in renames:
            return "<%s>%s</%s>" % (tag, renames[old], tag)
        return m.group(0)
    out = []
    for line in lines:
        line = _NAME_RE.sub(lambda m: swap(m, "name"), line)
        line = _FILE_NAME_RE.sub(lambda m: swap(m, "file_name"), line)
        out.append(line)
    return "\n".join(out)


class MakeWork(Daemon):
    """Clones template workunits while few results are unsent."""

    name = "make_work"
    sleep_interval = float(RESULT_WAIT_SECONDS)
    supports_mod = False

    @classmethod
    def add_options(cls, params):
        params.append(option("wu_name", multiple=True, dest="wu_names", metavar="NAME",
                             required=True, help="template workunit to clone (repeatable)"))
        params.append(option("cushion", type=int, default=300, metavar="N",
                             help="make work if at most N results are unsent (default 300)"))
        params.append(option("max_wus", type=int, default=0, metavar="N",
                             help="exit once the project has N workunits"))
        params.append(option("credit_from_wu", is_flag=True,
                             help="copy the template's canonical_credit"))

    def initialise(self):
        """Connect and read the template workunits (exit 1 if one is missing)."""
        super().initialise()
        self.templates = []
        for name in self.args.wu_names:
            row = self.db.query_one("SELECT * FROM workunit WHERE name = %s", (name,))
            if row is None:
                raise ToolError("can't find wu %s" % name)
            self.templates.append(row)
        self.start_time = int(time.time())
        self.index = 0
        self.wu_seqno = 0
        self.file_seqno = 0
        self.log.normal("Starting: cushion %d, max_wus %d" % (self.args.cushion,
                                                              self.args.max_wus))

    def one_pass(self):
        """Top the pool up; False (sleep) when there are enough unsent results."""
        db = self.db
        unsent = db.query_value("SELECT COUNT(*) FROM result WHERE server_state <= %s "
                                "AND appid = %s", (int(ServerState.UNSENT),
                                                   self.templates[0]["appid"]), 0)
        total = db.query_value("SELECT COUNT(*) FROM workunit", None, 0) if self.args.max_wus else 0
        self.log.debug("unsent: %d cushion: %d" % (unsent, self.args.cushion))
        if unsent > self.args.cushion:
            return False
        needed = self.args.cushion - unsent
        new_id = None
        while True:
            template = self.templates[self.index]
            self.index = (self.index + 1) % len(self.templates)
            if self.args.max_wus and total >= self.args.max_wus:
                self.log.normal("Reached max_wus = %d" % self.args.max_wus)
                self.args.one_pass = True       # exit after this pass, as BOINC does
                return True
            total += 1
            new_id = self.make_new_wu(template)
            needed -= max(1, template["target_nresults"])
            if needed <= 0:
                break
        if not self.args.one_pass:
            self.wait_for_results(new_id)
        return True

    def make_new_wu(self, template):
        """Insert one clone of ``template``; return its id."""
        xml = template["xml_doc"] or ""

        def new_file_name(old):
            name = "%s__%d_%d" % (old, self.start_time, self.file_seqno)
            self.file_seqno += 1
            return name
        row = dict(template)
        now = int(time.time())
        row.update(xml_doc=rename_input_files(xml, new_file_name),
                   create_time=now, need_validate=0, canonical_resultid=0,
                   canonical_credit=template["canonical_credit"] if self.args.credit_from_wu
                   else 0.0,
                   hr_class=0, transition_time=now, error_mask=0, file_delete_state=0,
                   assimilate_state=0)
        for _ in range(1000):
            row["name"] = "wu_%d_%d" % (self.start_time, self.wu_seqno)
            self.wu_seqno += 1
            try:
                wu_id = insert_workunit(self.db, Workunit.from_row(row))
                break
            except DatabaseError as exc:
                # a name left by an earlier run started in the same second
                if getattr(exc, "mysql_code", None) != _ER_DUP_ENTRY:
                    raise
        else:
            raise ToolError("can't find a free workunit name wu_%d_N" % self.start_time)
        self.log.debug("Created %s, clone of %s" % (row["name"], template["name"]))
        return wu_id

    def wait_for_results(self, wu_id):
        """Wait until the transitioner made a result for ``wu_id`` (or a stop)."""
        while not self.stop_requested():
            count = self.db.query_value("SELECT COUNT(*) FROM result WHERE workunitid = %s",
                                        (wu_id,), 0)
            self.log.debug("result.count for %d returned %d" % (wu_id, count))
            if count > 0:
                return
            self.sleep(self.sleep_interval)


def main(argv=None):
    """Entry point of bin/make_work."""
    return run_daemon(MakeWork, argv)
