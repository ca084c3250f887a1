"""A chain of ``Unsqueeze`` nodes with constant axes → one ``Unsqueeze`` inserting every axis.

NumPy-style indexing such as ``x[:, None, None, None]`` (transformers' attention-mask builders
index ``torch.arange`` results this way) is captured as one ``aten.unsqueeze`` per new axis, so the
graph runs a node per unit axis, each a few microseconds of onnxruntime overhead per run (a decode
step of a small LLM runs them once per generated token). ``Unsqueeze`` inserts unit axes without
touching the data (ONNX operator spec, Unsqueeze-13: ``axes`` are positions in the output), so
``Unsqueeze(Unsqueeze(x, a), b) = Unsqueeze(x, c)`` with ``c`` the output positions of both sets
of new axes:

- ``b`` is already in output positions;
- the intermediate's axis ``j`` lands on the ``j``-th output position not in ``b``, so each
  ``j`` in ``a`` contributes that position.

Applies when both ``axes`` are constant (opset ≥ 13, axes as an input), the inner output feeds
only the outer node and is not a graph output, and the axes are non-negative or the input's rank
is known (to normalize negative ones). Longer chains collapse pairwise, from the first node on.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import NodeRewritePass, producer, substitute

MIN_OPSET = 13


def combined_axes(inner: list[int], outer: list[int]) -> list[int]:
    """The output positions of ``Unsqueeze(Unsqueeze(x, inner), outer)``'s new axes, both lists
    non-negative (``inner`` in the intermediate's positions, ``outer`` in the output's)."""
    taken = set(outer)
    free: list[int] = []  # output positions not in outer, in order: where the intermediate's axes go
    position = 0
    while len(free) <= max(inner, default=-1):
        if position not in taken:
            free.append(position)
        position += 1
    return sorted(taken | {free[j] for j in inner})


def _axes(node: ir.Node, rank: int | None) -> list[int] | None:
    """``node``'s constant axes, normalized for an output of rank ``rank`` (``None``: unknown,
    then only non-negative axes qualify)."""
    if len(node.inputs) != 2 or node.inputs[1] is None:
        return None
    tensor = ir.convenience.get_const_tensor(node.inputs[1])
    if tensor is None:
        return None
    axes = [int(a) for a in np.asarray(tensor.numpy()).reshape(-1)]
    if any(a < 0 for a in axes):
        if rank is None:
            return None
        axes = [a % rank for a in axes]
    return axes


def _rank(value: ir.Value | None) -> int | None:
    return len(value.shape) if value is not None and value.shape is not None else None


def _collapse(graph: ir.Graph, outer: ir.Node) -> bool:
    """Merge ``outer`` with the Unsqueeze feeding it, when the module docstring's rule allows."""
    inner = producer(outer.inputs[0], "Unsqueeze")
    if inner is None or inner.graph is not graph:
        return False
    middle = inner.outputs[0]
    if len(middle.uses()) != 1 or middle.is_graph_output():
        return False
    inner_axes = _axes(inner, _rank(middle))
    outer_axes = _axes(outer, _rank(outer.outputs[0]))
    if inner_axes is None or outer_axes is None:
        return False
    axes = ir.tensor(np.array(combined_axes(inner_axes, outer_axes), np.int64))
    constant = ir.node("Constant", [], {"value": axes}, num_outputs=1)
    graph.insert_before(outer, constant)
    fused = ir.node("Unsqueeze", [inner.inputs[0], constant.outputs[0]], num_outputs=1)
    substitute(graph, fused, outer, outer.outputs[0])
    graph.remove([outer, inner], safe=True)
    return True


class UnsqueezeChainPass(NodeRewritePass):
    """Collapse chains of constant-axes ``Unsqueeze`` nodes in the main graph (module docstring)."""

    op_type = "Unsqueeze"
    min_opset = MIN_OPSET

    def rewrite(self, graph: ir.Graph, node: ir.Node) -> bool:
        return _collapse(graph, node)
