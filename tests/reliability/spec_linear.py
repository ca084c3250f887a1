"""A SPEC for the CLI tests: ``spec_linear.py:make``."""

from __future__ import annotations

import torch
from tests.reliability.models import Linear


def make():  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    return Linear(), (torch.randn(2, 4),)
