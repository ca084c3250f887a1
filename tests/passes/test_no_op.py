"""Nodes that give an input back unchanged are removed, and only those: graph-level cases run in
onnxruntime before and after the pass, and a masked export that matches eager with fewer nodes."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest
import torch

import onnxport
from onnxport import runtime
from onnxport.passes.fusions.no_op import NoOpPass

B = ir.SymbolicDim("batch")


def _model(op: str, x_type: ir.DataType, x_shape: list, constant: np.ndarray | None, out_shape: list, *, constant_first: bool = False, output_is_x_use: bool = True) -> ir.Model:
    """``y = op(x, c)`` (or ``op(c, x)``), then ``Identity(y)`` as the graph output (so ``y`` is
    an inner value), ``x`` of ``x_shape`` and ``y`` recorded with ``out_shape``."""
    x = ir.Value(name="x", type=ir.TensorType(x_type), shape=ir.Shape(x_shape))
    inputs: list[ir.Value] = [x]
    if op == "Expand":
        c = ir.Value(name="c", type=ir.TensorType(ir.DataType.INT64), shape=ir.Shape([len(out_shape)]))
        inputs.append(c)
        operands = [x, c]
    else:
        assert constant is not None
        c = ir.Value(name="c", type=ir.TensorType(x_type), shape=ir.Shape(constant.shape), const_value=ir.tensor(constant, name="c"))
        operands = [c, x] if constant_first else [x, c]
    node = ir.node(op, operands, num_outputs=1)
    y = node.outputs[0]
    y.name, y.dtype, y.shape = "y", x_type, ir.Shape(out_shape)
    nodes = [node]
    if output_is_x_use:
        last = ir.node("Identity", [y], num_outputs=1)
        last.outputs[0].name = "out"
        nodes.append(last)
        output = last.outputs[0]
    else:
        output = y
    output.dtype, output.shape = x_type, ir.Shape(out_shape)
    graph = ir.Graph(inputs, [output], nodes=nodes, opset_imports={"": 18}, name="g")
    if op != "Expand":
        graph.register_initializer(c)
    return ir.Model(graph, ir_version=10)


def _run(model: ir.Model, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return runtime.create_session(model).run(None, feeds)[0]


def _ops(model: ir.Model) -> list[str]:
    return [n.op_type for n in model.graph]


REMOVED = [
    ("Add", ir.DataType.FLOAT, np.array(0.0, np.float32), False),
    ("Add", ir.DataType.INT64, np.array([0], np.int64), True),
    ("Sub", ir.DataType.FLOAT, np.array(0.0, np.float32), False),
    ("Mul", ir.DataType.FLOAT, np.array([[1.0]], np.float32), True),
    ("Div", ir.DataType.FLOAT, np.array(1.0, np.float32), False),
    ("And", ir.DataType.BOOL, np.array(True), True),
    ("Or", ir.DataType.BOOL, np.array(False), False),
]


def _feed(dtype: ir.DataType, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == ir.DataType.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == ir.DataType.INT64:
        return rng.integers(-5, 5, shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(("op", "dtype", "constant", "first"), REMOVED)
def test_identity_element_is_removed_with_the_same_values(op, dtype, constant, first) -> None:
    model = _model(op, dtype, [B, 3, 4], constant, [B, 3, 4], constant_first=first)
    feeds = {"x": _feed(dtype, (2, 3, 4))}
    before = _run(model, feeds)
    assert NoOpPass()(model).modified
    assert _ops(model) == ["Identity"]
    after = _run(model, feeds)
    assert after.dtype == before.dtype and after.shape == before.shape == (2, 3, 4)
    np.testing.assert_array_equal(after, before)


KEPT = [
    # not the identity element
    ("Add", [B, 3], np.array(1.0, np.float32), [B, 3], False),
    ("And", [B, 3], np.array(False), [B, 3], False),
    # the constant first where the op is not commutative: 0 - x, 1 / x
    ("Sub", [B, 3], np.array(0.0, np.float32), [B, 3], True),
    ("Div", [B, 3], np.array(1.0, np.float32), [B, 3], True),
    # broadcasting enlarges x: [3] + zeros[1, 1] is [1, 3]
    ("Add", [3], np.array([[0.0]], np.float32), [1, 3], False),
    # more than one element: a tensor, never read as a no-op
    ("Add", [B, 3], np.zeros((3,), np.float32), [B, 3], False),
    # the output's shape is not fully known
    ("Mul", [B, 3], np.array(1.0, np.float32), [None, 3], False),
]


@pytest.mark.parametrize(("op", "x_shape", "constant", "out_shape", "first"), KEPT)
def test_other_nodes_stay(op, x_shape, constant, out_shape, first) -> None:
    dtype = ir.DataType.BOOL if constant.dtype == bool else ir.DataType.FLOAT
    model = _model(op, dtype, x_shape, constant, out_shape, constant_first=first)
    assert not NoOpPass()(model).modified
    assert _ops(model) == [op, "Identity"]


def test_expand_to_its_own_shape_is_removed_and_a_broadcasting_one_stays() -> None:
    same = _model("Expand", ir.DataType.FLOAT, [B, 1, 4], None, [B, 1, 4])
    feeds = {"x": _feed(ir.DataType.FLOAT, (2, 1, 4)), "c": np.array([2, 1, 4], np.int64)}
    before = _run(same, feeds)
    assert NoOpPass()(same).modified and _ops(same) == ["Identity"]
    np.testing.assert_array_equal(_run(same, feeds), before)  # c stays an (unused) graph input
    wider = _model("Expand", ir.DataType.FLOAT, [B, 1, 4], None, [B, 3, 4])
    assert not NoOpPass()(wider).modified and _ops(wider) == ["Expand", "Identity"]


def test_a_graph_output_keeps_its_node() -> None:
    model = _model("Add", ir.DataType.FLOAT, [B, 3], np.array(0.0, np.float32), [B, 3], output_is_x_use=False)
    assert not NoOpPass()(model).modified
    assert _ops(model) == ["Add"]


class Masked(torch.nn.Module):
    """transformers' mask-builder habits: an arange plus a 0 offset, a mask started from an
    all-true scalar, and an expand to the shape the mask already has."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        length = x.shape[1]
        kv = torch.arange(length) + 0
        q = torch.arange(length)
        causal = torch.ones((), dtype=torch.bool) & (kv[None, :] <= q[:, None])  # [T, T]
        full = causal[None, :, :] & mask.bool()[:, None, :]  # [B, T, T]
        full = full.expand(x.shape[0], length, length)
        return torch.where(full, x[:, None, :], torch.zeros((), dtype=x.dtype)).sum(-1)


def test_masked_export_loses_the_no_ops_and_matches_eager() -> None:
    model = Masked().eval()
    x, mask = torch.randn(2, 5), torch.tensor([[0, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
    dims = ({0: "batch", 1: "length"}, {0: "batch", 1: "length"})
    program = onnxport.export(model, (x, mask), dynamic_shapes=dims)
    unoptimized = onnxport.export(model, (x, mask), dynamic_shapes=dims, optimize=False)
    ops = [n.op_type for n in program.model.graph]
    before = [n.op_type for n in unoptimized.model.graph]
    assert before.count("Add") == 1 and before.count("And") == 2 and before.count("Expand") >= 1
    # the + 0, the true scalar's And and the expand to the mask's own shape are gone
    assert "Add" not in ops and "Expand" not in ops and ops.count("And") == 1
    for batch, length in ((2, 5), (3, 7)):
        xs = torch.randn(batch, length)
        ms = (torch.rand(batch, length) > 0.3).long()
        want = model(xs, ms).numpy()
        got = np.asarray(program(xs, ms)[0])
        assert got.shape == want.shape == (batch, length) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
