"""The project's web side: account RPCs (html/user) and the ops pages
(html/ops, :mod:`boincpy.web.ops`).

``boincpy.web.rpc`` serves BOINC's fixed account URLs (get_project_config.php,
create_account.php, lookup_account.php, ...); ``html/user/*.php`` are thin
Python CGIs calling it.  Remote job submission: ``submit_rpc``, ``job_file``
and ``get_output`` (the RPCs), ``submitter`` (the submitters' pages:
submit.php and its login), ``batch_view`` (a batch as HTML, for those pages
and the ops batch page).
"""
