"""The state of one scheduler request, shared by the steps that handle it.

``handler`` builds a :class:`SchedContext` (request parsed, user and host
found), ``reports`` fills the acknowledgements, job choice (``send`` and the
modules it calls) appends the jobs it sends as :class:`SentJob` and the
reasons it sends none, and ``reply`` turns the :class:`ReplyData` into the
<scheduler_reply> document.

Rows (user, host, team, app, workunit, result, app_version, platform,
host_app_version) are plain dicts keyed by column name, as the database layer
returns them.  The classes are :class:`~boincpy.record.Record`\\ s:
keyword or positional construction like the dataclasses they replace.
"""

from boincpy.record import Record

# <message priority="..."> words the client knows
PRIORITY_LOW = "low"
PRIORITY_NOTICE = "notice"
PRIORITY_HIGH = "high"


class SentJob(Record):
    """One job in the reply: a claimed result with what the client needs to run it.

    ``workunit`` holds the rsc_* values the client is to get (a plan class's
    memory use and the anonymous platform's FLOPs scale already applied);
    the reply writes them as they are.
    """

    FIELDS = (
        ("app", None),                   # app row
        ("workunit", None),              # workunit row (xml_doc as stored)
        ("result", None),                # result row as claimed (name, xml_doc_in, ...)
        ("app_version", None),           # app_version row; None on the anonymous platform
        ("client_app_version", None),    # request.ClientAppVersion on the anonymous platform
        ("report_deadline", 0),          # what the client is told (without the grace period)
        ("avg_ncpus", 1.0),
        ("flops", 0.0),                  # projected FLOPS -> <flops> in <app_version>
        ("plan_class", ""),
        ("coproc_type", ""),             # "NVIDIA", "ATI", "intel_gpu", ... for GPU versions
        ("coproc_usage", 0.0),
        ("gpu_ram", 0.0),
        ("cmdline", ""),                 # plan-class command line
        ("resend", False),               # a lost result sent again
    )


class ReplyData(Record):
    """Everything the reply will carry, gathered while the request is handled."""

    FIELDS = (
        ("hostid", 0),                   # sent only when the host record was created/changed
        ("request_delay", 0.0),
        ("messages", list),              # [(priority, text)]
        ("result_acks", list),           # [result name]
        ("result_aborts", list),
        ("result_abort_if_not_starteds", list),
        ("jobs", list),                  # [SentJob]
        ("send_code_sign_key", False),
        ("project_is_down", False),
        ("no_work_reasons", list),       # [str] why jobs were not sent
        # -- added with the reply writer --
        ("nucleus_only", True),          # only the nucleus (messages, delay) until a user is known
        ("code_sign_key_signature", ""),  # signature_stripped_N when rotating keys
        ("send_global_prefs", False),    # user.global_prefs is newer than the client's
        ("send_msg_ack", False),         # trickle-ups stored
        ("msgs_to_host", list),          # [xml] trickle-downs
        ("file_deletes", list),          # [file name] <delete_file_info>
    )

    def add_message(self, text, priority=PRIORITY_LOW):
        if (priority, text) not in self.messages:
            self.messages.append((priority, text))

    def set_delay(self, delay):
        """Raise request_delay to ``delay`` (BOINC's set_delay: max, capped at 2 days)."""
        if self.request_delay < delay:
            self.request_delay = delay
        if self.request_delay > DELAY_MAX:
            self.request_delay = DELAY_MAX

    def add_no_work_reason(self, text):
        """Record why no (more) jobs were sent; it reaches the reply and the log."""
        if text not in self.no_work_reasons:
            self.no_work_reasons.append(text)


DELAY_MAX = 2 * 86400


class SchedContext(Record):
    """One request being handled."""

    FIELDS = (
        ("cfg", None),                   # boincpy.config.Config
        ("db", None),                    # boincpy.db.Database
        ("log", None),                   # boincpy.log.MessageLog (scheduler style)
        ("now", 0),
        ("request", None),               # boincpy.sched.request.SchedulerRequest
        ("user", None),                  # user row
        ("host", None),                  # host row (as updated by this request)
        ("team", None),
        ("reply", ReplyData),
        # -- added with request handling --
        ("platforms", list),             # platform rows of the client's platforms, primary first
        ("host_app_versions", dict),     # app_version_id (generalized) -> host_app_version row
        ("email_hash", ""),              # MD5 of user.email_addr
        ("using_weak_auth", False),
        ("last_rpc_time", None),         # host.rpc_time before this request (None: not yet read)
        ("resend_lost_results", False),  # a success was reported again: resend lost jobs
        ("no_jobs_available", False),    # the job array was empty when checked
        ("environ", dict),               # CGI environment (REMOTE_ADDR ...)
        ("code_sign_key", ""),           # KEY_DIR/code_sign_public, whitespace-stripped
        ("new_day", False),              # host's day changed since its last RPC: n_jobs_today reset
        ("work", None),                  # job choice's per-request state (boincpy.sched.choose)
        ("resident", None),              # boincpy.resident.Resident: the process's database
        ("read_ahead", dict),            # name -> rows read with the host row (hosts.authenticate)
        ("wu_transition_times", dict),   # wu id -> transition_time to lower it to, at the end
    )

    def lower_transition_time(self, wu_id, when):
        """Have workunit ``wu_id``'s transition_time lowered to ``when`` (a
        report to look at, a deadline to watch).  Inside the request's
        transaction the workunits are written together at its end, in id
        order (:func:`boincpy.sched.handler.write_transition_times`), after
        the result rows: the order the transitioner and the validator lock
        them in, so a request can't hold a workunit one of them waits for
        while it waits for a result they hold, and two requests can't hold
        each other's workunits.  Outside a transaction at once."""
        if self.db.in_transaction:
            old = self.wu_transition_times.get(wu_id)
            self.wu_transition_times[wu_id] = when if old is None else min(old, when)
        else:
            from boincpy.db.workunit import lower_transition_times
            lower_transition_times(self.db, {wu_id: when})

    def take_read_ahead(self, name):
        """The rows read ahead under ``name`` for this request's host (see
        :func:`boincpy.sched.hosts.authenticate`), once; None when there are none."""
        return self.read_ahead.pop(name, None)

    def fitted(self, table, row, who):
        """``row`` ({column: value} from what the client sent) with every value
        fitted to its column of ``table`` (:func:`boincpy.db.columns.fit_row`:
        BOINC's buffers cut or drop what doesn't fit, so one odd field can't
        make the request fail); each change is logged, ``who`` first.  XML
        documents (global_prefs, xml_doc_out, misc) are dropped, never cut."""
        from boincpy.db.columns import fit_row
        row, changes = fit_row(table, row, drop_text=("global_prefs", "xml_doc_out", "misc"))
        for col, what in changes:
            self.log.normal("%s %s.%s %s" % (who, table, col, what))
        return row
