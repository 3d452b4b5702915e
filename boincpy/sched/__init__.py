"""The scheduler: one <scheduler_request> in, one <scheduler_reply> out.

    request.py   SchedulerRequest dataclasses and the lenient parser
    context.py   SchedContext / ReplyData / SentJob: the state of one request
    hosts.py     authenticate the user, find or create the host, update it
    reports.py   reported results -> result rows, acknowledgements
    send.py      which jobs to send, in BOINC's order (reads the feeder's array),
                 calling assign.py (targeted/broadcast jobs), score.py (job_score),
                 check.py (feasibility), version.py (app version choice),
                 choose.py (per-request state, the commit) and hr.py
    reply.py     ReplyData -> <scheduler_reply>
    handler.py   one request end to end (what cgi-bin/cgi calls)
"""
