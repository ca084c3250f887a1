"""Value and graph metadata as documented in docs/metadata.md."""

from __future__ import annotations

import torch

import onnxport


class WithBuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)
        self.register_buffer("scale", torch.tensor([1.0, 2.0, 3.0]), persistent=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.fc(x) * self.scale
        return y, y.sum(-1)


def test_value_and_graph_metadata() -> None:
    program = onnxport.export(WithBuffer(), (torch.randn(2, 3),), dynamic_shapes=({0: "batch"},),
                              output_names=["y", "total"], optimize=False)
    graph = program.model.graph
    (x,) = graph.inputs
    assert x.metadata_props["pkg.torch.export.graph_signature.InputSpec.kind"] == "USER_INPUT"
    scale = graph.initializers["scale"]
    assert scale.metadata_props["pkg.torch.export.graph_signature.InputSpec.kind"] == "BUFFER"
    assert scale.metadata_props["pkg.torch.export.graph_signature.InputSpec.persistent"] == "False"
    assert scale.metadata_props["pkg.torch.onnx.original_node_name"] == "b_scale"
    weight = graph.initializers["fc.weight"]
    assert weight.metadata_props["pkg.torch.export.graph_signature.InputSpec.kind"] == "PARAMETER"
    assert weight.metadata_props["pkg.torch.onnx.original_node_name"] == "p_fc_weight"
    y, total = graph.outputs
    assert y.name == "y" and total.name == "total"
    for out in graph.outputs:
        assert out.metadata_props["pkg.torch.export.graph_signature.OutputSpec.kind"] == "USER_OUTPUT"
        assert out.metadata_props["pkg.torch.onnx.original_node_name"] != out.name
    assert "USER_INPUT" in graph.metadata_props["pkg.torch.export.ExportedProgram.graph_signature"]
    assert "VR[" in graph.metadata_props["pkg.torch.export.ExportedProgram.range_constraints"]
    for node in graph:
        assert node.metadata_props["pkg.torch.onnx.fx_node"].startswith("%")
