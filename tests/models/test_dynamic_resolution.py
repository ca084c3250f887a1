"""Vision models whose sizes follow the input resolution, exported with dynamic batch/H/W and run in
onnxruntime at two sizes (the second different in every dynamic dim, odd H/W included):
transformers MobileNetV2 (TF "same" padding from H/W, capture/patches.py) and ViT with
``interpolate_pos_encoding=True``; a square example at the config's resolution makes torch.export
record the no-interpolation branch, which the runtime check reports instead of saving a model that
onnxruntime refuses at other sizes."""

from __future__ import annotations

import pytest
import torch

import onnxport
from onnxport.errors import DynamicShapesError
from onnxport.verify.runtime_check import check_runtime

transformers = pytest.importorskip("transformers")
DYN = torch.export.Dim.DYNAMIC
HW = ({0: DYN, 2: DYN, 3: DYN},)


def _close(actual: list[torch.Tensor], expected: list[torch.Tensor]) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype == e.dtype
        scale = e.abs().max().item()
        assert scale > 0
        assert (a - e).abs().max().item() <= 1e-4 * max(scale, 1.0) + 1e-5 * scale


class LastHidden(torch.nn.Module):
    def __init__(self, model: torch.nn.Module, **kwargs: object) -> None:
        super().__init__()
        self.model, self.kwargs = model, kwargs

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values, **self.kwargs).last_hidden_state


@pytest.mark.slow  # the symbolic pads of 17 padded convs make the capture take ~30 s on an idle core
def test_mobilenet_v2_tf_padding_at_two_resolutions() -> None:
    torch.manual_seed(0)
    config = transformers.MobileNetV2Config(image_size=32, depth_multiplier=0.35)
    model = LastHidden(transformers.MobileNetV2Model(config).eval()).eval()
    program = onnxport.export(model, (torch.randn(2, 3, 32, 32),), dynamic_shapes=HW)
    assert check_runtime(program, (torch.randn(2, 3, 32, 32),), {}).skipped is None
    for shape in [(2, 3, 32, 32), (3, 3, 45, 27)]:
        x = torch.randn(shape)
        with torch.no_grad():
            _close(program(x), [model(x)])


def _vit() -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                    intermediate_size=37, image_size=32, patch_size=8)
    return LastHidden(transformers.ViTModel(config).eval(), interpolate_pos_encoding=True).eval()


def test_vit_position_interpolation_at_two_resolutions() -> None:
    model = _vit()
    program = onnxport.export(model, (torch.randn(2, 3, 32, 40),), dynamic_shapes=HW)
    for shape in [(2, 3, 32, 40), (3, 3, 48, 27)]:
        x = torch.randn(shape)
        with torch.no_grad():
            _close(program(x), [model(x)])


def test_vit_square_example_at_config_size_is_reported() -> None:
    """transformers returns the position table unchanged when H == W == image_size: the capture
    records that branch (guards H == W and (H // 8)² == 16), so the ONNX Add fails elsewhere; the
    error names the guard and an example size that takes the interpolation path."""
    model, x = _vit(), torch.randn(2, 3, 32, 32)
    program = onnxport.export(model, (x,), dynamic_shapes=HW, check_runtime=False)
    with pytest.warns(UserWarning, match=r"only valid where the guards"):  # without the model: no judge
        check_runtime(program, (x,), {})
    with pytest.raises(DynamicShapesError, match=r"//8.*fails in onnxruntime"):  # with it: onnxruntime refuses
        check_runtime(program, (x,), {}, model)
    with pytest.raises(DynamicShapesError, match=r"such as \w+=3, \w+=48"):  # export's own check (default on)
        onnxport.export(model, (x,), dynamic_shapes=HW)
