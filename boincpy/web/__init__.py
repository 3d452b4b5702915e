"""The project's web side: account RPCs (html/user) and the ops pages
(html/ops, :mod:`boincpy.web.ops`).

``boincpy.web.rpc`` serves BOINC's fixed account URLs (get_project_config.php,
create_account.php, lookup_account.php, ...); ``html/user/*.php`` are thin
Python CGIs calling it.
"""
