"""A MariaDB server of a test's own (mariadbd on a socket in a temporary
directory, no TCP port unless asked), for tests that stop, kill and restart
the database server under load, or run a primary with a replica: the
machine's MariaDB and other tests' databases are never touched."""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import MySQLdb

MARIADBD = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
INSTALL_DB = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"


def available():
    return os.path.exists(MARIADBD) and os.path.exists(INSTALL_DB) and os.geteuid() == 0


class MariaDB:
    """A private mariadbd: ``params`` are root's connection arguments (socket).

    The directory (under ``parent``) is world-traversable so that Apache's
    children (www-data) reach the socket; the server runs as ``mysql``."""

    def __init__(self, parent, port=None, options=()):
        """``port``: also listen on 127.0.0.1:PORT; ``options``: more
        mariadbd options (e.g. --server-id=1, --log-bin)."""
        self.port = port
        self.options = list(options)
        self.dir = tempfile.mkdtemp(prefix="mariadb-", dir=parent)
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.run = os.path.join(self.dir, "run")
        mysql = pwd.getpwnam("mysql")
        for d in (self.data, self.run):
            os.mkdir(d, 0o755)
            os.chown(d, mysql.pw_uid, mysql.pw_gid)
        self.socket = os.path.join(self.run, "mysqld.sock")
        self.error_log = os.path.join(self.run, "error.log")
        self.params = {"user": "root", "passwd": "", "unix_socket": self.socket}
        self.proc = None
        self.restarts = 0
        subprocess.run([INSTALL_DB, "--no-defaults", "--datadir=" + self.data, "--user=mysql",
                        "--skip-test-db", "--auth-root-authentication-method=normal"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def start(self, timeout=60.0):
        """Start the server; return once it accepts connections."""
        network = (["--port=%d" % self.port, "--bind-address=127.0.0.1"] if self.port
                   else ["--skip-networking"])
        self.proc = subprocess.Popen(
            [MARIADBD, "--no-defaults", "--datadir=" + self.data, "--socket=" + self.socket]
            + network + ["--user=mysql", "--pid-file=" + os.path.join(self.run, "pid"),
                         "--log-error=" + self.error_log, "--innodb-buffer-pool-size=64M",
                         "--max-connections=200"] + self.options,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            try:
                MySQLdb.connect(**self.params).close()
                return
            except MySQLdb.Error:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("mariadbd did not start (see %s)" % self.error_log)
                time.sleep(0.1)

    def stop(self, sig=signal.SIGTERM, timeout=60.0):
        """Stop the server (SIGTERM: a clean shutdown; SIGKILL: a crash)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self, sig=signal.SIGTERM):
        """Stop (``sig``) and start again; returns the seconds it was away."""
        t = time.monotonic()
        self.stop(sig)
        self.start()
        self.restarts += 1
        return time.monotonic() - t

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


REPL_USER, REPL_PASSWD = "repl", "repl-pw"


def primary_and_replica(parent, primary_port, replica_port, general_log=True):
    """Two fresh servers on 127.0.0.1: a primary writing a binary log and a
    replica following it from its first event (MariaDB's GTID replication),
    both with their general query log on (``general_log_path``) if asked.
    root may log in over TCP from 127.0.0.1 on the primary (replicated to the
    replica).  Returns (primary, replica), started."""
    def opts(server_id, log_name):
        extra = ["--server-id=%d" % server_id, "--log-bin=binlog", "--binlog-format=ROW"]
        if general_log:
            extra += ["--general-log=1", "--general-log-file=" + log_name]
        return extra
    primary = MariaDB(parent, primary_port, opts(1, "primary.general.log"))
    replica = MariaDB(parent, replica_port, opts(2, "replica.general.log") + ["--read-only=1"])
    for server in (primary, replica):
        server.general_log_path = os.path.join(server.data, os.path.basename(
            [o for o in server.options if o.startswith("--general-log-file=")][0].split("=", 1)[1]
        )) if general_log else None
        server.start()
    conn = MySQLdb.connect(**primary.params)
    cur = conn.cursor()
    cur.execute("SET sql_log_bin = 0")
    cur.execute("CREATE USER %s@'127.0.0.1' IDENTIFIED BY %s", (REPL_USER, REPL_PASSWD))
    cur.execute("GRANT REPLICATION SLAVE ON *.* TO %s@'127.0.0.1'", (REPL_USER,))
    cur.execute("SET sql_log_bin = 1")
    conn.close()
    conn = MySQLdb.connect(**replica.params)
    cur = conn.cursor()
    cur.execute("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%s, MASTER_USER=%s, "
                "MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos",
                (primary_port, REPL_USER, REPL_PASSWD))
    cur.execute("START SLAVE")
    conn.close()
    # from here on, what the primary does the replica does
    conn = MySQLdb.connect(**primary.params)
    cur = conn.cursor()
    cur.execute("CREATE USER IF NOT EXISTS root@'127.0.0.1'")
    cur.execute("GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION")
    conn.close()
    return primary, replica


def wait_replicated(primary, replica, timeout=60.0):
    """Wait until the replica has applied everything the primary logged so far."""
    conn = MySQLdb.connect(**primary.params)
    cur = conn.cursor()
    cur.execute("SELECT @@gtid_binlog_pos")
    pos = cur.fetchone()[0]
    conn.close()
    conn = MySQLdb.connect(**replica.params)
    cur = conn.cursor()
    cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (pos, timeout))
    ok = cur.fetchone()[0]
    conn.close()
    if ok != 0:
        raise AssertionError("replica did not reach %s within %ds" % (pos, timeout))
