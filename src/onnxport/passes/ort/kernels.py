"""Which ``com.microsoft`` contrib ops the installed onnxruntime's CPU provider has.

A target fusion applies only when its op is registered (``get_all_opkernel_def``, the registry
``passes/half_compute.py`` also reads), so an older or trimmed onnxruntime keeps the standard ops.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx

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


@functools.cache
def gqa_zeroes_hidden_rows() -> bool:
    """Whether the installed onnxruntime's CPU ``GroupQueryAttention`` outputs 0 for a query row
    whose ``attention_bias`` hides every key (the float32 minimum everywhere), as ONNX
    ``Attention`` does. onnxruntime 1.31 does; the GroupQueryAttention fusion zeroes such rows
    itself where this is False. Probed once, on a one-node graph: a 2-token prompt whose first
    row is hidden and a one-token step with a past, every key hidden."""
    if not has_kernel("GroupQueryAttention"):
        return False
    from onnxruntime import InferenceSession  # heavy: only when a target pass runs

    heads, size = 1, 16
    f32, i32 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT32
    names = ["q", "k", "v", "past_k", "past_v", "seqlens_k", "total", "", "", "", "bias"]
    shapes: dict[str, tuple[int, list[str | int]]] = {
        "q": (f32, ["b", "s", size]), "k": (f32, ["b", "s", size]), "v": (f32, ["b", "s", size]),
        "past_k": (f32, ["b", 1, "p", size]), "past_v": (f32, ["b", 1, "p", size]),
        "seqlens_k": (i32, ["b"]), "total": (i32, []), "bias": (f32, ["b", 1, "s", "t"]),
    }  # fmt: skip
    node = onnx.helper.make_node(
        "GroupQueryAttention", names, ["out", "present_k", "present_v"], domain=MICROSOFT,
        num_heads=heads, kv_num_heads=heads,
    )  # fmt: skip
    graph = onnx.helper.make_graph(
        [node], "probe", [onnx.helper.make_tensor_value_info(n, *shapes[n]) for n in names if n],
        [onnx.helper.make_tensor_value_info("out", f32, None)],
    )  # fmt: skip
    model = onnx.helper.make_model(
        graph, ir_version=10,
        opset_imports=[onnx.helper.make_opsetid("", 17), onnx.helper.make_opsetid(MICROSOFT, 1)],
    )  # fmt: skip
    low = np.finfo(np.float32).min
    rng = np.random.default_rng(0)
    try:
        session = InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        for past, seq, hidden_row in ((0, 2, 0), (2, 1, 0)):
            total = past + seq
            bias = np.zeros((1, 1, seq, total), np.float32)
            bias[0, 0, hidden_row] = low
            feeds = {
                n: rng.standard_normal((1, seq, size)).astype(np.float32) for n in ("q", "k", "v")
            }
            feeds.update(
                past_k=rng.standard_normal((1, 1, past, size)).astype(np.float32),
                past_v=rng.standard_normal((1, 1, past, size)).astype(np.float32),
                seqlens_k=np.array([total - 1], np.int32),
                total=np.array(total, np.int32),
                bias=bias,
            )
            if np.any(session.run(["out"], feeds)[0][0, hidden_row] != 0):
                return False
    except Exception:  # any failure of the probe: the fusion keeps zeroing the rows itself
        return False
    return True
