"""The submitters' web pages in html/user: ``main`` maps each script name to
its page; ``session`` is the login (BOINC's ``auth`` cookie) and the pages'
context; ``batches`` is ``submit.php``, a submitter's batches and jobs."""
