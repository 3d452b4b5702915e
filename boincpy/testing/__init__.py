"""Clients for tests, load tests and demos: simulated BOINC clients (simclient)."""
