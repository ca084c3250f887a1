"""A hand-written CNN (conv, batch norm in eval mode, pooling, linear), dynamic batch and spatial dims."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import onnxport

from ._helpers import check_against_eager, check_onnx, input_shapes

DYNAMIC = {"x": {0: "batch", 2: "height", 3: "width"}}
SHAPES = [(2, 3, 16, 16), (3, 3, 23, 19)]  # the export shape, then odd spatial sizes


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


@pytest.fixture(scope="module")
def cnn() -> tuple[SmallCNN, onnxport.ONNXProgram]:
    torch.manual_seed(0)
    model = SmallCNN()
    # Non-trivial running statistics: a few training-mode forwards on shifted, scaled data.
    model.train()
    with torch.no_grad():
        for _ in range(5):
            model(torch.randn(8, 3, 20, 20) * 3.0 + 1.5)
    model.eval()
    bn = model.features[1]
    assert (
        isinstance(bn, nn.BatchNorm2d)
        and bn.running_mean is not None
        and bn.running_var is not None
    )
    assert bn.running_mean.abs().max() > 0.1 and (bn.running_var - 1).abs().max() > 0.5
    program = onnxport.export(model, (torch.randn(*SHAPES[0]),), dynamic_shapes=DYNAMIC)
    return model, program


def test_graph(cnn: tuple[SmallCNN, onnxport.ONNXProgram]) -> None:
    _, program = cnn
    assert input_shapes(program) == {"x": ("batch", 3, "height", "width")}
    assert program.model.graph.outputs[0].shape == ("batch", 10)
    check_onnx(program)
    # Optimized: every BatchNormalization is folded into its Conv.
    assert "BatchNormalization" not in {n.op_type for n in program.model.graph}
    model = cnn[0]
    unoptimized = onnxport.export(model, (torch.randn(*SHAPES[0]),), dynamic_shapes=DYNAMIC, optimize=False)
    kinds = {
        name: value.metadata_props.get("pkg.torch.export.graph_signature.InputSpec.kind")
        for name, value in unoptimized.model.graph.initializers.items()
    }
    assert kinds["features.0.weight"] == "PARAMETER"
    assert kinds["features.1.running_mean"] == "BUFFER"
    assert kinds["features.5.running_var"] == "BUFFER"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_eager(cnn: tuple[SmallCNN, onnxport.ONNXProgram], shape: tuple[int, ...]) -> None:
    model, program = cnn
    (out,) = check_against_eager(program, model, torch.randn(*shape), atol=1e-4)
    assert out.shape == (shape[0], 10)
