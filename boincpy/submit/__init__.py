"""Remote job submission (BOINC's multi-user job submission and Condor-B):
batches, submitters' privileges, input files named by content, and the
client scientists use from their own machines.

Server side (used by the web RPCs in boincpy.web, the daemons and tools):
``batch`` (a batch's life and counts), ``privileges`` (user_submit,
user_submit_app), ``job_files`` (job_file, batch_file_assoc, the deleter),
``stage`` (a submitted job's input files and templates -> workunits).

Client side: ``client`` (the RPCs over HTTP).  Keep this file free of
imports: the client must load on a scientist's machine without the
server's packages (database driver, lxml).
"""
