"""bin/boinc_gahp driven over its stdin/stdout as HTCondor's gridmanager drives
it: the protocol's lines (banner, COMMANDS, S/E return lines, RESULTS,
ASYNC_MODE's R), commands that never wait for the project, and a whole
Condor-B round -- submit with local files, poll, fetch outputs, abort, retire
-- against boincpy's submission RPCs under Apache, the jobs run by a
simulated 7.20.5 host through the real scheduler and daemons."""

import os
import queue
import socket
import subprocess
import sys
import threading
import time

from submit_util import run_bin, start_feeder, submit_site, transition  # noqa: F401

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Gahp:
    """A running bin/boinc_gahp: send request lines, read its lines."""

    def __init__(self, *args, cwd=None):
        self.proc = subprocess.Popen([sys.executable, os.path.join(REPO, "bin", "boinc_gahp")]
                                     + list(args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, cwd=cwd)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.banner = self.line()

    def _read(self):
        for text in self.proc.stdout:
            self.lines.put(text.rstrip("\n"))
        self.lines.put(None)

    def line(self, timeout=10.0):
        try:
            text = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("the GAHP printed nothing in %g s" % timeout) from None
        assert text is not None, "the GAHP closed its output"
        return text

    def send(self, request, timeout=2.0):
        """A request line and its return line, which must come at once (an
        ``R`` of asynchronous mode may come first: it is counted in ``rs``)."""
        start = time.monotonic()
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        answer = self.line(timeout)
        while answer == "R":
            self.rs += 1
            answer = self.line(timeout)
        return answer, time.monotonic() - start

    rs = 0

    def results(self):
        """RESULTS: the result lines waiting."""
        answer, _ = self.send("RESULTS")
        assert answer.startswith("S "), answer
        return [self.line() for _ in range(int(answer.split()[1]))]

    def wait_result(self, reqid, timeout=120.0):
        """Poll RESULTS until request ``reqid``'s line comes; its text after the id."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in self.results():
                rid, _, text = r.partition(" ")
                if rid == str(reqid):
                    return text
                self.others.append(r)
            time.sleep(0.2)
        raise AssertionError("no result for request %s" % reqid)

    others = []

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def test_protocol_lines_and_malformed_commands():
    g = Gahp()
    try:
        assert g.banner.startswith("$GahpVersion: 1.0.2 ") and g.banner.endswith(" $")
        answer, _ = g.send("COMMANDS")
        assert answer.split() == ["S", "ASYNC_MODE_OFF", "ASYNC_MODE_ON", "BOINC_ABORT_JOBS",
                                  "BOINC_FETCH_OUTPUT", "BOINC_PING", "BOINC_QUERY_BATCHES",
                                  "BOINC_RETIRE_BATCH", "BOINC_SELECT_PROJECT",
                                  "BOINC_SET_LEASE", "BOINC_SUBMIT", "COMMANDS", "QUIT",
                                  "RESPONSE_PREFIX", "RESULTS", "VERSION"]
        assert g.send("version")[0] == "S " + g.banner       # commands are case-blind
        assert g.send("ASYNC_MODE_ON")[0] == "S"
        # what BOINC's GAHP answers E to (its captured session), and what crashes it
        for bad in ("BOINC_SELECT_PROJECT http://127.0.0.1/x/", "NO_SUCH_COMMAND 7",
                    "BOINC_FETCH_OUTPUT 8 condor_j0", "BOINC_PING", "BOINC_PING x",
                    "BOINC_PING 0", "BOINC_SUBMIT 3 b app 2 j0 0 1 /tmp/in in",
                    "BOINC_SUBMIT 3 b app x", "BOINC_QUERY_BATCHES 4 nan 1 b",
                    "BOINC_QUERY_BATCHES 4 0 2 b", "BOINC_FETCH_OUTPUT 5 j d e MOST 0",
                    "BOINC_SET_LEASE 6 b", "BOINC_RETIRE_BATCH 7", ""):
            assert g.send(bad)[0] == "E", bad
        # no project selected yet: asynchronous commands are refused
        assert g.send("BOINC_PING 9")[0] == "E"
        assert g.send("RESULTS")[0] == "S 0"
        assert g.send("RESPONSE_PREFIX >> ")[0] == "S"
        assert g.send("RESULTS")[0] == ">> S 0"
        assert g.send("QUIT")[0] == ">> S"
        assert g.proc.wait(10) == 0
    finally:
        g.close()


def test_escaped_arguments():
    from boincpy.submit.gahp import escape, split_line
    assert split_line(r"BOINC_SUBMIT 1 my\ batch app\\x  2") == [
        "BOINC_SUBMIT", "1", "my batch", "app\\x", "2"]
    assert escape("bad authenticator\\ \n") == "bad\\ authenticator\\\\\\ \\n"


def test_a_stalled_server_stalls_no_command():
    # a project that accepts connections and never answers
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held = []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
    threading.Thread(target=accept, daemon=True).start()
    url = "http://127.0.0.1:%d/stalled/" % listener.getsockname()[1]
    g = Gahp("--timeout", "3")
    try:
        assert g.send("BOINC_SELECT_PROJECT %s 0123456789abcdef" % url)[0] == "S"
        assert g.send("ASYNC_MODE_ON")[0] == "S"
        slowest = 0.0
        for reqid in range(1, 21):
            answer, took = g.send("BOINC_PING %d" % reqid)
            assert answer == "S"
            slowest = max(slowest, took)
            answer, took = g.send("RESULTS")
            assert answer == "S 0"
            slowest = max(slowest, took)
        assert slowest < 1.0, slowest
        # the timeouts come back as result lines, announced by an R
        if not g.rs:
            assert g.line(timeout=30) == "R"
        lines = []
        deadline = time.monotonic() + 30
        while len(lines) < 20 and time.monotonic() < deadline:
            lines += g.results()
            time.sleep(0.2)
        assert sorted(int(x.split()[0]) for x in lines) == list(range(1, 21))
        assert all(" ping_server\\ returned\\ " in x for x in lines), lines[:2]
    finally:
        g.close()
        listener.close()
        for c in held:
            c.close()


def test_a_condor_round_against_boincpy(submit_site, tmp_path):
    """Five jobs with local inputs (two share a file), polled until done,
    outputs fetched into per-job directories; a second batch with one job
    aborted; both retired."""
    from boincpy.testing import simclient as sc
    s = submit_site
    p = s.p
    inputs = tmp_path / "in"
    inputs.mkdir()
    texts = {"shared.txt": "shared input of two jobs\n", "b.txt": "input b\n",
             "c.txt": "input c\n", "d dir.txt": "input d, a name with a space\n"}
    for name, text in texts.items():
        (inputs / name).write_text(text)
    files = ["shared.txt", "shared.txt", "b.txt", "c.txt", "d dir.txt"]
    job_args = " ".join("gj%d 0 1 %s in" % (i, str(inputs / f).replace(" ", "\\ "))
                        for i, f in enumerate(files))
    g = Gahp()
    try:
        assert g.send("BOINC_SELECT_PROJECT %s %s" % (s.url, s.auth))[0] == "S"
        assert g.send("BOINC_PING 1")[0] == "S"
        assert g.wait_result(1) == "NULL"
        assert g.send("BOINC_SUBMIT 2 gb1 uppercase 5 %s 1e10 1e13 5e8 1e9 3600 0"
                      % job_args)[0] == "S"
        assert g.wait_result(2) == "NULL"
        db = p.connect()
        # four distinct files, each stored once under <md5>.txt, tied to the batch
        rows = db.query("SELECT job_file.name FROM job_file JOIN batch_file_assoc ON "
                        "batch_file_assoc.job_file_id = job_file.id JOIN batch ON batch.id = "
                        "batch_file_assoc.batch_id WHERE batch.name = 'gb1'")
        assert len(rows) == 4 and all(r["name"].endswith(".txt") for r in rows)
        wus = db.query("SELECT name, delay_bound, rsc_memory_bound FROM workunit ORDER BY id")
        assert [(w["name"], w["delay_bound"], w["rsc_memory_bound"]) for w in wus] == [
            ("gj%d" % i, 3600, 5e8) for i in range(5)]
        assert g.send("BOINC_QUERY_BATCHES 3 0 1 gb1")[0] == "S"
        line = g.wait_result(3).split()
        assert line[0] == "NULL" and line[2] == "5" and line[3::2] == ["gj%d" % i
                                                                   for i in range(5)]
        assert set(line[4::2]) == {"UNSENT"}
        server_time = line[1]

        # the volunteer runs them; poll until all are DONE
        volunteer = sc.create_account(s.url, "vol@example.com", "pw", "vol")
        transition(p)
        feeder = start_feeder(p)
        try:
            host = sc.SimHost(sc.discover_scheduler(s.url), volunteer, name="h1", seed=3,
                              delay_cap=0, work_req_seconds=1e6)
            for _ in range(10):
                host.cycle()
                if len(host.acked) == 5:
                    break
        finally:
            feeder.terminate()
            feeder.wait(20)
        transition(p)
        run_bin(p, "sample_trivial_validator", "--app", "uppercase", "--one_pass")
        reqid = 10
        for _ in range(30):
            reqid += 1
            assert g.send("BOINC_QUERY_BATCHES %d 0 1 gb1" % reqid)[0] == "S"
            line = g.wait_result(reqid).split()
            if set(line[4::2]) == {"DONE"}:
                break
            time.sleep(1)
        assert set(line[4::2]) == {"DONE"}, line
        # only what changed since a poll is listed
        assert g.send("BOINC_QUERY_BATCHES 40 %s 1 gb1" % line[1])[0] == "S"
        assert g.wait_result(40).split()[2] == "0"
        assert float(line[1]) > float(server_time)

        # outputs into per-job directories; stderr appended; SOME with a rename
        for i, f in enumerate(files):
            out = tmp_path / "out" / ("gj%d" % i)
            out.mkdir(parents=True)
            mode = "ALL 0" if i % 2 == 0 else "SOME 1 out result.txt"
            assert g.send("BOINC_FETCH_OUTPUT %d gj%d %s stderr.txt %s"
                          % (50 + i, i, str(out), mode))[0] == "S"
            result = g.wait_result(50 + i).split()
            assert result[0] == "NULL" and result[1] == "0", result
            got = (out / ("out" if i % 2 == 0 else "result.txt")).read_text()
            assert got == texts[f].upper()
            assert (out / "stderr.txt").exists()
        # a job of someone else's (a second submitter) is refused, not crashed on
        g2 = Gahp()
        try:
            g2.send("BOINC_SELECT_PROJECT %s %s" % (s.url, s.other_auth))
            g2.send("BOINC_FETCH_OUTPUT 1 gj0 %s stderr.txt ALL 0" % tmp_path)
            assert g2.wait_result(1) == "query_completed_job()\\ returned\\ -1\\ not\\ owner"
            g2.send("BOINC_RETIRE_BATCH 2 gb1")
            assert g2.wait_result(2) == "retire_batch()\\ returned\\ -1\\ not\\ owner\\ of\\ batch"
        finally:
            g2.close()

        # a second batch reusing the shared file: nothing uploaded for it; one job aborted
        before = db.query_value("SELECT COUNT(*) FROM job_file")
        assert g.send("BOINC_SUBMIT 60 gb2 uppercase 2 gk0 1 --x 1 %s in gk1 0 1 %s in"
                      % (inputs / "shared.txt", inputs / "b.txt"))[0] == "S"
        assert g.wait_result(60) == "NULL"
        assert db.query_value("SELECT COUNT(*) FROM job_file") == before
        assert db.query_value("SELECT COUNT(*) FROM batch_file_assoc JOIN batch ON batch.id = "
                              "batch_id WHERE batch.name = 'gb2'") == 2
        assert "<command_line>\n--x \n</command_line>" in db.query_value(
            "SELECT xml_doc FROM workunit WHERE name = 'gk0'")
        assert g.send("BOINC_ABORT_JOBS 61 gk0")[0] == "S"
        assert g.wait_result(61) == "NULL"
        assert db.query_value("SELECT error_mask FROM workunit WHERE name = 'gk0'") == 16
        assert db.query_value("SELECT error_mask FROM workunit WHERE name = 'gk1'") == 0
        lease = int(time.time()) + 7200
        assert g.send("BOINC_SET_LEASE 62 gb2 %d" % lease)[0] == "S"
        assert g.wait_result(62) == "NULL"
        assert db.query_value("SELECT expire_time FROM batch WHERE name = 'gb2'") == lease
        for reqid, name in ((63, "gb1"), (64, "gb2")):
            assert g.send("BOINC_RETIRE_BATCH %d %s" % (reqid, name))[0] == "S"
            assert g.wait_result(reqid) == "NULL"
        assert [r["state"] for r in db.query("SELECT state FROM batch ORDER BY id")] == [4, 4]
        # errors come back as escaped result lines
        assert g.send("BOINC_SUBMIT 70 gb3 no_such_app 1 gz 0 0")[0] == "S"
        assert g.wait_result(70) == "error\\ getting\\ templates:\\ -1\\ app\\ not\\ found:\\ " \
                                    "no_such_app"
        assert g.send("BOINC_SUBMIT 71 gb4 uppercase 1 gz 0 1 /nonexistent/file in")[0] == "S"
        assert g.wait_result(71).startswith("error\\ processing\\ input\\ files:")
        assert g.send("QUIT")[0] == "S"
        db.close()
    finally:
        g.close()
