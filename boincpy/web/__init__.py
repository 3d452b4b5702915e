"""The project's web side: account RPCs (html/user) and the ops pages
(html/ops, :mod:`boincpy.web.ops`)."""
