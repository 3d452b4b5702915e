"""Support for tests and demos that drive real programs (the stock BOINC client)."""
