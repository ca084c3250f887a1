"""Swin-family models exported with dynamic batch/H/W run at any image size (capture/windows.py):
odd sizes (padding to patches, to even maps, to windows), the configured size whose last stage is
one window, and a size where a shifted layer's grid equals its window (eager drops the shift
there). Each size is compared with a fresh copy of the model (transformers' Swin keeps a dropped
shift on the module), and exporting leaves the model's state as it was (verify/ties.kept_state)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import onnxport
from onnxport.verify.ties import eager_outputs, kept_state

transformers = pytest.importorskip("transformers")
AUTO = torch.export.Dim.AUTO
HW = {"pixel_values": {0: AUTO, 2: AUTO, 3: AUTO}}


def _swin(depths: list[int], cls: str = "SwinForImageClassification", config: str = "SwinConfig") -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = getattr(transformers, config)(image_size=64, patch_size=4, embed_dim=16, depths=depths,
                                        num_heads=[1, 2, 2][: len(depths)], window_size=4, num_labels=5)
    return getattr(transformers, cls)(cfg).eval()


def _shifts(model: torch.nn.Module) -> list[int]:
    return [m.shift_size for m in model.modules() if hasattr(m, "shift_size")]


def _check_sizes(model: torch.nn.Module, program: onnxport.ONNXProgram, sides: list[tuple[int, int]]) -> None:
    session = program._inference_session()
    for i, (height, width) in enumerate(sides):
        x = torch.randn(1 + i % 3, 3, height, width)
        with torch.no_grad():
            expected = copy.deepcopy(model)(pixel_values=x).logits
        (actual,) = session.run(None, {"pixel_values": x.numpy()})
        assert actual.shape == tuple(expected.shape) and actual.dtype == np.float32
        np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{height}x{width}")


def test_swin_runs_at_any_size() -> None:
    model = _swin([2, 2, 2])
    shifts = _shifts(model)
    example = torch.randn(2, 3, 128, 128)  # at 64 the last stage is one window: a count torch specializes
    program = onnxport.export(model, (), {"pixel_values": example}, dynamic_shapes=HW, verify=True)
    dims = [d.dim_param or d.dim_value for d in program.model_proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims[1] == 3 and all(isinstance(d, str) for d in (dims[0], dims[2], dims[3]))
    # 64: the configured size, last stage one window; 61, 97: off the patch multiples; 65x130: odd
    # patch grids (the merging pads), not square
    _check_sizes(model, program, [(64, 64), (61, 61), (97, 97), (65, 130), (128, 128)])
    assert _shifts(model) == shifts  # verification and the runtime check ran eager at other sizes


def test_swin_drops_the_shift_where_eager_does() -> None:
    model = _swin([2, 2])
    assert _shifts(model) == [0, 2, 0, 2]
    program = onnxport.export(model, (), {"pixel_values": torch.randn(2, 3, 64, 64)}, dynamic_shapes=HW)
    # at 32 the second stage's grid (4) equals the window: eager runs it unshifted and unmasked
    _check_sizes(model, program, [(32, 32), (64, 64), (33, 47)])
    with torch.no_grad():
        model(pixel_values=torch.randn(1, 3, 32, 32))
    assert _shifts(model) == [0, 2, 0, 0]  # transformers keeps the drop: why references keep the state


@pytest.mark.parametrize("kind", ["Swinv2", "FocalNet"])
def test_swin_v2_and_focalnet_run_at_any_size(kind: str) -> None:
    torch.manual_seed(0)
    if kind == "Swinv2":
        model = _swin([2, 2, 2], "Swinv2ForImageClassification", "Swinv2Config")
    else:
        cfg = transformers.FocalNetConfig(image_size=64, patch_size=4, embed_dim=16, depths=[1, 1, 1], num_labels=5)
        model = transformers.FocalNetForImageClassification(cfg).eval()
    program = onnxport.export(model, (), {"pixel_values": torch.randn(2, 3, 128, 128)}, dynamic_shapes=HW)
    _check_sizes(model, program, [(64, 64), (61, 75), (97, 97)])


class _Stateful(torch.nn.Module):
    """Halves its scale on every forward over 3 columns and keeps it, as Swin keeps a dropped shift."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 4.0
        self.sizes = (1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > 3:
            self.scale, self.sizes = self.scale / 2, (9,)
        return x * self.scale


def test_eager_references_keep_the_model_state() -> None:
    model = _Stateful()
    with kept_state(model):
        model(torch.ones(1, 5))
        assert model.scale == 2.0
    assert model.scale == 4.0 and model.sizes == (1, 2)
    (out,) = eager_outputs(model, (torch.ones(1, 5),), {})
    assert out.tolist() == [[2.0] * 5] and model.scale == 4.0
    (out,) = eager_outputs(model, (torch.ones(1, 5),), {})
    assert out.tolist() == [[2.0] * 5]  # the same from the same state
