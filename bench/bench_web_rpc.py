#!/usr/bin/env python3
"""Latency of the account web RPCs (html/user/*.php CGIs) under a private Apache.

Makes a throwaway project with make_project (as the tests do), starts a
private Apache (children run as www-data), and times N sequential requests of
each RPC as the stock client spells them; prints p50/p95 per RPC, and what a
bare interpreter start costs for comparison.  create_account makes N new
accounts (bcrypt of each password hash); lookup_account verifies one.

    python bench/bench_web_rpc.py [--requests N]

Needs root and MariaDB reachable as in the tests.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "tests"))

from conftest import make_test_project, remove_test_project, root_db_params  # noqa: E402
from boincpy import passwords  # noqa: E402
from boincpy.tools.httpd import PrivateApache  # noqa: E402


def get(url):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    start = time.perf_counter()
    with opener.open(url, timeout=60) as resp:
        body = resp.read()
    elapsed = time.perf_counter() - start
    if b"<error>" in body:
        raise SystemExit("error reply from %s: %s" % (url, body.decode()))
    return elapsed


def report(name, times):
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print("%-22s n=%-4d p50 %6.1f ms   p95 %6.1f ms" % (
        name, len(times), statistics.median(times) * 1000, p95 * 1000))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    n = parser.parse_args().requests
    project = make_test_project(root_db_params())
    server = PrivateApache(project.root, project.port)
    try:
        server.start()
        base = project.master_url
        get(base + "get_project_config.php")        # warm the page cache
        email = "bench@example.org"
        pw_hash = passwords.client_passwd_hash("benchpw", email)
        get(base + "create_account.php?email_addr=%s&passwd_hash=%s&user_name=Bench"
            % (email, pw_hash))
        auth = project.connect().query_value("SELECT authenticator FROM user")
        report("get_project_config", [get(base + "get_project_config.php") for _ in range(n)])
        report("lookup_account", [get(base + "lookup_account.php?email_addr=%s&passwd_hash=%s"
                                      % (email, pw_hash)) for _ in range(n)])
        report("am_get_info", [get(base + "am_get_info.php?account_key=" + auth)
                               for _ in range(n)])
        report("create_account (new)", [
            get(base + "create_account.php?email_addr=b%d%%40example.org&passwd_hash=%s"
                "&user_name=B%d" % (i, pw_hash, i)) for i in range(n)])
        python = os.path.join(REPO, ".venv", "bin", "python")
        starts = []
        for _ in range(n):
            t = time.perf_counter()
            subprocess.run([python, "-c", "pass"], check=True)
            starts.append(time.perf_counter() - t)
        report("(bare python start)", starts)
    finally:
        server.stop()
        remove_test_project(project)


if __name__ == "__main__":
    main()
