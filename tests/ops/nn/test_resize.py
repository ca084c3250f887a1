"""Resampling against eager: 5-D grid_sample, antialiased interpolate, pixel_shuffle / pixel_unshuffle."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn, Fn1, check_against_eager
from onnxport.errors import UnsupportedOpError

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- grid_sampler_3d --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_modes(mode: str, padding_mode: str, align_corners: bool) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, 6)
    grid = torch.rand(2, 3, 4, 2, 3) * 3 - 1.5  # a third of the points fall outside [-1, 1]
    check_against_eager(lambda a, g: torch.nn.functional.grid_sample(a, g, mode=mode, padding_mode=padding_mode,
                                                        align_corners=align_corners), x, grid)


def test_grid_sample_5d_exact_corners_and_float64() -> None:
    x = torch.arange(2 * 3 * 4, dtype=torch.float64).reshape(1, 1, 2, 3, 4)
    corners = torch.tensor([[-1.0, -1, -1], [1, 1, 1], [1, -1, 1], [0, 0, 0], [2, 2, 2]], dtype=torch.float64)
    grid = corners.reshape(1, 5, 1, 1, 3)
    out = check_against_eager(lambda a, g: torch.nn.functional.grid_sample(a, g, align_corners=True), x, grid, opset=20)
    assert out[0].flatten()[:2].tolist() == [0.0, 23.0]  # (x, y, z) = last-dim order W, H, D


def test_grid_sample_5d_below_opset_20_refused() -> None:
    x, grid = torch.randn(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3)
    with pytest.raises(UnsupportedOpError, match="opset 20"):
        onnxport.export(Fn(lambda a, g: torch.nn.functional.grid_sample(a, g, align_corners=False)),
                        (x, grid), opset_version=19)


# -- resampling -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kwargs", [
    {"size": (5, 7)},  # downscale: Resize antialias=1
    {"size": (40, 9), "align_corners": True},  # torch's own scale: weight matrices
    {"scale_factor": (0.3, 2.5)},  # scale factors given: weight matrices
])
def test_antialiased_interpolate(mode: str, kwargs: dict) -> None:
    x = torch.randn(2, 3, 17, 23)
    check_against_eager(lambda t: F.interpolate(t, mode=mode, antialias=True, **kwargs), x)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("scale_factor", [0.5, (0.3, 0.7), 2.0])
def test_antialiased_interpolate_by_scale_factors_on_dynamic_sizes(mode: str, scale_factor: object) -> None:
    # torch widens the filter by 1/scale factor: Resize-18 with scales, antialias=1, half_pixel
    model = Fn1(lambda t: F.interpolate(t, scale_factor=scale_factor, mode=mode, antialias=True))
    program = onnxport.export(model, (torch.randn(2, 3, 16, 18),), dynamic_shapes=({0: "b", 2: "h", 3: "w"},))
    for shape in [(2, 3, 16, 18), (3, 3, 20, 14), (1, 3, 33, 41)]:
        x = torch.randn(*shape)
        expected = model(x)
        actual = torch.as_tensor(program(x)[0])
        assert actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 8, 4, 6), (8, 4, 2), (0, 4, 2, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_pixel_unshuffle_and_shuffle(shape: tuple, dtype: torch.dtype) -> None:
    x = torch.randn(shape).to(dtype)
    check_against_eager(lambda t: F.pixel_unshuffle(t, 2), x)
    check_against_eager(lambda t: F.pixel_shuffle(t, 2), x)
