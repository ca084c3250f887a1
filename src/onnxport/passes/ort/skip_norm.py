"""``RMSNormalization(Add(a, b))`` → ``com.microsoft.SkipSimplifiedLayerNormalization``.

A pre-norm decoder adds each block's output to the residual stream and normalizes the sum; the
sum also feeds the next residual Add. onnxruntime's contrib op (docs/ContribOperators.md:
inputs ``input, skip, gamma``; outputs ``output, mean, inv_std_var, input_skip_bias_sum``) does
both in one pass over the hidden state, as onnxruntime's transformer optimizer
(``fusion_skiplayernorm.py``) and onnxruntime-genai's builder emit it. The LayerNormalization
counterpart (``SkipLayerNormalization``, with a bias-free beta) is fused the same way.

Applies when ``a`` and ``b`` are float32 with the same static last dimension, the norm is over the
last axis with a 1-D constant scale (and bias), and the installed onnxruntime has the kernel.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.ort.kernels import MICROSOFT, has_kernel

FUSED = {
    "RMSNormalization": "SkipSimplifiedLayerNormalization",
    "LayerNormalization": "SkipLayerNormalization",
}


def _last_axis(norm: ir.Node, rank: int) -> bool:
    axis = norm.attributes.get("axis")
    value = -1 if axis is None else axis.as_int()
    return value in (-1, rank - 1)


def match(norm: ir.Node) -> ir.Node | None:
    """The ``Add`` feeding a fusable norm node, else ``None``."""
    if norm.domain != "" or norm.op_type not in FUSED or not has_kernel(FUSED[norm.op_type]):
        return None
    if len(norm.outputs) > 1 and any(o.uses() or o.is_graph_output() for o in norm.outputs[1:]):
        return None
    stash = norm.attributes.get("stash_type")
    if stash is not None and stash.as_int() != 1:
        return None
    add = norm.inputs[0].producer() if norm.inputs[0] is not None else None
    if add is None or add.op_type != "Add" or add.domain != "":
        return None
    a, b = add.inputs
    if a is None or b is None or a.shape is None or b.shape is None:
        return None
    if a.dtype != ir.DataType.FLOAT or b.dtype != ir.DataType.FLOAT or len(a.shape) != len(b.shape):
        return None
    if len(a.shape) != 3 or a.shape[-1] != b.shape[-1] or not isinstance(a.shape[-1], int):
        return None
    if not _last_axis(norm, len(a.shape)):
        return None
    for param in norm.inputs[1:]:
        if param is not None and (param.const_value is None or len(param.const_value.shape) != 1):
            return None
    return add


class SkipNormalizationPass(ir.passes.InPlacePass):
    """Fuse every residual Add + RMSNormalization / LayerNormalization pair."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for norm in list(graph):
            add = match(norm)
            if add is None:
                continue
            epsilon = norm.attributes.get("epsilon")
            attrs = {"epsilon": epsilon.as_float() if epsilon is not None else 1e-5}
            inputs = [add.inputs[0], add.inputs[1], *norm.inputs[1:]]
            fused = ir.node(
                FUSED[norm.op_type], inputs, attrs, domain=MICROSOFT, num_outputs=4, name=norm.name
            )
            graph.insert_before(add, fused)
            # Unread optional outputs stay unnamed, as in onnxruntime-genai's builder's graphs:
            # the mean and inverse standard deviation (named, onnxruntime 1.31's profile listed
            # them among the node's outputs; its CPU kernel never computes them) and the residual
            # sum when nothing but the norm reads the Add (the last layer's: the kernel writes
            # output 3 only when it is named, skip_layer_norm.cc).
            fused.outputs[1].name = fused.outputs[2].name = ""
            summed = len(add.outputs[0].uses()) > 1 or add.outputs[0].is_graph_output()
            if not summed:
                fused.outputs[3].name = ""
            for old, new in (
                (norm.outputs[0], fused.outputs[0]),
                *([(add.outputs[0], fused.outputs[3])] if summed else []),
            ):
                new.shape, new.type = old.shape, old.type
                name = old.name
                old.replace_all_uses_with(new, replace_graph_outputs=True)
                old.name = None
                new.name = name
            graph.remove([norm, add], safe=True)
            modified = True
        if modified:
            model.opset_imports.setdefault(MICROSOFT, 1)
        return ir.passes.PassResult(model, modified)
