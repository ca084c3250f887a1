"""The onnxruntime target: contrib-op fusions run after the standard passes (``target="onnxruntime"``).

One file per fusion; each checks the installed onnxruntime has the CPU kernel
(:mod:`onnxport.passes.ort.kernels`) and otherwise leaves the standard ops.
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx_ir as ir
import onnx_ir.passes.common as common

from onnxport.passes.ort.group_query_attention import GroupQueryAttentionPass
from onnxport.passes.ort.local_window import LocalWindowPass
from onnxport.passes.ort.matmul_nbits import MatMulNBitsPass, QuantizeOptions
from onnxport.passes.ort.packed_matmul import PackedMatMulPass
from onnxport.passes.ort.skip_norm import SkipNormalizationPass

__all__ = ["QuantizeOptions", "optimize_for_onnxruntime"]


def optimize_for_onnxruntime(
    model: ir.Model,
    *,
    fuse: bool = True,
    quantize: QuantizeOptions | None = None,
    report: dict[str, dict[str, float]] | None = None,
    windows: Mapping[str, int] | None = None,
) -> ir.Model:
    """Rewrite ``model`` in place for onnxruntime's CPU provider and return it.

    Args:
        model: A model produced by onnxport's standard pipeline.
        fuse: Run the contrib-op fusions (attention, normalization) and pack the MatMuls sharing
            an input (q/k/v, gate/up: :mod:`~onnxport.passes.ort.packed_matmul`).
        quantize: Weight-only quantization of MatMul weights to MatMulNBits (``None``: keep float);
            the MatMuls are packed first (when ``fuse`` did not already), so packed weights are
            quantized whole.
        report: Filled with each quantized weight's error when the weights are written.
        windows: Sliding-window layers, by past-key graph input name → window (positions
            attended, the query's included): their GroupQueryAttention gets ``local_window_size``
            (:mod:`~onnxport.passes.ort.local_window`).
    """
    passes: list[ir.passes.PassBase] = []
    if fuse:
        passes += [GroupQueryAttentionPass(), LocalWindowPass(windows or {}), SkipNormalizationPass()]
    if fuse or quantize is not None:
        # After the fusions (their matchers see the unpacked projections), before MatMulNBits.
        passes.append(PackedMatMulPass())
    if quantize is not None:
        passes.append(MatMulNBitsPass(quantize, report))
    passes += [
        common.RemoveUnusedNodesPass(),
        common.CommonSubexpressionEliminationPass(),
        common.LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0),
        common.RemoveUnusedOpsetsPass(),
    ]
    ir.passes.PassManager(passes)(model)
    return model
