"""Fusions to standard ONNX ops, one rule per module, and the matching and rewrite steps they
share (also used by the onnxruntime fusions of :mod:`onnxport.passes.ort`)."""

from __future__ import annotations

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
