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


def _inverse_root(value: ir.Value | None) -> ir.Node | None:
    """The ``Add`` under ``value = 1/√add``: ``Reciprocal(Sqrt(add))`` or ``Pow(add, -0.5)``."""
    recip = producer(value, "Reciprocal")
    if recip is not None:
        sqrt = producer(recip.inputs[0], "Sqrt")
        return producer(sqrt.inputs[0], "Add") if sqrt is not None else None
    power = producer(value, "Pow")
    if power is not None and scalar(power.inputs[1]) == -0.5:
        return producer(power.inputs[0], "Add")
    return None


def _match_normed(mul_x: ir.Node) -> tuple[ir.Value, float, list[ir.Node]] | None:
    """(x, epsilon, matched nodes from the square to ``mul_x``) when ``mul_x = x · 1/√(mean(x²) + ε)``."""
    for x_index in (0, 1):
        x, inv = mul_x.inputs[x_index], mul_x.inputs[1 - x_index]
        add = _inverse_root(inv)
        if add is None or x is None or inv is None:
            continue
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
            between = []  # Reciprocal and Sqrt, or the Pow
            node = inv.producer()
            while node is not None and node is not add:
                between.append(node)
                node = node.inputs[0].producer() if node.inputs[0] is not None else None
            return x, eps, [square, mean, add, *reversed(between), mul_x]  # type: ignore[list-item]
    return None


def _weight(value: ir.Value | None) -> bool:
    return value is not None and value.const_value is not None and value.shape is not None and len(value.shape) == 1


def _match(mul_w: ir.Node) -> tuple[ir.Value, ir.Value, float, list[ir.Node]] | None:
    """(x, weight, epsilon, matched nodes) when ``mul_w`` ends an RMS norm."""
    for w_index in (0, 1):
        weight, normed = mul_w.inputs[w_index], mul_w.inputs[1 - w_index]
        if not _weight(weight):
            continue
        mul_x = producer(normed, "Mul")
        match = _match_normed(mul_x) if mul_x is not None else None
        if match is not None:
            x, eps, nodes = match
            return x, weight, eps, nodes  # type: ignore[return-value]
    return None


def _scaled_later(mul_x: ir.Node) -> bool:
    """Whether ``mul_x``'s one use is a ``Mul`` by a 1-D constant (the scale of a norm that
    :func:`_match` fuses from there)."""
    uses = list(mul_x.outputs[0].uses())
    if len(uses) != 1 or uses[0].node.op_type != "Mul":
        return False
    user = uses[0].node
    return any(_weight(v) for v in user.inputs if v is not mul_x.outputs[0])


class RMSNormFusionPass(NodeRewritePass):
    """Replace the RMS-norm subgraph by one RMSNormalization node (opset ≥ 23)."""

    op_type = "Mul"
    min_opset = MIN_OPSET

    def rewrite(self, graph: ir.Graph, node: ir.Node) -> bool:
        match = _match(node)
        if match is None:
            match = self._unscaled(graph, node)
        if match is None:
            return False
        x, weight, eps, inner = match
        if any(len(n.outputs[0].uses()) != 1 or n.outputs[0].is_graph_output() for n in inner[1:-1]):
            return False  # an intermediate is used elsewhere
        if inner[-1] is not node and (len(inner[-1].outputs[0].uses()) != 1 or inner[-1].outputs[0].is_graph_output()):
            return False
        if weight.producer() is None and not weight.is_initializer() and weight.const_value is not None:
            graph.register_initializer(weight)  # the scale of ones made for a norm without one
        fused = ir.Node(
            "", "RMSNormalization", [x, weight],
            attributes=[ir.AttrInt64("axis", -1), ir.AttrFloat32("epsilon", eps)], num_outputs=1,
        )
        substitute(graph, fused, node, node.outputs[0])
        square = inner[0]
        removable = [node, *reversed([n for n in inner[1:] if n is not node])]
        if len(square.outputs[0].uses()) == 1:
            removable.append(square)
        graph.remove(removable, safe=True)
        return True

    @staticmethod
    def _unscaled(graph: ir.Graph, node: ir.Node) -> tuple[ir.Value, ir.Value, float, list[ir.Node]] | None:
        """The match of a norm without a scale ending at ``node``, with a scale of ones of
        ``x``'s static last dimension (float types only)."""
        if _scaled_later(node):
            return None
        match = _match_normed(node)
        if match is None:
            return None
        x, eps, nodes = match
        dim = x.shape[-1] if x.shape is not None else None
        if not isinstance(dim, int) or x.dtype not in (ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16, ir.DataType.DOUBLE):
            return None
        taken = {v.name for v in graph.initializers.values()}
        name, k = f"{x.name or 'rms'}.unit_scale", 0
        while name in taken:
            k, name = k + 1, f"{x.name or 'rms'}.unit_scale.{k + 1}"
        ones = ir.tensor(np.ones(dim, dtype=x.dtype.numpy()), dtype=x.dtype, name=name)
        scale = ir.Value(name=name, shape=ir.Shape([dim]), type=ir.TensorType(x.dtype), const_value=ones)
        return x, scale, eps, nodes
