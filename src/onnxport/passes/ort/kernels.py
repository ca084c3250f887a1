"""Which ``com.microsoft`` contrib ops the installed onnxruntime's CPU provider has, and how
they behave where that matters to a fusion.

A target fusion applies only when its op is registered (``get_all_opkernel_def``, the registry
``passes/half_compute.py`` also reads), so an older or trimmed onnxruntime keeps the standard ops.
A behaviour a fusion relies on is probed once on a one-node graph (:func:`gqa_zeroes_hidden_rows`).
"""

from __future__ import annotations

import functools

import numpy as np
import onnx_ir as ir

from onnxport import runtime
from onnxport.passes.fusions import NodeRewritePass

MICROSOFT = "com.microsoft"


@functools.cache
def cpu_contrib_ops() -> frozenset[str]:
    """Names of the ``com.microsoft`` ops with a CPU kernel (empty without onnxruntime)."""
    try:  # heavy optional dependency, imported only when a target pass runs
        from onnxruntime.capi import _pybind_state  # heavy: kernel registry, loaded on first use
    except ImportError:
        return frozenset()
    return frozenset(
        k.op_name
        for k in _pybind_state.get_all_opkernel_def()
        if k.domain == MICROSOFT and k.provider == "CPUExecutionProvider"
    )


def has_kernel(op_type: str) -> bool:
    """Whether ``com.microsoft.<op_type>`` runs on onnxruntime's CPU provider here."""
    return op_type in cpu_contrib_ops()


class ContribRewritePass(NodeRewritePass):
    """A :class:`~onnxport.passes.fusions.NodeRewritePass` whose rewrites emit
    ``com.microsoft.<kernel>``: nothing is offered when the installed onnxruntime has no CPU kernel
    for it, and the domain is imported once a rewrite applied."""

    kernel: str

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if not has_kernel(self.kernel):
            return ir.passes.PassResult(model, False)
        result = super().call(model)
        if result.modified:
            model.opset_imports.setdefault(MICROSOFT, 1)
        return result


@functools.cache
def gqa_zeroes_hidden_rows() -> bool:
    """Whether the installed onnxruntime's CPU ``GroupQueryAttention`` outputs 0 for a query row
    whose ``attention_bias`` hides every key (the float32 minimum everywhere), as ONNX
    ``Attention`` does. onnxruntime 1.31 does; the GroupQueryAttention fusion zeroes such rows
    itself where this is False. Probed once, on a one-node graph run through
    :func:`onnxport.runtime.create_session`: a 2-token prompt whose first row is hidden and a
    one-token step with a past, every key hidden."""
    if not has_kernel("GroupQueryAttention"):
        return False
    size = 16

    def tensor(name: str, dtype: ir.DataType, *dims: int | str) -> ir.Value:
        return ir.Value(name=name, type=ir.TensorType(dtype), shape=ir.Shape(dims))

    f32, i32 = ir.DataType.FLOAT, ir.DataType.INT32
    inputs = [
        *(tensor(n, f32, "b", "s", size) for n in ("q", "k", "v")),
        *(tensor(n, f32, "b", 1, "p", size) for n in ("past_k", "past_v")),
        tensor("seqlens_k", i32, "b"),
        tensor("total", i32),
        tensor("bias", f32, "b", 1, "s", "t"),
    ]
    node = ir.node(
        "GroupQueryAttention", [*inputs[:7], None, None, None, inputs[7]],
        {"num_heads": 1, "kv_num_heads": 1}, domain=MICROSOFT, num_outputs=3,
    )  # fmt: skip
    node.outputs[0].name = "out"
    graph = ir.Graph(inputs, [node.outputs[0]], nodes=[node], opset_imports={"": 17, MICROSOFT: 1})
    rng = np.random.default_rng(0)
    try:
        session = runtime.create_session(ir.Model(graph, ir_version=10))
        for past, seq in ((0, 2), (2, 1)):  # row 0 hidden: a prompt, then a step with a past
            total = past + seq
            bias = np.zeros((1, 1, seq, total), np.float32)
            bias[0, 0, 0] = np.finfo(np.float32).min
            feeds = {n: rng.standard_normal((1, seq, size)).astype(np.float32) for n in "qkv"}
            feeds.update(
                past_k=rng.standard_normal((1, 1, past, size)).astype(np.float32),
                past_v=rng.standard_normal((1, 1, past, size)).astype(np.float32),
                seqlens_k=np.array([total - 1], np.int32),
                total=np.array(total, np.int32),
                bias=bias,
            )
            if np.any(session.run(["out"], feeds)[0][0, 0] != 0):
                return False
    except Exception:  # any failure of the probe: the fusion keeps zeroing the rows itself
        return False
    return True
