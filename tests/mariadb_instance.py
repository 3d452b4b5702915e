"""A MariaDB server of a test's own (mariadbd on a socket in a temporary
directory, no TCP port), for tests that stop, kill and restart the database
server under load: the machine's MariaDB and other tests' databases are never
touched."""

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

    def __init__(self, parent):
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
        self.proc = subprocess.Popen(
            [MARIADBD, "--no-defaults", "--datadir=" + self.data, "--socket=" + self.socket,
             "--skip-networking", "--user=mysql", "--pid-file=" + os.path.join(self.run, "pid"),
             "--log-error=" + self.error_log, "--innodb-buffer-pool-size=64M",
             "--max-connections=200"],
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
