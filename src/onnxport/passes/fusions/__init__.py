"""Fusions to standard ONNX ops, one rule per module, and the rewrite step they share."""

from __future__ import annotations

import onnx_ir as ir


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
