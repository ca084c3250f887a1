"""Scatter-style writes against eager: bincount, bool scatters, put (with accumulate)."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager

INTS = [torch.int32, torch.int64]


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("dtype", INTS)
def test_bincount(dtype: torch.dtype) -> None:
    x = torch.tensor([1, 1, 3, 0, 7], dtype=dtype)
    check_against_eager(lambda t: torch.bincount(t), x)
    check_against_eager(lambda t: torch.bincount(t, minlength=12), x)
    check_against_eager(lambda t, w: torch.bincount(t, weights=w), x, torch.rand(5))
    check_against_eager(lambda t, w: torch.bincount(t, weights=w), x, torch.rand(5, dtype=torch.float64))
    check_against_eager(lambda t: torch.bincount(t, minlength=4), torch.zeros(0, dtype=dtype))


def test_bool_scatters() -> None:
    self_ = torch.rand(4, 5) > 0.5
    src = torch.rand(4, 5) > 0.5
    index = torch.tensor([[0, 1, 2, 3, 0], [0, 0, 0, 0, 0]])  # repeated targets: bool add is Or
    check_against_eager(lambda s, i, x: torch.scatter_add(s, 0, i, x[:2]), self_, index, src)
    check_against_eager(lambda s, x: torch.index_add(s, 0, torch.tensor([1, 1, 0, 3]), x), self_, src)
    check_against_eager(lambda s, m, x: torch.masked_scatter(s, m, x), self_, torch.rand(4, 5) > 0.3, src)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_put(accumulate: bool, dtype: torch.dtype) -> None:
    x = torch.zeros(3, 4).to(dtype)
    index = torch.tensor([0, -1, 5, 5]) if accumulate else torch.tensor([0, -1, 5])
    source = torch.ones(index.shape).to(dtype)
    check_against_eager(lambda t, i, s: torch.put(t, i, s, accumulate=accumulate), x, index, source)
