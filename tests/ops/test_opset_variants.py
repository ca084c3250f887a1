"""Opset-aware encodings: the newer ONNX op from its opset on, the fallback below, both equal to eager."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager


def _export_check(fn: Any, args: tuple, opset: int) -> list[str]:
    program = check_against_eager(fn, *args, opset=opset, rtol=1e-4, atol=1e-5, equal_nan=False).program
    return [n.op_type for n in program.model.graph]


CASES = {
    # name: (fn, args, ONNX op of the newer encoding, opset it appears at)
    "gelu": (lambda x: torch.nn.functional.gelu(x), (torch.randn(3, 5),), "Gelu", 20),
    "rms_norm": (lambda x, w: torch.nn.functional.rms_norm(x, (5,), w), (torch.randn(3, 5), torch.randn(5)), "RMSNormalization", 23),
}


@pytest.mark.parametrize("name", list(CASES))
def test_newer_encoding_from_its_opset_and_fallback_below(name: str) -> None:
    fn, args, op, since = CASES[name]
    assert op in _export_check(fn, args, since)
    assert op not in _export_check(fn, args, since - 1)  # near miss: one opset lower


@pytest.mark.parametrize(("opset", "mode"), [(18, "bilinear"), (20, "linear")])
def test_grid_sample_mode_names_follow_the_opset(opset: int, mode: str) -> None:
    x, grid = torch.randn(1, 2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1
    model = Fn(lambda x, g: torch.nn.functional.grid_sample(x, g, align_corners=False))
    program = onnxport.export(model, (x, grid), opset_version=opset)
    node = next(n for n in program.model.graph if n.op_type == "GridSample")
    assert node.attributes["mode"].value == mode
    torch.testing.assert_close(program(x, grid)[0], model(x, grid), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_is_one_resize(mode: str, align_corners: bool) -> None:
    if mode == "nearest" and align_corners:
        pytest.skip("align_corners only applies to interpolating modes")
    x = torch.randn(1, 2, 5, 4)
    kwargs = {} if mode == "nearest" else {"align_corners": align_corners}
    for size_or_scale in ({"size": (7, 9)}, {"scale_factor": 1.5}):
        model = Fn(lambda x, kw=size_or_scale: torch.nn.functional.interpolate(x, mode=mode, **kw, **kwargs))
        program = onnxport.export(model, (x,))
        assert [n.op_type for n in program.model.graph] == ["Resize"]
        torch.testing.assert_close(program(x)[0], model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes(mode: str) -> None:
    x = torch.randn(1, 2, 5, 6)
    model = Fn(lambda x: torch.nn.functional.pad(x, (2, 1, 1, 2), mode=mode))
    torch.testing.assert_close(onnxport.export(model, (x,))(x)[0], model(x))
