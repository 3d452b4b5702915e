"""Web pages served by Apache as CGIs: the ops (admin) area and, later, the
public pages.  ``markup`` escapes, ``cgi`` reads a request and writes a
response; each area lives in its own sub-package (``ops``)."""
