"""Verification of an exported model against eager PyTorch."""
