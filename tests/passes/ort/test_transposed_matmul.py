"""``passes/ort/transposed_matmul.py``: a Linear's MatMul over the lazily transposed weight becomes
``com.microsoft.FusedMatMul(transB=1)`` over the weight as stored, with eager's values in
onnxruntime; what is not such a MatMul stays."""

from __future__ import annotations

import collections

import numpy as np
import torch

import onnxport
from onnxport.passes.ort import finish_for_onnxruntime
from onnxport.weights.tensor import WeightTensor


class Projections(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(16, 24)
        self.down = torch.nn.Linear(24, 16, bias=False)
        self.free = torch.nn.Parameter(torch.randn(16, 8))  # x @ free: no transpose, stays MatMul

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x))) @ self.free


def test_linear_weights_are_read_as_stored_and_values_equal_eager() -> None:
    torch.manual_seed(0)
    model = Projections().eval()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    program = onnxport.export(model, (torch.randn(2, 3, 16),), dynamic_shapes=({0: batch, 1: seq},), verify=False)
    assert any(name.endswith(".T") for name in program.model.graph.initializers)
    finish_for_onnxruntime(program.model)
    graph = program.model.graph
    ops = collections.Counter((n.domain, n.op_type) for n in graph)
    assert ops[("com.microsoft", "FusedMatMul")] == 2 and ops[("", "MatMul")] == 1
    assert not any(name.endswith(".T") for name in graph.initializers)  # no transposed copy is written
    for node in graph:
        if node.op_type == "FusedMatMul":
            assert node.attributes["transB"].as_int() == 1
            weight = node.inputs[1]
            assert isinstance(weight.const_value, WeightTensor) and weight.const_value.slot is not None
            assert weight.name in ("up.weight", "down.weight")
            assert list(weight.shape) == list(dict(model.named_parameters())[weight.name].shape)  # [N, K]
    for size in [(2, 3), (5, 7)]:
        x = torch.randn(*size, 16)
        got = np.asarray(program(x)[0])
        want = model(x).detach().numpy()
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


class TiedHead(torch.nn.Module):
    """An embedding table that is also the output projection (GPT-2, Gemma, Llama 3.2)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(40, 16)
        self.head = torch.nn.Linear(16, 40, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.embed(ids)))


def test_tied_head_reads_the_table_as_stored_without_a_transpose() -> None:
    torch.manual_seed(0)
    model = TiedHead().eval()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    ids = torch.randint(0, 40, (2, 3))
    program = onnxport.export(model, (ids,), dynamic_shapes=({0: batch, 1: seq},), verify=False)
    assert any(n.op_type == "Transpose" for n in program.model.graph)  # the standard graph transposes
    finish_for_onnxruntime(program.model)
    graph = program.model.graph
    assert not any(n.op_type == "Transpose" for n in graph)
    [fused] = [n for n in graph if n.op_type == "FusedMatMul"]
    assert fused.attributes["transB"].as_int() == 1 and fused.inputs[1].name == "embed.weight"
    assert list(graph.initializers) == ["embed.weight"]  # one table, read by the Gather and the head
    for size in [(2, 3), (4, 9)]:
        tokens = torch.randint(0, 40, size)
        got = np.asarray(program(tokens)[0])
        want = model(tokens).detach().numpy()
        assert got.shape == (*size, 40) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
