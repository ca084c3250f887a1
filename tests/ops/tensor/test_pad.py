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


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
def test_pad_after_a_transpose_runs_with_onnxruntime_optimizations(mode: str) -> None:
    """A Pad fed by a Transpose: onnxruntime's transpose optimizer pushes the Transpose through it
    and permutes its pads as if they covered every dim. With Pad-18's ``axes`` (pads for 2 dims of
    4) the optimized session failed: Gather index out of bounds (Mistral3's patch merger)."""
    out = check_against_eager(lambda t: F.pad(t.permute(0, 3, 1, 2), (1, 2, 2, 0), mode=mode).permute(0, 2, 3, 1),
                              torch.randn(2, 5, 6, 3))
    assert out[0].shape == (2, 7, 9, 3)
