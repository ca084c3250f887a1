"""``com.microsoft.MoE`` weights quantized: int4/int8 ``QMoE``.

(The SwiGLU interleave :mod:`onnxport.ops.nn.moe` feeds the kernel, ``Reshape(Transpose(Reshape(W)))``
over ``gate_up_proj``, is folded into a weight written so by the standard pipeline's
:mod:`onnxport.passes.weight_layout`.)

:class:`QMoEPass` rewrites a ``MoE`` whose fc1/fc2 weights are float32 initializers to
``com.microsoft.QMoE`` (ContribOperators.md; the biases and the activation attributes, gpt-oss's
``swiglu_limit`` among them, carried over as they are): per expert, each ``[N, K]`` weight (N outputs, K
inputs) is quantized block-wise along K exactly as a MatMulNBits weight
(:mod:`onnxport.passes.ort.blockwise`; ``fc*_experts_weights`` ``[E, N, K * bits / 8]``,
``fc*_scales`` ``[E, N, K / block_size]``, zero points ``[E, N, ceil(K / block_size * bits / 8)]``
when asymmetric, else the kernel's default ``2**(bits-1)``), lazily at save time, one weight at a
time. Both K (the hidden and the intermediate size) must be multiples of the block size (the
kernel's rule), else the MoE stays float. The builder quantizes its Mixtral experts the same way
(``make_moe``, onnxruntime-genai ``builders/base.py``); the layout was checked against the kernel
(``tests/passes/ort/test_moe.py``).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import drop_unused_initializer, substitute
from onnxport.passes.ort import blockwise
from onnxport.passes.ort.kernels import MICROSOFT, has_kernel
from onnxport.passes.ort.matmul_nbits import (
    QuantizeOptions,
    SharedQuantization,
    error_estimate,
    part_shapes,
    register_parts,
)

# MoE inputs: x, router, fc1 weights, fc1 bias, fc2 weights, fc2 bias, fc3 weights, fc3 bias
_MOE_FC1_BIAS, _MOE_FC2_BIAS = 3, 5
# QMoE inputs after the router: fc1 weights, scales, bias; fc2 ...; fc3 ...; then zero points
_FC1, _FC2 = 2, 5
_FC1_ZERO, _FC2_ZERO = 11, 12


class _SharedExperts(SharedQuantization):
    """The QMoE parts of one ``[E, N, K]`` experts weight, quantized expert by expert."""

    def quantize(self, weight: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, float]]:
        o = self.options
        parts: dict[str, list[np.ndarray]] = {}
        errors = []
        for expert in weight:  # [N, K] → MatMulNBits' [K, N] convention
            q = blockwise.quantize(np.ascontiguousarray(expert.T), o.bits, o.block_size, o.symmetric)
            parts.setdefault("packed", []).append(q.packed.reshape(q.packed.shape[0], -1))
            parts.setdefault("scales", []).append(q.scales)
            if q.zero_points is not None:
                parts.setdefault("zero_points", []).append(q.zero_points)
            errors.append(error_estimate(np.ascontiguousarray(expert.T), q, o))
        error = {key: max(e[key] for e in errors) for key in ("rel_l2", "max_abs")}
        return {key: np.stack(arrays) for key, arrays in parts.items()}, error


def _float_experts(value: ir.Value | None, block_size: int) -> ir.Value | None:
    """``value`` when it is a float32 ``[E, N, K]`` initializer with K a multiple of ``block_size``."""
    if value is None or value.const_value is None or value.is_graph_input():
        return None
    tensor = value.const_value
    if tensor.dtype != ir.DataType.FLOAT or len(tensor.shape) != 3 or tensor.shape.numpy()[2] % block_size:
        return None
    return value


class QMoEPass(ir.passes.InPlacePass):
    """Rewrite every float ``com.microsoft.MoE`` with constant weights to ``QMoE`` (module docstring).

    Args:
        options: Bits, block size, symmetric, accuracy level (``lm_head`` does not apply).
        report: Receives each quantized experts weight's error (the worst expert) when written.
    """

    def __init__(self, options: QuantizeOptions, report: dict[str, dict[str, float]] | None = None) -> None:
        super().__init__()
        self.options = options
        self.report: dict[str, dict[str, float]] = {} if report is None else report

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if not has_kernel("QMoE"):
            return ir.passes.PassResult(model, False)
        graph = model.graph
        modified = False
        for node in list(graph):
            if node.op_type != "MoE" or node.domain != MICROSOFT or len(node.inputs) < 5:
                continue
            fc1, fc2 = (_float_experts(node.inputs[i], self.options.block_size) for i in (2, 4))
            fc3 = [v for v in node.inputs[6:] if v is not None]
            if fc1 is None or fc2 is None or fc3:
                continue  # fc3 (unfused SwiGLU) is not emitted by onnxport.ops.nn.moe
            self._rewrite(graph, node, fc1, fc2)
            modified = True
        return ir.passes.PassResult(model, modified)

    def _parts(self, graph: ir.Graph, weight: ir.Value) -> dict[str, ir.Value]:
        o = self.options
        tensor = weight.const_value
        assert tensor is not None and weight.name is not None
        experts, n, k = (int(d) for d in tensor.shape.numpy())
        shared = _SharedExperts(tensor, weight.name, o, self.report)
        return register_parts(graph, shared, part_shapes((experts, n), k // o.block_size, o, flat=True))

    def _rewrite(self, graph: ir.Graph, node: ir.Node, fc1: ir.Value, fc2: ir.Value) -> None:
        o = self.options
        one, two = self._parts(graph, fc1), self._parts(graph, fc2)
        inputs: list[ir.Value | None] = [None] * 13
        inputs[0], inputs[1] = node.inputs[0], node.inputs[1]
        inputs[_FC1], inputs[_FC1 + 1] = one["packed"], one["scales"]
        inputs[_FC2], inputs[_FC2 + 1] = two["packed"], two["scales"]
        biases = [node.inputs[i] if len(node.inputs) > i else None for i in (_MOE_FC1_BIAS, _MOE_FC2_BIAS)]
        inputs[_FC1 + 2], inputs[_FC2 + 2] = biases  # float32, as in MoE
        if not o.symmetric:
            inputs[_FC1_ZERO], inputs[_FC2_ZERO] = one["zero_points"], two["zero_points"]
        while inputs[-1] is None:
            inputs.pop()
        attributes = {name: attr.value for name, attr in node.attributes.items()}
        attributes.update(expert_weight_bits=o.bits, block_size=o.block_size, accuracy_level=o.accuracy_level)
        new = ir.node("QMoE", inputs, attributes, domain=MICROSOFT, name=node.name)
        substitute(graph, new, node, node.outputs[0])
        graph.remove(node, safe=True)
        for weight in (fc1, fc2):
            drop_unused_initializer(graph, weight)
