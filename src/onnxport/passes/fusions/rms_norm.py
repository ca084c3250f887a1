"""Fuse the hand-written RMS norm (Llama, Mistral, Qwen, T5) into ONNX RMSNormalization (opset 23).

Matched: ``w · (x · 1/√(mean(x², axis=-1, keepdims) + ε))``, the translation of
``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight`` (e.g. transformers'
``LlamaRMSNorm``), with the products in either operand order. RMSNormalization-23 computes
``x / √(mean(x²) + ε) · scale`` over the axes from ``axis`` on (ONNX operator spec).
"""

from __future__ import annotations

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


def _match(mul_w: ir.Node) -> tuple[ir.Value, ir.Value, float, list[ir.Node]] | None:
    """(x, weight, epsilon, matched nodes) when ``mul_w`` ends an RMS norm."""
    for w_index in (0, 1):
        weight, normed = mul_w.inputs[w_index], mul_w.inputs[1 - w_index]
        if weight is None or weight.const_value is None or weight.shape is None or len(weight.shape) != 1:
            continue
        mul_x = producer(normed, "Mul")
        if mul_x is None:
            continue
        for x_index in (0, 1):
            x, inv = mul_x.inputs[x_index], mul_x.inputs[1 - x_index]
            recip = producer(inv, "Reciprocal")
            sqrt = producer(recip.inputs[0], "Sqrt") if recip else None
            add = producer(sqrt.inputs[0], "Add") if sqrt else None
            if add is None or x is None:
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
                nodes = [square, mean, add, sqrt, recip, mul_x]  # type: ignore[list-item]
                return x, weight, eps, nodes  # type: ignore[return-value]
    return None


class RMSNormFusionPass(NodeRewritePass):
    """Replace the RMS-norm subgraph by one RMSNormalization node (opset ≥ 23)."""

    op_type = "Mul"
    min_opset = MIN_OPSET

    def rewrite(self, graph: ir.Graph, node: ir.Node) -> bool:
        match = _match(node)
        if match is None:
            return False
        x, weight, eps, inner = match
        if any(len(n.outputs[0].uses()) != 1 or n.outputs[0].is_graph_output() for n in inner[1:]):
            return False  # an intermediate is used elsewhere
        fused = ir.Node(
            "", "RMSNormalization", [x, weight],
            attributes=[ir.AttrInt64("axis", -1), ir.AttrFloat32("epsilon", eps)], num_outputs=1,
        )
        substitute(graph, fused, node, node.outputs[0])
        square = inner[0]
        removable = [node, *reversed(inner[1:])]
        if len(square.outputs[0].uses()) == 1:
            removable.append(square)
        graph.remove(removable, safe=True)
        return True
