"""Reductions against eager: segment_reduce by lengths and by offsets."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- reductions -------------------------------------------------------------------------------

@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 0.5])
def test_segment_reduce_lengths_axis1(reduce: str, initial: float | None) -> None:
    data, lengths = torch.randn(2, 6, 3), torch.tensor([[2, 0, 4], [1, 3, 2]])
    check_against_eager(lambda d, n: torch.segment_reduce(d, reduce, lengths=n, axis=1, initial=initial), data, lengths)


def test_segment_reduce_offsets() -> None:
    check_against_eager(lambda d, o: torch.segment_reduce(d, "mean", offsets=o), torch.randn(5, 2), torch.tensor([0, 2, 2, 5]))
