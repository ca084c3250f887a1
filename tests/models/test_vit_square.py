"""Issue 14 item 4: transformers ViT with ``interpolate_pos_encoding=True`` exported from a square
example at the config's ``image_size`` holds only the "no interpolation" path (torch.export records
``(height // patch)**2 + 1 == 17`` and merges width into height for ``height == width``). The runtime
check runs the model at another size, sees onnxruntime refuse it, and the DynamicShapesError names
the guard and an example size that takes the general path (tests/models/test_dynamic_resolution.py);
exporting from that size works at two other sizes against eager (here)."""

from __future__ import annotations

import pytest
import torch

import onnxport

transformers = pytest.importorskip("transformers")

DYNAMIC = ({0: "batch", 2: "height", 3: "width"},)


class Vit(torch.nn.Module):
    """A 1-layer ViT (image_size 32, patch 8) returning the last hidden state, interpolating the
    position embeddings to the input's resolution."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                                        num_attention_heads=4, intermediate_size=37)
        self.vit = transformers.ViTModel(config).eval()

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.vit(pixel_values, interpolate_pos_encoding=True).last_hidden_state


def test_the_suggested_example_exports_the_general_path() -> None:
    model = Vit().eval()
    program = onnxport.export(model, (torch.randn(3, 3, 48, 48),), dynamic_shapes=DYNAMIC)
    for shape in ((2, 3, 32, 40), (1, 3, 56, 48)):
        x = torch.randn(*shape)
        (actual,) = program(x)
        expected = model(x)
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        torch.testing.assert_close(actual, expected, rtol=1e-3, atol=1e-4)
