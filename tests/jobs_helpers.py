"""Helpers for the feeder / job array / job choice tests and the benchmark:
app versions, jobs and scheduler requests written straight into a project's
database, a feeder driven in-process, a SchedContext for choose, and a
connection that counts its round trips."""

import io
import os
import time

from boincpy.config import load_config
from boincpy.db import connect
from boincpy.log import MessageLog
from boincpy.sched.context import SchedContext
from boincpy.sched.request import (ClientAppVersion, OtherResult, ResourceRequest,
                                   SchedulerRequest)

LINUX = "x86_64-pc-linux-gnu"
WU_XML = ("<file_info>\n    <name>%s_in</name>\n    <url>http://x/download/%s_in</url>\n"
          "</file_info>\n<workunit>\n    <file_ref>\n        <file_name>%s_in</file_name>\n"
          "        <open_name>in</open_name>\n    </file_ref>\n</workunit>\n")
RESULT_XML = "<result>\n    <file_ref><file_name>%s_out</file_name></file_ref>\n</result>\n"


class _CountingConnection:
    """A database connection that records each COM_QUERY (a round trip) it sends."""

    def __init__(self, conn, sent):
        self.conn, self.sent = conn, sent

    def query(self, text):
        self.sent.append(text)
        return self.conn.query(text)

    def __getattr__(self, name):
        return getattr(self.conn, name)


def count_round_trips(db):
    """Make the boincpy.db.lite database ``db`` record what it sends to the
    server, one entry per round trip; returns that list."""
    sent = []
    db.conn = _CountingConnection(db.conn, sent)
    return sent


def project_config(root, **options):
    """load_config(root) with options overridden (as if written in config.xml)."""
    cfg = load_config(str(root))
    for k, v in options.items():
        setattr(cfg, k, v)
    return cfg


def add_platform(db, name, deprecated=0):
    return db.insert("INSERT INTO platform (create_time, name, user_friendly_name, deprecated) "
                     "VALUES (0, %s, %s, %s)", (name, name, deprecated))


def add_app(db, name, **cols):
    cols.setdefault("user_friendly_name", name)
    keys = ["create_time", "name"] + list(cols)
    return db.insert("INSERT INTO app (%s) VALUES (%s)" % (", ".join(keys),
                     ", ".join(["%s"] * len(keys))), [0, name] + list(cols.values()))


def add_app_version(db, appid=1, platformid=1, version_num=100, plan_class="", **cols):
    cols.setdefault("xml_doc", "<app_version>\n<app_name>x</app_name>\n<version_num>%d"
                    "</version_num>\n</app_version>\n" % version_num)
    keys = ["appid", "platformid", "version_num", "plan_class"] + list(cols)
    return db.insert("INSERT INTO app_version (%s) VALUES (%s)" % (
        ", ".join(keys), ", ".join(["%s"] * len(keys))),
        [appid, platformid, version_num, plan_class] + list(cols.values()))


def add_jobs(db, n, appid=1, prefix="wu", results_per_wu=1, priority=0, batch=0,
             rsc_fpops_est=1e12, rsc_memory_bound=1e6, rsc_disk_bound=1e6,
             delay_bound=86400, error_mask=0, xml_doc=None, app_version_num=0,
             transitioner_flags=0, target_nresults=1):
    """n workunits with ``results_per_wu`` UNSENT results each; returns
    [(wuid, [resultid, ...])] in creation order."""
    now = int(time.time())
    first = (db.query_value("SELECT MAX(id) FROM workunit", default=0) or 0) + 1
    rows = []
    for k in range(n):
        name = "%s_%d_%d" % (prefix, first + k, os.getpid())
        doc = xml_doc if xml_doc is not None else WU_XML % (name, name, name)
        rows.append((now, appid, name, doc, batch, rsc_fpops_est, rsc_fpops_est * 10,
                     rsc_memory_bound, rsc_disk_bound, now, delay_bound, error_mask,
                     target_nresults, target_nresults, 5, 10, 5, "templates/example_app_out",
                     priority, transitioner_flags, app_version_num))
    db.insert_many("workunit", ("create_time", "appid", "name", "xml_doc", "batch",
                                "rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound",
                                "rsc_disk_bound", "transition_time", "delay_bound",
                                "error_mask", "min_quorum", "target_nresults",
                                "max_error_results", "max_total_results",
                                "max_success_results", "result_template_file", "priority",
                                "transitioner_flags", "app_version_num"), rows)
    wus = db.query("SELECT id, name FROM workunit WHERE id >= %s ORDER BY id", (first,))
    res = []
    for w in wus:
        for j in range(results_per_wu):
            rname = "%s_%d" % (w["name"], j)
            res.append((now, w["id"], 2, rname, RESULT_XML % rname, appid, priority,
                        (w["id"] * 7919 + j * 104729) % 1000003, batch))
    db.insert_many("result", ("create_time", "workunitid", "server_state", "name",
                              "xml_doc_in", "appid", "priority", "random", "batch"), res)
    out = []
    for w in wus:
        ids = [r["id"] for r in db.query("SELECT id FROM result WHERE workunitid = %s "
                                         "ORDER BY id", (w["id"],))]
        out.append((w["id"], ids))
    return out


def make_feeder(cfg, argv=(), log_stream=None):
    """A Feeder for ``cfg`` with bin/feeder's command line ``argv``, initialised."""
    from boincpy.daemons.base import parse_args
    from boincpy.daemons.feeder import Feeder
    args = parse_args(Feeder, argv)
    log = MessageLog(log_stream if log_stream is not None else io.StringIO(), 4)
    feeder = Feeder(args, cfg, log)
    feeder.initialise()
    return feeder


class Feeding:
    """Drives a project's feeder for scheduler tests: each call (re)starts it
    with ``argv``, runs one pass and returns the attached JobArray;
    ``self.log`` holds the last feeder's log.  ``close()`` stops it and
    removes the segment."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.feeder = None
        self.log = None

    def __call__(self, argv=()):
        from boincpy import shmem
        if self.feeder is not None:
            self.feeder.shutdown()
        self.log = io.StringIO()
        self.feeder = make_feeder(self.cfg, argv, log_stream=self.log)
        self.feeder.one_pass()
        return shmem.attach(self.cfg, wait_ready=0)

    def close(self):
        from boincpy import shmem
        if self.feeder is not None:
            self.feeder.shutdown()
            self.feeder = None
        path = shmem.segment_path(self.cfg)
        if os.path.exists(path):
            os.unlink(path)


def make_request(platform=LINUX, alt_platforms=(), req_secs=1000.0, req_instances=0.0,
                 estimated_delay=0.0, ncpus=4, p_fpops=3e9, m_nbytes=8e9, d_free=100e9,
                 d_total=200e9, version=(7, 20, 5), other_results=(), app_versions=(),
                 **host):
    req = SchedulerRequest(platform_name=platform, alt_platforms=list(alt_platforms),
                           core_client_major_version=version[0],
                           core_client_minor_version=version[1],
                           core_client_release=version[2], work_req_seconds=req_secs)
    req.resources = [ResourceRequest(req_secs=req_secs, req_instances=req_instances,
                                     estimated_delay=estimated_delay)]
    req.host.p_ncpus = ncpus
    req.host.p_fpops = p_fpops
    req.host.m_nbytes = m_nbytes
    req.host.d_free = d_free
    req.host.d_total = d_total
    req.host.os_name = "Linux"
    for k, v in host.items():
        setattr(req.host, k, v)
    if other_results is not None:
        req.have_other_results_list = True
        req.other_results = [o if isinstance(o, OtherResult) else OtherResult(name=o)
                             for o in other_results]
    req.app_versions = list(app_versions)
    return req


def make_ctx(cfg, db, request, hostid=1, userid=1, project_prefs="", rpc_time=None,
             log_stream=None):
    now = int(time.time())
    log = MessageLog(log_stream if log_stream is not None else io.StringIO(), 4)
    host = {"id": hostid, "userid": userid, "rpc_time": now if rpc_time is None else rpc_time,
            "p_ncpus": request.host.p_ncpus, "total_credit": 0.0, "venue": ""}
    user = {"id": userid, "project_prefs": project_prefs, "seti_id": 0}
    return SchedContext(cfg=cfg, db=db, log=log, now=now, request=request, user=user,
                        host=host)


__all__ = ["ClientAppVersion", "OtherResult", "connect"]
