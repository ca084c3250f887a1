"""A packed gate|up projection (Phi-3's ``gate_up_proj``) becomes two MatMuls over the weight's
column halves: same outputs in onnxruntime, no weight read at pass time, the halves read from the
rows of the transposed weight; a Split whose halves do not meet in a Mul stays."""

from __future__ import annotations

import collections

import numpy as np
import onnx_ir as ir
import pytest

from onnxport import weights
from onnxport.passes.ort.unpacked_gate_up import UnpackedGateUpPass
from onnxport.testing.tiny_models import _make

from ._models import GQA_DECODER, assert_outputs_kept, op_counts, standard_outputs

pytest.importorskip("transformers")


def test_phi3_gate_up_becomes_two_matmuls_with_the_same_outputs() -> None:
    model = _make("Phi3Config", "Phi3ForCausalLM", **GQA_DECODER, initializer_range=0.2)()
    program, feeds, before = standard_outputs(model)
    ops_before = op_counts(program.model)
    assert UnpackedGateUpPass()(program.model).modified
    ops = op_counts(program.model)
    layers = GQA_DECODER["num_hidden_layers"]
    assert ops["MatMul"] - ops_before["MatMul"] == layers and ops_before["Split"] - ops["Split"] == layers
    halves = [v for name, v in program.model.graph.initializers.items() if "gate_up_proj" in name]
    assert len(halves) == 2 * layers and all(v.shape == ir.Shape([64, 64]) for v in halves)  # [K, N] each
    assert all(weights.is_weight(v.const_value) for v in halves)  # recorded, not read
    assert all(v.const_value.perm == (1, 0) for v in halves)  # the transposed rows of gate_up_proj
    np.testing.assert_array_equal(
        np.concatenate([halves[0].const_value.numpy(), halves[1].const_value.numpy()], axis=1),
        model.model.layers[0].mlp.gate_up_proj.weight.detach().numpy().T,
    )
    assert_outputs_kept(program, feeds, before, rtol=1e-5, atol=1e-5)


def test_halves_that_do_not_meet_in_a_mul_stay_packed() -> None:
    graph = ir.Graph([], [], nodes=[], opset_imports={"": 21})
    x = ir.Value(name="x", shape=ir.Shape([2, 8]), type=ir.TensorType(ir.DataType.FLOAT))
    graph.inputs.append(x)
    array = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    w = ir.Value(name="w", shape=ir.Shape([8, 6]), type=ir.TensorType(ir.DataType.FLOAT), const_value=ir.tensor(array, name="w"))
    graph.register_initializer(w)
    matmul = ir.node("MatMul", [x, w])
    split = ir.node("Split", [matmul.outputs[0]], {"axis": -1, "num_outputs": 2}, num_outputs=2)
    add = ir.node("Add", list(split.outputs))  # the halves added, not gated
    for n in (matmul, split, add):
        graph.append(n)
    graph.outputs.append(add.outputs[0])
    model = ir.Model(graph, ir_version=10)
    assert not UnpackedGateUpPass()(model).modified
    assert op_counts(model) == collections.Counter({"MatMul": 1, "Split": 1, "Add": 1})
