"""Leftover ops against eager: 5-D grid_sample, histogram/histogramdd, LDLᵀ factorization, ormqr."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import onnxport
from onnxport.errors import UnsupportedOpError


class Fn(torch.nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


def _check(fn: Any, *args: torch.Tensor, opset: int | None = None, optimize: bool = True,
           atol: float = 2e-5, rtol: float = 2e-4, exact: bool = False) -> list[torch.Tensor]:
    model = Fn(fn)
    program = onnxport.export(model, args, opset_version=opset, optimize=optimize)
    expected = model(*args)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    actual = list(program(*args))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, e.dtype, a.shape, e.shape)
        if exact:
            torch.testing.assert_close(a, e, atol=0, rtol=0, equal_nan=True)
        else:
            torch.testing.assert_close(a, e, atol=atol, rtol=rtol, equal_nan=True)
    return actual


# -- grid_sampler_3d --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_modes(mode: str, padding_mode: str, align_corners: bool) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, 6)
    grid = torch.rand(2, 3, 4, 2, 3) * 3 - 1.5  # a third of the points fall outside [-1, 1]
    _check(lambda a, g: torch.nn.functional.grid_sample(a, g, mode=mode, padding_mode=padding_mode,
                                                        align_corners=align_corners), x, grid)


def test_grid_sample_5d_exact_corners_and_float64() -> None:
    x = torch.arange(2 * 3 * 4, dtype=torch.float64).reshape(1, 1, 2, 3, 4)
    corners = torch.tensor([[-1.0, -1, -1], [1, 1, 1], [1, -1, 1], [0, 0, 0], [2, 2, 2]], dtype=torch.float64)
    grid = corners.reshape(1, 5, 1, 1, 3)
    out = _check(lambda a, g: torch.nn.functional.grid_sample(a, g, align_corners=True), x, grid, opset=20)
    assert out[0].flatten()[:2].tolist() == [0.0, 23.0]  # (x, y, z) = last-dim order W, H, D


def test_grid_sample_5d_below_opset_20_refused() -> None:
    x, grid = torch.randn(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3)
    with pytest.raises(UnsupportedOpError, match="opset 20"):
        onnxport.export(Fn(lambda a, g: torch.nn.functional.grid_sample(a, g, align_corners=False)),
                        (x, grid), opset_version=19)
