"""BOINC's input-file RPCs for remote submission (``html/user/job_file.php``).

``query_files``: which of these physical names does the server lack?  (For
those it has: lease raised, batch association recorded.)  ``upload_files``:
the missing files as multipart/form-data parts, paired in order with the
request's ``<phys_name>``s.  Replies as BOINC's: ``<absent_files>`` with the
0-based indices of the absent names, ``<success/>``, or an ``<error>``.
The rules on names, content and batches are :mod:`boincpy.submit.job_files`'.
"""

from boincpy.errors import SubmitError
from boincpy.submit import job_files, privileges
from boincpy.web.http import run_cgi
from boincpy.web.submit_rpc import authenticate, integer, number, page_handler


def _common(ctx, r):
    """The user, batch id and lease of a file request; the batch must be one
    the user may use."""
    user = authenticate(ctx, r)
    batch_id = integer(r, "batch_id")
    delete_time = number(r, "delete_time")
    if delete_time < 0:
        raise SubmitError("delete_time must not be negative")
    job_files.check_batch(ctx.db(), user.id, batch_id,
                          lambda b: privileges.may_control_batch(ctx.db(), user.id, b))
    return user, batch_id, delete_time


def query_files(ctx, r):
    _, batch_id, delete_time = _common(ctx, r)
    names = ["".join(n.itertext()) for n in r.findall("phys_name")]
    absent = job_files.query(ctx.db(), ctx.cfg, names, batch_id, delete_time)
    return ("<absent_files>\n" + "".join("<file>%d</file>\n" % i for i in absent)
            + "</absent_files>\n        </query_files>\n    ")


def upload_files(ctx, r):
    _, batch_id, delete_time = _common(ctx, r)
    names = ["".join(n.itertext()) for n in r.findall("phys_name")]
    files = ctx.request.files
    if len(files) != len(names):
        raise SubmitError("# of uploaded files (%d) doesn't agree with request (%d)"
                          % (len(files), len(names)))
    for name in names:
        if not job_files.valid_name(name):
            raise SubmitError("bad filename")
    job_files.store(ctx.db(), ctx.cfg, [(name, f.path) for name, f in zip(names, files)],
                    batch_id, delete_time)
    return "<success/>\n        </upload_files>\n    "


OPERATIONS = {"query_files": query_files, "upload_files": upload_files}


handle = page_handler(OPERATIONS, "job_file", "remote_submission_log")


def cgi_main():
    """Entry point of html/user/job_file.php."""
    run_cgi(handle, "job_file.php")
