"""The README's demo: create a BOINC project on this machine and fill it with jobs.

It runs the same bin/ commands an operator would (make_project, xadd,
update_versions, stage_file, create_work), so the demo is also a check that
they work together.  Running it again reuses the existing project.
"""

import os
import secrets
import shutil
import subprocess
import sys

import click

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLATFORM = "x86_64-pc-linux-gnu"


def _run(argv, cwd=None, stdin_text=None):
    """Run one project command, echoing it; stop the demo on failure."""
    click.echo("$ " + " ".join(argv))
    proc = subprocess.run(argv, cwd=cwd, input=stdin_text, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.stdout.strip():
        click.echo(proc.stdout.rstrip())
    if proc.returncode != 0:
        raise click.ClickException("%s failed (exit %d)" % (argv[0], proc.returncode))
    return proc.stdout


def build_example_app(dest_dir):
    """Build examples/example_app with make and copy it into an update_versions dir."""
    src = os.path.join(REPO_ROOT, "examples", "example_app")
    _run(["make", "-s", "-C", src])
    os.makedirs(dest_dir, exist_ok=True)
    name = "example_app_1.0_" + PLATFORM
    target = os.path.join(dest_dir, name)
    if not os.path.exists(target):
        shutil.copy2(os.path.join(src, "example_app"), target)
    return target


def run_demo(project_root, short_name, url_base, db_name, njobs, db_root_user=None):
    """Create (or reuse) the demo project and add ``njobs`` jobs; return the project root."""
    python = sys.executable
    bin_dir = os.path.join(REPO_ROOT, "bin")
    if not os.path.exists(os.path.join(project_root, "config.xml")):
        argv = [python, os.path.join(bin_dir, "make_project"),
                "--project_root", project_root, "--url_base", url_base,
                "--db_name", db_name, "--db_user", db_name,
                "--db_passwd", secrets.token_hex(12), "--test_app",
                short_name, "boincpy demo project"]
        if db_root_user:
            argv[2:2] = ["--db_root_user", db_root_user]
        _run(argv)
    else:
        click.echo("reusing the existing project in %s" % project_root)
    pbin = os.path.join(project_root, "bin")
    _run([os.path.join(pbin, "xadd")], cwd=project_root)
    build_example_app(os.path.join(project_root, "apps", "example_app", "1.0", PLATFORM))
    _run([os.path.join(pbin, "update_versions"), "--noconfirm"], cwd=project_root)

    # One small input file per job, staged into the download hierarchy.
    batch = secrets.token_hex(3)
    lines = []
    staging = os.path.join(project_root, "tmp_demo")
    os.makedirs(staging, exist_ok=True)
    for i in range(njobs):
        name = "demo_%s_%d.txt" % (batch, i)
        with open(os.path.join(staging, name), "w") as f:
            f.write("boincpy demo input %d of batch %s\n" % (i, batch))
    _run([os.path.join(pbin, "stage_file"), staging], cwd=project_root)
    for i in range(njobs):
        lines.append("--wu_name demo_%s_%d demo_%s_%d.txt" % (batch, i, batch, i))
    _run([os.path.join(pbin, "create_work"), "--appname", "example_app", "--stdin"],
         cwd=project_root, stdin_text="\n".join(lines) + "\n")
    return project_root


def summary(project_root):
    """Counts of the demo project's rows, as printed at the end of the demo."""
    from boincpy.config import load_config
    from boincpy.db import connect

    db = connect(load_config(project_root))
    try:
        counts = {}
        for table in ("platform", "app", "app_version", "workunit"):
            counts[table] = db.query_one("SELECT COUNT(*) AS n FROM `%s`" % table)["n"]
        return counts
    finally:
        db.close()


@click.command()
@click.option("--project_root", default=os.path.expanduser("~/projects/boincpy_demo"),
              show_default=True, help="Where the demo project lives.")
@click.option("--short_name", default="boincpy_demo", show_default=True)
@click.option("--url_base", default="http://127.0.0.1:8080/", show_default=True)
@click.option("--db_name", default="boincpy_demo", show_default=True)
@click.option("--db_root_user", default=None, help="Database admin account (default root over the socket).")
@click.option("--jobs", "njobs", default=20, show_default=True, help="Jobs to create.")
def main(project_root, short_name, url_base, db_name, db_root_user, njobs):
    """Create a demo BOINC project with a signed native app and a batch of jobs."""
    root = run_demo(project_root, short_name, url_base, db_name, njobs, db_root_user)
    counts = summary(root)
    click.echo("")
    click.echo("Demo project ready in %s" % root)
    click.echo("  platforms %(platform)d, apps %(app)d, app versions %(app_version)d, "
               "workunits %(workunit)d" % counts)
    click.echo("  next: the scheduler and daemons (bin/start) come with later issues")


if __name__ == "__main__":
    main()
