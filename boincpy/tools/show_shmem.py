"""bin/show_shmem: print the feeder's job array as BOINC's show_shmem does.

The header (segment file, layout, ready flag, counts, feeder pid, fill time)
comes first, then what SCHED_SHMEM::show prints: apps, app versions, the
processor types that have apps, host FLOPS statistics, and one line per
slot (a column header every 24 slots): PRESENT slots with app, WU and result
ids, batch, keywords, priority, seconds in the array, size class, need
reliable, infeasible count and required version; ``---`` for EMPTY slots;
``PID n: result r`` for slots a scheduler has reserved.
"""

import sys
import time

import click

from boincpy import shmem
from boincpy.cli import click_main, project_dir_option
from boincpy.config import load_config
from boincpy.errors import BoincpyError
from boincpy.proc_types import PROC_TYPE_NAMES


def _when(t):
    if not t:
        return "never"
    return "%s (%.0f s ago)" % (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t)),
                                time.time() - t)


def show(array, out):
    """Write the array's description to the stream ``out``."""
    h = array.header()
    w = out.write
    w("segment: %s\n" % array.path)
    w("layout version: %d  slot size: %d bytes  xml_doc capacity: %d bytes\n"
      % (h["layout_version"], h["slot_size"], h["xml_capacity"]))
    pid = h["feeder_pid"]
    w("feeder pid: %d (%s)\n" % (pid, "running" if shmem.pid_alive(pid) else "not running"))
    w("created: %s\nlast fill: %s\ntables read: %s\n"
      % (_when(h["create_time"]), _when(h["fill_time"]), _when(h["tables_time"])))
    w("jobs present: %d  with priority > 0: %d\n" % (h["n_present"], h["n_high_priority"]))
    tables = array.tables()
    w("platforms:\n")
    for p in tables["platforms"]:
        w("id: %d name: %s\n" % (p["id"], p["name"]))
    w("apps:\n")
    for a in tables["apps"]:
        w("id: %d name: %s hr: %d weight: %.2f beta: %d hav: %d nci: %d\n"
          % (a["id"], a["name"], a["homogeneous_redundancy"], a["weight"], a["beta"],
             a["homogeneous_app_version"], a["non_cpu_intensive"]))
    w("app versions:\n")
    for av in tables["app_versions"]:
        w("appid: %d platformid: %d version_num: %d plan_class: %s\n"
          % (av["appid"], av["platformid"], av["version_num"], av["plan_class"]))
    for i, name in enumerate(PROC_TYPE_NAMES):
        w("have %s apps: %s\n" % (name, "yes" if h["have_apps"][i] else "no"))
    w("host fpops mean %.2f GFLOPS stddev %.2f GFLOPS\n"
      % (h["host_fpops_mean"] / 1e9, h["host_fpops_stddev"] / 1e9))
    w("host fpops 50th pctile %.2f GFLOPS 95th pctile %.2f GFLOPS\n"
      % (h["host_fpops_50_percentile"] / 1e9, h["host_fpops_95_percentile"] / 1e9))
    w("ready: %d\n" % h["ready"])
    w("max_wu_results: %d\n" % h["nslots"])
    now = time.time()
    for i in range(array.nslots):
        if i % 24 == 0:
            w("%4s %12s %10s %10s %10s %8s %10s %8s %12s %12s %9s %9s\n" % (
                "slot", "app", "WU ID", "result ID", "batch", "kwds", "priority",
                "in shmem", "size class", "need reliable", "inf count", "version"))
        state = array.slot_state(i)
        if state == shmem.EMPTY:
            w("%4d: ---\n" % i)
            continue
        slot = array.read_slot(i)
        if state != shmem.PRESENT:
            w("%4d: PID %d: result %d\n" % (i, state, slot.resultid))
            continue
        app = array.lookup_app(slot.appid)
        wu = slot.wu
        w("%4d %12.12s %10d %10d %10d %8s %10d %7ds %9d %12s %9d %9d\n" % (
            i, app["name"] if app else "missing", wu["id"], slot.resultid, wu["batch"],
            wu["keywords"], slot.res_priority, int(now - slot.time_added),
            wu["size_class"], "yes" if slot.need_reliable else "no",
            slot.infeasible_count, wu["app_version_num"]))


@click.command(help="Displays the feeder's shared job array.",
               context_settings={"help_option_names": ["-h", "--help"]})
@project_dir_option()
def show_shmem_cmd(project_dir):
    """Attach the project's array and print it; exit status 1 if absent."""
    try:
        cfg = load_config(project_dir)
        array = shmem.open_segment(shmem.segment_path(cfg))
    except BoincpyError as exc:
        if hasattr(exc, "log_text"):
            print("can't attach shmem: key %x: %s" % (cfg.shmem_key or 0, exc))
        else:
            print("Can't parse config.xml: %s" % exc)
        return 1
    try:
        show(array, sys.stdout)
    finally:
        array.close()
    return 0


def main(argv=None):
    """Entry point of bin/show_shmem."""
    return click_main(show_shmem_cmd, argv, "show_shmem")
