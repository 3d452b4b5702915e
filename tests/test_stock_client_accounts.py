"""End to end with the stock client (Debian boinc-client 7.20.5): boinccmd's
account commands against the project's html/user/*.php under Apache, then an
attach with the authenticator the project returned."""

import contextlib
import os
import subprocess
import time

import pytest

from boincpy import passwords
from webrpc_util import HEX32

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMAIL = "Stock.Client@Example.org"
PASSWORD = "correct horse"


def _user(project):
    db = project.connect()
    try:
        return db.query_one("SELECT * FROM user WHERE email_addr = %s", (EMAIL.lower(),))
    finally:
        db.close()


def test_boinccmd_account_commands(apache, stock_client):
    url = apache.master_url
    client = stock_client

    config = client.get_project_config(url)
    assert config.get("name") == apache.project.long_name, config
    assert config["min_passwd_length"] == 6

    created = client.create_account(url, EMAIL, PASSWORD, "Stock Client")
    assert HEX32.match(created.authenticator), created.output
    user = _user(apache.project)
    assert user["authenticator"] == created.authenticator
    assert user["name"] == "Stock Client"
    # what boinccmd sent is md5(password + lower-cased e-mail); stored as bcrypt
    assert passwords.password_verify(passwords.client_passwd_hash(PASSWORD, EMAIL),
                                     user["passwd_hash"])

    again = client.create_account(url, EMAIL, PASSWORD, "Stock Client")
    assert again.authenticator == created.authenticator
    taken = client.create_account(url, EMAIL, "another password", "Stock Client")
    assert taken.authenticator == "" and taken.error == "database lookup not unique"

    found = client.lookup_account(url, EMAIL.upper(), PASSWORD)
    assert found.authenticator == created.authenticator, found.output
    wrong = client.lookup_account(url, EMAIL, "wrong password")
    assert wrong.authenticator == "" and wrong.error == "bad password", wrong.output
    unknown = client.lookup_account(url, "nobody@example.org", PASSWORD)
    assert unknown.error == "no database rows found in lookup/enumerate", unknown.output


def _create_and_attach(apache, client):
    """Account by boinccmd, attach with its key; returns the user row once the
    client has read the master page and knows the scheduler."""
    url = apache.master_url
    created = client.create_account(url, EMAIL, PASSWORD, "Stock Client")
    assert HEX32.match(created.authenticator), created.output
    client.project_attach(url, created.authenticator)
    client.wait_for_log(r"Found 1 scheduler URLs in master file", 60)
    client.wait_for_log(r"Master file download succeeded", 10)
    scheduler = client.wait_for(lambda: (client.project_state(url) or {}).get("scheduler_url"),
                                60, "the scheduler URL in client_state.xml")
    assert scheduler == apache.scheduler_url
    return _user(apache.project)


def test_attach_with_the_returned_authenticator(apache, stock_client):
    user = _create_and_attach(apache, stock_client)
    assert stock_client.project_state(apache.master_url)["master_url"] == apache.master_url
    assert user is not None


@contextlib.contextmanager
def running_feeder(project, timeout=20):
    """PROJECT/bin/feeder running (the scheduler answers "feeder not running"
    without it, as BOINC's does); stopped by its pid afterwards."""
    from boincpy import shmem
    log = open(os.path.join(project.cfg.host_log_dir, "feeder.log"), "ab")
    proc = subprocess.Popen([project.bin("feeder"), "-d", "3", "--sleep_interval", "1"],
                            cwd=project.root, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                shmem.attach(project.cfg, wait_ready=0.5).close()
                break
            except Exception:
                assert proc.poll() is None, "the feeder exited with %s" % proc.returncode
                assert time.monotonic() < deadline, "the feeder made no job array"
                time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.skipif(not os.path.exists(os.path.join(REPO, "cgi-bin", "cgi")),
                    reason="the scheduler (cgi-bin/cgi) is not on this branch yet")
def test_first_scheduler_request_creates_the_host_of_that_user(apache, stock_client):
    url = apache.master_url
    with running_feeder(apache.project):
        user = _create_and_attach(apache, stock_client)
        hostid = stock_client.wait_for(lambda: stock_client.hostid(url), 90,
                                       "a host id from the scheduler")
    db = apache.project.connect()
    try:
        host = db.query_one("SELECT * FROM host WHERE id = %s", (hostid,))
    finally:
        db.close()
    assert host is not None and host["userid"] == user["id"]
    # the row describes this client, as its client_state.xml does
    info = stock_client.host_info()
    assert (host["p_ncpus"], host["os_name"], host["domain_name"]) == (
        int(info["p_ncpus"]), info["os_name"], info["domain_name"])
