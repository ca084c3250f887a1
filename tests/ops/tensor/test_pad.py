"""Padding against eager: replicate padding with negative amounts."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("pad", [(-4, 5, 0, 0), (5, -4, -4, 3), (-2, -1, 4, 6)])
def test_replicate_pad_negative(pad: tuple) -> None:
    check_against_eager(lambda t: F.pad(t, pad, mode="replicate"), torch.randn(2, 3, 5, 4))
