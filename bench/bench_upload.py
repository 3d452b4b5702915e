#!/usr/bin/env python3
"""CPU per uploaded file: boincpy's upload handler CGI, its persistent mode,
and BOINC's C++ file_upload_handler, side by side.

Builds a throwaway project (config.xml, an upload key pair, upload/) and
uploads N distinct output files, each with its signed upload certificate
(checked: ``ignore_upload_certificates`` off), as a client does.  The CGIs
run exactly as Apache's mod_cgi runs them (the script, its ``#!`` line,
CONTENT_LENGTH and the body on stdin, in cgi-bin/), the boincpy one as
make_project writes it (``copy_tree_files``); CPU is user + system of the
child processes (getrusage), wall the median.  The persistent mode is
boincpy.persistent's application in this process (as a persistent process
runs it): CPU per request by ``time.process_time``.  Servers alternate in
rounds; ratios are to the C++ handler measured in the same run.

    python bench/bench_upload.py [--files N] [--size BYTES] [--rounds R]
                                 [--cxx_dir DIR] [--importtime]

``--cxx_dir``: a BOINC source tree where ``make`` built
sched/file_upload_handler (default $BOINC_CXX_DIR); without it, no ratios.
``--importtime``: also print the upload CGI's slowest imports (python -X
importtime, the best of 10 runs per module).
"""

import argparse
import hashlib
import io
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from boincpy import crypto  # noqa: E402
from boincpy.config import short_hostname, write_config  # noqa: E402
from boincpy.tools.make_project import cgi_paths, compile_package, copy_tree_files  # noqa: E402

HANDLER = "file_upload_handler"


class Project:
    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="boincpy_bench_upload_", dir="/var/tmp")
        os.chmod(self.root, 0o755)
        for d in ("keys", "upload", "cgi-bin", "log_" + short_hostname()):
            os.makedirs(os.path.join(self.root, d))
        crypto.generate_key_pair(os.path.join(self.root, "keys", "upload_private"),
                                 os.path.join(self.root, "keys", "upload_public"))
        self.key = crypto.read_key(os.path.join(self.root, "keys", "upload_private"))
        write_config(self.root, {
            "long_name": "Upload bench", "master_url": "http://127.0.0.1/ub/",
            "upload_url": "http://127.0.0.1/ub_cgi/file_upload_handler",
            "download_url": "http://127.0.0.1/ub/download", "db_name": "none",
            "host": short_hostname(), "uldl_dir_fanout": 1024,
            "key_dir": os.path.join(self.root, "keys"),
            "upload_dir": os.path.join(self.root, "upload"),
            "download_dir": os.path.join(self.root, "download")})
        # the CGI entries as make_project writes them
        copy_tree_files(os.path.join(REPO, "cgi-bin"), os.path.join(self.root, "cgi-bin"),
                        sys.executable, cgi_paths(sys.executable))
        compile_package()       # .pyc files and the CGIs' bundles, as make_project
        self.n = 0

    def body(self, size):
        """The next file's upload request (a new name each time)."""
        self.n += 1
        name = "ub_%d_0_r1_0" % self.n
        data = (b"%d " % self.n) * (size // 4 + 1)
        data = data[:size]
        sig = crypto.sign_upload_certificate(name, 100000000, self.key).strip()
        head = ("<data_server_request>\n    <core_client_major_version>7"
                "</core_client_major_version>\n    <core_client_minor_version>20"
                "</core_client_minor_version>\n    <core_client_release>5"
                "</core_client_release>\n<file_upload>\n<file_info>\n    <name>%s</name>\n"
                "<xml_signature>\n%s\n</xml_signature>\n    <max_nbytes>100000000"
                "</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n<md5_cksum>%s</md5_cksum>\n"
                "<offset>0</offset>\n<data>\n"
                % (name, sig, len(data), hashlib.md5(data).hexdigest()))
        return head.encode() + data

    def destroy(self):
        shutil.rmtree(self.root, ignore_errors=True)


def run_cgi(project, program, bodies):
    """(CPU ms per file, median wall ms) of one CGI over ``bodies``."""
    env = {"PATH": "/usr/bin:/bin", "REQUEST_METHOD": "POST", "REMOTE_ADDR": "127.0.0.1",
           "BOINC_PROJECT_DIR": project.root, "SCRIPT_NAME": "/ub_cgi/" + HANDLER}
    cwd = os.path.join(project.root, "cgi-bin")
    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for body in bodies:
        env["CONTENT_LENGTH"] = str(len(body))
        t = time.perf_counter()
        out = subprocess.run([program], input=body, env=env, cwd=cwd,
                             capture_output=True).stdout
        walls.append(time.perf_counter() - t)
        if b"<status>0</status>" not in out:
            raise RuntimeError("%s: %r" % (program, out[:300]))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    walls.sort()
    return cpu / len(bodies) * 1000, walls[len(walls) // 2] * 1000


def run_persistent(app, bodies):
    """(CPU ms per file, median wall ms) of the persistent application."""
    walls = []
    c0 = time.process_time()
    for body in bodies:
        environ = {"SCRIPT_NAME": "/ub_cgi/" + HANDLER, "REQUEST_METHOD": "POST",
                   "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": "127.0.0.1"}
        t = time.perf_counter()
        out = app.respond(environ, io.BytesIO(body))
        walls.append(time.perf_counter() - t)
        if b"<status>0</status>" not in out:
            raise RuntimeError("persistent: %r" % out[:300])
    cpu = time.process_time() - c0
    walls.sort()
    return cpu / len(bodies) * 1000, walls[len(walls) // 2] * 1000


def importtime(project, size, runs=10):
    """The upload CGI's imports, the best of ``runs`` per module (ms, self)."""
    best, order = {}, []
    script = os.path.join(project.root, "cgi-bin", HANDLER)
    with open(script) as f:
        shebang = f.readline()[2:].split()
    for _ in range(runs):
        body = project.body(size)
        env = {"PATH": "/usr/bin:/bin", "REQUEST_METHOD": "POST", "CONTENT_LENGTH":
               str(len(body)), "BOINC_PROJECT_DIR": project.root}
        err = subprocess.run(shebang[:1] + ["-X", "importtime"] + shebang[1:] + [script],
                             input=body, env=env, cwd=os.path.dirname(script),
                             capture_output=True).stderr.decode()
        for line in err.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|(\s*)(\S+)", line)
            if m:
                if m.group(3) not in best:
                    order.append(m.group(3))
                best[m.group(3)] = min(best.get(m.group(3), 1 << 40), int(m.group(1)))
    total = sum(best.values()) / 1000
    print("\nImports of one upload CGI run (self ms, best of %d; %d modules, %.1f ms in all):"
          % (runs, len(best), total))
    for name in sorted(order, key=lambda n: -best[n])[:12]:
        print("  %-36s %5.2f" % (name, best[name] / 1000))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=200, help="files per server and round (200)")
    p.add_argument("--size", type=int, default=4096, help="bytes per file (4096)")
    p.add_argument("--rounds", type=int, default=3, help="alternations (3)")
    p.add_argument("--cxx_dir", default=os.environ.get("BOINC_CXX_DIR", ""))
    p.add_argument("--importtime", action="store_true")
    args = p.parse_args(argv)
    cxx = os.path.join(args.cxx_dir, "sched", HANDLER) if args.cxx_dir else None
    if cxx and not os.path.exists(cxx):
        p.error("--cxx_dir %s: no sched/%s built there" % (args.cxx_dir, HANDLER))
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "boincpy")],
                   check=True, stdout=subprocess.DEVNULL)
    project = Project()
    try:
        servers = {"cgi": os.path.join(project.root, "cgi-bin", HANDLER)}
        if cxx:
            servers = {"cxx": os.path.join(project.root, "cgi-bin", "fuh_cxx"), **servers}
            shutil.copy(cxx, servers["cxx"])
        from boincpy.persistent import Application
        app = Application(project.root)
        run_persistent(app, [project.body(args.size) for _ in range(5)])      # warm
        totals = {}
        print("Upload handler, %d files of %d bytes per server and round, certificates "
              "checked:" % (args.files, args.size))
        print("  %-5s %-11s %12s %12s %8s" % ("round", "server", "CPU ms/file", "wall ms p50",
                                             "CPU/C++"))
        for rnd in range(1, args.rounds + 1):
            row = {}
            for server in list(servers) + ["persistent"]:
                bodies = [project.body(args.size) for _ in range(args.files)]
                row[server] = (run_persistent(app, bodies) if server == "persistent"
                               else run_cgi(project, servers[server], bodies))
                totals.setdefault(server, []).append(row[server][0])
            for server, (cpu, wall) in row.items():
                ratio = "%8.2f" % (cpu / row["cxx"][0]) if "cxx" in row and server != "cxx" \
                    else "       -"
                print("  %-5d %-11s %12.2f %12.2f %s" % (rnd, server, cpu, wall, ratio))
            sys.stdout.flush()
        app.resident.close()
        if "cxx" in totals:
            base = sum(totals["cxx"]) / len(totals["cxx"])
            print("\nMean CPU per file, ratio to the C++ handler: " + ", ".join(
                "%s %.2f ms (%.2fx)" % (s, sum(v) / len(v), sum(v) / len(v) / base)
                for s, v in totals.items()))
            print("Targets (issue 19): classic CGI <= 2x the C++ handler's CPU per file; "
                  "persistent <= 1x.")
        if args.importtime:
            importtime(project, args.size)
    finally:
        project.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
