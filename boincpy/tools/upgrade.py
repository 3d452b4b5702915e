"""upgrade: take a BOINC project over in place, as BOINC's tools/upgrade
upgrades one to a new BOINC release.

    upgrade [--web_only | --server_only] [--srcdir DIR] [--dry_run] [--yes] [--php]
            [--check_schema] [--for_boinc] project_root

The project is one made by BOINC's C++ make_project (ELF programs in bin/ and
cgi-bin/, BOINC's PHP site in html/) or by an older boincpy.  After a
confirmation (``--yes``, or "y" on stdin, as BOINC's asks), upgrade stops
the project with the project's own ``bin/stop``, keeps a copy of every file
it replaces under ``PROJECT/upgrade_backup/TIMESTAMP/`` (same relative
paths), installs boincpy's programs (bin/, cgi-bin/), pages (html/user,
html/ops) and Apache configuration as make_project does, and brings the
database to boincpy's schema revision (:mod:`boincpy.db.revision`, which
records each update in ``PROJECT/db_revision`` once it succeeded).  It keeps
config.xml (its options boincpy doesn't know are reported, and stay), the
keys, download/ and upload/, the logs and every row.  The project's pages
boincpy does not serve stay its PHP pages, served by PHP beside boincpy's
CGIs; the tool lists which are which.  Where the web server has no PHP
(Debian's Apache with neither mod_php nor php-fpm enabled; ``--php`` says
it has, for another layout), those pages are refused rather than sent as
their source.  It ends by telling the operator to run ``bin/start``.

``--web_only``: pages and Apache configuration only; ``--server_only``:
programs only (BOINC's meaning); either way the database is brought up to
date.  ``--dry_run`` lists every file it would replace or add and every
database update, and changes nothing.  ``--for_boinc`` is the way back: it
prepares a boincpy project for BOINC's own tools/upgrade (html/project/,
db_revision, an Apache configuration for BOINC's PHP pages).  ``--check_schema`` only compares the
live database with boincpy's schema and prints the differences (exit 1 if
there are any).

As with BOINC's tool, PROJECT_ROOT is a path, or a name under
``$HOME/projects``.
"""

import glob
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import click

from boincpy import fcgi_pool
from boincpy.cli import click_main, group_flag, option, resolve_groups
from boincpy.config import CONFIG_FILE, command_basename, load_config
from boincpy.db import connect, revision
from boincpy.errors import ToolError
from boincpy.files import atomic_write
from boincpy.tools import make_project as mp, server_mode
from boincpy.tools.make_project import (REPO_ROOT, _ask as ask, boinc_php_settings, compile_package,
                                        httpd_base)
from boincpy.tools.server_mode import cgi_paths
from boincpy.web import csrf

BACKUP_DIR = "upgrade_backup"

# BOINC's programs a C++ project has in bin/ and cgi-bin/ (any one compiled
# is enough to know the project's server is BOINC's C++ one).
_CXX_PROGRAMS = ("cgi-bin/cgi", "cgi-bin/file_upload_handler", "bin/feeder",
                 "bin/transitioner", "bin/file_deleter")
# The files of BOINC's PHP site.
_PHP_SITE = ("html/inc/util.inc", "html/inc/boinc_db.inc")
_SERVER_DIRS = ("bin", "cgi-bin")
_WEB_DIRS = ("html/user", "html/ops")


def _head(path, n=4096):
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def is_elf(path):
    """True for a compiled program (what BOINC's make_project installs)."""
    return _head(path, 4) == b"\x7fELF"


def is_boincpy_script(path):
    """True for a program boincpy installed (a Python script running boincpy)."""
    head = _head(path)
    return head.startswith(b"#!") and b"boincpy" in head


def is_php(path):
    """True for a PHP page or include file."""
    return b"<?php" in _head(path, 8192)


@dataclass
class Project:
    """What upgrade found in the project directory."""

    root: str
    cfg: object
    kind: str                       # "BOINC C++" or "boincpy"
    evidence: list
    short_name: str
    conf_path: str                  # PROJECT/SHORT.httpd.conf (may not exist yet)


def project_root_arg(arg):
    """The project root as BOINC's tools/upgrade takes it: an absolute path,
    else a name under $HOME/projects (a relative path that exists is taken
    as it is, which BOINC's would not find)."""
    if os.path.isabs(arg) or os.path.isdir(arg):
        return os.path.abspath(arg)
    return os.path.join(os.path.expanduser("~"), "projects", arg)


def _short_name(root, cfg):
    found = [n for n in sorted(os.listdir(root)) if n.endswith(".httpd.conf")]
    if len(found) == 1:
        return found[0][:-len(".httpd.conf")]
    path = urlsplit(cfg.master_url or "").path.strip("/")
    if path:
        return path.split("/")[-1]
    return os.path.basename(root)


def recognise_project(root):
    """The Project in ``root``, or ToolError saying why it is not one upgrade
    can take (nothing is changed)."""
    if not os.path.isdir(root):
        raise ToolError("%s: no such project directory" % root)
    if not os.path.isfile(os.path.join(root, CONFIG_FILE)):
        raise ToolError("%s has no config.xml: not a BOINC project's directory" % root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # unknown options: reported below, once
        cfg = load_config(root)
    cxx = [p for p in _CXX_PROGRAMS if is_elf(os.path.join(root, p))]
    ours = [p for p in _CXX_PROGRAMS if is_boincpy_script(os.path.join(root, p))]
    php = [p for p in _PHP_SITE if os.path.isfile(os.path.join(root, p))]
    if cxx or (php and not ours):
        kind = "BOINC C++"
        evidence = (["compiled programs: " + ", ".join(cxx)] if cxx else []) + \
            (["BOINC's PHP site: " + ", ".join(php)] if php else [])
    elif ours:
        kind = "boincpy"
        evidence = ["boincpy's programs: " + ", ".join(ours)]
    else:
        raise ToolError("%s: neither BOINC's compiled programs nor boincpy's in bin/ and "
                        "cgi-bin/ (%s), nor BOINC's PHP site (%s): not a project upgrade "
                        "can take over" % (root, ", ".join(_CXX_PROGRAMS), ", ".join(_PHP_SITE)))
    if not cfg.master_url:
        raise ToolError("%s: config.xml has no <master_url>" % cfg.path)
    short = _short_name(root, cfg)
    return Project(root, cfg, kind, evidence, short, os.path.join(root, short + ".httpd.conf"))


def _url_base(url):
    parts = urlsplit(url)
    return "%s://%s/" % (parts.scheme, parts.netloc)


def project_spec(project, srcdir):
    """make_project's ProjectSpec for this existing project (its URLs, paths
    and names as config.xml gives them), for the files make_project writes."""

    cfg = project.cfg
    url_base = _url_base(cfg.master_url)
    # the cgi-bin URL, as BOINC's make_project made it: upload_url's directory
    # (config.xml's <cgi_url> is read by no BOINC program, so not trusted here)
    cgi_url = url_base + project.short_name + "_cgi/"
    if cfg.upload_url.endswith("file_upload_handler"):
        cgi_url = cfg.upload_url[:-len("file_upload_handler")]
    ops_url = url_base + project.short_name + "_ops/"
    httpd_user = fcgi_pool.httpd_user(project.root)
    httpd_gid = pwd.getpwnam(httpd_user).pw_gid
    persistent, processes = False, server_mode.DEFAULT_PROCESSES
    if os.path.isfile(project.conf_path):
        with open(project.conf_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        persistent = server_mode.current_mode(text) == "persistent"
        m = re.search(r"(\d+) long-lived", text)
        if m:
            processes = int(m.group(1))
    key_dir = os.path.abspath(cfg.key_dir).rstrip(os.sep)
    root = project.root
    for what, path in (("project root", root), ("key_dir", key_dir)):
        if re.search(r'["\n\\]', path):
            raise ToolError("%s %r: no quotes, backslashes or newlines (it goes into the "
                            "Apache configuration)" % (what, path))
    return mp.ProjectSpec(
        short_name=project.short_name, long_name=cfg.long_name or project.short_name,
        project_root=root, project_host=(cfg.host or cfg.local_host).split(".")[0],
        url_base=url_base, master_url=cfg.master_url, ops_url=ops_url, cgi_url=cgi_url,
        key_dir=key_dir, db_name=cfg.db_name, db_user=cfg.db_user, db_passwd="",
        db_host=cfg.db_host, db_socket="", db_root_user="", db_root_passwd="",
        user_name="", httpd_user=httpd_user, httpd_gid=httpd_gid, srcdir=srcdir,
        persistent=persistent, processes=processes)


# ---------------------------------------------------------------------------
# What changes

@dataclass
class Change:
    rel: str
    data: bytes
    mode: int
    action: str             # "replace" or "add"


@dataclass
class Plan:
    changes: list = field(default_factory=list)
    unchanged: int = 0
    dirs: list = field(default_factory=list)        # (rel, mode, group) to create
    boincpy_pages: dict = field(default_factory=dict)   # "html/user" -> names
    php_pages: dict = field(default_factory=dict)       # "html/user" -> the project's PHP
    other_pages: dict = field(default_factory=dict)     # ... not PHP (older boincpy's)
    secret: str = ""                                # the ops form secret to create
    persistent: bool = False
    php: bool = True                                # the web server runs PHP


def _file_data(path):
    with open(path, "rb") as f:
        return f.read()


def _consider(plan, root, rel, data, mode, only_if_missing=False):
    dest = os.path.join(root, rel)
    if os.path.lexists(dest):
        if only_if_missing:
            return
        if not os.path.islink(dest) and os.path.isfile(dest) and _file_data(dest) == data \
                and (os.stat(dest).st_mode & 0o7777) == mode:
            plan.unchanged += 1
            return
        plan.changes.append(Change(rel, data, mode, "replace"))
    else:
        plan.changes.append(Change(rel, data, mode, "add"))


APACHE_DIR = "/etc/apache2"


def apache_runs_php(apache_dir=APACHE_DIR):
    """Whether Debian's Apache configuration in ``apache_dir`` runs PHP:
    mod_php enabled (mods-enabled/php*.load) or php-fpm's configuration
    enabled (conf-enabled/php*-fpm.conf)."""
    return bool(glob.glob(os.path.join(apache_dir, "mods-enabled", "php*.load"))
                or glob.glob(os.path.join(apache_dir, "conf-enabled", "php*-fpm.conf")))


def plan_upgrade(project, spec, web=True, server=True, php=None):
    """Every file upgrade would replace or add, every directory it would
    create, and which pages are whose.  ``php``: whether the web server
    runs PHP (None: :func:`apache_runs_php`); where it doesn't, the Apache
    configuration refuses the project's other .php files, which would be
    sent as their source.  Touches nothing in the project."""
    root = project.root
    plan = Plan(persistent=spec.persistent, php=apache_runs_php() if php is None else php)
    python = sys.executable
    paths = cgi_paths(python)
    dirs = (_SERVER_DIRS if server else ()) + (_WEB_DIRS if web else ())
    stage = tempfile.mkdtemp(prefix="boincpy-upgrade-")
    try:
        for d in dirs:
            # the files as make_project installs them (interpreter lines, modes)
            copied = mp.copy_tree_files(os.path.join(spec.srcdir, d), os.path.join(stage, d),
                                        python, paths if d in mp.FAST_START_DIRS else None)
            for rel in copied:
                src = os.path.join(stage, d, rel)
                _consider(plan, root, os.path.join(d, rel), _file_data(src),
                          os.stat(src).st_mode & 0o7777)
            if d in _WEB_DIRS:
                plan.boincpy_pages[d] = sorted(r for r in copied if r.endswith(".php")
                                               and os.sep not in r)
    finally:
        shutil.rmtree(stage, ignore_errors=True)

    if web:
        for d in _WEB_DIRS:
            ours = set(plan.boincpy_pages[d])
            full = os.path.join(root, d)
            names = sorted(n for n in os.listdir(full) if n.endswith(".php") and n not in ours) \
                if os.path.isdir(full) else []
            plan.php_pages[d] = [n for n in names if is_php(os.path.join(full, n))]
            plan.other_pages[d] = [n for n in names if n not in plan.php_pages[d]]
        kept_php = any(plan.php_pages.values())
        conf = mp.httpd_conf(spec, plan.boincpy_pages if kept_php else None,
                             refuse_other_php=kept_php and not plan.php)
        _consider(plan, root, os.path.basename(project.conf_path), conf.encode(), 0o644)
        # what BOINC's own tools/upgrade reads, for the way back
        for rel, text in mp.boinc_php_settings(spec.long_name).items():
            _consider(plan, root, rel, text.encode(), 0o644, only_if_missing=True)
    if server:
        _consider(plan, root, "html/user/schedulers.txt", mp.schedulers_txt(spec).encode(),
                  0o644, only_if_missing=True)
        secret = os.path.join(spec.key_dir, csrf.SECRET_FILE)
        if not os.path.exists(secret):
            plan.secret = secret
    plan.dirs = [(d, mode, group) for d, mode, group in mp.project_dirs(spec)
                 if not os.path.isdir(os.path.join(root, d))]
    return plan


# ---------------------------------------------------------------------------
# Doing it

def _backup_dir(root):
    base = os.path.join(root, BACKUP_DIR, time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    path, n = base, 1
    while os.path.lexists(path):
        n += 1
        path = "%s-%d" % (base, n)
    return path


def install(project, spec, plan, say):
    """Back up what ``plan`` replaces, then write its files and directories;
    returns the backup directory (None when nothing was replaced)."""
    root = project.root
    perms = mp._Perms(spec.httpd_gid)
    for d, mode, group in plan.dirs:
        os.makedirs(os.path.join(root, d), exist_ok=True)
        os.chmod(os.path.join(root, d), mode)
        if group:
            perms.group(os.path.join(root, d), mode)
    backup = None
    replaced = [c for c in plan.changes if c.action == "replace"]
    if replaced:
        backup = _backup_dir(root)
        for c in replaced:
            dest = os.path.join(backup, c.rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            # a symbolic link (BOINC's bin/stop -> start) is kept as the link
            shutil.copy2(os.path.join(root, c.rel), dest, follow_symlinks=False)
        say("Backed up %d files in %s" % (len(replaced), backup))
    for c in plan.changes:
        dest = os.path.join(root, c.rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        atomic_write(dest, c.data, mode=c.mode)      # replaces a link, not its target
    if plan.secret:
        csrf.create_secret(plan.secret)
        perms.group(plan.secret, 0o640)
    if plan.persistent:
        server_mode.set_mode(root, "persistent", spec.processes)
    if perms.failed:
        say("NOTE: could not give these to group %s (the web server's): %s"
            % (spec.httpd_user, " ".join(perms.failed)))
    return backup


def _stop(root, say):
    stop = os.path.join(root, "bin", "stop")
    if not os.path.exists(stop):
        raise ToolError("%s is missing: can't stop the project" % stop)
    say("Stopping the project (bin/stop)")
    proc = subprocess.run([stop], cwd=root, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise ToolError("Couldn't stop project! (bin/stop exited with %d); nothing was changed"
                        % proc.returncode)


def _program_names(srcdir):
    return set(os.listdir(os.path.join(srcdir, "bin")))


def report_config(project, srcdir, say):
    """Say what of config.xml boincpy doesn't know (kept as it is) and which
    daemons and tasks stay the project's own programs."""
    cfg = project.cfg
    if cfg.unknown:
        say("config.xml is kept as it is; options boincpy does not know (kept, not used "
            "by boincpy): %s" % ", ".join(sorted(cfg.unknown)))
    else:
        say("config.xml is kept as it is (boincpy knows every option in it)")
    if "httpd_user" not in cfg.raw:
        say("NOTE: config.xml has no <httpd_user> (BOINC's make_project doesn't write it): "
            "the web server's user is taken to be www-data; add <httpd_user> if it is "
            "another")
    ours = _program_names(srcdir)
    own, php = [], []
    for spec in list(cfg.daemons) + list(cfg.tasks):
        name = command_basename(spec.cmd)
        if spec.cmd.split()[:1] == ["run_in_ops"]:
            # BOINC's make_project lists its PHP ops scripts as "run_in_ops
            # ./NAME.php"; boincpy's run_in_ops runs bin/NAME for them, and
            # can't run the PHP scripts it has no program for
            stem = name[:-4] if name.endswith(".php") else name
            if stem not in ours:
                php.append(name + (" (disabled)" if spec.disabled else ""))
            continue
        if name not in ours:
            present = os.path.exists(os.path.join(project.root, "bin", name))
            own.append("%s%s" % (name, "" if present else " (MISSING from bin/)"))
    if own:
        say("daemons and tasks that stay the project's own programs: %s"
            % ", ".join(sorted(set(own))))
    if php:
        say("tasks boincpy's run_in_ops can't run (BOINC's PHP ops scripts, no boincpy "
            "program for them; disable or remove them in config.xml): %s"
            % ", ".join(sorted(set(php))))


def report_pages(plan, say):
    """Print which pages boincpy serves and which stay the project's PHP."""
    for d in _WEB_DIRS:
        if d not in plan.boincpy_pages:
            continue
        say("%s: boincpy serves %d pages: %s" % (d, len(plan.boincpy_pages[d]),
                                                 " ".join(plan.boincpy_pages[d])))
        php = plan.php_pages.get(d) or []
        if plan.php or not php:
            say("%s: the project's own PHP pages, still served by PHP (%d): %s"
                % (d, len(php), " ".join(php) or "none"))
        else:
            say("%s: the project's own PHP pages, refused (HTTP 403) since the web server "
                "has no PHP to run them and would send their source (%d): %s"
                % (d, len(php), " ".join(php)))
        other = plan.other_pages.get(d) or []
        if other:
            say("%s: other .php files left as they are, not PHP (an older boincpy's?): %s"
                % (d, " ".join(other)))


def _connect(cfg):
    return connect(cfg)


def check_schema(project_root, out):
    """``--check_schema``: print the differences; 1 if there are any."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = load_config(project_root)
    db = _connect(cfg)
    try:
        lines = revision.check_schema(db)
    finally:
        db.close()
    for line in lines:
        out.write(line + "\n")
    if lines:
        out.write("%d differences from boincpy's schema (revision %d)\n"
                  % (len(lines), revision.LATEST))
        return 1
    out.write("The database matches boincpy's schema (revision %d)\n" % revision.LATEST)
    return 0


def _ask(question):
    return ask(question)


def upgrade(project_root, srcdir=None, web=True, server=True, dry_run=False, yes=False,
            out=None, php=None):
    """Take the project in ``project_root`` over (see the module docstring);
    ``php``: whether the web server runs PHP (None: found out,
    :func:`apache_runs_php`).  Returns the exit status.  BoincpyError for
    anything that stops it before a change (or, naming the update, a failed
    database update)."""
    out = out or sys.stdout

    def say(text):
        out.write(text + "\n")
        out.flush()

    srcdir = os.path.abspath(srcdir or REPO_ROOT)
    if not (os.path.isdir(os.path.join(srcdir, "bin")) and
            os.path.isdir(os.path.join(srcdir, "cgi-bin"))):
        raise ToolError("--srcdir %s: not a boincpy source tree (no bin/ and cgi-bin/)" % srcdir)
    project = recognise_project(project_root)
    say("%s: a project made by %s (%s)" % (project.root, project.kind,
                                          "; ".join(project.evidence)))
    spec = project_spec(project, srcdir)
    db = _connect(project.cfg)
    try:
        revision.recognise(db, project.root)     # refuses a database it can't take
        plan = plan_upgrade(project, spec, web, server, php)

        report_config(project, srcdir, say)
        if web:
            report_pages(plan, say)
        for c in plan.changes:
            say("  %s %s" % ("replace" if c.action == "replace" else "add    ", c.rel))
        for d, _, _ in plan.dirs:
            say("  mkdir   %s" % d)
        if plan.secret:
            say("  add     %s" % plan.secret)
        say("%d files to replace, %d to add, %d unchanged"
            % (sum(c.action == "replace" for c in plan.changes),
               sum(c.action == "add" for c in plan.changes), plan.unchanged))
        stop = _db_plan_and_confirm(db, project, dry_run, yes,
                                    "Overwrite files in %s" % project.root, say)
        if stop is not None:
            return stop
        if server:
            _stop(project.root, say)
        say("Upgrading files... ")
        backup = install(project, spec, plan, say)
        say("Upgrading files... done")
        if backup:
            say("The files replaced are in %s" % backup)
        say("Checking for DB updates")
        revision.apply_updates(db, project.root, log=say)
        say("db_revision: %d" % revision.read_revision(project.root))
    finally:
        db.close()
    compile_package()
    if web and not os.path.exists(os.path.join(project.root, "html", "ops", ".htpasswd")):
        say("NOTE: boincpy's Apache configuration protects the ops pages with "
            "html/ops/.htpasswd, which is missing: create it with htpasswd -B -c")
    if web:
        say("Reload Apache to serve %s (apache2ctl graceful)" % project.conf_path)
    say("Run `bin/start' to restart the project.")
    return 0


def _db_plan_and_confirm(db, project, dry_run, yes, question, say):
    """Print the database's plan (each pending update with the statements it
    would run, and boincpy's own additions), then stop for --dry_run or a
    "no": the exit status then, None to go on."""
    for line in revision.describe_pending(db, project.root):
        say(line)
    if dry_run:
        say("--dry_run: nothing was changed")
        return 0
    if not yes and not _ask(question):
        say("Nothing was changed")
        return 1
    return None


# ---------------------------------------------------------------------------
# The way back: a boincpy project prepared for BOINC's own tools/upgrade

def boinc_httpd_conf(spec):
    """SHORT.httpd.conf for the project once BOINC's PHP pages and C++
    programs serve it (what BOINC's make_project writes, in substance): the
    same URLs; html/ pages are PHP's, cgi-bin/ holds CGI programs."""
    root = spec.project_root
    return """\
## Apache 2.4 configuration of the BOINC project "{long}" ({short}) for BOINC's
## C++ programs and PHP pages, written by boincpy's bin/upgrade --for_boinc.
## Modules: alias, cgi (or cgid), PHP (mod_php or php-fpm), auth_basic,
## authn_file, authz_core, authz_user.

{base}
# Static files only: no PHP, no CGI.
<Directory "{root}/download">
    Options FollowSymLinks
    SetHandler none
    RemoveType .php .phtml
    Require all granted
</Directory>
<Directory "{root}/html/stats">
    SetHandler none
    RemoveType .php .phtml
    Require all granted
</Directory>
<Directory "{root}/html/user_profile">
    SetHandler none
    RemoveType .php .phtml
    Require all granted
</Directory>

# BOINC's PHP pages (PHP's own handler runs every .php).
<Directory "{root}/html/user">
    Options FollowSymLinks
    DirectoryIndex index.php index.html
    Require all granted
</Directory>
<Directory "{root}/html/ops">
    Options FollowSymLinks
    DirectoryIndex index.php
    AuthType Basic
    AuthName "{short} administration"
    AuthUserFile "{root}/html/ops/.htpasswd"
    Require valid-user
</Directory>

# The scheduler (cgi) and the upload handler: BOINC's compiled programs.
<Directory "{root}/cgi-bin">
    Options ExecCGI
    SetHandler cgi-script
    Require all granted
</Directory>
<FilesMatch "^\\.ht">
    Require all denied
</FilesMatch>
""".format(long=spec.long_name, short=spec.short_name, root=root,
           base=httpd_base(spec, deny=(os.path.join(root, "html", "cache"),)))


def for_boinc(project_root, dry_run=False, yes=False, out=None):
    """``--for_boinc``: prepare a boincpy project for BOINC's tools/upgrade
    (what its PHP steps read: html/project/, db_revision at BOINC's revision)
    and write the Apache configuration BOINC's pages need (the old one backed
    up).  Programs, pages, keys, files and rows are left to BOINC's tool."""
    out = out or sys.stdout

    def say(text):
        out.write(text + "\n")
        out.flush()

    project = recognise_project(project_root)
    if project.kind != "boincpy":
        raise ToolError("%s is served by BOINC's programs already (%s): nothing to prepare"
                        % (project.root, "; ".join(project.evidence)))
    spec = project_spec(project, REPO_ROOT)
    plan = Plan()
    for rel, text in boinc_php_settings(spec.long_name).items():
        _consider(plan, project.root, rel, text.encode(), 0o644, only_if_missing=True)
    _consider(plan, project.root, os.path.basename(project.conf_path),
              boinc_httpd_conf(spec).encode(), 0o644)
    db = _connect(project.cfg)
    try:
        for c in plan.changes:
            say("  %s %s" % ("replace" if c.action == "replace" else "add    ", c.rel))
        stop = _db_plan_and_confirm(db, project, dry_run, yes,
                                    "Prepare %s for BOINC's tools/upgrade" % project.root, say)
        if stop is not None:
            return stop
        backup = install(project, spec, plan, say)
        if backup:
            say("The files replaced are in %s" % backup)
        revision.apply_updates(db, project.root, log=say)
    finally:
        db.close()
    say("db_revision: %d (BOINC's numbering)" % revision.read_revision(project.root))
    say("Now, from BOINC's source tree (built with make): tools/upgrade %s" % project.root)
    say("then reload Apache (apache2ctl graceful) and run `bin/start'.")
    return 0


# ---------------------------------------------------------------------------
# Command line

def _command():
    params = [
        click.Argument(["project_root"], metavar="PROJECT_ROOT"),
        group_flag("web_only", "part", help="install only the pages and the Apache "
                   "configuration"),
        group_flag("server_only", "part", help="install only the programs (bin/, cgi-bin/)"),
        option("srcdir", default=None, metavar="DIR",
               help="boincpy source tree (default: the one this tool runs from)"),
        option("dry_run", is_flag=True, default=False,
               help="list every file it would replace or add and every database update; "
                    "change nothing"),
        option("yes", is_flag=True, default=False,
               help="don't ask for confirmation (else answer y on stdin)"),
        option("for_boinc", is_flag=True, default=False,
               help="the way back: prepare a boincpy project for BOINC's own tools/upgrade "
                    "(html/project/, db_revision, an Apache configuration for BOINC's PHP "
                    "pages)"),
        option("php", is_flag=True, default=False,
               help="the web server runs PHP (mod_php or php-fpm), where this tool can't "
                    "tell (it reads Debian's %s): the project's own PHP pages are then "
                    "left to it, not refused" % APACHE_DIR),
        option("check_schema", is_flag=True, default=False,
               help="only compare the database with boincpy's schema and print the "
                    "differences (exit 1 if any)"),
    ]

    def callback(**values):
        values = resolve_groups(params, values)
        root = project_root_arg(values["project_root"])
        if values["check_schema"]:
            return check_schema(root, sys.stdout)
        if values["for_boinc"]:
            return for_boinc(root, dry_run=values["dry_run"], yes=values["yes"])
        return upgrade(root, values["srcdir"], web=not values["server_only"],
                       server=not values["web_only"], dry_run=values["dry_run"],
                       yes=values["yes"], php=True if values["php"] else None)
    return click.Command(
        "upgrade", params=params, callback=callback,
        help="Take a BOINC project (made by BOINC's C++ make_project or an older boincpy) "
             "over in place: stop it, back up what is replaced, install boincpy's programs, "
             "pages and Apache configuration, update the database's schema.",
        context_settings={"help_option_names": ["-h", "--help", "-help"]})


def main(argv=None):
    """Entry point of bin/upgrade."""
    return click_main(_command(), argv, "upgrade")
