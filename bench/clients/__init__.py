"""Checks that real runtimes load onnxport's export folders with no edits (issue 15)."""
