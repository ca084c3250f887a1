"""End-to-end model tests (a package so `_helpers` cannot clash with other test folders)."""
