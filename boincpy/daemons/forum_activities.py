"""update_forum_activities (BOINC's html/ops/update_forum_activities.php, a
task of config.xml, hourly as BOINC's make_project lists it; also
``run_in_ops ./update_forum_activities.php``): the ``activity`` of every
thread, which the message boards can sort by: a help-desk thread's is
(sufferers + 1) / age in days, any other's the sum over its posts of
2^-(age in weeks) (see boincpy.db.forum.update_activities)."""

import time

from boincpy.daemons.base import Daemon
from boincpy.db.forum import update_activities


class UpdateForumActivities(Daemon):
    """update_forum_activities.php"""

    name = "update_forum_activities"
    description = "Recompute the activity of every message-board thread."
    one_shot = True
    supports_mod = False

    def now(self):
        return time.time()

    def one_pass(self):
        now = int(self.now())
        self.log.normal("Starting: %s" % time.strftime("%d %b %Y %H:%M:%S UTC",
                                                       time.gmtime(now)))
        helpdesk, others = update_activities(self.db, now)
        self.log.normal("activity of %d help-desk and %d other threads updated"
                        % (helpdesk, others))
        self.log.normal("Finished")
        return False
