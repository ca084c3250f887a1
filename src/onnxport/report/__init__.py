"""Markdown reports of an export, written on success and on failure."""
