"""Fusions to standard ONNX ops, one rule per module, and the matching and rewrite steps they
share (also used by the onnxruntime fusions of :mod:`onnxport.passes.ort`)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from onnxport import weights


def producer(value: ir.Value | None, op_type: str) -> ir.Node | None:
    """The node of the default domain with ``op_type`` that produces ``value``, else ``None``."""
    node = value.producer() if value is not None else None
    return node if node is not None and node.op_type == op_type and node.domain == "" else None


def substitute(graph: ir.Graph, fused: ir.Node, before: ir.Node, old: ir.Value) -> ir.Value:
    """Insert ``fused`` before ``before`` and let its output take ``old``'s place.

    The fused node keeps ``before``'s metadata; its output takes ``old``'s dtype, shape, name and
    uses (graph outputs included). The caller removes the matched nodes afterwards.
    """
    fused.metadata_props.update(before.metadata_props)
    graph.insert_before(before, fused)
    out = fused.outputs[0]
    if old.dtype is not None:
        out.dtype = old.dtype
    out.shape = old.shape
    old.replace_all_uses_with(out, replace_graph_outputs=True)
    out.name = old.name
    return out


def scalar(value: ir.Value | None) -> float | None:
    """The float of a one-element constant that is not a weight, else ``None`` (a pass reads
    no weight value: on the streamed path weights are file slices, or have no data yet)."""
    if value is None or value.const_value is None or value.const_value.size != 1:
        return None
    if weights.is_weight(value.const_value):
        return None
    return float(value.const_value.numpy().reshape(-1)[0])


def by_constant(value: ir.Value | None, op_type: str) -> tuple[ir.Value, float] | None:
    """``(x, c)`` when ``value = op_type(x, c)`` with :func:`scalar` ``c`` (``Mul`` and ``Add``:
    either operand order), else ``None``."""
    node = producer(value, op_type)
    if node is None or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    for x, c in [(a, b), (b, a)] if op_type in ("Mul", "Add") else [(a, b)]:
        constant = scalar(c)
        if x is not None and constant is not None:
            return x, constant
    return None


def last_axis_slice(value: ir.Value | None, rank: int, step: int = 1) -> tuple[ir.Value, int, int] | None:
    """``(x, start, end)`` when ``value = Slice(x, [start], [end], [axis], [step])`` over the
    last axis of a rank-``rank`` ``x`` (axis ``rank - 1`` or ``-1``), with constant starts and ends
    (``end`` as written: ``INT64_MAX`` for "to the end") and the given ``step``, else ``None``."""
    node = producer(value, "Slice")
    if node is None or len(node.inputs) < 4 or node.inputs[0] is None:
        return None
    parts = [constant_ints(node.inputs[i]) for i in (1, 2, 3)]
    steps = constant_ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    if any(part is None or len(part) != 1 for part in parts) or steps != [step]:
        return None
    (start,), (end,), (axis,) = parts  # type: ignore[misc]
    return (node.inputs[0], start, end) if axis in (rank - 1, -1) else None


def constant_ints(value: ir.Value | None) -> list[int] | None:
    """The values of an int64/int32 constant (an initializer or ``Constant``), flattened, else ``None``."""
    tensor = ir.convenience.get_const_tensor(value) if value is not None else None
    if tensor is None or tensor.dtype not in (ir.DataType.INT64, ir.DataType.INT32):
        return None
    return [int(v) for v in tensor.numpy().reshape(-1)]


def int64_initializer(graph: ir.Graph, values: list[int], name: str) -> ir.Value:
    """The 1-D int64 initializer ``name`` holding ``values`` (a shape, axes, starts), registered in
    ``graph`` unless it already is."""
    if name not in graph.initializers:
        tensor = ir.tensor(np.array(values, dtype=np.int64), name=name)
        graph.register_initializer(
            ir.Value(name=name, shape=ir.Shape([len(values)]), type=ir.TensorType(ir.DataType.INT64), const_value=tensor)
        )
    return graph.initializers[name]


def float_initializer(value: ir.Value | None, rank: int) -> ir.TensorProtocol | None:
    """The float32 tensor of rank ``rank`` held by initializer ``value`` (not a graph input),
    else ``None``. Reads no data."""
    if value is None or not value.is_initializer() or value.is_graph_input() or value.const_value is None:
        return None
    tensor = value.const_value
    return tensor if tensor.dtype == ir.DataType.FLOAT and len(tensor.shape) == rank else None


def transposed_initializer(value: ir.Value | None) -> ir.Node | None:
    """The ``Transpose(perm=(1, 0))`` node producing ``value`` from a float32 2-D initializer (a
    tied LM head reading the embedding table), else ``None``."""
    node = producer(value, "Transpose")
    if node is None or value is None or value.is_graph_output():
        return None
    if tuple(node.attributes.get_ints("perm", ())) != (1, 0) or float_initializer(node.inputs[0], 2) is None:
        return None
    return node


def drop_unused_initializer(graph: ir.Graph, value: ir.Value | None) -> None:
    """Remove initializer ``value`` from ``graph`` once nothing reads it (a rewrite replaced its
    last use), so a pass leaves no orphan weight behind."""
    if value is None or value.name is None or not value.is_initializer():
        return
    if not value.uses() and not value.is_graph_output():
        graph.initializers.pop(value.name, None)


class NodeRewritePass(ir.passes.InPlacePass):
    """A pass that offers every main-graph node of :attr:`op_type` (default domain) to
    :meth:`rewrite`, in a model importing the default domain at opset ≥ :attr:`min_opset`.

    Nodes are visited in graph order over a snapshot; one a rewrite removed is skipped.
    """

    op_type: str
    min_opset: int = 1

    def rewrite(self, graph: ir.Graph, node: ir.Node) -> bool:
        """Rewrite around ``node`` when it matches; whether the graph changed."""
        raise NotImplementedError

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if model.opset_imports.get("", 0) < self.min_opset:
            return ir.passes.PassResult(model, False)
        graph = model.graph
        modified = False
        for node in list(graph):
            if node.graph is graph and node.op_type == self.op_type and node.domain == "":
                modified |= self.rewrite(graph, node)
        return ir.passes.PassResult(model, modified)
