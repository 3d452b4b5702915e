"""Rows and files for back-end daemon tests: users, hosts, jobs in given states.

Used with the ``mini_project`` fixture: rows go straight into its database
(as the scheduler and transitioner would have left them), output files into
its upload/ fan-out, input files into download/.
"""

import time

from boincpy.config import load_config, write_config
from boincpy.daemons.base import parse_args
from boincpy.db import connect
from boincpy.files import dir_hier_path
from boincpy.log import MessageLog


def project_config(project, **options):
    """The project's Config, after setting ``options`` in its config.xml."""
    cfg = load_config(str(project))
    if options:
        opts = cfg.as_options()
        opts.update(options)
        write_config(str(project), opts)
        cfg = load_config(str(project))
    return cfg


def make_daemon(cls, project, *argv, log_stream=None):
    """An initialised daemon of class ``cls`` for one-pass tests."""
    args = parse_args(cls, list(argv) + ["--project_dir", str(project)])
    cfg = load_config(str(project))
    import io
    stream = log_stream if log_stream is not None else io.StringIO()
    daemon = cls(args, cfg, MessageLog(stream, 4))
    daemon.log_stream = stream
    return daemon


def run_pass(cls, project, *argv, now=None):
    """initialise + one pass + shutdown; returns (daemon, what one_pass returned)."""
    d = make_daemon(cls, project, *argv)
    if now is not None:
        d.now = lambda: now
    d.initialise()
    try:
        found = d.one_pass()
    finally:
        d.shutdown()
    return d, found


def db_of(project):
    return connect(load_config(str(project)))


def app_id(db, name="example_app"):
    return db.query_value("SELECT id FROM app WHERE name = %s", (name,))


def add_team(db, name="Team A"):
    return db.insert("INSERT INTO team (create_time, userid, name, name_lc, url, type,"
                     " name_html, description, nusers, country) VALUES (0, 0, %s, %s, '',"
                     " 1, '', '', 0, '')", (name, name.lower()))


def add_user(db, name, teamid=0, total_credit=0.0, expavg_credit=0.0, expavg_time=0.0):
    return db.insert("INSERT INTO user (create_time, email_addr, name, authenticator, country,"
                     " postal_code, total_credit, expavg_credit, expavg_time, global_prefs,"
                     " project_prefs, teamid, venue, url, signature, cross_project_id,"
                     " passwd_hash) VALUES (0, %s, %s, %s, '', '', %s, %s, %s, '', '', %s,"
                     " '', '', '', '', '')",
                     (name + "@example.com", name, "auth_" + name, total_credit, expavg_credit,
                      expavg_time, teamid))


def add_host(db, userid, total_credit=0.0, expavg_credit=0.0, expavg_time=0.0,
             avg_turnaround=0.0):
    return db.insert("INSERT INTO host (create_time, userid, total_credit, expavg_credit,"
                     " expavg_time, p_ncpus, p_fpops, os_name, avg_turnaround, misc) VALUES"
                     " (0, %s, %s, %s, %s, 2, 1e9, 'Linux', %s, '')",
                     (userid, total_credit, expavg_credit, expavg_time, avg_turnaround))


def add_app_version(db, appid, version_num=100, pfc_n=0.0, pfc_avg=0.0, pfc_scale=0.0):
    platform = db.query_value("SELECT id FROM platform LIMIT 1")
    return db.insert("INSERT INTO app_version (create_time, appid, version_num, platformid,"
                     " xml_doc, plan_class, pfc_n, pfc_avg, pfc_scale) VALUES"
                     " (0, %s, %s, %s, '', '', %s, %s, %s)",
                     (appid, version_num, platform, pfc_n, pfc_avg, pfc_scale))


def add_hav(db, host_id, app_version_id, **cols):
    names = ["host_id", "app_version_id"] + list(cols)
    db.execute("INSERT INTO host_app_version (%s) VALUES (%s)"
               % (", ".join(names), ", ".join(["%s"] * len(names))),
               [host_id, app_version_id] + list(cols.values()))


def hav(db, host_id, app_version_id):
    return db.query_one("SELECT * FROM host_app_version WHERE host_id = %s AND"
                        " app_version_id = %s", (host_id, app_version_id))


INPUT_XML = """<file_info>
    <name>%(name)s</name>
    <url>http://127.0.0.1/test/download/%(name)s</url>
    <md5_cksum>0</md5_cksum>
    <nbytes>0</nbytes>
</file_info>
"""


def wu_xml(inputs=(), no_delete=(), sticky=()):
    """A workunit xml_doc naming ``inputs`` (file names)."""
    parts = []
    for name in inputs:
        extra = ""
        if name in no_delete:
            extra += "    <no_delete/>\n"
        if name in sticky:
            extra += "    <sticky/>\n"
        parts.append("<file_info>\n%s    <name>%s</name>\n    <url>http://x/%s</url>\n"
                     "</file_info>\n" % (extra, name, name))
    parts.append("<workunit>\n%s</workunit>\n" % "".join(
        "    <file_ref>\n        <file_name>%s</file_name>\n        <open_name>in%d</open_name>\n"
        "    </file_ref>\n" % (n, i) for i, n in enumerate(inputs)))
    return "".join(parts)


def add_workunit(db, name, appid, min_quorum=1, target_nresults=1, need_validate=1,
                 canonical_resultid=0, canonical_credit=0.0, assimilate_state=0,
                 file_delete_state=0, error_mask=0, transition_time=None, xml_doc=None,
                 rsc_fpops_est=3.6e12, rsc_fpops_bound=8.64e13, max_success_results=6,
                 max_total_results=10, max_error_results=3, opaque=0.0, batch=0,
                 delay_bound=604800):
    if transition_time is None:
        transition_time = int(time.time()) + 86400
    if xml_doc is None:
        xml_doc = wu_xml()
    return db.insert(
        "INSERT INTO workunit (create_time, appid, name, xml_doc, batch, rsc_fpops_est,"
        " rsc_fpops_bound, rsc_memory_bound, rsc_disk_bound, need_validate,"
        " canonical_resultid, canonical_credit, transition_time, delay_bound, error_mask,"
        " file_delete_state, assimilate_state, opaque, min_quorum, target_nresults,"
        " max_error_results, max_total_results, max_success_results, result_template_file)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, 5e8, 1e9, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s, %s, %s, 'templates/example_app_out')",
        (int(time.time()), appid, name, xml_doc, batch, rsc_fpops_est, rsc_fpops_bound,
         need_validate, canonical_resultid, canonical_credit, transition_time, delay_bound,
         error_mask, file_delete_state, assimilate_state, opaque, min_quorum, target_nresults,
         max_error_results, max_total_results, max_success_results))


def result_xml(name, outputs=("out",), optional=(), no_validate=(), no_delete=()):
    """A result's xml_doc_in with one output file per logical name in ``outputs``;
    physical names are NAME_r1234_K.  Returns (xml, [physical names])."""
    infos, refs, phys = [], [], []
    for k, logical in enumerate(outputs):
        p = "%s_r1234_%d" % (name, k)
        phys.append(p)
        infos.append("<file_info>\n    <name>%s</name>\n    <generated_locally/>\n"
                     "    <upload_when_present/>\n    <max_nbytes>5000000</max_nbytes>\n"
                     "    <url>http://127.0.0.1/test_cgi/file_upload_handler</url>\n%s"
                     "</file_info>\n" % (p, "    <no_delete/>\n" if logical in no_delete else ""))
        flags = ""
        if logical in optional:
            flags += "        <optional/>\n"
        if logical in no_validate:
            flags += "        <no_validate/>\n"
        refs.append("    <file_ref>\n        <file_name>%s</file_name>\n"
                    "        <open_name>%s</open_name>\n%s    </file_ref>\n" % (p, logical, flags))
    return "".join(infos) + "<result>\n" + "".join(refs) + "</result>", phys


def upload_path(project, phys_name, create=True):
    cfg = load_config(str(project))
    return dir_hier_path(cfg.upload_dir, phys_name, cfg.uldl_dir_fanout, create=create)


def download_path(project, name, create=True):
    cfg = load_config(str(project))
    return dir_hier_path(cfg.download_dir, name, cfg.uldl_dir_fanout, create=create)


def add_result(db, project, wuid, name, hostid=0, userid=0, teamid=0, server_state=5,
               outcome=1, validate_state=0, outputs=None, output_names=("out",),
               elapsed_time=31.084677, cpu_time=29.87437, flops_estimate=1e9,
               sent_time=None, received_time=None, app_version_id=0, appid=None,
               stderr_out="", granted_credit=0.0, claimed_credit=0.0, file_delete_state=0,
               client_state=5, optional=(), no_validate=(), no_delete=(), xml_doc_in=None):
    """Insert a result; ``outputs`` (list of bytes/None per output) are written
    to the upload fan-out (None: no file).  Returns (id, [output paths])."""
    now = int(time.time())
    if sent_time is None:
        sent_time = now - 3600
    if received_time is None:
        received_time = now - 60 if server_state == 5 else 0
    if appid is None:
        appid = db.query_value("SELECT appid FROM workunit WHERE id = %s", (wuid,))
    xml, phys = result_xml(name, output_names, optional, no_validate, no_delete)
    if xml_doc_in is not None:
        xml = xml_doc_in
    paths = []
    for k, p in enumerate(phys):
        path = upload_path(project, p)
        paths.append(path)
        if outputs is not None and k < len(outputs) and outputs[k] is not None:
            with open(path, "wb") as f:
                f.write(outputs[k])
    rid = db.insert(
        "INSERT INTO result (create_time, workunitid, server_state, outcome, client_state,"
        " hostid, userid, teamid, report_deadline, sent_time, received_time, name, cpu_time,"
        " xml_doc_in, xml_doc_out, stderr_out, validate_state, granted_credit, claimed_credit,"
        " appid, elapsed_time, flops_estimate, app_version_id, file_delete_state)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, '', %s, %s, %s, %s,"
        " %s, %s, %s, %s, %s)",
        (now, wuid, server_state, outcome, client_state, hostid, userid, teamid,
         sent_time + 604800, sent_time, received_time, name, cpu_time, xml, stderr_out,
         validate_state, granted_credit, claimed_credit, appid, elapsed_time, flops_estimate,
         app_version_id, file_delete_state))
    return rid, paths


def row(db, table, rid):
    return db.query_one("SELECT * FROM %s WHERE id = %%s" % table, (rid,))
