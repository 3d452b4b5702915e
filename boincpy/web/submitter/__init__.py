"""The submitters' page ``submit.php`` (``batches``): a submitter's batches
and jobs, served by :mod:`boincpy.web.user.main` with the site's login."""
