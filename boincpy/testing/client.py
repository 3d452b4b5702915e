"""Drive a stock BOINC client (Debian boinc-client 7.x) from tests and demos.

A :class:`StockClient` runs ``boinc`` headless in its own data directory on
a free loopback GUI RPC port with a random GUI password, and talks to it
with ``boinccmd``::

    with StockClient() as client:                 # started, stopped, cleaned up
        cfg = client.get_project_config(url)      # {'name': ..., 'min_passwd_length': 6}
        auth = client.create_account(url, "me@example.org", "pw", "Me").authenticator
        client.project_attach(url, auth)
        client.wait_for_log(r"Scheduler request completed", timeout=60)
        hostid = client.wait_for(lambda: client.hostid(url), 60, "a host id")

What it takes care of (see shared/reference/stock-client.md):

* the port is free when chosen, and the client is checked to be the process
  listening on it (boinccmd would otherwise talk to whatever holds it);
* proxies are removed from the environment (loopback traffic must not leave);
* cc_config.xml / global_prefs_override.xml suited to a busy test machine
  (no benchmarks, no GPUs, no project-list fetches, work never suspended),
  and short retry back-offs;
* every wait has a timeout, and a failure message carries the tail of the
  client's event log;
* the data directory is removed on success and kept (its path printed) on
  failure, with ``client.log`` (the event log) in it.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from boincpy.errors import BoincpyError
from boincpy.xml import tree

DEFAULT_LOG_FLAGS = ("task", "file_xfer", "sched_ops", "sched_op_debug", "task_debug",
                     "file_xfer_debug", "unparsed_xml")
DEFAULT_OPTIONS = {"skip_cpu_benchmarks": 1, "no_info_fetch": 1, "no_gpus": 1,
                   "report_results_immediately": 1, "no_priority_change": 1}
DEFAULT_PREFS = {"run_if_user_active": 1, "idle_time_to_run": 0, "suspend_cpu_usage": 0,
                 "cpu_usage_limit": 100, "max_ncpus_pct": 100, "work_buf_min_days": 0.01,
                 "work_buf_additional_days": 0}
DEFAULT_ARGS = ("--sched_retry_delay_min", "1", "--sched_retry_delay_max", "10",
                "--pers_retry_delay_min", "1", "--pers_retry_delay_max", "10")
_PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
               "ALL_PROXY", "ftp_proxy", "FTP_PROXY")


class ClientError(BoincpyError, RuntimeError):
    """The client or boinccmd failed; the message includes the log's tail."""


@dataclass
class AccountReply:
    """What boinccmd printed for --create_account / --lookup_account.

    ``authenticator`` is set on success; ``error`` is the client's text for
    the BOINC error (e.g. "bad password") otherwise.
    """

    authenticator: str = ""
    error: str = ""
    output: str = ""


def free_port(host="127.0.0.1"):
    """A TCP port nobody listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def canonical_url(url):
    """The master URL as the client stores it: with a trailing slash."""
    return url if url.endswith("/") else url + "/"


def project_dir_name(url):
    """The client's name for a project's files: the master URL without its
    scheme, every character but letters, digits and ``.-_`` turned into
    ``_``, a trailing ``_`` dropped (``http://127.0.0.1:8080/proj/`` ->
    ``127.0.0.1_8080_proj``): ``projects/NAME/`` and ``account_NAME.xml``."""
    url = canonical_url(url)
    url = url.split("://", 1)[1] if "://" in url else url
    name = re.sub(r"[^A-Za-z0-9._-]", "_", url)
    return name[:-1] if name.endswith("_") else name


def _xml_block(root, values):
    lines = ["<%s>" % root]
    for name, value in values.items():
        lines.append("    <%s>%s</%s>" % (name, value, name))
    lines.append("</%s>" % root)
    return "\n".join(lines) + "\n"


class StockClient:
    """One stock client process in a throwaway data directory (see module doc)."""

    def __init__(self, data_dir=None, *, port=None, gui_password=None, boinc="boinc",
                 boinccmd="boinccmd", log_flags=DEFAULT_LOG_FLAGS, options=None, prefs=None,
                 extra_args=(), keep=False):
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="boincpy-client-")
        os.makedirs(self.data_dir, exist_ok=True)
        self.port = port
        self._fixed_port = port is not None
        self.gui_password = gui_password or os.urandom(12).hex()
        self.boinc = boinc
        self.boinccmd_path = boinccmd
        self.log_flags = log_flags
        self.options = dict(DEFAULT_OPTIONS, **(options or {}))
        self.prefs = dict(DEFAULT_PREFS, **(prefs or {}))
        self.extra_args = tuple(extra_args)
        self.keep = keep
        self.process = None
        self.log_path = os.path.join(self.data_dir, "client.log")
        self._log_file = None

    # -- life cycle -----------------------------------------------------------

    def write_config_files(self):
        """gui_rpc_auth.cfg, cc_config.xml and global_prefs_override.xml."""
        with open(os.path.join(self.data_dir, "gui_rpc_auth.cfg"), "w") as f:
            f.write(self.gui_password)
        flags = "".join("<%s>1</%s>" % (flag, flag) for flag in self.log_flags)
        options = "".join("<%s>%s</%s>" % (k, v, k) for k, v in self.options.items())
        with open(os.path.join(self.data_dir, "cc_config.xml"), "w") as f:
            f.write("<cc_config>\n  <log_flags>%s</log_flags>\n  <options>%s</options>\n"
                    "</cc_config>\n" % (flags, options))
        with open(os.path.join(self.data_dir, "global_prefs_override.xml"), "w") as f:
            f.write(_xml_block("global_preferences", self.prefs))

    def environment(self):
        """The client's environment: ours without proxies."""
        env = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS}
        env["no_proxy"] = env["NO_PROXY"] = "127.0.0.1,localhost"
        return env

    def start(self, timeout=30, attach=None):
        """Start the client; return when boinccmd gets answers from it.

        ``attach=(url, authenticator)`` attaches at start-up (--attach_project),
        which fetches the master page sooner than a later project_attach.
        """
        if self.running():
            raise ClientError("client already started")
        self.write_config_files()
        if self.port is None or (self.process is not None and not self._fixed_port):
            self.port = free_port()     # a restart: the old port may still be held
        args = [self.boinc, "--dir", self.data_dir, "--gui_rpc_port", str(self.port)]
        args += list(DEFAULT_ARGS) + list(self.extra_args)
        if attach:
            args += ["--attach_project", attach[0], attach[1]]
        self._log_file = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(
                args, cwd=self.data_dir, stdin=subprocess.DEVNULL, stdout=self._log_file,
                stderr=subprocess.STDOUT, env=self.environment(), start_new_session=True)
        except OSError as exc:
            raise ClientError("cannot run %s: %s (Debian: apt-get install boinc-client)"
                              % (self.boinc, exc)) from None
        self.wait_for(self._listening, timeout, "the client listening on 127.0.0.1:%d"
                      % self.port)
        self.wait_for(lambda: self.boinccmd("--get_cc_status", check=False).returncode == 0,
                      timeout, "the client answering boinccmd")
        return self

    def _listening(self):
        if self.process.poll() is not None:
            raise ClientError("the client exited with status %s during start-up%s"
                              % (self.process.returncode, self.log_tail()))
        import psutil
        try:
            conns = psutil.Process(self.process.pid).net_connections(kind="tcp")
        except AttributeError:       # psutil < 6
            conns = psutil.Process(self.process.pid).connections(kind="tcp")
        except psutil.Error:
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr[1] == self.port
                   for c in conns)

    def running(self):
        """True while the client process is alive."""
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout=30):
        """Quit the client (boinccmd --quit, then SIGTERM, then SIGKILL); return its status."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                self.boinccmd("--quit", check=False, timeout=15)
            except ClientError:
                pass            # a hung client: the signals below end it
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    proc.wait(10)
        # the client's apps run in its session: none may outlive it
        self._signal(signal.SIGKILL)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return proc.returncode

    def _signal(self, sig):
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self, failed=False):
        """Stop the client; remove the data directory unless ``failed`` or ``keep``
        (its path is printed on stderr when a failure keeps it)."""
        try:
            self.stop()
        finally:
            if failed:
                sys.stderr.write("stock client data directory kept: %s (event log: %s)\n"
                                 % (self.data_dir, self.log_path))
            elif not self.keep:
                shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self):
        return self.start() if self.process is None else self

    def __exit__(self, exc_type, exc, tb):
        self.close(failed=exc_type is not None)
        return False

    # -- boinccmd ---------------------------------------------------------------

    def boinccmd(self, *args, check=True, timeout=60):
        """Run ``boinccmd --host 127.0.0.1:PORT --passwd PW ARGS``; the CompletedProcess.

        ``check``: raise ClientError on a non-zero exit.
        """
        cmd = [self.boinccmd_path, "--host", "127.0.0.1:%d" % self.port,
               "--passwd", self.gui_password] + [str(a) for a in args]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=self.environment(), cwd=self.data_dir)
        except subprocess.TimeoutExpired:
            raise ClientError("boinccmd %s: no answer within %ds%s"
                              % (" ".join(map(str, args)), timeout, self.log_tail())) from None
        if check and done.returncode != 0:
            raise ClientError("boinccmd %s exited with %d: %s%s" % (
                " ".join(map(str, args)), done.returncode,
                (done.stdout + done.stderr).strip(), self.log_tail()))
        return done

    def get_project_config(self, url, timeout=60):
        """--get_project_config URL -> {'name', 'min_passwd_length', 'uses_username'}
        or {'error': text} (boinccmd prints only these fields)."""
        out = self.boinccmd("--get_project_config", url, timeout=timeout).stdout
        fields = dict(re.findall(r"^(\w+): (.*)$", out, re.M))
        status = re.findall(r"^poll status: (.*)$", out, re.M)
        if status and status[-1] != "operation in progress":
            return {"error": status[-1], "output": out}
        if "min_passwd_length" in fields:
            fields["min_passwd_length"] = int(fields["min_passwd_length"])
        fields["output"] = out
        return fields

    def _account(self, args, timeout):
        out = self.boinccmd(*args, timeout=timeout).stdout
        key = re.search(r"^account key: (\S+)", out, re.M)
        if key:
            return AccountReply(authenticator=key.group(1), output=out)
        status = [s for s in re.findall(r"^poll status: (.*)$", out, re.M)
                  if s != "operation in progress"]
        lookup = re.search(r"^error in account lookup: (.*)$", out, re.M)
        error = (status[-1] if status else lookup.group(1) if lookup else out.strip())
        return AccountReply(error=error, output=out)

    def create_account(self, url, email, password, user_name, timeout=60):
        """--create_account URL EMAIL PASSWORD NAME -> AccountReply."""
        return self._account(("--create_account", url, email, password, user_name), timeout)

    def lookup_account(self, url, email, password, timeout=60):
        """--lookup_account URL EMAIL PASSWORD -> AccountReply."""
        return self._account(("--lookup_account", url, email, password), timeout)

    def write_account_file(self, url, authenticator):
        """Attach before the first start, as an installer does: the client reads
        ``account_NAME.xml`` (master URL and authenticator) at start-up, then
        fetches the master page and asks the scheduler."""
        path = os.path.join(self.data_dir, "account_%s.xml" % project_dir_name(url))
        with open(path, "w") as f:
            f.write("<account>\n    <master_url>%s</master_url>\n"
                    "    <authenticator>%s</authenticator>\n</account>\n"
                    % (canonical_url(url), authenticator))
        return path

    def install_anonymous_platform(self, url, app_info, files=()):
        """Run the project's apps from this host's own files (BOINC's anonymous
        platform): ``projects/NAME/app_info.xml`` holding ``app_info`` and the
        ``files`` (paths, copied in, executable).  The client reads app_info.xml
        only at start-up and only for projects it is attached to then, so call
        this with write_account_file() before start()."""
        project_dir = os.path.join(self.data_dir, "projects", project_dir_name(url))
        os.makedirs(project_dir, exist_ok=True)
        for path in files:
            dest = os.path.join(project_dir, os.path.basename(path))
            shutil.copyfile(path, dest)
            os.chmod(dest, 0o755)
        with open(os.path.join(project_dir, "app_info.xml"), "w") as f:
            f.write(app_info)
        return project_dir

    def project_attach(self, url, authenticator):
        """--project_attach URL AUTH (the attach itself happens within ~5 s)."""
        self.boinccmd("--project_attach", url, authenticator)

    def project_op(self, url, op):
        """--project URL OP (update, detach, suspend, resume, nomorework, ...)."""
        self.boinccmd("--project", url, op)

    def project_status(self):
        """--get_project_status as a list of {field: value} dicts, one per project."""
        out = self.boinccmd("--get_project_status").stdout
        projects = []
        for block in re.split(r"^\d+\) -+$", out, flags=re.M)[1:]:
            projects.append(dict(re.findall(r"^\s+([^:\n]+): (.*)$", block, re.M)))
        return projects

    def tasks(self):
        """--get_tasks as a list of {field: value} dicts."""
        out = self.boinccmd("--get_tasks").stdout
        return [dict(re.findall(r"^\s+([^:\n]+): (.*)$", block, re.M))
                for block in re.split(r"^\d+\) -+$", out, flags=re.M)[1:]]

    # -- the client's files --------------------------------------------------------

    def _state(self):
        """client_state.xml as an lxml tree (None before the client wrote it)."""
        path = os.path.join(self.data_dir, "client_state.xml")
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        try:
            return tree.parse(data, recover=True, huge=True)
        except tree.XmlError:
            return None

    def state_projects(self):
        """Projects in client_state.xml: [{master_url, project_name, hostid, user_name,
        ...}] (every simple child element of <project>); [] before the first write."""
        root = self._state()
        return [] if root is None else [tree.leaves(p) for p in root.iter("project")]

    def host_info(self):
        """client_state.xml's <host_info> (host_cpid, p_ncpus, os_name, ...), or {}."""
        root = self._state()
        node = None if root is None else root.find("host_info")
        return {} if node is None else tree.leaves(node)

    def project_state(self, url):
        """client_state.xml's record of the project at ``url``, or None."""
        want = canonical_url(url).lower()
        for project in self.state_projects():
            if canonical_url(project.get("master_url", "")).lower() == want:
                return project
        return None

    def hostid(self, url):
        """The host id the project gave this client (0 before its first reply)."""
        project = self.project_state(url)
        return int(project.get("hostid") or 0) if project else 0

    def log_text(self):
        """The client's event log so far (its stdout)."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, lines=40):
        """The last lines of the event log, formatted for an error message."""
        text = self.log_text().splitlines()[-lines:]
        return ("\n--- last %d lines of %s ---\n%s" % (len(text), self.log_path, "\n".join(text))
                if text else "")

    # -- waiting ---------------------------------------------------------------------

    def wait_for(self, predicate, timeout, what="the condition", interval=0.25):
        """Call ``predicate`` until it returns a true value (returned); ClientError
        after ``timeout`` seconds or if the client died."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if self.process is not None and self.process.poll() is not None:
                value = predicate()
                if value:
                    return value
                raise ClientError("the client exited (status %s) while waiting for %s%s"
                                  % (self.process.returncode, what, self.log_tail()))
            if time.monotonic() > deadline:
                raise ClientError("timed out after %ss waiting for %s%s"
                                  % (timeout, what, self.log_tail()))
            time.sleep(interval)

    def wait_for_log(self, pattern, timeout, after=0):
        """Wait for a line of the event log matching ``pattern`` (searched from
        character offset ``after``); return the match."""
        regex = re.compile(pattern, re.M)
        return self.wait_for(lambda: regex.search(self.log_text(), after), timeout,
                             "a log line matching %r" % pattern)
