"""float32_boundary: a bfloat16 graph's inputs and outputs become float32, its inside stays bfloat16.

The rewritten graph runs in onnxruntime with float32 feeds and returns, as float32, exactly the
bfloat16 values the original graph returns; weights and compute keep their dtype.
"""

from __future__ import annotations

import collections

import onnx_ir as ir
import onnxruntime as ort
import torch

import onnxport
from onnxport.passes.float32_io import float32_boundary
from onnxport.runtime import run_session, to_numpy


class Step(torch.nn.Module):
    """A bfloat16 linear layer and a cache: ``present = cat(past, k)``; the ids pass through."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8).to(torch.bfloat16)

    def forward(self, x: torch.Tensor, past: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        k = self.proj(x)
        return torch.tanh(k).sum(-1), torch.cat([past, k], dim=1), ids + 1


def _session(model: ir.Model) -> ort.InferenceSession:
    return ort.InferenceSession(ir.to_proto(model).SerializeToString(), providers=["CPUExecutionProvider"])


def test_bfloat16_inputs_and_outputs_become_float32_and_return_the_same_values() -> None:
    torch.manual_seed(0)
    x, past = torch.randn(2, 3, 8, dtype=torch.bfloat16), torch.randn(2, 4, 8, dtype=torch.bfloat16)
    ids = torch.tensor([[3, 4]])
    module = Step().eval()
    program = onnxport.export(module, (x, past, ids), input_names=["x", "past", "ids"],
                              output_names=["score", "present", "next_ids"],
                              dynamic_shapes=({0: "batch", 1: "sequence"}, {0: "batch", 1: "past"}, None))
    before = run_session(_session(program.model), {"x": to_numpy(x), "past": to_numpy(past), "ids": ids.numpy()})

    assert float32_boundary(program.model) == ["x", "past", "score", "present"]
    graph = program.model.graph
    assert [(v.name, v.dtype) for v in graph.inputs] == [
        ("x", ir.DataType.FLOAT), ("past", ir.DataType.FLOAT), ("ids", ir.DataType.INT64)]
    assert [(v.name, v.dtype) for v in graph.outputs] == [
        ("score", ir.DataType.FLOAT), ("present", ir.DataType.FLOAT), ("next_ids", ir.DataType.INT64)]
    assert collections.Counter(n.op_type for n in graph)["Cast"] >= 4  # two in, two out
    assert graph.initializers["proj.weight.T"].dtype == ir.DataType.BFLOAT16  # the weights keep their dtype

    after = run_session(_session(program.model), {"x": x.float().numpy(), "past": past.float().numpy(), "ids": ids.numpy()})
    for a, b in zip(after[:2], before[:2], strict=True):
        assert a.dtype == torch.float32 and b.dtype == torch.bfloat16
        assert torch.equal(a, b.float())  # lossless: the same bfloat16 values
    assert torch.equal(after[1][:, :4], past.float())  # the past round-trips unchanged
    assert torch.equal(after[2], ids + 1)
    with torch.no_grad():
        score, _, _ = module(x, past, ids)
    torch.testing.assert_close(after[0], score.float(), rtol=2e-2, atol=2e-2)


def test_a_graph_without_bfloat16_is_left_alone() -> None:
    program = onnxport.export(torch.nn.Linear(4, 2), (torch.randn(3, 4),))
    before = ir.to_proto(program.model).SerializeToString()
    assert float32_boundary(program.model) == []
    assert ir.to_proto(program.model).SerializeToString() == before
