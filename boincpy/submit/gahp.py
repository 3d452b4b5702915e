"""A BOINC GAHP: HTCondor's gridmanager lends jobs to a BOINC project (Condor-B).

HTCondor runs this as ``boinc_gahp`` for jobs whose submit file says
``grid_resource = boinc <project URL>`` and talks to it over stdin/stdout
with the Grid ASCII Helper Protocol, BOINC flavour (BOINC's
samples/condor/boinc_gahp_protocol.txt, GAHP 1.0.2):

* a banner ``$GahpVersion: ... $``, then one request line at a time, each
  answered at once with one return line: ``S`` (done, or queued), ``E``
  (malformed or unknown), ``F``;
* ``BOINC_*`` commands but BOINC_SELECT_PROJECT are asynchronous: they are
  queued (``S``), run in a thread of their own, and their result lines --
  ``<reqid> NULL ...`` on success, ``<reqid> <error message>`` otherwise --
  wait for ``RESULTS``; with ``ASYNC_MODE_ON`` an ``R`` line says results are
  waiting (once until the next RESULTS).  The request loop never waits for
  the project, so a stalled server stalls no command;
* arguments are separated by spaces; ``\\ `` is a space inside one,
  ``\\\\`` a backslash.  Error messages in result lines are escaped the same way.

The file logic of the design: BOINC_SUBMIT names each distinct input file by
its content (``<md5><.extension>``), asks the server which it lacks
(query_files, tied to the new batch) and uploads only those; BOINC_FETCH_OUTPUT
writes the job's output files under the directory the command names (a
single ``.zip`` output is unpacked there), appends its stderr to the named
file, and renames what the file specs say.  It works against any BOINC server
(boincpy's or the C++/PHP one): it uses :class:`boincpy.submit.client.SubmitClient`.

Where BOINC's C++ GAHP crashes (a command with too few arguments, a missing
file) this one answers ``E`` or an error result; names from the server that
would leave the output directory are refused.
"""

import os
import shutil
import sys
import threading
import time
import traceback
import zipfile

from boincpy.errors import BoincpyError, SubmitError
from boincpy.files import md5_file

GAHP_VERSION = "1.0.2"
VERSION_LINE = "$GahpVersion: %s Nov 26 2026 boincpy\\ GAHP $" % GAHP_VERSION
SYNC_COMMANDS = ("ASYNC_MODE_OFF", "ASYNC_MODE_ON", "BOINC_SELECT_PROJECT", "COMMANDS", "QUIT",
                 "RESPONSE_PREFIX", "RESULTS", "VERSION")
ASYNC_COMMANDS = ("BOINC_ABORT_JOBS", "BOINC_FETCH_OUTPUT", "BOINC_PING", "BOINC_QUERY_BATCHES",
                  "BOINC_RETIRE_BATCH", "BOINC_SET_LEASE", "BOINC_SUBMIT")
LEASE_SECONDS = 3600        # create_batch's expire time: now + an hour, as BOINC's GAHP


class Malformed(BoincpyError, ValueError):
    """A request line the protocol can't take: answered ``E``."""


def split_line(line):
    """A request line's arguments: space-separated, ``\\`` escaping the next character."""
    args, cur, escaped, started = [], [], False, False
    for ch in line:
        if escaped:
            cur.append(ch)
            escaped, started = False, True
        elif ch == "\\":
            escaped, started = True, True
        elif ch == " ":
            if started:
                args.append("".join(cur))
                cur, started = [], False
        else:
            cur.append(ch)
            started = True
    if escaped:
        cur.append("\\")
    if started:
        args.append("".join(cur))
    return args


def escape(text):
    """An argument as the protocol writes it: space, backslash, CR, LF escaped."""
    out = []
    for ch in str(text):
        if ch in " \\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        else:
            out.append(ch)
    return "".join(out)


def _failure(prefix, exc):
    """BOINC's GAHP's error result: "<what>\\ <num>\\ <message>" (escaped)."""
    num = getattr(exc, "num", None)
    if num is None:
        num = -1                    # no reply at all (BOINC: its HTTP layer's error)
    message = exc.error_msg if isinstance(exc, SubmitError) else str(exc)
    return escape("%s %d " % (prefix, num)) + escape(message)


class _Args:
    """A request line's arguments, read in order; Malformed when they run out."""

    def __init__(self, args):
        self.args = args
        self.i = 0

    def next(self):
        if self.i >= len(self.args):
            raise Malformed("too few arguments")
        self.i += 1
        return self.args[self.i - 1]

    def int(self, minimum=None):
        text = self.next()
        try:
            value = int(text)
        except ValueError:
            raise Malformed("not a number: %s" % text) from None
        if minimum is not None and value < minimum:
            raise Malformed("out of range: %s" % text)
        return value

    def float(self):
        text = self.next()
        try:
            value = float(text)
        except ValueError:
            raise Malformed("not a number: %s" % text) from None
        if value != value or value in (float("inf"), float("-inf")):
            raise Malformed("not a finite number: %s" % text)
        return value

    def left(self):
        return len(self.args) - self.i

    def done(self):
        if self.left():
            raise Malformed("too many arguments")


class Gahp:
    """One GAHP server over ``stdin``/``stdout`` (text streams).

    ``client_factory(url, authenticator)`` makes the submission client
    (:class:`SubmitClient` by default; tests may give a slower timeout)."""

    def __init__(self, stdin, stdout, client_factory=None, project_url="", authenticator="",
                 log=None):
        if client_factory is None:
            from boincpy.submit.client import SubmitClient
            client_factory = SubmitClient
        self.stdin = stdin
        self.stdout = stdout
        self.client_factory = client_factory
        self.project_url = project_url
        self.authenticator = authenticator
        self.log = log
        self.prefix = ""
        self.async_mode = False
        self.wrote_r = False
        self.results = []                   # result lines, in the order they were queued
        self.lock = threading.Lock()        # guards stdout, results and the flags
        self.threads = []

    # -- output ---------------------------------------------------------------

    def _write(self, line):
        self.stdout.write(self.prefix + line + "\n")
        self.stdout.flush()

    def say(self, line):
        with self.lock:
            self._write(line)

    def _queue(self, reqid, text):
        with self.lock:
            self.results.append("%d %s" % (reqid, text))
            if self.async_mode and not self.wrote_r:
                self._write("R")
                self.wrote_r = True

    # -- the loop -------------------------------------------------------------

    def run(self):
        """Print the banner, then serve request lines until QUIT or end of input."""
        self.say(VERSION_LINE)
        while True:
            line = self.stdin.readline()
            if not line:
                break
            line = line.rstrip("\n").rstrip("\r")
            if not self.handle(line):
                break
        return 0

    def handle(self, line):
        """Answer one request line; False after QUIT."""
        args = split_line(line)
        if not args:
            self.say("E")
            return True
        cmd = args[0].upper()
        if cmd == "QUIT":
            self.say("S")
            return False
        if cmd == "VERSION":
            self.say("S " + VERSION_LINE)
        elif cmd == "COMMANDS":
            self.say("S " + " ".join(sorted(SYNC_COMMANDS + ASYNC_COMMANDS)))
        elif cmd == "RESULTS":
            with self.lock:
                lines, self.results = self.results, []
                self._write("S %d" % len(lines))
                for r in lines:
                    self._write(r)
                self.wrote_r = False
        elif cmd in ("ASYNC_MODE_ON", "ASYNC_MODE_OFF"):
            with self.lock:
                self._write("S")
                self.async_mode = cmd == "ASYNC_MODE_ON"
        elif cmd == "RESPONSE_PREFIX":
            with self.lock:
                self._write("S")
                self.prefix = line.split(" ", 1)[1] if " " in line else ""
        elif cmd == "BOINC_SELECT_PROJECT":
            if len(args) != 3:
                self.say("E")
            else:
                self.project_url, self.authenticator = args[1], args[2]
                self.say("S")
        elif cmd in ASYNC_COMMANDS:
            self._start(cmd, args)
        else:
            self.say("E")
        return True

    def _start(self, cmd, args):
        a = _Args(args[1:])
        try:
            reqid = a.int(minimum=1)
            work = getattr(self, "parse_" + cmd.lower())(a)
        except Malformed:
            self.say("E")
            return
        if not self.project_url:
            self.say("E")               # no BOINC_SELECT_PROJECT yet
            return
        client = self.client_factory(self.project_url, self.authenticator)
        self.say("S")

        def job():
            try:
                text = work(client)
            except Exception as exc:        # never lose a request's answer
                if self.log:
                    self.log.write(traceback.format_exc())
                text = _failure("internal error:", exc)
            self._queue(reqid, text)
        t = threading.Thread(target=job, name="gahp-%d" % reqid, daemon=True)
        self.threads.append(t)
        t.start()

    # -- commands: parse the arguments, return the work to do -------------------

    def parse_boinc_ping(self, a):
        a.done()
        return _simple("ping_server returned", lambda client: client.ping())

    def parse_boinc_submit(self, a):
        batch_name, app_name = a.next(), a.next()
        jobs = []
        for _ in range(a.int(minimum=0)):
            name = a.next()
            argv = [a.next() for _ in range(a.int(minimum=0))]
            files = [(a.next(), a.next()) for _ in range(a.int(minimum=0))]
            jobs.append((name, argv, files))
        params = None
        if a.left():
            params = (a.float(), a.float(), a.float(), a.float(), a.float(), a.int())
        a.done()
        return lambda client: self.submit(client, batch_name, app_name, jobs, params)

    def parse_boinc_query_batches(self, a):
        min_mod_time = a.float()
        names = [a.next() for _ in range(a.int(minimum=0))]
        a.done()

        def work(client):
            try:
                reply = client.query_batch2(names, min_mod_time)
            except SubmitError as exc:
                return _failure("error querying batch:", exc)
            out = ["NULL", "%f" % reply.server_time]
            for name in names:
                jobs = reply.batches.get(name, [])
                out.append("%d" % len(jobs))
                for j in jobs:
                    out += [escape(j.name), escape(j.status)]
            return " ".join(out)
        return work

    def parse_boinc_fetch_output(self, a):
        job, directory, stderr_name = a.next(), a.next(), a.next()
        mode = a.next()
        if mode not in ("ALL", "SOME"):
            raise Malformed("mode must be ALL or SOME")
        specs = [(a.next(), a.next()) for _ in range(a.int(minimum=0))]
        a.done()
        return lambda client: self.fetch_output(client, job, directory, stderr_name,
                                                mode == "ALL", specs)

    def parse_boinc_abort_jobs(self, a):
        names = [a.next() for _ in range(a.left())]
        return _simple("abort_jobs() returned", lambda client: client.abort_jobs(names))

    def parse_boinc_retire_batch(self, a):
        name = a.next()
        a.done()
        return _simple("retire_batch() returned", lambda client: client.retire_batch(name))

    def parse_boinc_set_lease(self, a):
        name, lease = a.next(), a.float()
        a.done()
        return _simple("set_lease() returned",
                       lambda client: client.set_expire_time(name, lease))

    # -- the two that move files ----------------------------------------------------

    def submit(self, client, batch_name, app_name, jobs, params):
        """BOINC_SUBMIT: templates (the app must exist and the user may submit
        to it), an empty batch, the input files by content, then the jobs."""
        from boincpy.submit.client import BatchDesc, FileDesc, JobDesc, JobParams
        try:
            client.get_templates(app_name=app_name)
        except SubmitError as exc:
            return _failure("error getting templates:", exc)
        try:
            batch_id = client.create_batch(app_name, batch_name,
                                           int(time.time()) + LEASE_SECONDS)
        except SubmitError as exc:
            return _failure("error creating batch:", exc)
        try:
            names = {}
            for path in sorted({src for _, _, files in jobs for src, _ in files}):
                md5, _ = md5_file(path)
                names[path] = md5 + _extension(path)
            paths = sorted(names)
            client.upload_files(paths, [names[p] for p in paths], batch_id)
        except (SubmitError, OSError) as exc:
            return _failure("error processing input files:", exc)
        desc = BatchDesc(app_name=app_name, batch_id=batch_id, jobs=[
            JobDesc(name=name, command_line="".join(arg + " " for arg in argv) or None,
                    files=[FileDesc.staged(names[src]) for src, _ in files])
            for name, argv, files in jobs])
        if params is not None:
            est, bound, memory, disk, delay, version = params
            desc.job_params = JobParams(rsc_disk_bound=disk, rsc_fpops_est=est,
                                        rsc_fpops_bound=bound, rsc_memory_bound=memory,
                                        delay_bound=delay)
            desc.app_version_num = version
        try:
            client.submit_batch(desc)
        except SubmitError as exc:
            return _failure("error submitting jobs:", exc)
        return "NULL"

    def fetch_output(self, client, job, directory, stderr_name, fetch_all, specs):
        """BOINC_FETCH_OUTPUT: exit status and times, stderr appended to its
        file, the output files (all, or those the specs name) into
        ``directory``, then each spec's rename."""
        try:
            templates = client.get_templates(job_name=job)
        except SubmitError as exc:
            return _failure("error getting templates:", exc)
        outputs = templates.output_open_names
        for name in outputs:
            if not _plain_name(name):
                return escape("bad output file name from the server: %s" % name)
        try:
            done = client.query_completed_job(job)
        except SubmitError as exc:
            return _failure("query_completed_job() returned", exc)
        result = "NULL %d %f %f" % (done.exit_status, done.elapsed_time, done.cpu_time)
        try:
            if done.canonical_resultid or done.error_resultid:
                path = stderr_name if os.path.isabs(stderr_name) else os.path.join(
                    directory, stderr_name)
                with open(path, "a", encoding="utf-8", errors="replace") as f:
                    f.write(done.stderr_out)
        except OSError as exc:
            return escape("can't open stderr output file %s: %s" % (stderr_name, exc.strerror))
        try:
            if len(outputs) == 1 and outputs[0].endswith(".zip"):
                archive = os.path.join(directory, "%s_output.zip" % job)
                client.download(client.workunit_file_url(job, 0), archive)
                _unzip(archive, directory)
                os.unlink(archive)
            elif fetch_all:
                for i, name in enumerate(outputs):
                    client.download(client.workunit_file_url(job, i),
                                    os.path.join(directory, name))
            else:
                for i, (src, _) in enumerate(specs):
                    if not _plain_name(src):
                        return escape("bad output file name %s" % src)
                    index = outputs.index(src) if src in outputs else i
                    if index >= len(outputs):
                        return escape("too many output files specified submit:%d template:%d"
                                      % (i, len(outputs)))
                    client.download(client.workunit_file_url(job, index),
                                    os.path.join(directory, src))
        except SubmitError as exc:
            return _failure("get_output_file() returned", exc)
        except (OSError, zipfile.BadZipFile) as exc:
            return escape("can't write the output files: %s" % exc)
        for src, dst in specs:
            if src == dst:
                continue
            target = dst if os.path.isabs(dst) else os.path.join(directory, dst)
            try:
                shutil.move(os.path.join(directory, src), target)
            except OSError:
                return escape("mv failed")
        return result


def _simple(prefix, call):
    """The work of a command that only calls the project: NULL, or the error
    prefixed as BOINC's GAHP words it."""
    def work(client):
        try:
            call(client)
        except SubmitError as exc:
            return _failure(prefix, exc)
        return "NULL"
    return work


def _extension(path):
    """The file name's extension with its dot ("" if none), as BOINC's GAHP names files."""
    base = os.path.basename(path)
    dot = base.rfind(".")
    return base[dot:] if dot >= 0 else ""


def _plain_name(name):
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


def _unzip(archive, directory):
    """Unpack a job's output archive; members that would leave ``directory`` are refused."""
    root = os.path.realpath(directory)
    with zipfile.ZipFile(archive) as z:
        for member in z.infolist():
            target = os.path.realpath(os.path.join(root, member.filename))
            if target != root and not target.startswith(root + os.sep):
                raise OSError("archive member %s would leave %s" % (member.filename, directory))
        z.extractall(root)


def read_config_txt(path="config.txt"):
    """BOINC's GAHP reads the project URL and authenticator from ./config.txt
    (two lines), if present: (url, authenticator), "" where absent."""
    try:
        with open(path) as f:
            lines = [ln.strip() for ln in f.readlines()[:2]]
    except OSError:
        return "", ""
    lines += ["", ""]
    return lines[0], lines[1]


def main(argv=None):
    """Entry point of bin/boinc_gahp: serve stdin/stdout."""
    import click
    from boincpy.cli import boinc_option, click_main

    @click.command(help="BOINC GAHP server for HTCondor (Condor-B): the Grid ASCII Helper "
                   "Protocol on stdin/stdout, jobs sent to a BOINC project's remote job "
                   "submission RPCs.", context_settings={"help_option_names": ["-h", "--help"]})
    @boinc_option("project_url", default=lambda: os.environ.get("BOINC_PROJECT_URL", ""),
                  help="the project (else BOINC_SELECT_PROJECT, $BOINC_PROJECT_URL, "
                       "or the first line of ./config.txt)")
    @boinc_option("authenticator", default=lambda: os.environ.get("BOINC_AUTHENTICATOR", ""),
                  help="the submitter's account key (else as the URL)")
    @boinc_option("timeout", type=float, default=300.0,
                  help="seconds an RPC may wait for the server (default 300)")
    @boinc_option("version", is_flag=True, help="print the version and exit")
    def boinc_gahp(project_url, authenticator, timeout, version):
        return serve(project_url, authenticator, timeout, version)
    return click_main(boinc_gahp, argv, "boinc_gahp")


def serve(url, auth, timeout=300.0, version=False):
    """Serve the protocol on stdin/stdout for the project at ``url`` with the
    account key ``auth`` (each else from ./config.txt); returns the exit status."""
    if version:
        sys.stderr.write(VERSION_LINE + "\n")
        return 0
    if not url or not auth:
        cfg_url, cfg_auth = read_config_txt()
        url, auth = url or cfg_url, auth or cfg_auth
    from boincpy.submit.client import SubmitClient

    def client(u, a):
        return SubmitClient(u, a, timeout=timeout)
    gahp = Gahp(sys.stdin, sys.stdout, client, url, auth, log=sys.stderr)
    return gahp.run()
