"""The scheduler: one <scheduler_request> in, one <scheduler_reply> out.

    request.py   SchedulerRequest dataclasses and the lenient parser
    context.py   SchedContext / ReplyData / SentJob: the state of one request
    hosts.py     authenticate the user, find or create the host, update it
    reports.py   reported results -> result rows, acknowledgements
    choose.py    which jobs and app versions to send (reads the feeder's array)
    reply.py     ReplyData -> <scheduler_reply>
    handler.py   one request end to end (what cgi-bin/cgi calls)
"""
