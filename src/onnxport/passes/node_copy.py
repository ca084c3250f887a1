"""A copy of an ``onnx_ir`` node reading other inputs: what the passes that duplicate parts of a
graph share (:mod:`onnxport.passes.repeat_layers` for grown layers,
:mod:`onnxport.passes.cache_branch` for an ``If`` branch)."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir


def copy_node(node: ir.Node, inputs: Sequence[ir.Value | None], name: str | None = None) -> ir.Node:
    """A new node with ``node``'s operator, attributes, version and metadata, reading ``inputs``;
    its outputs have the originals' types, shapes and constant values (names are the caller's).
    Not inserted into any graph."""
    copy = ir.Node(
        node.domain, node.op_type, inputs, attributes=list(node.attributes.values()),
        overload=node.overload, num_outputs=len(node.outputs), version=node.version, name=name,
    )  # fmt: skip
    copy.metadata_props.update(node.metadata_props)
    for out, new_out in zip(node.outputs, copy.outputs, strict=True):
        new_out.type, new_out.shape, new_out.const_value = out.type, out.shape, out.const_value
    return copy
