"""Fuse the hand-written RMS norm (Llama, Mistral, Qwen, T5, Gemma 4) into ONNX RMSNormalization
(opset 23).

Matched: ``w · (x · r)`` with ``r = 1/√(mean(x², axis=-1, keepdims) + ε)``, the translation of
``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight`` (e.g. transformers'
``LlamaRMSNorm``), with the products in either operand order; ``r`` also as
``Pow(mean + ε, -0.5)`` (Gemma 4's ``torch.pow(mean_squared, -0.5)``). A norm without a scale
(Gemma 4's ``with_scale=False`` value norm, ``x · r`` alone) is fused with a scale of ones.
RMSNormalization-23 computes ``x / √(mean(x²) + ε) · scale`` over the axes from ``axis`` on (ONNX
operator spec).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import NodeRewritePass, producer, scalar, substitute

MIN_OPSET = 23


def _is_square_of(node: ir.Node | None, x: ir.Value) -> bool:
    if node is None:
        return False
    if node.op_type == "Mul":
        return node.inputs[0] is x and node.inputs[1] is x
    if node.op_type == "Pow":
        return node.inputs[0] is x and scalar(node.inputs[1]) == 2.0
    return False


def _inverse_root(value: ir.Value | None) -> tuple[ir.Node, list[ir.Node]] | None:
    """``(add, nodes)`` when ``value = 1/√add``: ``Reciprocal(Sqrt(add))`` (nodes: the Sqrt and
    the Reciprocal) or ``Pow(add, -0.5)`` (nodes: the Pow)."""
    recip = producer(value, "Reciprocal")
    if recip is not None:
        sqrt = producer(recip.inputs[0], "Sqrt")
        add = producer(sqrt.inputs[0], "Add") if sqrt is not None else None
        return (add, [sqrt, recip]) if add is not None and sqrt is not None else None
    power = producer(value, "Pow")
    if power is not None and scalar(power.inputs[1]) == -0.5:
        add = producer(power.inputs[0], "Add")
        return (add, [power]) if add is not None else None
    return None


def _match_normed(mul_x: ir.Node) -> tuple[ir.Value, float, list[ir.Node]] | None:
    """(x, epsilon, matched nodes from the square to ``mul_x``) when ``mul_x = x · 1/√(mean(x²) + ε)``."""
    for x_index in (0, 1):
        x, root = mul_x.inputs[x_index], _inverse_root(mul_x.inputs[1 - x_index])
        if root is None or x is None:
            continue
        add, between = root
        for m_index in (0, 1):
            mean = producer(add.inputs[m_index], "ReduceMean")
            eps = scalar(add.inputs[1 - m_index])
            if mean is None or eps is None or mean.inputs[0] is None:
                continue
            axes = scalar(mean.inputs[1]) if len(mean.inputs) > 1 else None
            keep = mean.attributes.get("keepdims")
            rank = len(x.shape) if x.shape is not None else None
            if axes is None or rank is None or int(axes) % rank != rank - 1 or (keep is not None and keep.value == 0):
                continue
            square = mean.inputs[0].producer()
            if not _is_square_of(square, x):
                continue
            return x, eps, [square, mean, add, *between, mul_x]  # type: ignore[list-item]
    return None


def _weight(value: ir.Value | None) -> bool:
    return value is not None and value.const_value is not None and value.shape is not None and len(value.shape) == 1


def _match(mul_w: ir.Node) -> tuple[ir.Value, ir.Value | None, float, list[ir.Node]] | None:
    """(x, weight, epsilon, matched nodes) when ``mul_w`` ends an RMS norm: scaled, or ``mul_w``
    is the ``x · r`` of a norm without a scale (weight ``None``) whose one use is not a scale."""
    for w_index in (0, 1):
        weight, normed = mul_w.inputs[w_index], mul_w.inputs[1 - w_index]
        if not _weight(weight):
            continue
        mul_x = producer(normed, "Mul")
        match = _match_normed(mul_x) if mul_x is not None else None
        if match is not None:
            x, eps, nodes = match
            return x, weight, eps, [*nodes, mul_w]
    if _scaled_later(mul_w):
        return None  # fused from its scale's Mul
    match = _match_normed(mul_w)
    return None if match is None else (match[0], None, match[1], match[2])


def _scaled_later(mul_x: ir.Node) -> bool:
    """Whether ``mul_x``'s one use is a ``Mul`` by a 1-D constant (the scale of a norm that
    :func:`_match` fuses from there)."""
    uses = list(mul_x.outputs[0].uses())
    if len(uses) != 1 or uses[0].node.op_type != "Mul":
        return False
    user = uses[0].node
    return any(_weight(v) for v in user.inputs if v is not mul_x.outputs[0])


_FLOATS = (ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16, ir.DataType.DOUBLE)


def _unit_scale(graph: ir.Graph, x: ir.Value) -> ir.Value | None:
    """The initializer of ones over ``x``'s static last dimension in ``x``'s float dtype, one per
    dtype and size in the graph; ``None`` when that dimension is symbolic or ``x`` is not float."""
    dim = x.shape[-1] if x.shape is not None else None
    if not isinstance(dim, int) or x.dtype not in _FLOATS:
        return None
    name = f"rms_norm.unit_scale.{x.dtype.name.lower()}.{dim}"
    if name not in graph.initializers:
        ones = ir.tensor(np.ones(dim, dtype=x.dtype.numpy()), dtype=x.dtype, name=name)
        graph.register_initializer(ir.Value(name=name, shape=ir.Shape([dim]), type=ir.TensorType(x.dtype), const_value=ones))
    return graph.initializers[name]


class RMSNormFusionPass(NodeRewritePass):
    """Replace the RMS-norm subgraph by one RMSNormalization node (opset ≥ 23)."""

    op_type = "Mul"
    min_opset = MIN_OPSET

    def rewrite(self, graph: ir.Graph, node: ir.Node) -> bool:
        match = _match(node)
        if match is None:
            return False
        x, weight, eps, inner = match  # inner: the square, ..., node
        if any(len(n.outputs[0].uses()) != 1 or n.outputs[0].is_graph_output() for n in inner[1:-1]):
            return False  # an intermediate is used elsewhere
        weight = weight if weight is not None else _unit_scale(graph, x)
        if weight is None:
            return False
        fused = ir.Node(
            "", "RMSNormalization", [x, weight],
            attributes=[ir.AttrInt64("axis", -1), ir.AttrFloat32("epsilon", eps)], num_outputs=1,
        )
        substitute(graph, fused, node, node.outputs[0])
        square = inner[0]
        removable = list(reversed(inner[1:]))
        if len(square.outputs[0].uses()) == 1:
            removable.append(square)
        graph.remove(removable, safe=True)
        return True
