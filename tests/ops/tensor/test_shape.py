"""Shape ops the acceptance models reach that are not covered elsewhere (diff) against eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import onnxport
from _eager import check_against_eager

CASES = {
    "diff": (lambda x: torch.diff(x, dim=1), torch.randn(3, 5)),
    "diff_n2_prepend": (lambda x: torch.diff(x, n=2, dim=0, prepend=x[:1]), torch.randn(4, 3)),
    "diff_bool": (lambda x: torch.diff(x, dim=-1), torch.tensor([[True, False, False, True]])),
    # torch.cat skips a 1-D empty tensor, first or not (transformers' DynamicLayer starts from
    # torch.tensor([]): Flaubert/XLM concatenate their first keys to it)
    "cat_empty_first": (lambda x: torch.cat([torch.tensor([]), x.transpose(1, 2)], dim=-2), torch.randn(2, 5, 3, 4)),
    "cat_empty_middle": (lambda x: torch.cat([x, torch.tensor([]), x * 2], dim=1), torch.randn(2, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_eager(name: str) -> None:
    fn, x = CASES[name]
    check_against_eager(fn, x, rtol=None, atol=None, equal_nan=False)


class DynamicSplits(torch.nn.Module):
    """``split`` by a size read from the input (ProphetNet's ``split(x, x.size(1) // 2)``) and
    ``chunk`` of a dynamic dimension: the chunk count fixed by the capture, their lengths not."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b = torch.split(x, x.shape[1] // 2, dim=1)
        c, d, e = torch.chunk(x, 3, dim=1)
        return a * 2 + b, c, d, e


def test_split_and_chunk_along_a_dynamic_dimension() -> None:
    program = onnxport.export(DynamicSplits(), (torch.randn(2, 12),), dynamic_shapes=({1: "n"},))
    for n in (6, 14, 40):  # chunks of 2, 2, 2 / 5, 5, 4 / 14, 14, 12
        x = torch.randn(2, n)
        want = DynamicSplits()(x)
        got = program(x)
        assert [g.shape for g in got] == [tuple(w.shape) for w in want]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-6, atol=1e-6)
