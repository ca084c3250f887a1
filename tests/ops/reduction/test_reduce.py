"""Reductions against eager: segment_reduce by lengths and by offsets, any / all of no elements."""

from __future__ import annotations

import pytest
import torch

import onnxport
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


class _AnyAll(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.any(x > 0), torch.all(x > 0), torch.any(x > 0, dim=0), torch.all(x > 0, dim=1)


def test_any_all_over_no_elements() -> None:
    # torch: any of nothing is False, all of nothing is True (ONNX ReduceMax / ReduceMin over no
    # elements give the lowest / highest value)
    program = onnxport.export(_AnyAll(), (torch.randn(2, 3),), dynamic_shapes=({0: "n", 1: "m"},))
    for shape in [(0, 3), (3, 0), (2, 3)]:
        x = torch.randn(*shape)
        for got, want in zip(program(x), _AnyAll()(x), strict=True):
            assert got.dtype == torch.bool and torch.equal(torch.as_tensor(got), want), (shape, got, want)
