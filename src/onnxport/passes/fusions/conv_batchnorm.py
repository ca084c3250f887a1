"""Fold an inference BatchNormalization into the Conv that feeds it.

BN(Conv(x, W, b)) = Conv(x, W·s, (b − mean)·s + B) with s = scale / √(var + ε) per output channel
(ONNX BatchNormalization-15 inference formula). The folded weights are ``onnx_ir.LazyTensor``s,
computed only when the model is serialized.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import substitute


def _const(value: ir.Value | None) -> ir.TensorProtocol | None:
    if value is None or not value.is_initializer() or value.is_graph_input():
        return None
    return value.const_value


def _lazy(name: str, like: ir.TensorProtocol, produce: Callable[[], np.ndarray]) -> ir.Value:
    shape = ir.Shape(like.shape)  # type: ignore[arg-type]
    tensor = ir.LazyTensor(lambda: ir.tensor(produce(), dtype=like.dtype), dtype=like.dtype, shape=shape, name=name)
    return ir.Value(name=name, shape=shape, type=ir.TensorType(like.dtype), const_value=tensor)


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

            def factor(scale=scale, var=var, eps=eps) -> np.ndarray:  # type: ignore[no-untyped-def]
                return scale.numpy() / np.sqrt(var.numpy() + eps)

            def new_weight(weight=weight, factor=factor) -> np.ndarray:  # type: ignore[no-untyped-def]
                w = weight.numpy()
                return w * factor().reshape((-1,) + (1,) * (w.ndim - 1)).astype(w.dtype)

            def new_bias(bias=bias, mean=mean, shift=shift, factor=factor) -> np.ndarray:  # type: ignore[no-untyped-def]
                b = bias.numpy() if bias is not None else np.zeros_like(mean.numpy())
                return ((b - mean.numpy()) * factor() + shift.numpy()).astype(mean.numpy().dtype)

            w_input, b_input = conv.inputs[1], conv.inputs[2] if bias is not None else None
            assert w_input is not None and w_input.name is not None  # an initializer: _const(w_input) is not None
            w_name = f"{w_input.name}.bn_folded"
            b_name = f"{(b_input.name if b_input is not None else w_input.name + '.bias')}.bn_folded"
            w_value = _lazy(w_name, weight, new_weight)
            b_value = _lazy(b_name, mean, new_bias)  # type: ignore[arg-type]
            graph.register_initializer(w_value)
            graph.register_initializer(b_value)
            fused = ir.Node("", "Conv", [conv.inputs[0], w_value, b_value], attributes=list(conv.attributes.values()), num_outputs=1)
            substitute(graph, fused, conv, bn.outputs[0])
            graph.remove([bn, conv], safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)
