"""Elementwise arithmetic, comparison and logic on integer and bool inputs (onnxruntime has no kernel for some dtypes) against eager."""

from __future__ import annotations

import pytest
import torch

import onnxport
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


class MaskedFill(torch.nn.Module):
    """masked_fill.Scalar on float, int64 and bool tensors (a broadcast mask) and .Tensor."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (x.masked_fill(mask, -1.5), x.long().masked_fill(mask[:, :1], 7),
                mask.masked_fill(mask[:1], False), x.masked_fill(mask, value))


def test_masked_fill_is_translated_whole_with_dynamic_dims() -> None:
    model = MaskedFill()
    x, mask, value = torch.randn(2, 5), torch.rand(2, 5) > 0.5, torch.tensor(2.5)
    dims = {0: "batch", 1: "length"}
    program = onnxport.export(model, (x, mask, value), dynamic_shapes=(dims, dims, None))
    assert program.status.decomposed is False  # no run_decompositions for masked_fill
    for args in ((x, mask, value), (torch.randn(3, 4), torch.rand(3, 4) > 0.5, torch.tensor(-4.0))):
        for actual, expected in zip(program(*args), model(*args)):
            assert actual.shape == expected.shape and actual.dtype == expected.dtype
            assert torch.equal(torch.as_tensor(actual), expected)
