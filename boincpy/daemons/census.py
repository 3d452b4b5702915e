"""census: how much recent credit each homogeneous-redundancy class of hosts
earns (BOINC's sched/census.cpp).

    census [-d N]

Reads every host with expavg_credit > 1 and adds its expavg_credit to its
class under each HR type it has a class in (boincpy.hrclass), then replaces
``PROJECT/hr_info.txt`` (atomically: a feeder reading it never sees half).
The feeder reads that file with ``<hr_allocate_slots/>`` (at start and on
``reread_db``) to give each class a share of the job array.  Run it as a
task, about once a day, when apps use homogeneous redundancy.
"""

from boincpy.daemons.base import Daemon, progress
from boincpy.files import atomic_write
from boincpy.hrclass import CENSUS_HOST_WHERE, HR_INFO_FILE, HrInfo


class Census(Daemon):
    """The census task."""

    name = "census"
    one_shot = True
    supports_mod = False
    description = ("Write PROJECT/hr_info.txt: the recent credit (RAC) of each homogeneous "
                   "redundancy class of hosts, which the feeder reads with "
                   "hr_allocate_slots.  Run it about once a day.")

    def one_pass(self):
        self.log.normal("Starting")
        info = HrInfo()
        # as C++: dirty reads, so the scan takes no locks on a busy host table
        self.db.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
        n = self.db.query_value("SELECT COUNT(*) FROM host WHERE " + CENSUS_HOST_WHERE,
                                default=0)
        with progress(n, "hosts") as bar:
            for host in self.db.stream("SELECT os_name, p_vendor, p_model, expavg_credit "
                                       "FROM host WHERE " + CENSUS_HOST_WHERE):
                info.add_host(host)
                bar.update(1)
        atomic_write(self.cfg.project_path(HR_INFO_FILE), info.text())
        self.log.normal("%d hosts; %s written" % (n, HR_INFO_FILE))
        self.log.normal("Finished")
        return True
