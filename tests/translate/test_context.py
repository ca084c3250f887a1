"""Typed Ctx helpers (arg_val, used_outputs, unsupported) and the shape helpers of ops/_common.py."""

from __future__ import annotations

import operator

import onnx_ir as ir
import pytest
import torch
import torch.fx

from onnxport.errors import UnsupportedOpError
from onnxport.ops._common import dtype_of, shape_of, static_dim, static_dims
from onnxport.translate.context import Ctx

aten = torch.ops.aten


def _ctx_at(node: torch.fx.Node | None) -> Ctx:
    ctx = Ctx(ir.Graph([], [], nodes=[]), 18)
    ctx.node = node
    return ctx


def _graph() -> tuple[torch.fx.Graph, torch.fx.Node, torch.fx.Node]:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.zeros(2, 3)
    i = graph.placeholder("i")
    i.meta["val"] = torch.zeros(4, dtype=torch.int64)
    return graph, x, i


def test_arg_val_tensor_list_scalar_and_missing() -> None:
    graph, x, i = _graph()
    node = graph.call_function(aten.index_put.default, (x, [None, i], x, True))
    ctx = _ctx_at(node)
    assert ctx.arg_val(0) is x.meta["val"]
    assert ctx.arg_val(1) == [None, i.meta["val"]]
    assert ctx.arg_val(3) is None  # a Python bool, not an FX node
    assert ctx.arg_val(7) is None  # past the last argument
    assert _ctx_at(None).arg_val(0) is None


def test_used_outputs() -> None:
    graph, x, _ = _graph()
    node = graph.call_function(aten.sort.default, (x,))
    ctx = _ctx_at(node)
    assert ctx.used_outputs() == set()
    second = graph.call_function(operator.getitem, (node, 1))
    assert ctx.used_outputs() == set()  # a getitem nobody reads (torch.export keeps those)
    graph.call_function(torch.ops.aten.neg.default, (second,))
    assert ctx.used_outputs() == {1}
    first = graph.call_function(operator.getitem, (node, 0))
    graph.call_function(torch.ops.aten.neg.default, (first,))
    assert ctx.used_outputs() == {0, 1}
    graph.output((node,))  # a user taking the whole result: any output may be read
    assert ctx.used_outputs() is None
    assert _ctx_at(None).used_outputs() == set()


def test_shape_helpers() -> None:
    ctx = _ctx_at(None)
    v = ir.Value(name="v", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([2, "n", 5]))
    assert list(shape_of(v)) == [2, ir.SymbolicDim("n"), 5]
    assert dtype_of(v) == ir.DataType.FLOAT
    assert (static_dim(v, 0), static_dim(v, 1), static_dim(v, -1)) == (2, None, 5)
    assert static_dims(ctx, v, "op", slice(-1, None)) == [5]
    with pytest.raises(UnsupportedOpError, match=r"op with dynamic sizes \['2', 'n', '5'\]: the encoding needs static"):
        static_dims(ctx, v, "op")
    bare = ir.Value(name="bare")
    with pytest.raises(AssertionError, match="bare has no shape"):
        shape_of(bare)
    with pytest.raises(AssertionError, match="bare has no element type"):
        dtype_of(bare)
