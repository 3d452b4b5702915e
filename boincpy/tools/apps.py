"""xadd and update_versions: platforms, apps and app versions of a project.

    xadd [--project_dir DIR]
    update_versions [--noconfirm] [--verbose] [--project_dir DIR]

Both run in the project directory (or take --project_dir) and read config.xml.

**xadd** reads ``PROJECT/project.xml``::

    <boinc>
        <platform> <name>..</name> <user_friendly_name>..</user_friendly_name>
                   [<deprecated/>] </platform>
        <app> <name>..</name> <user_friendly_name>..</user_friendly_name>
              [<min_version>N</min_version>] [<deprecated/>] [<beta/>] [<weight>X</weight>]
              [<homogeneous_redundancy>N</..>] [<homogeneous_app_version/>]
              [<target_nresults>N</..>] [<non_cpu_intensive/>] [<locality_scheduling>N</..>]
              [<n_size_classes>N</..>] [<fraction_done_exact/>] [<host_scale_check/>] </app>
    </boinc>

and inserts the platforms and apps that are not in the database yet.  As
BOINC's xadd does, a name already there is reported and its row kept; only
its user_friendly_name (and min_version, when project.xml gives one) is
brought up to date.  Other differences are reported, not applied (edit them
on the ops pages).  The whole file is checked first (unknown elements, bad
values, duplicates: file and line) and applied in one transaction.

**update_versions** installs new application versions from BOINC's layout::

    apps/APPNAME/VERSION/PLATFORM[__PLANCLASS]/
        files, optional FILE.sig signatures, optional version.xml

``VERSION`` is ``MAJOR`` or ``MAJOR.MINOR`` (version_num = 100*MAJOR + MINOR).
For every (app, version, platform, plan class) not yet in the database it
reads version.xml, measures and signs each file (``FILE.sig`` when present,
else with ``KEY_DIR/code_sign_private`` after asking once), copies the files
into the flat download directory (a different file of the same name already
there is an error: files are immutable), builds the app version's xml_doc as
BOINC's tools/update_versions writes it and inserts the row; then it touches
``PROJECT/reread_db`` so a running feeder reloads.  Everything is checked
before anything is written: any problem (unknown app or platform directory,
bad version directory name, missing file, malformed version.xml, unreadable
or damaged key, a signature that does not verify with
``KEY_DIR/code_sign_public``) is reported with the path at fault, exit
status 1, and nothing is copied or inserted.  Each new version is shown and
confirmed unless --noconfirm is given.

Warnings, not errors (BOINC's tool installs these silently): a main program
without an API version (neither in the file nor in version.xml: clients would
use the pre-6.0 protocol with it), and for a wrapper version (a file with the
logical name ``job.xml``) a ``<task>`` whose ``<application>`` is not a file
of the version, or is not executable.

version.xml (optional; BOINC's elements, plus min/max_core_version)::

    <version>
        <file>
            <physical_name>NAME</physical_name>
            [<main_program/>] [<logical_name>NAME</logical_name>] [<copy_file/>]
            [<url>URL</url> ...] [<gzip/>]
        </file> ...
        [<dont_throttle/>] [<needs_network/>] [<is_wrapper/>] [<beta/>]
        [<file_prefix>X</file_prefix>] [<api_version>X.Y.Z</api_version>]
        [<min_core_version>N</min_core_version>] [<max_core_version>N</max_core_version>]
    </version>
"""

import gzip
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field

import click

from boincpy import crypto
from boincpy.cli import boinc_option, click_main, progress, usage_help_option
from boincpy.config import load_config
from boincpy.db import connect
from boincpy.db.app import insert_app, insert_platform, update_app, update_platform
from boincpy.db.app_version import insert_app_version
from boincpy.db.rows import AppVersion
from boincpy.errors import BoincpyError, KeyFileError, ToolError
from boincpy.files import md5_file
from boincpy.xml import tree, xml_escape

# BOINC's C++ buffers hold app_version.xml_doc in 256 KiB with a terminating NUL.
MAX_XML_DOC = 262143

XADD_USAGE = """usage: xadd [--project_dir DIR]
Add the platforms and apps of PROJECT/project.xml to the database.
Run it in the project directory (or give --project_dir).
"""

UPDATE_VERSIONS_USAGE = """usage: update_versions [--noconfirm] [--verbose] [--project_dir DIR]
Install new app versions from apps/APPNAME/VERSION/PLATFORM[__PLANCLASS]/:
sign the files (FILE.sig, or keys/code_sign_private), copy them into the
download directory and add app_version rows.  Run it in the project directory.
    --noconfirm   don't ask for confirmation (signing, each new version)
    --verbose     print details
"""


# ---------------------------------------------------------------------------
# XML reading shared by both tools

def _parse_xml_file(path):
    """The root element of an XML file; ToolError naming the file and line otherwise."""
    try:
        return tree.parse_file(path)
    except OSError as exc:
        raise ToolError("can't read %s: %s" % (path, exc.strerror)) from None
    except tree.XmlError as exc:
        raise ToolError("%s line %d: malformed XML: %s" % (path, exc.line, exc.msg)) from None


def _where(path, elem):
    return "%s line %s" % (path, elem.sourceline)


def _text(elem, path):
    """The stripped text of a leaf element (an element with children is an error)."""
    if len(elem):
        raise ToolError("%s: <%s> must hold text, not elements" % (_where(path, elem), elem.tag))
    return (elem.text or "").strip()


def _flag(elem, path):
    """A BOINC boolean element: empty means yes, else a number (non-zero = yes)."""
    text = _text(elem, path)
    if text == "":
        return 1
    try:
        return 1 if int(text) else 0
    except ValueError:
        raise ToolError("%s: <%s> must be empty or a number, not %r"
                        % (_where(path, elem), elem.tag, text)) from None


def _integer(elem, path, lo, hi):
    text = _text(elem, path)
    try:
        value = int(text)
    except ValueError:
        raise ToolError("%s: <%s> must be an integer, not %r"
                        % (_where(path, elem), elem.tag, text)) from None
    if not lo <= value <= hi:
        raise ToolError("%s: <%s> %d is out of range (%d..%d)"
                        % (_where(path, elem), elem.tag, value, lo, hi))
    return value


def _real(elem, path):
    text = _text(elem, path)
    try:
        value = float(text)
    except ValueError:
        raise ToolError("%s: <%s> must be a number, not %r"
                        % (_where(path, elem), elem.tag, text)) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ToolError("%s: <%s> must be a finite number" % (_where(path, elem), elem.tag))
    return value


def _elements(parent):
    """Child elements (comments and processing instructions are removed by the parser)."""
    return [c for c in parent if isinstance(c.tag, str)]


# ---------------------------------------------------------------------------
# xadd

_NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
_TINY = (-128, 127)
_SMALL = (-32768, 32767)
_INT = (-2147483648, 2147483647)

# column -> (kind, range) for the fields project.xml may set
PLATFORM_FIELDS = {
    "name": ("name", None),
    "user_friendly_name": ("text", None),
    "deprecated": ("flag", None),
}
APP_FIELDS = {
    "name": ("name", None),
    "user_friendly_name": ("text", None),
    "min_version": ("int", _INT),
    "deprecated": ("flag", None),
    "homogeneous_redundancy": ("int", _SMALL),
    "weight": ("real", None),
    "beta": ("flag", None),
    "target_nresults": ("int", _SMALL),
    "host_scale_check": ("flag", None),
    "homogeneous_app_version": ("flag", None),
    "non_cpu_intensive": ("flag", None),
    "locality_scheduling": ("int", _INT),
    "n_size_classes": ("int", _SMALL),
    "fraction_done_exact": ("flag", None),
}


def name_problem(kind, name):
    """Why ``name`` can't name a platform or an app ("" if it can)."""
    if len(name) > 191 or not _NAME_RE.match(name):
        return ("%s name %r: use letters, digits and _ . + - only (at most 191 characters)"
                % (kind, name))
    if kind == "platform" and "__" in name:
        return ("platform name %r contains '__', which update_versions reads as the start "
                "of a plan class" % name)
    return ""


@dataclass
class ProjectEntry:
    """One <platform> or <app> of project.xml: the columns it sets, and where it is."""

    kind: str
    line: int
    values: dict


def read_project_xml(path):
    """Parse project.xml into ProjectEntry lists (platforms, apps); ToolError naming
    the file and line for anything BOINC's tables can't take."""
    root = _parse_xml_file(path)
    if root.tag != "boinc":
        raise ToolError("%s: the root element is <%s>, expected <boinc>"
                        % (_where(path, root), root.tag))
    entries = {"platform": [], "app": []}
    seen = {"platform": {}, "app": {}}
    for node in _elements(root):
        if node.tag not in entries:
            raise ToolError("%s: unknown element <%s> (project.xml holds <platform> and "
                            "<app> elements)" % (_where(path, node), node.tag))
        spec = PLATFORM_FIELDS if node.tag == "platform" else APP_FIELDS
        values = {}
        for child in _elements(node):
            kind_range = spec.get(child.tag)
            if kind_range is None:
                raise ToolError("%s: unknown element <%s> in <%s> (known: %s)"
                                % (_where(path, child), child.tag, node.tag,
                                   ", ".join(sorted(spec))))
            if child.tag in values:
                raise ToolError("%s: <%s> given twice in this <%s>"
                                % (_where(path, child), child.tag, node.tag))
            kind, limits = kind_range
            if kind == "flag":
                values[child.tag] = _flag(child, path)
            elif kind == "int":
                values[child.tag] = _integer(child, path, *limits)
            elif kind == "real":
                values[child.tag] = _real(child, path)
            else:
                values[child.tag] = _text(child, path)
        name = values.get("name", "")
        if not name:
            raise ToolError("%s: <%s> without a <name>" % (_where(path, node), node.tag))
        problem = name_problem(node.tag, name)
        if problem:
            raise ToolError("%s: %s" % (_where(path, node), problem))
        if len(values.get("user_friendly_name", "")) > 254:
            raise ToolError("%s: user_friendly_name is longer than 254 characters"
                            % _where(path, node))
        if name in seen[node.tag]:
            raise ToolError("%s: %s %s is already listed at line %d"
                            % (_where(path, node), node.tag, name, seen[node.tag][name]))
        seen[node.tag][name] = node.sourceline
        entries[node.tag].append(ProjectEntry(node.tag, node.sourceline, values))
    return entries["platform"], entries["app"]


def _apply_entry(db, entry, now):
    """Insert or bring up to date one platform/app; return the message to print."""
    table = entry.kind          # "platform" or "app": fixed names, never user text
    values = entry.values
    name = values["name"]
    row = db.query_one("SELECT * FROM %s WHERE name = %%s" % table, (name,))
    if row is None:
        insert = insert_platform if table == "platform" else insert_app
        insert(db, {"create_time": now, **values})
        return "added %s: %s" % (table, name)
    messages = []
    updates = {}
    for col, words in (("user_friendly_name", "user friendly name"),
                       ("min_version", "min_version")):
        if col in values and row[col] != values[col]:
            updates[col] = values[col]
            messages.append("updated %s of %s %s" % (words, table, name))
    if updates:
        update = update_platform if table == "platform" else update_app
        update(db, row["id"], updates)
    else:
        messages.append("%s %s already in DB" % (table, name))
    kept = ["%s (DB %s, project.xml %s)" % (c, _show(row[c]), _show(v))
            for c, v in values.items()
            if c not in ("name", "user_friendly_name", "min_version") and not _same(row[c], v)]
    if kept:
        messages.append("    not changed: %s; edit these on the ops pages" % ", ".join(kept))
    return "\n".join(messages)


def _same(a, b):
    if isinstance(b, float) or isinstance(a, float):
        return float(a) == float(b)
    return a == b


def _show(v):
    return "%g" % v if isinstance(v, float) else str(v)


def xadd(cfg, db=None, out=None):
    """Add project.xml's platforms and apps (one transaction); return the messages."""
    out = out or sys.stdout
    path = os.path.join(cfg.project_dir, "project.xml")
    platforms, apps = read_project_xml(path)
    own = db is None
    if own:
        db = connect(cfg)
    try:
        now = int(time.time())
        messages = []
        with db.transaction():
            for entry in platforms + apps:
                messages.append(_apply_entry(db, entry, now))
    finally:
        if own:
            db.close()
    for m in messages:
        out.write(m + "\n")
    return messages


# ---------------------------------------------------------------------------
# update_versions: reading the apps/ tree

_VERSION_DIR_RE = re.compile(r"^([0-9]+)(?:\.([0-9]+))?$")
_PLAN_CLASS_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
# characters a stock client or a download URL can't take in a file name
_BAD_NAME_CHARS = set(" \t\r\n%<>&\"'\\")


def parse_version_dir(name):
    """version_num of a VERSION directory name (``1.0`` -> 100, ``1.5`` -> 105,
    ``7`` -> 7, as BOINC computes it), or None when it is not one."""
    m = _VERSION_DIR_RE.match(name)
    if not m:
        return None
    major = int(m.group(1))
    if m.group(2) is None:
        return major
    minor = int(m.group(2))
    if minor >= 100:
        return None         # 1.100 would collide with 2.0
    return 100 * major + minor


def parse_platform_dir(name):
    """(platform, plan class) of a PLATFORM[__PLANCLASS] directory name."""
    platform, _, plan_class = name.partition("__")
    return platform, plan_class


@dataclass
class AppFile:
    """One file of an app version: what version.xml says and what the directory holds."""

    physical_name: str
    logical_name: str = ""
    urls: list = field(default_factory=list)
    main_program: bool = False
    copy_file: bool = False
    gzip: bool = False
    line: int = 0                 # version.xml line (0: not listed there)
    path: str = ""                # source path under apps/
    present: bool = False
    nbytes: int = 0
    md5: str = ""
    executable: bool = False
    signature: str = ""
    sig_path: str = ""            # the .sig file used, "" when signed here
    gzipped_nbytes: int = 0


@dataclass
class VersionSpec:
    """The version-wide settings of version.xml."""

    files: list = field(default_factory=list)
    dont_throttle: bool = False
    needs_network: bool = False
    is_wrapper: bool = False
    beta: bool = False
    file_prefix: str = ""
    api_version: str = ""
    min_core_version: int = 0
    max_core_version: int = 0


_VERSION_FLAGS = ("dont_throttle", "needs_network", "is_wrapper", "beta")


def read_version_xml(path, warn=None):
    """Parse a version.xml (root name not checked, as in BOINC); ToolError with the
    file and line for malformed XML or values.  Unknown elements are reported via
    ``warn`` and ignored, as BOINC ignores them."""
    root = _parse_xml_file(path)
    spec = VersionSpec()
    names = {}
    for node in _elements(root):
        tag = node.tag
        if tag == "file":
            f = AppFile(physical_name="", line=node.sourceline)
            for child in _elements(node):
                ctag = child.tag
                if ctag == "physical_name":
                    f.physical_name = _text(child, path)
                elif ctag == "logical_name":
                    f.logical_name = _text(child, path)
                elif ctag == "url":
                    url = _text(child, path)
                    if not url:
                        raise ToolError("%s: empty <url>" % _where(path, child))
                    f.urls.append(url)
                elif ctag in ("main_program", "copy_file", "gzip"):
                    setattr(f, ctag, bool(_flag(child, path)))
                elif warn:
                    warn("%s: <%s> in <file> is not an update_versions element; ignored"
                         % (_where(path, child), ctag))
            if not f.physical_name:
                raise ToolError("%s: <file> without a <physical_name>" % _where(path, node))
            if f.physical_name in names:
                raise ToolError("%s: file %s is already listed at line %d"
                                % (_where(path, node), f.physical_name, names[f.physical_name]))
            names[f.physical_name] = node.sourceline
            spec.files.append(f)
        elif tag in _VERSION_FLAGS:
            if _flag(node, path):
                setattr(spec, tag, True)
        elif tag in ("file_prefix", "api_version"):
            setattr(spec, tag, _text(node, path))
        elif tag in ("min_core_version", "max_core_version"):
            setattr(spec, tag, _integer(node, path, 0, _INT[1]))
        elif warn:
            warn("%s: <%s> is not an update_versions element; ignored" % (_where(path, node), tag))
    return spec


def _check_file_name(name, what):
    if (not name or name.startswith("/") or ".." in name or "//" in name
            or _BAD_NAME_CHARS.intersection(name)):
        raise ToolError("%s: file name %r can't be sent to clients (no '..', '%%', white "
                        "space, quotes, <>&\\ or leading '/')" % (what, name))


def find_api_version(path):
    """The API version built into a program: the text after ``API_VERSION_`` in the
    first printable string ending in ``API_VERSION_x.y.z`` (what BOINC finds with
    ``strings | grep``), or ""."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    marker = b"API_VERSION_"
    printable = set(range(0x20, 0x7f)) | {0x09}
    tail_re = re.compile(r"API_VERSION_[0-9]+\.[0-9]+\.[0-9]+$")
    pos = data.find(marker)
    while pos >= 0:
        start = pos
        while start > 0 and data[start - 1] in printable:
            start -= 1
        end = pos + len(marker)
        while end < len(data) and data[end] in printable:
            end += 1
        run = data[start:end].decode("ascii")
        if len(run) >= 4 and tail_re.search(run):
            return run[run.index("API_VERSION_") + len("API_VERSION_"):].strip()
        pos = data.find(marker, end)
    return ""


@dataclass
class NewVersion:
    """An app version directory that is not in the database yet."""

    app: dict
    platform: dict
    plan_class: str
    version_dir: str
    version_num: int
    dir: str
    label: str                    # APP VERSION PLATFORM[__PLANCLASS], for messages
    spec: VersionSpec = None
    files: list = field(default_factory=list)
    api_version: str = ""
    xml_doc: str = ""


def scan_apps(cfg, db, verbose=None):
    """Walk apps/ and return the NewVersion of every version directory not yet in the
    database, plus a list of errors (unknown app or platform, bad version names)."""
    app_dir = cfg.app_dir
    if not os.path.isdir(app_dir):
        raise ToolError("can't open %s: no such directory (put app versions in "
                        "apps/APPNAME/VERSION/PLATFORM/)" % app_dir)
    apps = {r["name"]: r for r in db.query("SELECT * FROM app")}
    platforms = {r["name"]: r for r in db.query("SELECT * FROM platform")}
    found, errors = [], []

    def subdirs(path):
        out = []
        for entry in sorted(os.listdir(path)):
            if entry.startswith("."):
                continue
            full = os.path.join(path, entry)
            if os.path.isdir(full):
                out.append((entry, full))
            elif verbose:
                verbose("   (%s is not a directory; ignored)" % full)
        return out

    for app_name, app_path in subdirs(app_dir):
        app = apps.get(app_name)
        if app is None:
            errors.append("%s: %s is not an app in the database (add it to project.xml "
                          "and run bin/xadd)" % (app_path, app_name))
            continue
        if verbose:
            verbose("App %s:" % app_name)
        for vdir, vpath in subdirs(app_path):
            version_num = parse_version_dir(vdir)
            if version_num is None:
                errors.append("%s: %s is not a version number (MAJOR or MAJOR.MINOR with "
                              "MINOR < 100, e.g. 1.02)" % (vpath, vdir))
                continue
            if verbose:
                verbose("   Version %s:" % vdir)
            for pdir, ppath in subdirs(vpath):
                platform_name, plan_class = parse_platform_dir(pdir)
                platform = platforms.get(platform_name)
                if platform is None:
                    errors.append("%s: no platform %s in the database (add it to "
                                  "project.xml and run bin/xadd)" % (ppath, platform_name))
                    continue
                if "__" in pdir and (not plan_class or "__" in plan_class
                                     or len(plan_class) > 128
                                     or not _PLAN_CLASS_RE.match(plan_class)):
                    errors.append("%s: bad plan class %r (PLATFORM__PLANCLASS; letters, "
                                  "digits and _ . + -, at most 128)" % (ppath, plan_class))
                    continue
                if verbose:
                    verbose("      App version: %s" % pdir)
                exists = db.query_value(
                    "SELECT id FROM app_version WHERE appid = %s AND platformid = %s "
                    "AND version_num = %s AND plan_class = %s",
                    (app["id"], platform["id"], version_num, plan_class))
                if exists:
                    if verbose:
                        verbose("         (already in database)")
                    continue
                found.append(NewVersion(app, platform, plan_class, vdir, version_num, ppath,
                                        "%s %s %s" % (app_name, vdir, pdir)))
    return found, errors


def read_version_files(nv, warn=None):
    """Fill nv.spec and nv.files from version.xml and the directory (as BOINC merges
    them); ToolError for missing files or a missing/ambiguous main program."""
    vfile = os.path.join(nv.dir, "version.xml")
    spec = read_version_xml(vfile, warn) if os.path.isfile(vfile) else VersionSpec()
    nv.spec = spec
    files = list(spec.files)
    listed = {f.physical_name: f for f in files}
    for entry in sorted(os.listdir(nv.dir)):
        full = os.path.join(nv.dir, entry)
        if (entry.startswith(".") or entry == "version.xml" or entry.endswith(".sig")
                or os.path.isdir(full)):
            continue
        f = listed.get(entry)
        if f is None:
            f = AppFile(physical_name=entry)
            files.append(f)
        f.path, f.present = full, True
    for f in files:
        if not f.present and "/" in f.physical_name:
            full = os.path.join(nv.dir, f.physical_name)
            if os.path.isfile(full):
                f.path, f.present = full, True
    missing = [f for f in files if not f.present]
    if missing:
        raise ToolError("; ".join("%s: file %s is listed in version.xml (line %d) but not "
                                  "present" % (nv.dir, f.physical_name, f.line)
                                  for f in missing))
    if not files:
        raise ToolError("%s: no files" % nv.dir)
    for f in files:
        _check_file_name(f.physical_name, f.path)
        if f.logical_name:
            _check_file_name(f.logical_name, "%s (logical_name of %s)" % (vfile,
                                                                          f.physical_name))
    if len(files) == 1:
        files[0].main_program = True
    mains = [f.physical_name for f in files if f.main_program]
    if not mains:
        raise ToolError("%s: no file is marked as the main program (<main_program/> in "
                        "version.xml)" % nv.dir)
    if len(mains) > 1:
        raise ToolError("%s: more than one file is marked as the main program: %s"
                        % (nv.dir, ", ".join(mains)))
    nv.files = files


# job.xml as BOINC's wrapper (samples/wrapper) reads it: <job_desc>'s children,
# and a <task>'s.  A name not here is ignored by the wrapper, so likely a typo.
JOB_DESC_ELEMENTS = {"task", "unzip_input", "zip_output", "enable_graphics_support"}
JOB_TASK_ELEMENTS = {"application", "command_line", "append_cmdline_args", "stdin_filename",
                     "stdout_filename", "stderr_filename", "fraction_done_filename",
                     "checkpoint_filename", "setenv", "exec_dir", "weight", "daemon",
                     "multi_process", "forward_slashes", "time_limit", "priority"}


def check_wrapper_job(nv, warn):
    """Warnings for a wrapper app version (a file with the logical name job.xml,
    as BOINC's wrapper and boincpy's read it): elements the wrapper doesn't
    know; each <task>'s <application> must be a file of the version,
    executable once installed (the client sets the mode from <executable/>,
    which the file's own x bit decides)."""
    job = next((f for f in nv.files if f.logical_name == "job.xml"), None)
    if job is None:
        return
    try:
        root = tree.parse_file(job.path)
    except (OSError, tree.XmlError) as exc:
        warn("%s: the wrapper can't read it: %s" % (job.path, exc))
        return
    if root.tag != "job_desc":
        warn("%s: the root element is <%s>; the wrapper reads <job_desc>" % (job.path, root.tag))
        return
    for node in root.iter():
        parent = node.getparent()
        if not isinstance(node.tag, str) or parent is None or parent.tag not in ("job_desc",
                                                                                 "task"):
            continue
        known = JOB_DESC_ELEMENTS if parent.tag == "job_desc" else JOB_TASK_ELEMENTS
        if node.tag not in known:
            warn("%s: <%s> in <%s> is not a wrapper element; the wrapper ignores it"
                 % (_where(job.path, node), node.tag, parent.tag))
    by_name = {}
    for f in nv.files:
        by_name[f.logical_name or f.physical_name] = f
    for task in root.iter("task"):
        name = tree.text(task, "application")
        if not name or name.startswith("$PROJECT_DIR"):
            continue
        f = by_name.get(name)
        if f is None:
            warn("%s line %d: <application>%s</application> is not a file of this app "
                 "version (no file has that logical name): the wrapper won't run it"
                 % (job.path, task.sourceline, name))
        elif not os.stat(f.path).st_mode & 0o100:
            warn("%s: the program %s is not executable: chmod +x it, or clients can't run "
                 "it" % (f.path, name))


# ---------------------------------------------------------------------------
# update_versions: the app version's xml_doc

def file_info_xml(f):
    """The <file_info> of an app file, laid out exactly as BOINC's update_versions."""
    parts = ["<file_info>\n", "    <name>%s</name>\n" % xml_escape(f.physical_name)]
    for url in f.urls:
        parts.append("    <url>%s</url>\n" % xml_escape(url))
        if f.gzip:
            parts.append("    <gzipped_url>%s.gz</gzipped_url>\n" % xml_escape(url))
    if f.executable or f.main_program:
        parts.append("    <executable/>\n")
    parts.append("    <file_signature>\n")
    parts.append(f.signature)
    parts.append("    </file_signature>\n")
    parts.append("    <nbytes>%d</nbytes>\n" % f.nbytes)
    if f.gzip:
        parts.append("    <gzipped_nbytes>%d</gzipped_nbytes>\n" % f.gzipped_nbytes)
    parts.append("</file_info>\n")
    return "".join(parts)


def file_ref_xml(f):
    """The <file_ref> of an app file inside <app_version>, as BOINC writes it."""
    parts = ["<file_ref>\n", "    <file_name>%s</file_name>\n" % xml_escape(f.physical_name)]
    if f.logical_name:
        parts.append("    <open_name>%s</open_name>\n" % xml_escape(f.logical_name))
    if f.copy_file:
        parts.append("    <copy_file/>\n")
    if f.main_program:
        parts.append("    <main_program/>\n")
    parts.append("</file_ref>\n")
    return "".join(parts)


def app_version_xml(app_name, version_num, spec, files, api_version):
    """app_version.xml_doc: the <file_info>s, then <app_version> (which the scheduler
    completes with platform, plan class, avg_ncpus and flops when it sends it)."""
    parts = [file_info_xml(f) for f in files]
    parts.append("<app_version>\n")
    parts.append("    <app_name>%s</app_name>\n" % xml_escape(app_name))
    parts.append("    <version_num>%d</version_num>\n" % version_num)
    if api_version:
        parts.append("    <api_version>%s</api_version>\n" % xml_escape(api_version))
    parts.extend(file_ref_xml(f) for f in files)
    if spec.dont_throttle:
        parts.append("    <dont_throttle/>\n")
    if spec.needs_network:
        parts.append("    <needs_network/>\n")
    if spec.is_wrapper:
        parts.append("    <is_wrapper/>\n")
    if spec.file_prefix:
        parts.append("    <file_prefix>%s</file_prefix>\n" % xml_escape(spec.file_prefix))
    parts.append("</app_version>\n")
    return "".join(parts)


# ---------------------------------------------------------------------------
# update_versions: checking, then writing

@dataclass
class _Copy:
    """A file to put into the download directory."""

    source: str
    dest: str
    md5: str
    executable: bool
    plain: bool = True        # copy the file itself (False: it is there already)
    gzip: bool = False        # make dest.gz too


class _Run:
    """State of one update_versions run."""

    def __init__(self, cfg, confirm, verbose, ask, out):
        self.cfg = cfg
        self.confirm = confirm
        self.verbose = verbose
        self.ask = ask
        self.out = out
        self.private_key = None
        self.public_key = None
        self.copies = {}          # download path -> _Copy

    def say(self, text):
        self.out.write(text + "\n")

    def note(self, text):
        if self.verbose:
            self.say(text)


def _keys(run, need_private):
    """Load the code-signing keys (private only when some file must be signed here)."""
    key_dir = run.cfg.key_dir
    public_path = os.path.join(key_dir, "code_sign_public")
    if run.public_key is None:
        if os.path.exists(public_path):
            run.public_key = crypto.read_public_key(public_path)
        else:
            run.say("warning: %s not found: signatures are not checked (clients check "
                    "them with the key the scheduler sends)" % public_path)
    if need_private and run.private_key is None:
        private_path = os.path.join(key_dir, "code_sign_private")
        if not os.path.exists(private_path):
            raise KeyFileError("no code signing private key %s, and these files have no "
                               ".sig file: %s" % (private_path, ", ".join(need_private)))
        run.private_key = crypto.read_private_key(private_path)


def _confirm_signing(run):
    run.say("""
    NOTICE: files will be signed with your project's code-signing private key
    (%s).
    We recommend that you encrypt it when done; see
    https://github.com/BOINC/boinc/wiki/Code-signing
""" % os.path.join(run.cfg.key_dir, "code_sign_private"))
    return run.ask("    Continue (y/n)? ") == "y"


def _measure_and_sign(run, f):
    """Size, MD5, executable bit and signature of one file; checks the download copy."""
    try:
        f.md5, f.nbytes = md5_file(f.path)
        mode = os.stat(f.path).st_mode
    except OSError as exc:
        raise ToolError("can't read %s: %s" % (f.path, exc.strerror)) from None
    f.executable = bool(mode & 0o100)
    sig_path = f.path + ".sig"
    if os.path.isfile(sig_path):
        try:
            with open(sig_path, encoding="ascii", errors="replace") as sf:
                text = sf.read()
        except OSError as exc:
            raise ToolError("can't read %s: %s" % (sig_path, exc.strerror)) from None
        sig = crypto.parse_hex(text)
        if not sig:
            raise ToolError("%s holds no hex signature (expected sign_executable's output)"
                            % sig_path)
        # The signature as BOINC's tools print it (what a .sig made by
        # sign_executable already is): clients parse it either way.
        f.signature = crypto.hex_lines(sig)
        f.sig_path = sig_path
        if len(sig) != crypto.KEY_BITS // 8:
            raise ToolError("%s holds a %d-byte signature; BOINC signatures have %d bytes "
                            "(truncated or damaged?)" % (sig_path, len(sig),
                                                         crypto.KEY_BITS // 8))
    else:
        if run.private_key is None:
            raise ToolError("%s has no .sig file and no private key was loaded" % f.path)
        f.signature = crypto.sign_md5_hex(f.md5, run.private_key)
    if run.public_key is not None and not crypto.verify_md5_hex(f.md5, f.signature,
                                                                 run.public_key):
        key = os.path.join(run.cfg.key_dir, "code_sign_public")
        if f.sig_path:
            raise ToolError("%s does not verify %s with %s (signed with another key, or "
                            "the file changed after signing): clients would reject it"
                            % (f.sig_path, f.path, key))
        raise ToolError("the signature made with %s does not verify with %s: the two key "
                        "files are not a pair" % (os.path.join(run.cfg.key_dir,
                                                               "code_sign_private"), key))
    if not f.urls:
        f.urls = ["%s/%s" % (run.cfg.download_url.rstrip("/"), f.physical_name)]
    _plan_copy(run, f)


def _same_file(path, md5):
    try:
        return md5_file(path)[0] == md5
    except OSError as exc:
        raise ToolError("can't read %s: %s" % (path, exc.strerror)) from None


def _gz_md5(path):
    h = hashlib.md5()
    try:
        with gzip.open(path, "rb") as g:
            for block in iter(lambda: g.read(1 << 20), b""):
                h.update(block)
    except (OSError, EOFError):
        return None
    return h.hexdigest()


def _plan_copy(run, f):
    """Decide what goes into download/ for this file; error if a different file of the
    same name is there already (or is planned by another version of this run)."""
    dest = os.path.join(run.cfg.download_dir, f.physical_name)
    planned = run.copies.get(dest)
    if planned is not None and planned.md5 != f.md5:
        raise ToolError("%s and %s are different files with the same name %s.\nBOINC "
                        "files are immutable.\nIf you change a file, you must give it "
                        "a new name." % (planned.source, f.path, f.physical_name))
    if planned is None:
        if os.path.isdir(dest):
            raise ToolError("%s is a directory; can't install %s there" % (dest, f.path))
        exists = os.path.exists(dest)
        if exists and not _same_file(dest, f.md5):
            raise ToolError("files %s and %s differ.\nBOINC files are immutable.\nIf you "
                            "change a file, you must give it a new name." % (f.path, dest))
        planned = _Copy(f.path, dest, f.md5, f.executable or f.main_program,
                        plain=not exists)
    if f.gzip:
        if planned.gzip:
            pass
        elif os.path.exists(dest + ".gz"):
            if _gz_md5(dest + ".gz") != f.md5:
                raise ToolError("%s.gz is not the gzipped %s (BOINC files are immutable: "
                                "give a changed file a new name)" % (dest, f.path))
        else:
            planned.gzip = True
        f.gzipped_nbytes = (_gzip_to(f.path, _Counter()) if planned.gzip
                            else os.path.getsize(dest + ".gz"))
    if planned.plain or planned.gzip:
        run.copies[dest] = planned


class _Counter:
    """A write-only sink that counts bytes (the size of a gzip stream, unstored)."""

    def __init__(self):
        self.size = 0

    def write(self, data):
        self.size += len(data)
        return len(data)

    def flush(self):
        pass


def _gzip_to(path, sink):
    """Gzip the file at ``path`` into ``sink``; return the compressed size.  Same
    bytes every time (no time stamp, no name), so a size measured while checking
    is the size of the file written later."""
    counter = sink if isinstance(sink, _Counter) else None
    start = 0 if counter else sink.tell()
    with open(path, "rb") as src:
        with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=sink,
                           mtime=0) as gz:
            shutil.copyfileobj(src, gz, 1 << 20)
    return counter.size if counter else sink.tell() - start


def _confirm_version(run, nv):
    run.say("Found new app version for: %s" % nv.label)
    run.say("    Files:")
    for f in nv.files:
        run.say("        %s%s" % (f.physical_name, " (main program)" if f.main_program else ""))
    run.say("    Flags:")
    spec = nv.spec
    if spec.dont_throttle:
        run.say("        don't throttle")
    if spec.needs_network:
        run.say("        needs network")
    if spec.is_wrapper:
        run.say("        is wrapper")
    if spec.beta:
        run.say("        beta")
    if spec.file_prefix:
        run.say("        file prefix: %s" % spec.file_prefix)
    run.say("        API version: %s" % nv.api_version)
    return run.ask("    Do you want to add this app version (y/n)? ") == "y"


def _install_file(copy, created):
    """Put one planned file (and/or its .gz) into download/ without ever replacing a
    file someone else put there meanwhile: the finished copy is linked into place,
    and a file found there is kept if it is the same."""
    directory = os.path.dirname(copy.dest)
    os.makedirs(directory, exist_ok=True)
    targets = []
    if copy.plain:
        targets.append((copy.dest, False))
    if copy.gzip:
        targets.append((copy.dest + ".gz", True))
    for dest, compressed in targets:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp_uv_")
        try:
            with os.fdopen(fd, "wb") as out:
                if compressed:
                    _gzip_to(copy.source, out)
                else:
                    with open(copy.source, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 20)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o755 if copy.executable and not compressed else 0o644)
            try:
                os.link(tmp, dest)
                created.append(dest)
            except FileExistsError:
                same = _gz_md5(dest) == copy.md5 if compressed else _same_file(dest, copy.md5)
                if not same:
                    raise ToolError("%s appeared while update_versions ran and differs "
                                    "from %s" % (dest, copy.source)) from None
        finally:
            os.unlink(tmp)


def update_versions(cfg, db=None, confirm=True, verbose=False, ask=None, out=None):
    """Install every new app version under apps/ (see the module docstring); return the
    list of (label, app_version id) added.  Raises BoincpyError (nothing written) when
    anything is wrong."""
    out = out or sys.stdout
    ask = ask or _ask_stdin(out)
    if not cfg.download_url:
        raise ToolError("<download_url> not found in %s" % cfg.path)
    if not os.path.isdir(cfg.download_dir):
        raise ToolError("the download directory %s does not exist (download_dir in %s)"
                        % (cfg.download_dir, cfg.path))
    run = _Run(cfg, confirm, verbose, ask, out)
    own = db is None
    if own:
        db = connect(cfg)
    try:
        return _update_versions(run, db)
    finally:
        if own:
            db.close()


def _update_versions(run, db):
    cfg = run.cfg
    warnings = []
    found, errors = scan_apps(cfg, db, run.note if run.verbose else None)
    ready = []
    for nv in found:
        try:
            read_version_files(nv, warnings.append)
        except ToolError as exc:
            errors.append(exc.message)
            continue
        ready.append(nv)
    for nv in ready:
        check_wrapper_job(nv, warnings.append)
    for w in warnings:
        run.say("warning: " + w)
    if errors:
        raise ToolError("\n".join(errors) + "\nnothing was changed")
    if not ready:
        run.say("no new app versions")
        touch_reread_db(cfg)
        return []

    unsigned = [f.path for nv in ready for f in nv.files
                if not os.path.isfile(f.path + ".sig")]
    _keys(run, unsigned)
    if unsigned and run.confirm and not _confirm_signing(run):
        raise ToolError("not confirmed; nothing was changed (--noconfirm skips the "
                        "questions)")

    items = [(nv, f) for nv in ready for f in nv.files]
    with progress(items, "Checking and signing files", run.out) as bar:
        for nv, f in bar:
            run.note("         process_file(): %s" % f.path)
            try:
                _measure_and_sign(run, f)
            except ToolError as exc:
                errors.append(exc.message)
    if errors:
        raise ToolError("\n".join(errors) + "\nnothing was changed")

    chosen = []
    for nv in ready:
        main = next(f for f in nv.files if f.main_program)
        nv.api_version = nv.spec.api_version or find_api_version(main.path)
        if not nv.api_version:
            run.say("warning: %s: no API version in %s and none in version.xml: clients "
                    "will talk to it as to a program built before BOINC 6 (one linked "
                    "dynamically with the BOINC API doesn't carry it: give "
                    "<api_version> in version.xml)" % (nv.dir, main.physical_name))
        nv.xml_doc = app_version_xml(nv.app["name"], nv.version_num, nv.spec, nv.files,
                                     nv.api_version)
        if len(nv.xml_doc.encode()) > MAX_XML_DOC:
            errors.append("%s: the app version's xml_doc has %d bytes; BOINC's limit is %d "
                          "(too many files?)" % (nv.dir, len(nv.xml_doc.encode()),
                                                  MAX_XML_DOC))
            continue
        if run.confirm and not _confirm_version(run, nv):
            run.say("    skipped %s" % nv.label)
            continue
        chosen.append(nv)
    if errors:
        raise ToolError("\n".join(errors) + "\nnothing was changed")

    # Only the files of the chosen versions are installed.
    needed = {os.path.join(cfg.download_dir, f.physical_name) for nv in chosen
              for f in nv.files}
    copies = [c for dest, c in sorted(run.copies.items()) if dest in needed]
    created = []
    added = []
    try:
        with progress(copies, "Copying files into download/", run.out) as bar:
            for copy in bar:
                run.note("         cp %s %s" % (copy.source, copy.dest))
                try:
                    _install_file(copy, created)
                except OSError as exc:
                    raise ToolError("can't write %s: %s" % (copy.dest, exc.strerror)) from None
        now = int(time.time())
        with db.transaction():
            for nv in chosen:
                row = AppVersion(create_time=now, appid=nv.app["id"],
                                 version_num=nv.version_num, platformid=nv.platform["id"],
                                 xml_doc=nv.xml_doc, plan_class=nv.plan_class,
                                 beta=1 if nv.spec.beta else 0,
                                 min_core_version=nv.spec.min_core_version,
                                 max_core_version=nv.spec.max_core_version)
                added.append((nv.label, insert_app_version(db, row)))
    except BaseException:
        for path in reversed(created):
            try:
                os.unlink(path)
            except OSError:
                pass
        raise
    for label, new_id in added:
        run.say("    App version added successfully; ID=%d (%s)" % (new_id, label))
    if not added:
        run.say("no app versions added")
    touch_reread_db(cfg)
    return added


def touch_reread_db(cfg):
    """Tell a running feeder to reload apps and app versions."""
    path = os.path.join(cfg.project_dir, "reread_db")
    with open(path, "a"):
        pass
    os.utime(path, None)


def _ask_stdin(out):
    def ask(prompt):
        out.write(prompt)
        out.flush()
        line = sys.stdin.readline()
        return line.strip()
    return ask


# ---------------------------------------------------------------------------
# command lines

def _run_body(prog, body):
    """Run ``body()``; a BoincpyError or an interrupt is reported on stderr.
    Returns the exit status."""
    try:
        status = body()
    except BoincpyError as exc:
        sys.stdout.flush()
        sys.stderr.write("%s: %s\n" % (prog, exc.message))
        status = exc.exit_code or 1
    except KeyboardInterrupt:
        sys.stderr.write("%s: interrupted; nothing was changed\n" % prog)
        status = 130
    sys.stdout.flush()
    return status


def _project_dir_option():
    # BOINC's update_versions also takes --config_dir for the project directory
    return click.option("--project_dir", "-project_dir", "--config_dir", "-config_dir",
                        "project_dir", default=None, metavar="DIR",
                        help="project directory (default: found as BOINC finds it)")


def xadd_main(argv=None):
    """Entry point of bin/xadd."""

    @click.command(add_help_option=False)
    @usage_help_option(XADD_USAGE)
    @_project_dir_option()
    def xadd_cmd(project_dir):
        def body():
            xadd(load_config(project_dir))
            return 0
        return _run_body("xadd", body)
    sys.exit(click_main(xadd_cmd, argv, "xadd", XADD_USAGE))


def update_versions_main(argv=None):
    """Entry point of bin/update_versions."""

    @click.command(add_help_option=False)
    @usage_help_option(UPDATE_VERSIONS_USAGE)
    @boinc_option("noconfirm", is_flag=True)
    @boinc_option("verbose", is_flag=True)
    @_project_dir_option()
    def update_versions_cmd(noconfirm, verbose, project_dir):
        def body():
            update_versions(load_config(project_dir), confirm=not noconfirm, verbose=verbose)
            return 0
        return _run_body("update_versions", body)
    sys.exit(click_main(update_versions_cmd, argv, "update_versions", UPDATE_VERSIONS_USAGE))
