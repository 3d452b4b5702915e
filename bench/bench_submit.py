#!/usr/bin/env python3
"""Remote job submission at scale: submit_batch of N jobs through the web RPC,
side by side with bin/create_work --stdin making the same jobs, and
query_batch of the N-job batch.

Makes a throwaway project with make_project (as the tests do) and serves it
with a private Apache (the RPC is a CGI run as www-data).  Each job has one
input file, all of them uploaded by content first (query_files, then one
multipart upload_files); the same N jobs are then made three ways, each into
a fresh batch, in alternating rounds:

* ``submit_batch``: one RPC with N <job>s (local_staged files, BOINC's
  Python client's request format), timed from the POST to the reply;
* ``create_work --stdin``: the operator's tool, one line per job, as a
  subprocess in the project directory (what BOINC's own handler runs);
* ``query_batch``: the N-job batch, with and without job details.

Prints jobs/s of each, the ratio submit_batch / create_work (target >= 0.5),
and query_batch times (target well under a second for N = 10,000).

    python bench/bench_submit.py [--jobs N] [--rounds R]

Needs root and MariaDB reachable as in the tests.
"""

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

from conftest import make_test_project, remove_test_project, root_db_params  # noqa: E402
from submit_util import add_uppercase_app, add_user, multipart  # noqa: E402
from boincpy.tools.httpd import PrivateApache  # noqa: E402

NFILES = 100


def post(url, xml, files=()):
    if files:
        body, ctype = multipart({"request": xml}, files)
    else:
        body = urllib.parse.urlencode({"request": xml}).encode()
        ctype = "application/x-www-form-urlencoded"
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    start = time.perf_counter()
    with opener.open(req, timeout=3600) as resp:
        reply = resp.read().decode()
    elapsed = time.perf_counter() - start
    if "<error>" in reply:
        raise SystemExit("error reply: %s" % reply[:2000])
    return reply, elapsed


def submit_xml(auth, batch_name, names, files):
    jobs = "".join("<job>\n<name>%s</name>\n<rsc_fpops_est>10000000000.000000</rsc_fpops_est>\n"
                   "<input_file>\n<mode>local_staged</mode>\n<source>%s</source>\n"
                   "</input_file>\n</job>\n" % (n, files[i % len(files)])
                   for i, n in enumerate(names))
    return ("<submit_batch>\n<authenticator>%s</authenticator>\n<batch>\n"
            "<app_name>uppercase</app_name>\n<batch_name>%s</batch_name>\n"
            "<app_version_num>0</app_version_num>\n%s</batch>\n</submit_batch>\n"
            % (auth, batch_name, jobs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=2)
    a = parser.parse_args()
    project = make_test_project(root_db_params())
    server = PrivateApache(project.root, project.port)
    try:
        server.start()
        add_uppercase_app(project)
        db = project.connect()
        _, auth = add_user(db, "bench", submit=1)
        url = project.master_url
        # the input files, by content
        contents = [("bench input %d\n" % k).encode() for k in range(NFILES)]
        names = ["jf_" + hashlib.md5(c).hexdigest() for c in contents]
        listing = "".join("<phys_name>%s</phys_name>" % n for n in names)
        post(url + "job_file.php", "<query_files><authenticator>%s</authenticator>%s"
             "</query_files>" % (auth, listing))
        post(url + "job_file.php", "<upload_files><authenticator>%s</authenticator>%s"
             "</upload_files>" % (auth, listing),
             files=[("file_%d" % i, n, c) for i, (n, c) in enumerate(zip(names, contents))])

        rpc_rates, cw_rates, q_plain, q_details = [], [], [], []
        batch_id = None
        for r in range(a.rounds):
            jobs = ["rpc%d_%d" % (r, i) for i in range(a.jobs)]
            xml = submit_xml(auth, "bench_rpc_%d" % r, jobs, names)
            reply, t = post(url + "submit_rpc_handler.php", xml)
            rpc_rates.append(a.jobs / t)
            batch_id = int(reply.split("<batch_id>")[1].split("<")[0])
            print("round %d: submit_batch      %6d jobs in %6.2f s  %7.0f jobs/s  (%.1f MB "
                  "request)" % (r + 1, a.jobs, t, a.jobs / t, len(xml) / 1e6))
            lines = "".join("--wu_name cw%d_%d %s\n" % (r, i, names[i % NFILES])
                            for i in range(a.jobs))
            bid = db.insert("INSERT INTO batch (user_id, create_time, name, app_id, state) "
                            "VALUES (1, %s, %s, (SELECT id FROM app WHERE name = 'uppercase'), 0)",
                            (int(time.time()), "bench_cw_%d" % r))
            start = time.perf_counter()
            subprocess.run([project.bin("create_work"), "--appname", "uppercase", "--batch",
                            str(bid), "--stdin"], cwd=project.root, input=lines, text=True,
                           check=True)
            t = time.perf_counter() - start
            cw_rates.append(a.jobs / t)
            print("round %d: create_work --stdin %6d jobs in %6.2f s  %7.0f jobs/s"
                  % (r + 1, a.jobs, t, a.jobs / t))
        for _ in range(3):
            q = ("<query_batch><authenticator>%s</authenticator><batch_id>%d</batch_id>"
                 "<get_cpu_time>%d</get_cpu_time><get_job_details>%d</get_job_details>"
                 "</query_batch>")
            q_plain.append(post(url + "submit_rpc_handler.php", q % (auth, batch_id, 0, 0))[1])
            q_details.append(post(url + "submit_rpc_handler.php", q % (auth, batch_id, 1, 1))[1])
        rpc, cw = statistics.median(rpc_rates), statistics.median(cw_rates)
        print()
        print("submit_batch through the web RPC: %7.0f jobs/s (median of %d)" % (rpc, a.rounds))
        print("create_work --stdin:              %7.0f jobs/s" % cw)
        print("ratio submit_batch / create_work: %.2f  (target >= 0.5)" % (rpc / cw))
        print("query_batch of %d jobs: %.3f s; with job details and CPU time: %.3f s "
              "(median of 3)" % (a.jobs, statistics.median(q_plain), statistics.median(q_details)))
        db.close()
    finally:
        server.stop()
        remove_test_project(project)


if __name__ == "__main__":
    main()
