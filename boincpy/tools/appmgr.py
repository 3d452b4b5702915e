"""appmgr: manage applications and platforms from the command line (BOINC's
tools/appmgr), with its commands and options:

    appmgr add NAME "USER FRIENDLY NAME" [--hr no|fine|coarse] [--beta] [--weight N]
                                         [--target_nresults N]
    appmgr delete NAME [--version VER] [--platform NAME] [--plan_class NAME]
    appmgr update NAME [--hr ..] [--beta|--no-beta] [--weight N] [--target_nresults N]
                       [--user_friendly_name D] [--min_version VER]
                       [--deprecated|--no-deprecated]
    appmgr list [--no-versions]
    appmgr update_appver NAME [--version VER] [--platform NAME] [--plan_class NAME]
                              [--min_core_version V] [--max_core_version V]
                              [--deprecated|--no-deprecated]
    appmgr add_platform NAME "USER FRIENDLY NAME"
    appmgr delete_platform NAME [--force]
    appmgr update_platform NAME [--deprecated|--no-deprecated] [--user_friendly_name D]
    appmgr list_platform [--short]
    appmgr add_standard_platforms

Every change touches reread_db, so a running feeder reloads apps and
versions.  Safer than BOINC's: ``update`` changes only the options given
(BOINC's resets homogeneous redundancy to "no" unless --hr is given);
``delete`` refuses an app that still has jobs, and a version that results
in progress use (deprecate them instead); a version's files in download/
are removed only if no other version lists them.  Client versions
(--min/max_core_version) are written as BOINC writes them, ``7.20.5``, or
as the stored number.
"""

import os
import re
import shutil
import time

import click

from boincpy.cli import click_main
from boincpy.config import load_config
# modules, not names: this file's commands are called delete_app, update_app ...
from boincpy.db import app as app_table
from boincpy.db import app_version as app_version_table
from boincpy.db import connect
from boincpy.errors import ToolError
from boincpy.tools.apps import name_problem, parse_platform_dir, parse_version_dir, touch_reread_db
from boincpy.web.ops.names import client_version_text
from boincpy.xml.scan import blocks, leaf_text

HR_TYPES = {"no": 0, "fine": 1, "coarse": 2}
HR_WORDS = {0: "No", 1: "Fine-grained", 2: "Coarse"}

# BOINC's list of standard platforms (tools/appmgr).
STANDARD_PLATFORMS = (
    ("windows_intelx86", "Microsoft Windows (98 or later) running on an Intel "
                         "x86-compatible CPU"),
    ("windows_x86_64", "Microsoft Windows running on an AMD x86_64 or Intel EM64T CPU"),
    ("i686-pc-linux-gnu", "Linux running on an Intel x86-compatible CPU"),
    ("x86_64-pc-linux-gnu", "Linux running on an AMD x86_64 or Intel EM64T CPU"),
    ("powerpc-apple-darwin", "Mac OS X 10.3 or later running on Motorola PowerPC"),
    ("i686-apple-darwin", "Mac OS 10.4 or later running on Intel"),
    ("x86_64-apple-darwin", "Intel 64-bit Mac OS 10.5 or later"),
    ("sparc-sun-solaris2.7", "Solaris 2.7 running on a SPARC-compatible CPU"),
    ("sparc-sun-solaris", "Solaris 2.8 or later running on a SPARC-compatible CPU"),
    ("sparc64-sun-solaris", "Solaris 2.8 or later running on a SPARC 64-bit CPU"),
    ("powerpc64-ps3-linux-gnu", "Sony Playstation 3 running Linux"),
    ("anonymous", "anonymous"),
)


class Project:
    """config.xml and the database of the project appmgr works on."""

    def __init__(self, project_dir):
        self.cfg = load_config(project_dir)
        self.db = connect(self.cfg)

    def changed(self):
        touch_reread_db(self.cfg)

    def app(self, name):
        row = self.db.query_one("SELECT * FROM app WHERE name = %s", (name,))
        if row is None:
            raise ToolError("No such application: %s" % name)
        return row

    def platform(self, name):
        row = self.db.query_one("SELECT * FROM platform WHERE name = %s", (name,))
        if row is None:
            raise ToolError("Unknown platform name: %s" % name)
        return row

    def versions(self, app, version=None, platform=None, plan_class=None):
        """The app's versions matching the options (AND-ed), oldest first."""
        where, params = ["appid = %s"], [app["id"]]
        if version is not None:
            where.append("version_num = %s")
            params.append(version_num(version))
        if platform is not None:
            where.append("platformid = %s")
            params.append(self.platform(platform)["id"])
        if plan_class is not None:
            where.append("plan_class = %s")
            params.append(plan_class)
        return self.db.query("SELECT * FROM app_version WHERE %s "
                             "ORDER BY version_num, platformid, plan_class" % " AND ".join(where),
                             params)


def version_num(text):
    """An app version number from BOINC's ``1.05`` (-> 105)."""
    try:
        value = float(text)
    except ValueError:
        raise ToolError("version %r is not a number like 1.05" % text) from None
    if value < 0:
        raise ToolError("version %r is negative" % text)
    return int(round(value * 100))


def client_version(text):
    """A client version as stored (M*10000 + m*100 + r) from ``7.20.5``, ``7.2``
    or the stored number."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    if m:
        if int(m.group(2)) > 99 or int(m.group(3) or 0) > 99:
            raise ToolError("client version %r: minor and release numbers go up to 99" % text)
        return int(m.group(1)) * 10000 + int(m.group(2)) * 100 + int(m.group(3) or 0)
    if text.strip().isdigit():
        n = int(text)
        return n * 10000 if n < 100 else n
    raise ToolError("client version %r: write it as 7.20.5" % text)


def _check_name(kind, name):
    problem = name_problem(kind, name)
    if problem:
        raise ToolError(problem)


def _text(what, value, limit=254):
    if len(value) > limit:
        raise ToolError("%s is longer than %d characters" % (what, limit))
    return value


def _app_text(a):
    return "app %s (ID %d): %s" % (a["name"], a["id"], a["user_friendly_name"])


def _version_text(p, av):
    return "app version %s %.2f %s%s (ID %d)" % (
        p.db.query_value("SELECT name FROM app WHERE id = %s", (av["appid"],), "?"),
        av["version_num"] / 100.0,
        p.db.query_value("SELECT name FROM platform WHERE id = %s", (av["platformid"],), "?"),
        " [%s]" % av["plan_class"] if av["plan_class"] else "", av["id"])


def _version_dirs(cfg, app_name, av, platform_name):
    """The apps/APP/VERSION/PLATFORM[__PLAN] directories this version came from."""
    top = os.path.join(cfg.app_dir, app_name)
    found = []
    for vdir in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        if parse_version_dir(vdir) != av["version_num"]:
            continue
        for pdir in sorted(os.listdir(os.path.join(top, vdir))):
            path = os.path.join(top, vdir, pdir)
            if os.path.isdir(path) and parse_platform_dir(pdir) == (platform_name,
                                                                     av["plan_class"]):
                found.append(path)
    return found


def _file_names(xml_doc):
    names = (leaf_text(body, "name") for body in blocks(xml_doc or "", "file_info"))
    return {name for name in names if name}


def delete_version(p, av):
    """Remove an app version: its row, its directory under apps/, and its
    files in download/ that no other version lists."""
    app = p.db.query_one("SELECT name FROM app WHERE id = %s", (av["appid"],))
    platform = p.db.query_one("SELECT name FROM platform WHERE id = %s", (av["platformid"],))
    text = _version_text(p, av)
    used = set()
    for other in p.db.query("SELECT xml_doc FROM app_version WHERE id <> %s", (av["id"],)):
        used |= _file_names(other["xml_doc"])
    app_version_table.delete_app_version(p.db, av["id"])
    for name in sorted(_file_names(av["xml_doc"]) - used):
        for path in (os.path.join(p.cfg.download_dir, name),
                     os.path.join(p.cfg.download_dir, name + ".gz"),
                     os.path.join(p.cfg.download_dir, name + ".md5")):
            if os.path.isfile(path):
                os.unlink(path)
                click.echo("  removed %s" % path)
    if app and platform:
        for path in _version_dirs(p.cfg, app["name"], av, platform["name"]):
            shutil.rmtree(path)
            click.echo("  removed %s" % path)
            parent = os.path.dirname(path)
            if not os.listdir(parent):
                os.rmdir(parent)
    click.echo("Removed " + text)


def _refuse_busy_versions(p, versions):
    busy = [av for av in versions if p.db.query_value(
        "SELECT COUNT(*) FROM result WHERE app_version_id = %s AND server_state = 4",
        (av["id"],))]
    if busy:
        raise ToolError("results in progress use %s: deprecate instead (appmgr update_appver "
                        "... --deprecated); nothing was deleted"
                        % ", ".join(_version_text(p, av) for av in busy))


_CONTEXT = {"help_option_names": ["-h", "--help"]}
_project_dir = click.option("--project_dir", default=None, metavar="DIR",
                            help="project directory (default: found as BOINC finds it)")


@click.group(context_settings=_CONTEXT)
def cli():
    """Manage applications and platforms from the command line.

    Use "appmgr COMMAND --help" to get a description of a command."""


@cli.command("add")
@click.argument("name")
@click.argument("user_friendly_name")
@click.option("--hr", type=click.Choice(sorted(HR_TYPES)), default="no", show_default=True,
              help="homogeneous redundancy type")
@click.option("--beta", is_flag=True, help="only beta testers run it")
@click.option("--weight", type=float, default=1.0, show_default=True,
              help="its share of the feeder's job slots (--allapps)")
@click.option("--target_nresults", type=click.IntRange(0, 32767), default=0,
              help="replicas for adaptive replication (0: off)")
@_project_dir
def add_app(name, user_friendly_name, hr, beta, weight, target_nresults, project_dir):
    """Register a new application in the database."""
    _check_name("app", name)
    p = Project(project_dir)
    if p.db.query_value("SELECT COUNT(*) FROM app WHERE name = %s", (name,)):
        raise ToolError("Failed to add application: %s already exists" % name)
    app_table.insert_app(p.db, {
        "create_time": int(time.time()), "name": name,
        "user_friendly_name": _text("user friendly name", user_friendly_name),
        "homogeneous_redundancy": HR_TYPES[hr], "weight": weight, "beta": int(beta),
        "target_nresults": target_nresults})
    p.changed()
    click.echo("Added " + _app_text(p.app(name)))


@cli.command("delete")
@click.argument("name")
@click.option("--version", help="delete versions with the given version number (1.05)")
@click.option("--platform", help="delete versions for the given platform")
@click.option("--plan_class", help="delete versions for the given plan class")
@_project_dir
def delete_app(name, version, platform, plan_class, project_dir):
    """Delete application versions (rows and files); without --version,
    --platform or --plan_class, all of them and the application."""
    p = Project(project_dir)
    app = p.app(name)
    whole = version is None and platform is None and plan_class is None
    if whole:
        n = p.db.query_value("SELECT COUNT(*) FROM workunit WHERE appid = %s", (app["id"],), 0)
        if n:
            raise ToolError("application %s has %d job(s) in the database: deprecate it "
                            "instead (appmgr update %s --deprecated); nothing was deleted"
                            % (name, n, name))
    versions = p.versions(app, version, platform, plan_class)
    _refuse_busy_versions(p, versions)
    for av in versions:
        delete_version(p, av)
    if whole:
        app_table.delete_app(p.db, app["id"])
        click.echo("Removed " + _app_text(app))
    elif not versions:
        raise ToolError("no version of %s matches" % name)
    p.changed()


@cli.command("update")
@click.argument("name")
@click.option("--hr", type=click.Choice(sorted(HR_TYPES)), help="homogeneous redundancy type")
@click.option("--beta/--no-beta", default=None, help="in beta testing, or no more")
@click.option("--weight", type=float, help="its share of the feeder's job slots")
@click.option("--target_nresults", type=click.IntRange(0, 32767),
              help="replicas for adaptive replication")
@click.option("--user_friendly_name", help="the user-friendly description")
@click.option("--min_version", help="the lowest app version clients may use (1.05)")
@click.option("--deprecated/--no-deprecated", default=None, help="deprecate, or not")
@_project_dir
def update_app(name, hr, beta, weight, target_nresults, user_friendly_name, min_version,
               deprecated, project_dir):
    """Update the properties of an application (only those given)."""
    p = Project(project_dir)
    app = p.app(name)
    sets = {}
    if hr is not None:
        sets["homogeneous_redundancy"] = HR_TYPES[hr]
    if beta is not None:
        sets["beta"] = int(beta)
    if weight is not None:
        sets["weight"] = weight
    if target_nresults is not None:
        sets["target_nresults"] = target_nresults
    if user_friendly_name:
        sets["user_friendly_name"] = _text("user friendly name", user_friendly_name)
    if min_version is not None:
        sets["min_version"] = version_num(min_version)
    if deprecated is not None:
        sets["deprecated"] = int(deprecated)
    if not sets:
        raise ToolError("nothing to update: give an option (appmgr update --help)")
    app_table.update_app(p.db, app["id"], sets)
    p.changed()
    click.echo("Updated " + _app_text(p.app(name)))


@cli.command("list")
@click.option("--no-versions", "no_versions", is_flag=True, help="do not list versions")
@_project_dir
def list_apps(no_versions, project_dir):
    """List all applications and application versions."""
    p = Project(project_dir)
    platforms = {r["id"]: r["name"] for r in p.db.query("SELECT id, name FROM platform")}
    for app in p.db.query("SELECT * FROM app ORDER BY name"):
        title = "%s: %s" % (app["name"], app["user_friendly_name"])
        click.echo(title)
        click.echo("-" * len(title))
        props = []
        if app["deprecated"]:
            props.append("Deprecated.")
        if app["beta"]:
            props.append("Beta.")
        if app["min_version"]:
            props.append("Min. version: %.2f." % (app["min_version"] / 100.0))
        props.append("%s homogeneous redundancy." % HR_WORDS.get(
            app["homogeneous_redundancy"], str(app["homogeneous_redundancy"])))
        props.append("Weight %g." % app["weight"])
        if app["target_nresults"]:
            props.append("%d adaptive replicas." % app["target_nresults"])
        click.echo(" ".join(props))
        if no_versions:
            click.echo()
            continue
        click.echo("Versions:\n")
        for av in p.versions(app):
            props = []
            if av["plan_class"]:
                props.append("Plan: %s." % av["plan_class"])
            if av["deprecated"]:
                props.append("Deprecated.")
            if av["min_core_version"]:
                props.append("Min. core version: %s." % client_version_text(
                    av["min_core_version"]))
            if av["max_core_version"]:
                props.append("Max. core version: %s." % client_version_text(
                    av["max_core_version"]))
            click.echo("\t%5.2f %s%s" % (av["version_num"] / 100.0,
                                         platforms.get(av["platformid"], "?"),
                                         " (%s)" % " ".join(props) if props else ""))
        click.echo()


@cli.command("update_appver")
@click.argument("name")
@click.option("--version", help="update just the given version number (1.05)")
@click.option("--platform", help="update just the given platform")
@click.option("--plan_class", help="update just the given plan class")
@click.option("--min_core_version", help="the lowest client version (7.20.5) that may use it")
@click.option("--max_core_version", help="the highest client version that may use it")
@click.option("--deprecated/--no-deprecated", default=None, help="deprecate, or not")
@_project_dir
def update_appver(name, version, platform, plan_class, min_core_version, max_core_version,
                  deprecated, project_dir):
    """Update application versions (all of the app's unless --version,
    --platform or --plan_class narrow them)."""
    sets = {}
    if min_core_version is not None:
        sets["min_core_version"] = client_version(min_core_version)
    if max_core_version is not None:
        sets["max_core_version"] = client_version(max_core_version)
    if deprecated is not None:
        sets["deprecated"] = int(deprecated)
    if not sets:
        raise ToolError("nothing to update: give an option (appmgr update_appver --help)")
    if sets.get("max_core_version") and sets.get("min_core_version", 0) > sets["max_core_version"]:
        raise ToolError("--min_core_version is above --max_core_version")
    p = Project(project_dir)
    versions = p.versions(p.app(name), version, platform, plan_class)
    if not versions:
        raise ToolError("no version of %s matches" % name)
    for av in versions:
        app_version_table.update_app_version(p.db, av["id"], sets)
        click.echo("Updated " + _version_text(p, av))
    p.changed()


@cli.command("add_platform")
@click.argument("name")
@click.argument("user_friendly_name")
@_project_dir
def add_platform(name, user_friendly_name, project_dir):
    """Add a new platform definition to the database."""
    _check_name("platform", name)
    p = Project(project_dir)
    if p.db.query_value("SELECT COUNT(*) FROM platform WHERE name = %s", (name,)):
        raise ToolError("platform %s already exists" % name)
    pid = app_table.insert_platform(p.db, {
        "create_time": int(time.time()), "name": name,
        "user_friendly_name": _text("user friendly name", user_friendly_name)})
    p.changed()
    click.echo("Added platform %s (ID %d): %s" % (name, pid, user_friendly_name))


@cli.command("delete_platform")
@click.argument("name")
@click.option("-f", "--force", is_flag=True,
              help="remove any app versions that still exist for this platform")
@_project_dir
def delete_platform(name, force, project_dir):
    """Delete a platform (with --force, its app versions too)."""
    p = Project(project_dir)
    platform = p.platform(name)
    versions = p.db.query("SELECT * FROM app_version WHERE platformid = %s", (platform["id"],))
    if versions and not force:
        raise ToolError("There are still application versions for this platform, bailing out")
    _refuse_busy_versions(p, versions)
    for av in versions:
        delete_version(p, av)
    app_table.delete_platform(p.db, platform["id"])
    p.changed()
    click.echo("Deleted platform %s (ID %d)" % (name, platform["id"]))


@cli.command("update_platform")
@click.argument("name")
@click.option("--deprecated/--no-deprecated", default=None, help="deprecate, or not")
@click.option("--user_friendly_name", help="the platform's description")
@_project_dir
def update_platform(name, deprecated, user_friendly_name, project_dir):
    """Update platform data."""
    p = Project(project_dir)
    platform = p.platform(name)
    sets = {}
    if deprecated is not None:
        sets["deprecated"] = int(deprecated)
    if user_friendly_name:
        sets["user_friendly_name"] = _text("user friendly name", user_friendly_name)
    if not sets:
        raise ToolError("nothing to update: give an option (appmgr update_platform --help)")
    app_table.update_platform(p.db, platform["id"], sets)
    p.changed()
    click.echo("Updated platform %s (ID %d)" % (name, platform["id"]))


@cli.command("list_platform")
@click.option("--short", is_flag=True, help="show the short names only")
@_project_dir
def list_platform(short, project_dir):
    """List all defined platforms."""
    p = Project(project_dir)
    for row in p.db.query("SELECT * FROM platform ORDER BY name"):
        if short:
            click.echo(row["name"])
        else:
            click.echo("%s: %s%s" % (row["name"], row["user_friendly_name"],
                                     " (Deprecated)" if row["deprecated"] else ""))


@cli.command("add_standard_platforms")
@_project_dir
def add_standard_platforms(project_dir):
    """Add BOINC's standard platforms; existing ones are left as they are."""
    p = Project(project_dir)
    added = 0
    for name, description in STANDARD_PLATFORMS:
        if p.db.query_value("SELECT COUNT(*) FROM platform WHERE name = %s", (name,)):
            continue
        pid = app_table.insert_platform(p.db, {"create_time": int(time.time()), "name": name,
                                               "user_friendly_name": description})
        click.echo("Added platform %s (ID %d)" % (name, pid))
        added += 1
    if added:
        p.changed()


def main(argv=None):
    """Entry point of bin/appmgr."""
    return click_main(cli, argv, "appmgr")
