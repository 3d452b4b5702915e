"""Support for tests, load tests and demos: the stock BOINC client driven for
real (client.py) and simulated BOINC clients speaking the protocol (simclient.py)."""
