"""Check that every node of a translated graph exists at the graph's opset."""

from __future__ import annotations

import functools

import onnx.defs
import onnx_ir as ir

from onnxport.errors import OpsetError
from onnxport.metadata import KEY_FX_NODE


@functools.cache
def op_since(op_type: str, opset: int, domain: str = "") -> int | None:
    """The ``since_version`` of ``op_type``'s schema in effect at ``opset``, or None if none is."""
    try:
        return int(onnx.defs.get_schema(op_type, opset, domain).since_version)
    except onnx.defs.SchemaError:
        return None


def check_opset(graph: ir.Graph, opset: int) -> None:
    """Raise if a node's op has no schema at ``opset`` (a translation used a newer op).

    Raises:
        OpsetError: Naming the ONNX op, the FX node it came from and what to do.
    """
    for node in ir.traversal.RecursiveGraphIterator(graph):
        if node.domain in ("", "ai.onnx") and op_since(node.op_type, opset) is None:
            fx = node.metadata_props.get(KEY_FX_NODE, "?")
            raise OpsetError(
                f"The translation of {fx} emitted ONNX {node.op_type}, which does not exist at opset "
                f"{opset}. Export with a newer opset_version, or register a translation with "
                f"since=<= {opset} for that op."
            )
