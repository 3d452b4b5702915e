"""A project spread over several hosts, all on this machine (slow).

The layout of the operator guide's "When one server is not enough":

* a MariaDB primary writing a binary log and a replica following it, both
  started by the test (tests/mariadb_instance: their own data directories,
  127.0.0.1 ports 3330 and 3331, general query logs on);
* ``main``: the main host (config.xml's <host>), serving the master page,
  downloads and the ops pages on 127.0.0.1; its bin/start starts the other
  hosts' daemons through <ssh_exec>;
* ``web1`` and ``web2``: scheduler and data-server hosts on 127.0.0.2 and
  127.0.0.3, each with its own Apache, its own /dev/shm and so its own
  feeder and job array;
* ``back1``: the back end (transitioner and assimilator split with
  ``--mod 2 I``, validator, file_deleter).

Each host is a UTS + mount namespace (tests/hosts_util.Host) sharing the
project directory, as hosts share it over NFS.  The master page lists both
schedulers from schedulers.txt; simulated volunteers use one or the other;
half the jobs upload to web1's data server, half to web2's; two stock
7.20.5 clients attach to the master URL and take jobs too.  Then: every
job done and assimilated exactly once, by the assimilator its id's --mod
share names; no result sent twice; each feeder sent only its share (with
``--mod``), or both feeders enumerated every job and the scheduler's claim
of the result row kept each from being sent twice (without); each host's
logs in its own log_<host>; the ops pages' list queries on the replica and
the ops index on the primary (from the servers' general logs); and once
the replica stops replicating, its pages still answer and say their data
may be stale.
"""

import os
import re
import shutil

import MySQLdb
import pytest

import mariadb_instance
from cluster_util import (RO_USER, WEB, Cluster, log_since, log_size, make_hosts, make_jobs,
                          page, run_hosts, sent_twice)
from boincpy.testing import simclient as sc
from boincpy.testing.client import StockClient
from hosts_util import can_unshare

BOINC = shutil.which("boinc") or "/usr/bin/boinc"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (mariadb_instance.available() and can_unshare()),
                                 reason="needs root, namespaces and mariadbd")]

NJOBS = int(os.environ.get("BOINCPY_MULTIHOST_JOBS") or 40)
FINISH_LIMIT = 300.0


@pytest.fixture(params=["mod", "overlap"])
def cluster(request):
    c = None
    try:
        c = Cluster(split_feeders=request.param == "mod")
        yield c
    finally:
        if c is not None:
            c.close()


def test_two_scheduler_hosts_a_back_end_and_a_replica(cluster):
    c = cluster
    p = c.p
    expected = make_jobs(c, NJOBS)
    # bin/start on the main host starts every host's daemons through ssh_exec
    out = c.on("main", p.bin("start"), "-v")
    assert "web1" in out and "back1" in out, out

    # the master page lists both schedulers, read from schedulers.txt; the
    # volunteers use one or the other: stock 7.20.5 clients (which pick from
    # the list themselves) and simulated ones
    stock = []
    if c.split and os.path.exists(BOINC):
        for k in range(2):
            auth = sc.create_account(p.master_url, "stock%d@example.com" % k, "pw", "stock%d" % k)
            client = StockClient(boinc=BOINC, extra_args=("--exit_when_idle",
                                                           "--fetch_minimal_work"))
            stock.append(client)
            client.start(attach=(p.master_url, auth))
        for client in stock:
            client.wait_for_log(r"Found 2 scheduler URLs in master file", 120)
            client.wait_for_log(r"Scheduler request completed: got [1-9]\d* new tasks", 120)
    listed, hosts = make_hosts(c, 4)
    assert listed == list(c.sched_urls.values())
    done, errors, _ = run_hosts(c, hosts, NJOBS, FINISH_LIMIT)
    clients_ok = False
    try:
        for client in stock:
            client.wait_for(lambda: not client.running(), 240, "the client to exit when idle")
            log = client.log_text()
            assert client.process.returncode == 0, log[-4000:]
            assert re.search(r"Finished upload of mh_\d+_\d+_r\d+_0", log), log[-4000:]
            assert re.search(r"got ack for task mh_", log), log[-4000:]
            for bad in ("Signature verification", "Scheduler request failed", "No close tag"):
                assert bad not in log, (bad, log[-4000:])
        clients_ok = True
    finally:
        for client in stock:
            client.close(failed=not clients_ok)
    assert not errors, errors
    assert done == NJOBS, "%d of %d jobs assimilated" % (done, NJOBS)
    db = p.connect()
    try:
        results = db.query("SELECT id, name, hostid, workunitid, outcome FROM result")
    finally:
        db.close()

    # every result sent once: to one simulated host, never to two
    for h in hosts:
        assert not h.protocol_errors, h.protocol_errors
    twice, received = sent_twice(hosts)
    assert not twice, twice
    by_name = {r["name"]: r for r in results}
    for name in received:
        assert by_name[name]["hostid"] and by_name[name]["outcome"] == 1

    # each scheduler host's log holds its own requests; with --mod each feeder
    # (so each scheduler) sent only its share of the results
    for host in WEB:
        log = open(p.path("log_" + host, "scheduler.log")).read()
        assert "Request: [USER#" in log
        if c.split:
            assert "already sent to another host" not in log
    for i, host in enumerate(WEB):
        ids = {r["id"] for r in results if r["name"] in received
               and any(hh.scheduler_url == c.sched_urls[host] for hh in hosts
                       if hh.name in received[r["name"]])}
        if c.split:
            assert ids and all(x % 2 == i for x in ids), (host, sorted(ids))
        else:
            # both feeders enumerated every job: each scheduler sent both shares
            assert {x % 2 for x in ids} == {0, 1}, (host, sorted(ids))

    # uploads reached both data servers, each logged on its own host
    for host in WEB:
        log = open(p.path("log_" + host, "file_upload_handler.log")).read()
        assert "mh_" in log, host
    # every job assimilated once, by the assimilator whose --mod share it is
    seen = {}
    for i in range(2):
        log = open(p.path("log_back1", "sample_dummy_assimilator_%d.log" % i)).read()
        for wu in re.findall(r"Assimilating (mh_\d+)", log):
            seen.setdefault(wu, []).append(i)
    assert sorted(seen) == sorted(expected)
    assert all(len(v) == 1 for v in seen.values()), {k: v for k, v in seen.items() if len(v) > 1}
    db = p.connect()
    try:
        ids = {r["name"]: r["id"] for r in db.query("SELECT id, name FROM workunit")}
    finally:
        db.close()
    assert all(seen[wu] == [ids[wu] % 2] for wu in seen)
    # each host's daemons logged and kept pid files in their own directories
    for host, names in (("web1", ["feeder.log"]), ("web2", ["feeder.log"]),
                        ("back1", ["transitioner_0.log", "transitioner_1.log",
                                   "file_deleter.log"])):
        for name in names:
            assert os.path.getsize(p.path("log_" + host, name)) > 0, (host, name)
    assert os.path.exists(p.path("pid_back1", "transitioner_1.pid"))
    status = c.on("main", p.bin("status"), "-v")
    assert "transitioner" in status and "feeder" in status, status

    # the replica's reads and the primary's, from their general logs
    mariadb_instance.wait_replicated(c.primary, c.replica)
    plog, rlog = c.primary.general_log_path, c.replica.general_log_path
    p0, r0 = log_size(plog), log_size(rlog)
    body = page(c, p.ops_url + "errorwus.php")
    assert "entries" in body and "stale" not in body
    page(c, p.ops_url + "db_form.php?table=result")
    on_replica, on_primary = log_since(rlog, r0), log_since(plog, p0)
    assert "AS download_errors" in on_replica and "AS download_errors" not in on_primary
    assert "FROM result" in on_replica
    p0, r0 = log_size(plog), log_size(rlog)
    page(c, p.ops_url + "index.php")
    assert RO_USER not in log_since(rlog, r0) and "FROM app" in log_since(plog, p0)

    # the replica stops replicating: its pages still answer, and say so
    conn = MySQLdb.connect(**c.replica.params)
    conn.cursor().execute("STOP SLAVE")
    conn.close()
    db = p.connect()
    try:
        db.execute("UPDATE workunit SET name = 'renamed_on_primary' WHERE id = 1")
    finally:
        db.close()
    body = page(c, p.ops_url + "db_form.php?table=workunit")
    assert "stopped replicating" in body and "may be stale" in body
    assert "renamed_on_primary" not in body
    assert "renamed_on_primary" in page(c, p.ops_url + "db_action.php?table=workunit&id=1")
