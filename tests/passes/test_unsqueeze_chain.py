"""Unsqueeze chains collapse to one Unsqueeze: the axis arithmetic against NumPy, and exports
that run in onnxruntime with eager's values."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import onnxport
from onnxport.passes.fusions.unsqueeze_chain import combined_axes


@st.composite
def chains(draw: st.DrawFn) -> tuple[tuple[int, ...], list[int], list[int]]:
    shape = tuple(draw(st.lists(st.integers(2, 4), min_size=0, max_size=3)))
    inner_count = draw(st.integers(1, 3))
    inner = sorted(draw(st.sets(st.integers(0, len(shape) + inner_count - 1), min_size=inner_count, max_size=inner_count)))
    outer_count = draw(st.integers(1, 3))
    rank = len(shape) + inner_count + outer_count
    outer = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=outer_count, max_size=outer_count)))
    return shape, inner, outer


@settings(max_examples=200, deadline=None)
@given(chains())
def test_combined_axes_equal_two_unsqueezes(case: tuple[tuple[int, ...], list[int], list[int]]) -> None:
    shape, inner, outer = case
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    twice = np.expand_dims(np.expand_dims(x, tuple(inner)), tuple(outer))
    once = np.expand_dims(x, tuple(combined_axes(inner, outer)))
    assert once.shape == twice.shape
    np.testing.assert_array_equal(once, twice)


def test_combined_axes_example() -> None:
    # x[:, None, None, None] on a 1-D x: three unsqueezes at 1, 2, 3
    assert combined_axes(combined_axes([1], [2]), [3]) == [1, 2, 3]
    assert combined_axes([0], [0]) == [0, 1]
    assert combined_axes([1], [0]) == [0, 2]


class Indexing(torch.nn.Module):
    """transformers' mask builders: aranges indexed with None to broadcast as [B, 1, 1, 1] and
    [1, 1, 1, T]; a negative-axis unsqueeze chain; an intermediate used twice (not collapsed)."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rows = torch.arange(x.shape[0])[:, None, None, None]
        cols = torch.arange(x.shape[1])[None, None, None, :]
        grid = (rows * 100 + cols).to(x.dtype)
        tail = x.unsqueeze(-1).unsqueeze(-1) * 2  # [B, T, 1, 1]
        shared = x.unsqueeze(0)
        return grid + x[:, None, None, :], tail, shared.unsqueeze(0) + shared.sum()


def test_export_collapses_chains_and_matches_eager() -> None:
    model = Indexing().eval()
    x = torch.randn(3, 5)
    program = onnxport.export(model, (x,), dynamic_shapes=({0: "batch", 1: "length"},))
    for size in ((3, 5), (2, 7), (1, 1)):
        probe = torch.randn(*size)
        for got, want in zip(program(probe), model(probe)):
            assert got.shape == want.shape and got.dtype == want.dtype
            torch.testing.assert_close(got, want)
    unsqueezes = [n for n in program.model.graph if n.op_type == "Unsqueeze"]
    axes = sorted(tuple(int(a) for a in n.inputs[1].const_value.numpy()) for n in unsqueezes)  # type: ignore[union-attr]
    # rows [:, None, None, None]: 3 axes in one node; cols [None, None, None, :]: 3 in one;
    # x[:, None, None, :]: 2 in one; the tail's two -1 unsqueezes: one node at 2, 3; shared: its
    # inner unsqueeze feeds two nodes, so both stay (one axis each). 12 Unsqueezes unoptimized.
    assert axes == [(0,), (0,), (0, 1, 2), (1, 2), (1, 2, 3), (2, 3)]
