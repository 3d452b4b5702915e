"""Helpers for the back-end daemon tests: rows made for the purpose, one pass at a time."""

import contextlib
import io
import os
import sys
import time

from boincpy.config import load_config
from boincpy.db import connect

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WU_DEFAULTS = dict(create_time=0, appid=1, xml_doc="", batch=0, rsc_fpops_est=1e12,
                   rsc_fpops_bound=1e13, rsc_memory_bound=1e8, rsc_disk_bound=1e9,
                   need_validate=0, canonical_resultid=0, canonical_credit=0,
                   transition_time=0, delay_bound=3600, error_mask=0, file_delete_state=0,
                   assimilate_state=0, hr_class=0, opaque=0, min_quorum=1,
                   target_nresults=1, max_error_results=3, max_total_results=6,
                   max_success_results=3,
                   result_template_file="templates/example_app_out", priority=0,
                   app_version_id=0, transitioner_flags=0, size_class=-1)

RESULT_DEFAULTS = dict(create_time=0, server_state=2, outcome=0, client_state=0, hostid=0,
                       userid=0, report_deadline=0, sent_time=0, received_time=0,
                       xml_doc_in="", xml_doc_out="", stderr_out="", batch=0,
                       file_delete_state=0, validate_state=0, appid=1, exit_status=0,
                       app_version_id=0, priority=0)


def insert(db, table, values):
    cols = list(values)
    return db.insert("INSERT INTO %s (%s) VALUES (%s)" % (
        table, ", ".join(cols), ", ".join(["%s"] * len(cols))), [values[c] for c in cols])


def make_wu(db, name, **cols):
    """Insert a workunit (due now unless transition_time is given); return its id."""
    values = dict(WU_DEFAULTS, name=name)
    values.update(cols)
    return insert(db, "workunit", values)


def make_result(db, wuid, name, **cols):
    """Insert a result of workunit ``wuid``; return its id."""
    values = dict(RESULT_DEFAULTS, workunitid=wuid, name=name)
    values.update(cols)
    return insert(db, "result", values)


def wu_row(db, wuid):
    return db.query_one("SELECT * FROM workunit WHERE id = %s", (wuid,))


def results_of(db, wuid):
    return db.query("SELECT * FROM result WHERE workunitid = %s ORDER BY id", (wuid,))


def run_daemon_once(daemon_class, project, *args):
    """Run ``daemon_class`` in-process with --one_pass (a task: once); return
    (status, log text)."""
    from boincpy.daemons.base import run_daemon
    err = io.StringIO()
    once = [] if daemon_class.one_shot else ["--one_pass"]
    with contextlib.redirect_stderr(err):
        status = run_daemon(daemon_class, once + ["--project_dir", str(project)] + list(args))
    return status, err.getvalue()


def project_db(project):
    cfg = load_config(str(project))
    return cfg, connect(cfg)


def bin_env(project=None):
    """Environment for running the repository's bin/ scripts as subprocesses."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    if project is not None:
        env["BOINC_PROJECT_DIR"] = str(project)
    return env


def bin_cmd(name, *args):
    return [sys.executable, os.path.join(REPO, "bin", name)] + list(args)


def wait_for(predicate, timeout=20.0, step=0.05):
    """Poll ``predicate`` until true (returns its value) or raise after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within %g s" % timeout)
        time.sleep(step)


def set_options(project, **changes):
    """Rewrite PROJECT/config.xml with some options changed (daemons/tasks kept)."""
    from boincpy.config import write_config
    cfg = load_config(str(project))
    options = cfg.as_options()
    options.update(changes)
    write_config(str(project), options, cfg.daemons, cfg.tasks)


def make_upload_keys(project):
    from boincpy import crypto
    keys = os.path.join(str(project), "keys")
    crypto.generate_key_pair(os.path.join(keys, "upload_private"),
                             os.path.join(keys, "upload_public"))
