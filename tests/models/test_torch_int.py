"""transformers' ``torch_int`` is ``int(x)`` outside torch.jit tracing: DINOv2-with-registers sizes
its interpolated position table with ``torch_int(height)``, which fixed the grid to the example's
(the graph failed at any other resolution: an Add of 197 and 1025 positions). During capture
``capture/patches.symbolic_torch_int`` keeps the size symbolic; the graph runs at other sizes,
non-square ones and ones whose grid divides a guard's modulus to zero on the way included."""

from __future__ import annotations

import pytest
import torch

import onnxport

transformers = pytest.importorskip("transformers")


class Dinov2Registers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        config = transformers.Dinov2WithRegistersConfig(
            image_size=28, patch_size=14, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
            intermediate_size=37, num_register_tokens=2,
        )  # fmt: skip
        self.model = transformers.Dinov2WithRegistersModel(config).eval()

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values).last_hidden_state


def test_interpolated_positions_follow_the_input_size() -> None:
    model = Dinov2Registers()
    program = onnxport.export(model, (torch.randn(2, 3, 28, 28),),
                              dynamic_shapes=({0: "batch", 2: "height", 3: "width"},))  # fmt: skip
    for shape in ((2, 3, 28, 28), (1, 3, 56, 42), (3, 3, 70, 70)):
        x = torch.randn(*shape)
        (actual,) = program(x)
        with torch.no_grad():
            expected = model(x)
        assert actual.shape == expected.shape == (shape[0], 1 + 2 + (shape[2] // 14) * (shape[3] // 14), 32)
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
