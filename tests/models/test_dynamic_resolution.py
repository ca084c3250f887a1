"""Vision models whose sizes follow the input resolution, exported with dynamic batch/H/W and run in
onnxruntime at two sizes (the second different in every dynamic dim, odd H/W included):
transformers MobileNetV2 (TF "same" padding from H/W, capture/patches.py) and ViT with
``interpolate_pos_encoding=True``, also from a square example at the config's resolution, whose
no-interpolation branch torch.export would record (capture/patches.py takes the general path)."""

from __future__ import annotations

import pytest
import torch

import onnxport
from onnxport.errors import DynamicShapesError
from onnxport.verify.runtime_check import check_guards, check_runtime

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


def test_mobilenet_v2_tf_padding_at_two_resolutions() -> None:
    """~5 s: the pads in TensorFlow's own form keep every later size ``ceil(size / stride)``
    (before session 31 the nested Max/Mod pads took the capture ~30 s, so this test was slow)."""
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


def test_vit_square_example_at_config_size_exports_the_interpolating_path() -> None:
    """transformers returns the position table unchanged when H == W == image_size unless
    ``torch.jit.is_tracing()``: plain torch.export records that branch under a guard (H == W and
    (H // 8)² == 16), so the graph's Add fails at other sizes. capture/patches.py runs
    ``interpolate_pos_encoding`` as if tracing: the same example gives a graph valid at any size."""
    model, x = _vit(), torch.randn(2, 3, 32, 32)
    embeddings = transformers.models.vit.modeling_vit.ViTEmbeddings
    method = embeddings.interpolate_pos_encoding

    plain = torch.export.export(model, (x,), dynamic_shapes=HW, strict=False)
    with pytest.raises(DynamicShapesError, match="Guard failed"):
        check_guards(plain, (torch.randn(3, 3, 48, 27),), {}, "other sizes")

    program = onnxport.export(model, (x,), dynamic_shapes=HW)
    assert embeddings.interpolate_pos_encoding is method  # the patch is undone after the capture
    assert torch.jit.is_tracing() is False
    for shape in [(2, 3, 32, 32), (3, 3, 48, 27)]:
        y = torch.randn(shape)
        with torch.no_grad():
            _close(program(y), [model(y)])
