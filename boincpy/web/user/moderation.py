"""moderation pages of the project's web site (being written)."""

PAGES = {}
