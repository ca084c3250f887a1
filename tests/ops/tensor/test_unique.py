"""Unique values against eager: unique with NaN/inf, unique along a dim, unique_consecutive."""

from __future__ import annotations

from functools import partial

import torch

from _eager import check_against_eager

nan, inf = float("nan"), float("inf")

# torch's default tolerances unless a test gives its own
_check = partial(check_against_eager, rtol=None, atol=None)


# -- unique, unique_consecutive ---------------------------------------------------------------------

def test_unique_nan_distinct_and_inf() -> None:
    x = torch.tensor([[3.0, nan, inf], [1.0, 3.0, nan]])
    fn = lambda x: torch.unique(x, return_inverse=True, return_counts=True)  # noqa: E731
    values, inverse, counts = _check(fn, x)
    assert values.shape == (5,) and counts.tolist() == [1, 2, 1, 1, 1]
    _check(fn, torch.tensor([nan, 2.0, nan]))  # the NaN-only +inf slot is dropped
    _check(fn, torch.tensor([5, 3, 5, 1], dtype=torch.int32))
    _check(fn, torch.tensor([True, False, True]))
    _check(lambda x: torch.unique(x, sorted=False), torch.tensor([3.0, 1.0, 3.0]))


def test_unique_dim_sorts_slices() -> None:
    x = torch.tensor([[3, 1], [1, 5], [3, 1], [1, -1]])
    _check(lambda x: torch.unique(x, dim=0, return_inverse=True, return_counts=True), x)
    _check(lambda x: torch.unique(x, dim=1, return_counts=True), x.T.contiguous())


def test_unique_consecutive_runs() -> None:
    x = torch.tensor([1.0, 1.0, 2.0, nan, nan, 2.0, 2.0])
    _check(lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True), x)
    y = torch.tensor([[1, 1, 2, 2], [3, 3, 3, 4]])
    _check(lambda y: torch.unique_consecutive(y, return_inverse=True, return_counts=True, dim=1), y)
    _check(lambda x: torch.unique_consecutive(x, return_counts=True), torch.zeros(0))
