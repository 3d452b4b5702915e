"""The project's web site in ``html/user``, as BOINC's: ``main`` maps each
script name to its page; ``session`` is the login (BOINC's ``auth`` cookie)
and the pages' context; each other module is one family of pages."""
