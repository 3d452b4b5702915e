"""The demo: a whole BOINC project running on this machine, volunteers included.

    python -m boincpy.tools.demo [--project_root DIR] [--jobs N] [--min_quorum Q]
                                 [--port P] [--wrong_host] [--teardown] [-v]

Every step goes through the tool an operator uses, so a run is also a check
that they work together (the end-to-end tests drive this same module):

1. ``bin/make_project`` (first run only; a later run reuses the project and
   adds jobs) with its URLs on a loopback port and an ops-pages password;
2. a private Apache on that port (``python -m boincpy.tools.httpd start``);
3. the example app (examples/example_app) built with make and installed with
   ``bin/xadd`` and ``bin/update_versions`` (version.xml gives its API version:
   the dynamically linked program carries none);
4. ``sample_bitwise_validator`` and ``sample_assimilator`` in config.xml's
   daemons, then ``bin/start``;
5. a batch of jobs: ``bin/stage_file`` and ``bin/create_work --stdin``
   (``--min_quorum Q``, as many replicas);
6. volunteers: stock BOINC clients (boinc-client + boinccmd), one per host,
   each creating its account with ``boinccmd --create_account`` (the
   project's create_account.php) and attaching with ``--project_attach``.
   ``one_result_per_user_per_wu`` is on, so a quorum of Q needs Q volunteers.
   ``--wrong_host`` adds one more whose app (BOINC's anonymous platform: its
   own app_info.xml) writes a wrong output: the validator marks its results
   invalid and the jobs still complete on the others;
7. it waits, showing the jobs unsent / in progress / validated / assimilated,
   stops the clients and prints a summary: jobs done, credit per volunteer
   and host, where the outputs are, the ops pages and how to stop.

The project keeps running (daemons until ``bin/stop``, Apache until its stop
command) unless ``--teardown`` is given, which stops everything and removes
the database, its user and the project directory.  ``--jobs 0 --teardown``
only removes an existing demo.

Needs root on a Debian machine with MariaDB, Apache, boinc-client and
libboinc-app-dev (``make demo`` installs what is missing first).
"""

import grp
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import click
import psutil

from boincpy.config import load_config, write_config
from boincpy.db import connect
from boincpy.db.connection import open_server, server_params
from boincpy.errors import BoincpyError
from boincpy.states import AssimilateState, FileDeleteState, ServerState, ValidateState
from boincpy.testing.client import ClientError, StockClient, project_dir_name
from boincpy.tools.httpd import PrivateApache, free_port
from boincpy.tools.make_project import plan

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLATFORM = "x86_64-pc-linux-gnu"
APP = "example_app"
APP_VERSION = "1.0"
APP_FILE = "%s_%s_%s" % (APP, APP_VERSION, PLATFORM)
WRONG_APP_FILE = "example_app_wrong"
# The API the example app is built against (Debian's libboinc-app-dev 7.20.5).
API_VERSION = "7.20.5"
OPS_USER = "admin"
SECRETS_FILE = "demo_secrets.json"          # in the key directory, mode 0600
DEFAULT_DAEMONS = ("feeder -d 3", "transitioner -d 3", "file_deleter -d 3",
                   "sample_bitwise_validator -d 3 --app %s" % APP,
                   "sample_assimilator -d 3 --app %s" % APP)
# Small jobs: the client estimates 1 s each (fetching a whole batch at once) and
# may run one for up to 1000 s before it aborts it as runaway.
RSC_FPOPS_EST = 1e9
RSC_FPOPS_BOUND = 1e12
POKE_INTERVAL = 8.0         # seconds between nudges of one idle client (> request_delay)
_SECRET_OPTIONS = ("--db_passwd", "--db_root_passwd", "--ops_passwd")


class DemoError(BoincpyError):
    """A demo step failed; the message says which and where its output is."""


@dataclass
class Settings:
    """What one demo run does.  Defaults are the demo's; tests change them.

    ``volunteers``: hosts with the right app (0: as many as the quorum needs,
    at least two).  ``daemons``: config.xml's daemon commands.  ``until``:
    when the wait ends: ``"reported"`` (every replica reported),
    ``"assimilated"`` (every job validated and assimilated) or ``"deleted"``
    (also its files deleted by file_deleter).  ``clients_dir``: where the
    clients' data directories live (default PROJECT/demo_clients, kept for a
    later run); ``keep_clients`` False removes them after a successful run.
    """

    project_root: str
    short_name: str = ""
    port: int = 0
    db_name: str = ""
    db_user: str = ""
    db_root_user: str = "root"
    db_root_passwd: str = ""
    db_host: str = ""
    db_socket: str = ""
    njobs: int = 20
    min_quorum: int = 2
    volunteers: int = 0
    wrong_host: bool = False
    daemons: tuple = DEFAULT_DAEMONS
    daemon_sleep: float = 0.0
    until: str = "assimilated"
    clients_dir: str = ""
    keep_clients: bool = True
    teardown: bool = False
    timeout: float = 900.0
    verbose: bool = False
    plan_class: str = ""        # install the example app as PLATFORM__PLAN_CLASS (e.g. "mt")
    persistent: bool = False    # make_project --persistent (FastCGI workers)

    def __post_init__(self):
        self.project_root = os.path.abspath(os.path.expanduser(self.project_root))
        if not self.short_name:
            self.short_name = re.sub(r"[^A-Za-z0-9_]", "_", os.path.basename(self.project_root))
        self.db_name = self.db_name or self.short_name
        self.db_user = self.db_user or self.short_name
        if self.min_quorum < 1:
            raise DemoError("--min_quorum must be at least 1")
        if self.njobs < 0:
            raise DemoError("--jobs must not be negative")
        if self.wrong_host and self.min_quorum < 2:
            raise DemoError("--wrong_host needs --min_quorum 2 or more: with a quorum of "
                            "one nothing is compared, so a wrong output is accepted")
        if self.until not in ("reported", "assimilated", "deleted"):
            raise DemoError("until must be reported, assimilated or deleted")
        if not self.volunteers:
            self.volunteers = max(2, self.min_quorum)
        if self.volunteers < self.min_quorum:
            raise DemoError("%d volunteers can't make a quorum of %d: one result per user "
                            "per job" % (self.volunteers, self.min_quorum))
        self.clients_dir = self.clients_dir or os.path.join(self.project_root, "demo_clients")


@dataclass
class Volunteer:
    """One volunteer: a user account and the stock client of their host."""

    number: int
    name: str
    email: str
    password: str
    wrong: bool
    client: object = None
    authenticator: str = ""
    userid: int = 0
    closed: bool = False
    poked: float = 0.0


@dataclass
class Counts:
    """Where the batch's jobs are (each job counted once, in its latest state)."""

    total: int = 0
    unsent: int = 0
    in_progress: int = 0
    validated: int = 0
    assimilated: int = 0
    failed: int = 0
    reported: int = 0
    deleted: int = 0

    def line(self):
        return ("jobs: %d unsent, %d in progress, %d validated, %d assimilated%s (of %d)"
                % (self.unsent, self.in_progress, self.validated, self.assimilated,
                   ", %d failed" % self.failed if self.failed else "", self.total))


@dataclass
class Summary:
    """What the demo prints at the end (see format_summary)."""

    project_root: str
    batch: int
    njobs: int
    min_quorum: int
    done: int
    failed: int
    valid: int
    invalid: int
    other: int
    users: list = field(default_factory=list)      # dicts, each with 'hosts'
    outputs_dir: str = ""
    outputs: list = field(default_factory=list)
    master_url: str = ""
    ops_url: str = ""
    ops_user: str = ""
    ops_passwd: str = ""
    stop_commands: list = field(default_factory=list)


# ---------------------------------------------------------------------------
# Running the operator's tools

def _tool_env(project_root=None):
    env = {k: v for k, v in os.environ.items() if k != "BOINC_PROJECT_DIR"}
    if project_root:
        env["BOINC_PROJECT_DIR"] = project_root
    return env


class Demo:
    """One demo run over a project (see the module doc); ``run()`` does it all,
    the step methods can be called one by one."""

    def __init__(self, settings, out=None, tty=None):
        self.s = settings
        self.out = out or sys.stdout
        self.tty = self.out.isatty() if tty is None else tty
        self.root = settings.project_root
        self.cfg = None
        self.secrets = {}
        self.volunteers = []
        self.batch = 0
        self.reused = False
        self.failed = False

    # -- output ---------------------------------------------------------------

    def say(self, text=""):
        click.echo(text, file=self.out)

    def run_tool(self, argv, cwd=None, input=None, what=None):
        """Run one command as the operator would (echoed); DemoError with its
        output if it fails.  Returns its output."""
        shown = [os.path.relpath(a, self.root) if a.startswith(self.root + os.sep)
                 and cwd == self.root else a for a in argv]
        for i in range(1, len(shown)):
            if shown[i - 1] in _SECRET_OPTIONS and shown[i]:
                shown[i] = "********"
        self.say("$ " + " ".join(_quote(a) for a in shown))
        proc = subprocess.run(argv, cwd=cwd, input=input, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=_tool_env(
                                  self.root if cwd == self.root else None))
        if self.s.verbose and proc.stdout.strip():
            self.say(proc.stdout.rstrip())
        if proc.returncode != 0:
            raise DemoError("%s failed (exit status %d):\n%s" % (
                what or os.path.basename(argv[0]), proc.returncode, proc.stdout.rstrip()))
        return proc.stdout

    def bin(self, name):
        return os.path.join(self.root, "bin", name)

    # -- 1. the project ---------------------------------------------------------

    def make_project(self):
        """bin/make_project, unless the project exists (then it is reused)."""
        blocked = unreachable_dir(self.root)
        if blocked:
            raise DemoError("Apache's children (www-data) can't enter %s (mode %o), so they "
                            "could not serve %s: choose a --project_root elsewhere, e.g. "
                            "/srv/boincpy/NAME" % (blocked, os.stat(blocked).st_mode & 0o777,
                                                  self.root))
        if os.path.exists(os.path.join(self.root, "config.xml")):
            self.reused = True
            self.cfg = load_config(self.root)
            self.say("Reusing the project in %s (%s)" % (self.root, self.cfg.master_url))
            if self.s.port and ":%d/" % self.s.port not in self.cfg.master_url:
                self.say("(--port %d ignored: the project's URLs keep their port)" % self.s.port)
            self._read_secrets()
            return self.cfg
        port = self.s.port or free_port()
        self.secrets = {"ops_passwd": secrets.token_urlsafe(9), "volunteers": {}}
        argv = ["--project_root", self.root, "--url_base", "http://127.0.0.1:%d/" % port,
                "--db_name", self.s.db_name, "--db_user", self.s.db_user,
                "--db_passwd", secrets.token_urlsafe(15),
                "--db_root_user", self.s.db_root_user, "--db_root_passwd",
                self.s.db_root_passwd, "--ops_user", OPS_USER,
                "--ops_passwd", self.secrets["ops_passwd"], "--test_app", "--no_query"]
        if self.s.db_host:
            argv += ["--db_host", self.s.db_host]
        if self.s.db_socket:
            argv += ["--db_socket", self.s.db_socket]
        if self.s.persistent:
            argv += ["--persistent", "--processes", "2"]
        argv += [self.s.short_name, "boincpy demo (%s)" % self.s.short_name]
        self.secrets["ops_url"] = plan(argv).ops_url
        self.run_tool([sys.executable, os.path.join(REPO_ROOT, "bin", "make_project")] + argv,
                      what="make_project")
        self.cfg = load_config(self.root)
        self._write_secrets()
        return self.cfg

    def _secrets_path(self):
        return os.path.join(self.cfg.key_dir, SECRETS_FILE)

    def _read_secrets(self):
        try:
            with open(self._secrets_path()) as f:
                self.secrets = json.load(f)
        except (OSError, ValueError):
            self.secrets = {}
        self.secrets.setdefault("volunteers", {})

    def _write_secrets(self):
        path = self._secrets_path()
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self.secrets, f, indent=1)
        os.replace(path + ".tmp", path)

    # -- 2. Apache ----------------------------------------------------------------

    def httpd_command(self, action):
        return [sys.executable, "-m", "boincpy.tools.httpd", action, self.root]

    def start_apache(self):
        """A private Apache on the master URL's loopback port (kept if running)."""
        server = PrivateApache(self.root)
        if server.running():
            self.say("Apache for the project is running (pid %d)" % server.pid())
            return server
        self.run_tool(self.httpd_command("start"), what="Apache")
        return server

    # -- 3. the app ---------------------------------------------------------------

    def version_dir(self):
        plat = PLATFORM + ("__" + self.s.plan_class if self.s.plan_class else "")
        return os.path.join(self.root, "apps", APP, APP_VERSION, plat)

    def install_app(self):
        """Build the example app into apps/APP/VERSION/PLATFORM/ with a version.xml,
        then bin/xadd and bin/update_versions (both do nothing on a re-run)."""
        self.run_tool([self.bin("xadd")], cwd=self.root)
        vdir = self.version_dir()
        program = os.path.join(vdir, APP_FILE)
        if not os.path.exists(program):
            os.makedirs(vdir, exist_ok=True)
            build_example_app(program, self)
            with open(os.path.join(vdir, "version.xml"), "w") as f:
                f.write(version_xml())
        self.run_tool([self.bin("update_versions"), "--noconfirm"], cwd=self.root)

    # -- 4. daemons -------------------------------------------------------------------

    def daemon_commands(self):
        cmds = list(self.s.daemons)
        if self.s.daemon_sleep:
            cmds = [c + " --sleep_interval %g" % self.s.daemon_sleep for c in cmds]
        return cmds

    def configure_daemons(self):
        """config.xml's <daemons> := the demo's (validator and assimilator for
        the app), rewritten in place only when they differ."""
        cfg = load_config(self.root)
        wanted = self.daemon_commands()
        if [d.cmd for d in cfg.daemons] == wanted:
            return False
        self.say("Setting config.xml's daemons: %s" % "; ".join(wanted))
        rewrite_config(cfg, daemons=[{"cmd": c} for c in wanted])
        self.cfg = load_config(self.root)
        return True

    def start_project(self):
        """bin/start (starts what is not running yet)."""
        self.run_tool([self.bin("start")], cwd=self.root)

    # -- 5. jobs ------------------------------------------------------------------------

    def create_jobs(self):
        """A batch of njobs jobs, input files staged; returns the batch number."""
        db = self.connect()
        try:
            self.batch = int(db.query_value("SELECT COALESCE(MAX(batch), 0) FROM workunit")) + 1
        finally:
            db.close()
        if not self.s.njobs:
            return self.batch
        staging = os.path.join(self.cfg.tmp_dir, "demo_batch_%d" % self.batch)
        os.makedirs(staging, exist_ok=True)
        lines = []
        for i in range(self.s.njobs):
            name = job_name(self.batch, i)
            with open(os.path.join(staging, name + ".txt"), "w") as f:
                f.write(job_input(self.batch, i))
            lines.append("--wu_name %s %s.txt" % (name, name))
        self.run_tool([self.bin("stage_file"), staging], cwd=self.root)
        q = self.s.min_quorum
        # BOINC's defaults allow one replica in all; a disagreement (the wrong
        # host) needs more, so give the limits as a project's template would.
        self.run_tool([self.bin("create_work"), "--appname", APP, "--batch", str(self.batch),
                       "--min_quorum", str(q), "--target_nresults", str(q),
                       "--max_error_results", "3", "--max_success_results", str(2 * q),
                       "--max_total_results", str(2 * q + 3),
                       "--rsc_fpops_est", "%g" % RSC_FPOPS_EST,
                       "--rsc_fpops_bound", "%g" % RSC_FPOPS_BOUND, "--stdin"],
                      cwd=self.root, input="\n".join(lines) + "\n")
        shutil.rmtree(staging, ignore_errors=True)
        self.say("Created %d jobs (batch %d, min_quorum %d)"
                 % (self.s.njobs, self.batch, self.s.min_quorum))
        return self.batch

    # -- 6. volunteers ----------------------------------------------------------------------

    def make_volunteers(self):
        """The Volunteer records (clients not started): the wrong host first, so
        that it gets replicas the others then have to outvote."""
        people = []
        if self.s.wrong_host:
            people.append((self.s.volunteers + 1, True))
        people += [(n, False) for n in range(1, self.s.volunteers + 1)]
        self.volunteers = []
        for number, wrong in people:
            key = "volunteer%d" % number
            password = self.secrets["volunteers"].get(key)
            if not password:
                password = self.secrets["volunteers"][key] = secrets.token_urlsafe(9)
                self._write_secrets()
            data_dir = os.path.join(self.s.clients_dir, "host%d" % number)
            os.makedirs(data_dir, exist_ok=True)
            os.chmod(data_dir, 0o700)       # the GUI RPC password is in it
            v = Volunteer(number=number, wrong=wrong, password=password,
                          name="Volunteer %d%s" % (number, " (wrong app)" if wrong else ""),
                          email="volunteer%d@demo.example.org" % number,
                          client=StockClient(data_dir, keep=self.s.keep_clients))
            self.volunteers.append(v)
        return self.volunteers

    def start_volunteers(self):
        """Start each volunteer's client; a new volunteer creates an account and
        attaches.  The wrong host goes first, the others once it holds replicas."""
        url = self.cfg.master_url
        for v in self.volunteers:
            c = v.client
            account_file = os.path.join(c.data_dir, "account_%s.xml" % project_dir_name(url))
            attached = os.path.exists(account_file)
            c.start()
            if not attached:
                reply = c.create_account(url, v.email, v.password, v.name)
                if not reply.authenticator:
                    raise DemoError("boinccmd --create_account for %s failed: %s"
                                    % (v.email, reply.error or reply.output))
                v.authenticator = reply.authenticator
                if v.wrong:
                    # app_info.xml is read at start-up only: restart attached
                    c.stop()
                    c.write_account_file(url, v.authenticator)
                    c.install_anonymous_platform(url, wrong_app_info(), [self.wrong_program()])
                    c.start()
                else:
                    c.project_attach(url, v.authenticator)
            v.userid = self.userid(v.email)
            self.say("Volunteer %d (%s%s): client in %s, %s" % (
                v.number, v.email, ", wrong app" if v.wrong else "", c.data_dir,
                "attached" if not attached else "already attached"))
            if v.wrong and self.s.njobs:
                self.wait_for_replicas(v)

    def wrong_program(self):
        """The host's own copy of the app; app_info.xml gives it --wrong."""
        path = os.path.join(self.s.clients_dir, WRONG_APP_FILE)
        if not os.path.exists(path):
            shutil.copyfile(os.path.join(self.version_dir(), APP_FILE), path)
            os.chmod(path, 0o755)
        return path

    def wait_for_replicas(self, v, timeout=120):
        """Until the scheduler has sent ``v`` its first replicas (the others
        start then, so that they have some of the wrong host's jobs to outvote)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            n = self.sent_to(v.userid)
            if n:
                return n
            if not v.client.running():
                raise DemoError("the client of volunteer %d exited%s"
                                % (v.number, v.client.log_tail()))
            time.sleep(0.5)
        raise DemoError("volunteer %d got no job within %ds%s"
                        % (v.number, timeout, v.client.log_tail()))

    def stop_volunteers(self, failed=False):
        """Quit every client (data directories kept when ``failed`` or keep_clients)."""
        for v in self.volunteers:
            if not v.closed:
                v.closed = True
                v.client.close(failed=failed)

    def settle_clients(self, timeout=30):
        """Wait (at most ``timeout`` s) until no client holds a task: every report
        acknowledged, nothing left to upload, before the clients are stopped."""
        deadline = time.monotonic() + timeout
        busy = list(self.volunteers)
        while busy and time.monotonic() < deadline:
            try:
                busy = [v for v in busy if v.client.running() and v.client.tasks()]
            except ClientError:
                break
            if busy:
                time.sleep(0.5)
        for v in busy:
            self.say("(volunteer %d still holds tasks; stopping it anyway)" % v.number)

    def poke_idle(self):
        """``boinccmd --project URL update`` for clients holding no task while
        replicas wait to be sent: a "no work" reply made them back off work
        fetch for 5-10 minutes (each client at most every POKE_INTERVAL s)."""
        now = time.monotonic()
        for v in self.volunteers:
            if not v.client.running() or now - v.poked < POKE_INTERVAL:
                continue
            try:
                if not v.client.tasks():
                    v.client.project_op(self.cfg.master_url, "update")
                    v.poked = now
            except ClientError:
                pass

    # -- 7. waiting and the summary ---------------------------------------------------

    def connect(self):
        return connect(self.cfg)

    def userid(self, email):
        db = self.connect()
        try:
            return int(db.query_value("SELECT id FROM user WHERE email_addr = %s",
                                      (email.lower(),), default=0) or 0)
        finally:
            db.close()

    def sent_to(self, userid):
        db = self.connect()
        try:
            return int(db.query_value(
                "SELECT COUNT(*) FROM result r JOIN workunit w ON w.id = r.workunitid "
                "WHERE w.batch = %s AND r.userid = %s AND r.server_state IN (%s, %s)",
                (self.batch, userid, int(ServerState.IN_PROGRESS), int(ServerState.OVER))))
        finally:
            db.close()

    def unsent(self):
        """Replicas of this batch waiting to be sent."""
        db = self.connect()
        try:
            return int(db.query_value(
                "SELECT COUNT(*) FROM result r JOIN workunit w ON w.id = r.workunitid "
                "WHERE w.batch = %s AND r.server_state = %s",
                (self.batch, int(ServerState.UNSENT))))
        finally:
            db.close()

    def counts(self, db=None):
        """Counts of this batch's jobs (see Counts)."""
        own = db is None
        db = db or self.connect()
        try:
            wus = db.query("SELECT id, canonical_resultid, assimilate_state, error_mask, "
                           "file_delete_state FROM workunit WHERE batch = %s", (self.batch,))
            results = db.query(
                "SELECT r.workunitid, r.server_state, r.file_delete_state FROM result r "
                "JOIN workunit w ON w.id = r.workunitid WHERE w.batch = %s", (self.batch,))
        finally:
            if own:
                db.close()
        per_wu = {}
        for r in results:
            per_wu.setdefault(r["workunitid"], []).append(r)
        c = Counts(total=len(wus))
        for wu in wus:
            rs = per_wu.get(wu["id"], [])
            sent = [r for r in rs if r["server_state"] in (ServerState.IN_PROGRESS,
                                                           ServerState.OVER)]
            if wu["assimilate_state"] == AssimilateState.DONE:
                if wu["error_mask"] or not wu["canonical_resultid"]:
                    c.failed += 1
                else:
                    c.assimilated += 1
            elif wu["canonical_resultid"]:
                c.validated += 1
            elif sent:
                c.in_progress += 1
            else:
                c.unsent += 1
            if len(rs) >= self.s.min_quorum and all(
                    r["server_state"] == ServerState.OVER for r in rs):
                c.reported += 1
            if (wu["assimilate_state"] == AssimilateState.DONE
                    and wu["file_delete_state"] == FileDeleteState.DONE
                    and all(r["file_delete_state"] == FileDeleteState.DONE for r in rs)):
                c.deleted += 1
        return c

    def finished(self, c):
        """How many jobs reached the state the run waits for."""
        if self.s.until == "reported":
            return c.reported
        if self.s.until == "deleted":
            return c.deleted
        return c.assimilated + c.failed

    def wait_for_jobs(self):
        """Show progress until every job of the batch is finished (Settings.until);
        DemoError after the timeout.  Returns the last Counts."""
        deadline = time.monotonic() + self.s.timeout
        last_line = None
        bar = None
        if self.tty:
            bar = click.progressbar(length=self.s.njobs, label=self.counts().line(),
                                    file=self.out, show_pos=True, width=30)
            bar.__enter__()
        try:
            shown = 0
            while True:
                c = self.counts()
                done = self.finished(c)
                if bar is not None:
                    bar.label = c.line()
                    bar.update(done - shown)
                    shown = done
                elif c.line() != last_line:
                    last_line = c.line()
                    self.say(last_line)
                if done >= c.total:
                    return c
                for v in self.volunteers:
                    if not v.client.running():
                        raise DemoError("the client of volunteer %d exited%s"
                                        % (v.number, v.client.log_tail()))
                now = time.monotonic()
                if now > deadline:
                    raise DemoError("timed out after %ds waiting for the jobs (%s); see the "
                                    "logs in %s and the clients' client.log"
                                    % (self.s.timeout, c.line(), self.cfg.host_log_dir))
                if self.unsent():
                    self.poke_idle()
                time.sleep(1)
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)

    def summary(self):
        """The Summary of this batch, read from the database and sample_results/."""
        db = self.connect()
        try:
            c = self.counts(db)
            rows = db.query(
                "SELECT r.validate_state, r.outcome, COUNT(*) AS n FROM result r JOIN "
                "workunit w ON w.id = r.workunitid WHERE w.batch = %s GROUP BY "
                "r.validate_state, r.outcome", (self.batch,))
            users = []
            for v in self.volunteers:
                u = db.query_one("SELECT id, name, email_addr, total_credit, expavg_credit "
                                 "FROM user WHERE id = %s", (v.userid,))
                if u is None:
                    continue
                u = dict(u, wrong=v.wrong, hosts=[])
                for h in db.query("SELECT id, domain_name, total_credit, expavg_credit "
                                  "FROM host WHERE userid = %s ORDER BY id", (u["id"],)):
                    h = dict(h)
                    for key, state in (("valid", ValidateState.VALID),
                                       ("invalid", ValidateState.INVALID)):
                        h[key] = int(db.query_value(
                            "SELECT COUNT(*) FROM result r JOIN workunit w ON "
                            "w.id = r.workunitid WHERE w.batch = %s AND r.hostid = %s AND "
                            "r.validate_state = %s", (self.batch, h["id"], int(state))))
                    u["hosts"].append(h)
                users.append(u)
        finally:
            db.close()
        valid = sum(r["n"] for r in rows if r["validate_state"] == ValidateState.VALID)
        invalid = sum(r["n"] for r in rows if r["validate_state"] == ValidateState.INVALID)
        total = sum(r["n"] for r in rows)
        outputs_dir = os.path.join(self.root, "sample_results")
        prefix = job_name(self.batch, "")
        try:
            outputs = sorted(n for n in os.listdir(outputs_dir) if n.startswith(prefix))
        except OSError:
            outputs = []
        return Summary(
            project_root=self.root, batch=self.batch, njobs=c.total, min_quorum=self.s.min_quorum,
            done=c.assimilated, failed=c.failed, valid=valid, invalid=invalid,
            other=total - valid - invalid, users=users, outputs_dir=outputs_dir,
            outputs=outputs, master_url=self.cfg.master_url,
            ops_url=self.secrets.get("ops_url", "(unknown)"),
            ops_user=OPS_USER, ops_passwd=self.secrets.get("ops_passwd", "(unknown)"),
            stop_commands=["cd %s && bin/stop" % self.root,
                           " ".join(self.httpd_command("stop"))])

    # -- teardown ---------------------------------------------------------------------

    def teardown(self):
        """Stop clients, daemons and Apache; drop the database and its user;
        remove the project directory.  Each step runs even if one before failed;
        returns the problems met."""
        problems = []
        self.say("Tearing down %s" % self.root)
        try:
            self.stop_volunteers(failed=self.failed)
            stop_leftover_clients(self.s.clients_dir)
        except Exception as exc:        # keep tearing down
            problems.append("clients: %s" % exc)
        if not os.path.exists(os.path.join(self.root, "config.xml")):
            return problems
        try:
            cfg = self.cfg or load_config(self.root)
        except BoincpyError as exc:
            return problems + ["config.xml: %s" % exc.message]
        try:
            self.run_tool([self.bin("stop")], cwd=self.root)
        except DemoError as exc:
            problems.append(exc.message)
        try:
            if PrivateApache(self.root).running():
                self.run_tool(self.httpd_command("stop"), what="Apache stop")
        except BoincpyError as exc:
            problems.append(exc.message)
        try:
            drop_database(self.s, cfg.db_name, cfg.db_user)
            self.say("Dropped database %s and database user %s" % (cfg.db_name, cfg.db_user))
        except Exception as exc:
            problems.append("database: %s" % exc)
        shutil.rmtree(self.root, ignore_errors=True)
        if os.path.exists(self.root):
            problems.append("could not remove %s" % self.root)
        else:
            self.say("Removed %s" % self.root)
        return problems

    def save_evidence(self):
        """Copy the logs (daemons, scheduler, Apache, clients) to a new directory
        under /tmp and return its path: what to read after a failed run."""
        dest = tempfile.mkdtemp(prefix="boincpy-demo-logs-")
        sources = []
        if self.cfg is not None:
            sources.append(("project_logs", self.cfg.host_log_dir))
        sources.append(("httpd", os.path.join(self.root, "httpd")))
        for v in self.volunteers:
            sources.append(("host%d" % v.number, v.client.data_dir))
        for name, src in sources:
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(dest, name), symlinks=True,
                                ignore=shutil.ignore_patterns("slots", "*.so*", "lockfile"),
                                ignore_dangling_symlinks=True, dirs_exist_ok=True)
        return dest

    # -- all of it --------------------------------------------------------------------

    def run(self):
        """Every step; returns the Summary.  On failure the logs are copied
        (path printed) and, with teardown, everything is removed anyway."""
        summary = None
        if self.s.teardown and not self.s.njobs:
            if not os.path.exists(os.path.join(self.root, "config.xml")):
                self.say("No project in %s: nothing to tear down" % self.root)
                return None
            for p in self.teardown():
                self.say("teardown: %s" % p)
            return None
        try:
            self.make_project()
            self.start_apache()
            self.install_app()
            self.configure_daemons()
            self.start_project()
            self.create_jobs()
            if self.s.njobs:
                self.make_volunteers()
                self.start_volunteers()
                self.wait_for_jobs()
                self.settle_clients()
            self.stop_volunteers()
            summary = self.summary()
            self.say("")
            self.say(format_summary(summary, self.s.teardown))
        except BaseException:
            self.failed = True
            try:
                self.say("The demo failed; logs copied to %s" % self.save_evidence())
            except Exception as exc:
                self.say("(could not copy the logs: %s)" % exc)
            if not self.s.teardown:
                self.stop_volunteers(failed=True)
            raise
        finally:
            if self.s.teardown:
                problems = self.teardown()
                for p in problems:
                    self.say("teardown: %s" % p)
        return summary


# ---------------------------------------------------------------------------
# Pieces shared with the tests

def default_project_root():
    """~/projects/boincpy_demo, unless the web server's user can't enter the home
    directory (root's is 0700): then /srv/boincpy/boincpy_demo."""
    home = os.path.expanduser("~")
    if unreachable_dir(os.path.join(home, "projects")) is None:
        return os.path.join(home, "projects", "boincpy_demo")
    return os.path.join("/srv", "boincpy", "boincpy_demo")


def unreachable_dir(path, user="www-data"):
    """The first existing ancestor of ``path`` that ``user`` (Apache's children)
    can't enter, or None."""
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        return None
    groups = {pw.pw_gid} | {g.gr_gid for g in grp.getgrall() if user in g.gr_mem}
    path = os.path.abspath(path)
    parts = [path]
    while os.path.dirname(parts[-1]) != parts[-1]:
        parts.append(os.path.dirname(parts[-1]))
    for d in reversed(parts):
        try:
            st = os.stat(d)
        except FileNotFoundError:
            return None
        if st.st_uid == pw.pw_uid:
            ok = st.st_mode & 0o100
        elif st.st_gid in groups:
            ok = st.st_mode & 0o010
        else:
            ok = st.st_mode & 0o001
        if not ok:
            return d
    return None


def job_name(batch, i):
    """Name of job ``i`` of demo batch ``batch`` (also its input file's stem)."""
    return "demo_%s_%s" % (batch, i)


def job_input(batch, i):
    """Input of a job: lower-case text, so the right output (upper case) differs
    from the wrong one (lower case); 76 bytes to 12 kB (every fifth job's output
    is past 8 kB, where the client asks the data server for the size of a
    partial upload first)."""
    line = "boincpy demo, batch %d, job %d: the quick brown fox jumps over the lazy dog\n" % (
        batch, i)
    return line * (1 + (i % 5) * 40)


def expected_output(batch, i):
    """What the example app writes for that input."""
    return job_input(batch, i).upper()


def version_xml():
    """version.xml of the example app: main program, API version."""
    return ("<version>\n    <file>\n        <physical_name>%s</physical_name>\n"
            "        <main_program/>\n    </file>\n    <api_version>%s</api_version>\n"
            "</version>\n" % (APP_FILE, API_VERSION))


def wrong_app_info():
    """app_info.xml of the wrong host: the same program, run with --wrong."""
    return """<app_info>
    <app>
        <name>{app}</name>
    </app>
    <file_info>
        <name>{file}</name>
        <executable/>
    </file_info>
    <app_version>
        <app_name>{app}</app_name>
        <version_num>{num}</version_num>
        <api_version>{api}</api_version>
        <cmdline>--wrong</cmdline>
        <file_ref>
            <file_name>{file}</file_name>
            <main_program/>
        </file_ref>
    </app_version>
</app_info>
""".format(app=APP, file=WRONG_APP_FILE, num=int(float(APP_VERSION) * 100), api=API_VERSION)


def build_example_app(target, demo=None):
    """make examples/example_app with TARGET=target (nothing written in the source tree)."""
    argv = ["make", "-s", "-C", os.path.join(REPO_ROOT, "examples", "example_app"),
            "TARGET=" + target]
    if demo is not None:
        return demo.run_tool(argv, what="building the example app (needs g++ and "
                                        "libboinc-app-dev)")
    subprocess.run(argv, check=True)
    return target


def rewrite_config(cfg, options=None, daemons=None):
    """Rewrite config.xml with ``options`` changed and/or ``daemons`` replaced,
    keeping its mode and group (the web server's group reads it)."""
    opts = cfg.as_options()
    opts.update(options or {})
    st = os.stat(cfg.path)
    write_config(cfg.path, opts, cfg.daemons if daemons is None else daemons, cfg.tasks,
                 mode=st.st_mode & 0o7777)
    try:
        os.chown(cfg.path, st.st_uid, st.st_gid)
    except PermissionError:
        os.chown(cfg.path, -1, st.st_gid)


def stop_leftover_clients(clients_dir, timeout=20):
    """Stop clients a killed demo left running with their data directory in
    ``clients_dir`` (SIGTERM: the client exits cleanly; SIGKILL after
    ``timeout``).  Returns their pids."""
    clients_dir = os.path.abspath(clients_dir) + os.sep
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        for i, word in enumerate(cmd[:-1]):
            if word == "--dir" and os.path.abspath(cmd[i + 1]).startswith(clients_dir) \
                    and os.path.basename(cmd[0]) == "boinc":
                found.append(proc)
                break
    for proc in found:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    gone, alive = psutil.wait_procs(found, timeout=timeout)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    return [p.pid for p in found]


def drop_database(settings, db_name, db_user):
    """Drop the demo's database and its database user (both hosts make_project grants)."""
    conn = open_server(server_params(settings.db_host, settings.db_socket, settings.db_root_user,
                                     settings.db_root_passwd), settings.db_root_user)
    try:
        cur = conn.cursor()
        cur.execute("DROP DATABASE IF EXISTS `%s`" % db_name.replace("`", ""))
        for host in ("localhost", "127.0.0.1"):
            cur.execute("DROP USER IF EXISTS %s@%s", (db_user, host))
    finally:
        conn.close()


def _quote(arg):
    return arg if re.match(r"^[\w@%+=:,./-]+$", arg) else "'%s'" % arg.replace("'", "'\\''")


def format_summary(s, teardown=False):
    """The demo's closing text."""
    lines = ["Summary of batch %d (%d jobs, min_quorum %d):" % (s.batch, s.njobs, s.min_quorum),
             "  jobs done: %d of %d (validated and assimilated), %d failed"
             % (s.done, s.njobs, s.failed),
             "  results: %d valid, %d invalid, %d other" % (s.valid, s.invalid, s.other),
             "  credit granted:"]
    for u in s.users:
        lines.append("    %s <%s> (user %d): total %.4g, recent average %.4g"
                     % (u["name"], u["email_addr"], u["id"], u["total_credit"],
                        u["expavg_credit"]))
        for h in u["hosts"]:
            lines.append("      host %d: total %.4g, recent average %.4g; this batch: %d valid,"
                         " %d invalid" % (h["id"], h["total_credit"], h["expavg_credit"],
                                         h["valid"], h["invalid"]))
    lines.append("  outputs: %s (%d files of this batch%s)" % (
        s.outputs_dir, len(s.outputs), ", e.g. %s" % s.outputs[0] if s.outputs else ""))
    lines.append("  master URL: %s" % s.master_url)
    lines.append("  ops pages: %s (user %s, password %s)" % (s.ops_url, s.ops_user,
                                                              s.ops_passwd))
    if teardown:
        lines.append("  (--teardown: the project is removed now)")
    else:
        lines.append("  the project keeps running; to stop it:")
        lines += ["      %s" % c for c in s.stop_commands]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Command line

@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--project_root", default=default_project_root,
              show_default="~/projects/boincpy_demo, or /srv/boincpy/boincpy_demo when "
                           "the web server's user can't enter ~",
              help="Where the demo project lives (reused if it exists).")
@click.option("--jobs", "njobs", default=20, show_default=True, type=int,
              help="Jobs to create in this run (0: none, e.g. with --teardown).")
@click.option("--min_quorum", default=2, show_default=True, type=int,
              help="Replicas per job that must agree (that many volunteers run).")
@click.option("--port", default=0, type=int,
              help="Loopback port of the project's URLs (first run; default: a free one).")
@click.option("--wrong_host", is_flag=True,
              help="Add a volunteer whose app writes wrong output (anonymous platform).")
@click.option("--teardown", is_flag=True,
              help="Afterwards stop everything and remove the project and its database.")
@click.option("--timeout", default=900, show_default=True, type=float,
              help="Seconds to wait for the jobs.")
@click.option("--db_root_user", default="root", show_default=True,
              help="Database account that creates (and drops) the database.")
@click.option("--db_root_passwd", default="", help="Its password (default: socket login).")
@click.option("--db_host", default="", help="Database server host[:port] (default: the "
                                           "local socket).")
@click.option("--db_socket", default="", help="Database server's Unix socket.")
@click.option("-v", "--verbose", is_flag=True, help="Show the tools' output.")
def main(project_root, njobs, min_quorum, port, wrong_host, teardown, timeout, db_root_user,
         db_root_passwd, db_host, db_socket, verbose):
    """Run a BOINC project on this machine end to end: make_project, Apache,
    the example app, validator and assimilator, jobs, and stock BOINC clients
    as volunteers; then print a summary."""
    try:
        settings = Settings(project_root=project_root, njobs=njobs, min_quorum=min_quorum,
                            port=port, wrong_host=wrong_host, teardown=teardown,
                            timeout=timeout, db_root_user=db_root_user,
                            db_root_passwd=db_root_passwd, db_host=db_host,
                            db_socket=db_socket, verbose=verbose)
        Demo(settings).run()
    except BoincpyError as exc:
        raise click.ClickException(exc.message) from None
    except KeyboardInterrupt:
        raise click.Abort() from None


if __name__ == "__main__":
    main()
