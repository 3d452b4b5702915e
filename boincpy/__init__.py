"""boincpy: a CGI-compatible reimplementation of the BOINC server in Python."""

__version__ = "0.1.0"
