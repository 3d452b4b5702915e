"""Command-line tools; bin/NAME scripts call main() of these modules."""
