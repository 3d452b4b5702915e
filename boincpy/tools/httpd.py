"""A private Apache serving one BOINC project on a loopback port.

    python -m boincpy.tools.httpd start  PROJECT_DIR [--port N] [--address A] [--run_dir DIR]
    python -m boincpy.tools.httpd stop   PROJECT_DIR [--run_dir DIR]
    python -m boincpy.tools.httpd status PROJECT_DIR [--run_dir DIR]
    python -m boincpy.tools.httpd conf   PROJECT_DIR [--port N]      (print httpd.conf)

It writes a stand-alone httpd.conf (Debian's apache2 binary and modules, none
of /etc/apache2's site configuration) that listens on 127.0.0.1:PORT and
includes the project's own PROJECT/SHORT.httpd.conf written by make_project
(``--address``: another loopback address, e.g. 127.0.0.2 for a second web host),
so the URLs are exactly those of a real installation.  The port defaults to
the one in the project's master URL.  Its pid file, logs and configuration
live in RUN_DIR (default PROJECT/httpd/): error.log there holds the CGIs'
stderr.  Run as root, its children run as the project's <httpd_user>
(www-data), like a system Apache; otherwise as the calling user.

Apache is started with umask 002 so that directories and files the CGIs
create under upload/ and the log directory stay writable by the project's
group.
"""

import glob
import grp
import ipaddress
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

import click
import psutil

from boincpy import fcgi_pool
from boincpy.cli import boinc_option, click_main
from boincpy.config import load_config
from boincpy.errors import BoincpyError, ToolError
from boincpy.fcgi_pool import httpd_user
from boincpy.tools.control import start_persistent

MODULE_DIR = "/usr/lib/apache2/modules"
MODULES = (
    ("mpm_prefork_module", "mod_mpm_prefork.so"),
    ("authz_core_module", "mod_authz_core.so"),
    ("authz_host_module", "mod_authz_host.so"),
    ("authz_user_module", "mod_authz_user.so"),
    ("authn_core_module", "mod_authn_core.so"),
    ("authn_file_module", "mod_authn_file.so"),
    ("auth_basic_module", "mod_auth_basic.so"),
    ("alias_module", "mod_alias.so"),
    ("mime_module", "mod_mime.so"),
    ("dir_module", "mod_dir.so"),
    ("env_module", "mod_env.so"),
    ("cgi_module", "mod_cgi.so"),
)


def find_apache():
    """Path of the Apache binary (Debian: /usr/sbin/apache2)."""
    for name in ("apache2", "httpd"):
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
        if path:
            return path
    raise ToolError("Apache not found (Debian: apt-get install apache2)")


def project_snippet(project_dir):
    """PROJECT/SHORT.httpd.conf, written by make_project."""
    found = sorted(glob.glob(os.path.join(project_dir, "*.httpd.conf")))
    if len(found) != 1:
        raise ToolError("%s: expected one SHORT.httpd.conf written by make_project, found %s"
                        % (project_dir, ", ".join(map(os.path.basename, found)) or "none"))
    return found[0]


def _uses_proxy_fcgi(snippet):
    # the persistent mode's block (boincpy.tools.server_mode)
    with open(snippet, encoding="utf-8") as f:
        return '"proxy:unix:' in f.read()


def default_port(project_dir):
    """The port of the project's master URL if it is a loopback URL."""
    url = urlsplit(load_config(project_dir).master_url)
    if url.hostname in ("127.0.0.1", "localhost") and url.port:
        return url.port
    raise ToolError("the master URL %s is not on a loopback port: give --port"
                    % load_config(project_dir).master_url)


def loopback_address(address):
    """``address`` if it is an IPv4 loopback address (127.0.0.0/8), else ToolError:
    a private Apache never listens elsewhere."""
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        raise ToolError("--address %r is not an IPv4 address" % address) from None
    if not ip.is_loopback:
        raise ToolError("--address %s is not a loopback address (127.0.0.0/8)" % address)
    return str(ip)


def conf_text(project_dir, port, run_dir, user=None, address="127.0.0.1"):
    """The stand-alone httpd.conf.  ``user``: User/Group of the children (root
    only); ``address``: the loopback address it listens on."""
    lines = [
        "# Private Apache for the BOINC project in %s (boincpy.tools.httpd)" % project_dir,
        'ServerRoot "%s"' % run_dir,
        "ServerName %s" % address,
        "Listen %s:%d" % (address, port),
        'PidFile "%s"' % os.path.join(run_dir, "httpd.pid"),
        'DefaultRuntimeDir "%s"' % run_dir,
        'ErrorLog "%s"' % os.path.join(run_dir, "error.log"),
        "LogLevel warn",
    ]
    if user:
        group = pwd.getpwnam(user).pw_gid
        lines += ["User %s" % user, "Group %s" % grp.getgrgid(group).gr_name]
    lines += ["LoadModule %s %s" % (name, os.path.join(MODULE_DIR, so)) for name, so in MODULES]
    snippet = project_snippet(project_dir)
    if _uses_proxy_fcgi(snippet):
        # the persistent mode: requests to the project's FastCGI workers
        lines += ["LoadModule proxy_module %s" % os.path.join(MODULE_DIR, "mod_proxy.so"),
                  "LoadModule proxy_fcgi_module %s"
                  % os.path.join(MODULE_DIR, "mod_proxy_fcgi.so")]
    lines += [
        "StartServers 2",
        "MinSpareServers 1",
        "MaxSpareServers 4",
        "MaxRequestWorkers 32",
        "MaxConnectionsPerChild 0",
        "GracefulShutdownTimeout 5",
        "KeepAlive On",
        "Timeout 300",
        "TypesConfig /etc/mime.types",
        "DirectoryIndex index.html",
        'LogFormat "%h %t \\"%r\\" %>s %b %D" timed',
        'CustomLog "%s" timed' % os.path.join(run_dir, "access.log"),
        "<Directory />",
        "    Options None",
        "    AllowOverride None",
        "    Require all denied",
        "</Directory>",
        '<FilesMatch "^\\.ht">',
        "    Require all denied",
        "</FilesMatch>",
        'Include "%s"' % snippet,
    ]
    return "\n".join(lines) + "\n"


class PrivateApache:
    """One private Apache: ``start()``, ``stop()``, ``running()``; ``error_log``
    and ``access_log`` are its log files."""

    def __init__(self, project_dir, port=None, run_dir=None, user=None, address="127.0.0.1"):
        self.project_dir = os.path.abspath(project_dir)
        self.port = port
        self.address = loopback_address(address)
        self.run_dir = os.path.abspath(run_dir or os.path.join(self.project_dir, "httpd"))
        self.user = user
        self.conf_path = os.path.join(self.run_dir, "httpd.conf")
        self.pid_file = os.path.join(self.run_dir, "httpd.pid")
        self.error_log = os.path.join(self.run_dir, "error.log")
        self.access_log = os.path.join(self.run_dir, "access.log")

    # -- state ----------------------------------------------------------

    def pid(self):
        """The running Apache's parent pid, or None."""
        try:
            with open(self.pid_file) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def running(self):
        return self.pid() is not None

    # -- start/stop -----------------------------------------------------

    def write_conf(self):
        """Write RUN_DIR/httpd.conf; return its path."""
        if self.port is None:
            self.port = default_port(self.project_dir)
        user = self.user
        if user is None and os.geteuid() == 0:
            user = httpd_user(self.project_dir)
        os.makedirs(self.run_dir, exist_ok=True)
        with open(self.conf_path, "w") as f:
            f.write(conf_text(self.project_dir, self.port, self.run_dir, user, self.address))
        return self.conf_path

    def start(self, timeout=20.0):
        """Start Apache and wait until the port answers."""
        pid = self.pid()
        if pid:
            raise ToolError("Apache for %s is already running (pid %d)" % (self.project_dir, pid))
        self.write_conf()
        try:
            os.unlink(self.pid_file)
        except FileNotFoundError:
            pass
        self._start_workers()
        log_start = os.path.getsize(self.error_log) if os.path.exists(self.error_log) else 0
        proc = subprocess.run([find_apache(), "-f", self.conf_path, "-k", "start"],
                              capture_output=True, text=True, umask=0o002,
                              env=_apache_env(self.run_dir))
        if proc.returncode != 0:
            raise ToolError("apache2 failed to start (exit %d): %s%s" % (
                proc.returncode, proc.stderr.strip() or proc.stdout.strip(),
                self._log_tail(log_start)))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _port_open(self.port, self.address):
                if self.pid():
                    return self
            elif os.path.exists(self.pid_file) and not self.pid():
                break          # it started and died
            time.sleep(0.05)
        self.stop()
        raise ToolError("Apache did not answer on %s:%d%s"
                        % (self.address, self.port, self._log_tail(log_start)))

    def stop(self, timeout=10.0, graceful=True):
        """Stop Apache: graceful-stop (requests in progress finish; takes about
        a second), or with ``graceful=False`` Apache's immediate stop.  If it
        is not gone after ``timeout`` seconds, kill its process group.
        Returns False if it was not running."""
        pid = self.pid()
        if pid is None:
            self._stop_workers()
            return False
        if not _is_apache(pid):
            raise ToolError("pid %d in %s is not Apache; not stopping it" % (pid, self.pid_file))
        try:
            os.kill(pid, signal.SIGWINCH if graceful else signal.SIGTERM)
        except ProcessLookupError:
            pass
        if not _wait_group_gone(pid, timeout):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(pid, sig)
                except ProcessLookupError:
                    break
                if _wait_group_gone(pid, 3.0):
                    break
        try:
            os.unlink(self.pid_file)
        except FileNotFoundError:
            pass
        self._stop_workers()
        return True

    # -- the persistent mode's workers ---------------------------------------

    def _start_workers(self):
        # In persistent mode the project's FastCGI workers must be up before
        # Apache takes requests: started here as bin/start would (unless it
        # did), and stopped with Apache; the other daemons stay the user's.
        marker = os.path.join(self.run_dir, "workers_started")
        running = fcgi_pool.master_pid(self.project_dir) is not None
        if start_persistent(self.project_dir) and not running:
            with open(marker, "w") as f:
                f.write("%d\n" % fcgi_pool.master_pid(self.project_dir))

    def _stop_workers(self):
        marker = os.path.join(self.run_dir, "workers_started")
        if os.path.exists(marker):
            fcgi_pool.stop(self.project_dir)
            os.unlink(marker)

    def _log_tail(self, start):
        try:
            with open(self.error_log, errors="replace") as f:
                f.seek(start)
                tail = f.read()[-2000:].strip()
        except OSError:
            return ""
        return "\n%s:\n%s" % (self.error_log, tail) if tail else ""


def _apache_env(run_dir):
    # Debian's apache2 reads nothing from the environment unless the config
    # uses ${APACHE_*}; set them anyway for tools that look.
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    env.setdefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    env.update({"APACHE_RUN_DIR": run_dir, "APACHE_PID_FILE": os.path.join(run_dir, "httpd.pid"),
                "APACHE_LOG_DIR": run_dir, "APACHE_LOCK_DIR": run_dir})
    return env


def _alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _is_apache(pid):
    try:
        name = psutil.Process(pid).name()
    except psutil.Error:
        return True          # gone already: nothing will be signalled
    return "apache" in name or "httpd" in name


def _group_alive(pgid):
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.info["pid"]) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.Error):
            continue
    return False


def _wait_group_gone(pgid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return True
        time.sleep(0.05)
    return not _group_alive(pgid)


def _port_open(port, address="127.0.0.1"):
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port():
    """A TCP port free on 127.0.0.1 now (for a project's URL before Apache starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command():

    @click.command(help="A private Apache for one BOINC project.",
                   context_settings={"help_option_names": ["-h", "--help"]})
    @click.argument("action", type=click.Choice(("start", "stop", "status", "conf")))
    @click.argument("project_dir")
    @boinc_option("port", type=int, default=None, help="default: the master URL's port")
    @boinc_option("address", default="127.0.0.1",
                  help="loopback address to listen on (default 127.0.0.1)")
    @boinc_option("run_dir", default=None,
                  help="configuration, pid file and logs (default PROJECT/httpd)")
    @boinc_option("user", default=None, help="user of Apache's children when run as root "
                  "(default: config.xml's httpd_user, else www-data)")
    def httpd(action, project_dir, port, address, run_dir, user):
        return run_action(action, project_dir, port, run_dir, user, address)
    return httpd


def main(argv=None):
    """``python -m boincpy.tools.httpd start|stop|status|conf PROJECT_DIR``."""
    return click_main(_command(), argv, "python -m boincpy.tools.httpd")


def run_action(action, project_dir, port=None, run_dir=None, user=None, address="127.0.0.1"):
    """Start, stop, show or print the configuration of a project's private
    Apache; returns the exit status (status: 3 when it is not running)."""
    try:
        server = PrivateApache(project_dir, port, run_dir, user, address)
        if action == "start":
            server.start()
            print("Apache for %s listening on http://%s:%d/ (pid %d, logs in %s)"
                  % (server.project_dir, server.address, server.port, server.pid(),
                     server.run_dir))
        elif action == "stop":
            print("stopped" if server.stop() else "not running")
        elif action == "status":
            pid = server.pid()
            print("running (pid %d)" % pid if pid else "not running")
            return 0 if pid else 3
        else:
            if server.port is None:
                server.port = default_port(server.project_dir)
            user = user or (httpd_user(server.project_dir) if os.geteuid() == 0 else None)
            sys.stdout.write(conf_text(server.project_dir, server.port, server.run_dir, user,
                                       server.address))
    except BoincpyError as exc:
        sys.stderr.write("httpd: ERROR: %s\n" % exc.message)
        return exc.exit_code or 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
