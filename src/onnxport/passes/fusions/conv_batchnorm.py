"""Fold an inference BatchNormalization into the Conv that feeds it.

BN(Conv(x, W, b)) = Conv(x, W·s, (b − mean)·s + B) with s = scale / √(var + ε) per output channel
(ONNX BatchNormalization-15 inference formula). The folded weights are derived from the Conv and
BatchNorm weights (:func:`onnxport.weights.derive_many`) and computed only when written or run, so
weights applied later (``apply_weights``) flow through the fold; no value is read here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from onnxport import weights
from onnxport.passes.fusions import substitute


def _const(value: ir.Value | None) -> ir.TensorProtocol | None:
    if value is None or not value.is_initializer() or value.is_graph_input():
        return None
    return value.const_value


def _derived(name: str, like: ir.TensorProtocol, bases: list[ir.TensorProtocol], fn: Callable[..., np.ndarray]) -> ir.Value:
    shape = [int(d) for d in like.shape.numpy()]
    tensor = weights.derive_many(bases, fn, dtype=like.dtype, shape=shape, name=name)
    return ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(like.dtype), const_value=tensor)


def _fold_weight(w: np.ndarray, scale: np.ndarray, var: np.ndarray, eps: float) -> np.ndarray:
    """W·s per output channel, s = scale / √(var + ε) (ONNX BatchNormalization-15)."""
    factor = scale / np.sqrt(var + eps)
    return (w * factor.reshape((-1,) + (1,) * (w.ndim - 1)).astype(w.dtype)).astype(w.dtype)


def _fold_bias(b: np.ndarray | None, scale: np.ndarray, shift: np.ndarray, mean: np.ndarray, var: np.ndarray, eps: float) -> np.ndarray:
    """(b − mean)·s + B, s = scale / √(var + ε)."""
    factor = scale / np.sqrt(var + eps)
    b = b if b is not None else np.zeros_like(mean)
    return ((b - mean) * factor + shift).astype(mean.dtype)


class ConvBatchNormPass(ir.passes.InPlacePass):
    """Conv → BatchNormalization (one user, constant parameters) becomes one Conv."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for bn in list(graph):
            if bn.op_type != "BatchNormalization" or bn.domain != "" or len(bn.outputs) != 1:
                continue
            conv = bn.inputs[0].producer() if bn.inputs[0] is not None else None
            if conv is None or conv.op_type != "Conv" or conv.domain != "":
                continue
            if len(conv.outputs[0].uses()) != 1 or conv.outputs[0].is_graph_output():
                continue
            params = [_const(v) for v in bn.inputs[1:5]]
            weight = _const(conv.inputs[1])
            bias = _const(conv.inputs[2]) if len(conv.inputs) > 2 else None
            if weight is None or any(p is None for p in params) or (len(conv.inputs) > 2 and bias is None):
                continue
            eps_attr = bn.attributes.get("epsilon")
            eps = 1e-5 if eps_attr is None else float(eps_attr.value)
            scale, shift, mean, var = params

            w_input, b_input = conv.inputs[1], conv.inputs[2] if bias is not None else None
            assert w_input is not None and w_input.name is not None  # an initializer: _const(w_input) is not None
            w_name = f"{w_input.name}.bn_folded"
            b_name = f"{(b_input.name if b_input is not None else w_input.name + '.bias')}.bn_folded"
            stats = [scale, shift, mean, var]
            w_value = _derived(w_name, weight, [weight, scale, var],  # type: ignore[list-item]
                               lambda w, s, v, eps=eps: _fold_weight(w, s, v, eps))
            if bias is not None:
                b_value = _derived(b_name, mean, [bias, *stats],  # type: ignore[arg-type, list-item]
                                   lambda b, s, sh, m, v, eps=eps: _fold_bias(b, s, sh, m, v, eps))
            else:
                b_value = _derived(b_name, mean, stats,  # type: ignore[arg-type]
                                   lambda s, sh, m, v, eps=eps: _fold_bias(None, s, sh, m, v, eps))
            graph.register_initializer(w_value)
            graph.register_initializer(b_value)
            fused = ir.Node("", "Conv", [conv.inputs[0], w_value, b_value], attributes=list(conv.attributes.values()), num_outputs=1)
            substitute(graph, fused, conv, bn.outputs[0])
            graph.remove([bn, conv], safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)
