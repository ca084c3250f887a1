"""Elementwise arithmetic, comparison and logic on integer and bool inputs (onnxruntime has no kernel for some dtypes) against eager."""

from __future__ import annotations

import pytest
import torch

from _eager import INTS, check_against_eager, ints

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- integer inputs ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INTS)
def test_integer_rounding_and_relu(dtype: torch.dtype) -> None:
    x = ints(dtype, 3, 4)
    check_against_eager(lambda t: (torch.ceil(t), torch.floor(t), torch.round(t), F.relu(t)), x)


# -- bool inputs ------------------------------------------------------------------------------

def test_bool_ordering_and_extremes() -> None:
    a, b = torch.rand(4, 5) > 0.5, torch.rand(4, 5) > 0.5
    check_against_eager(lambda x, y: (x >= y, x > y, x <= y, x < y, torch.fmax(x, y), torch.fmin(x, y),
                         torch.clamp_min(x, y), torch.clamp_max(x, y)), a, b)
    check_against_eager(lambda x: (*torch.max(x, 1), *torch.min(x, 0)), a)
    check_against_eager(lambda x, y: torch.atan2(x, y), a, b)  # atan2(0, 0) = 0
