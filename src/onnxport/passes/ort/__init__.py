"""The onnxruntime target: contrib-op fusions run after the standard passes (``target="onnxruntime"``).

One file per fusion; each checks the installed onnxruntime has the CPU kernel
(:mod:`onnxport.passes.ort.kernels`) and otherwise leaves the standard ops.
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx_ir as ir
import onnx_ir.passes.common as common

from onnxport.errors import OnnxportError
from onnxport.passes.ort.causal_conv import CausalConvPass
from onnxport.passes.ort.gelu import GeluPass
from onnxport.passes.ort.group_query_attention import GroupQueryAttentionPass
from onnxport.passes.ort.linear_attention import LinearAttentionPass
from onnxport.passes.ort.local_window import LocalWindowPass
from onnxport.passes.ort.matmul_nbits import MatMulNBitsPass, QuantizeOptions
from onnxport.passes.ort.moe import QMoEPass
from onnxport.passes.ort.packed_matmul import PackedMatMulPass
from onnxport.passes.ort.packed_qkv import PackedQKVPass
from onnxport.passes.ort.quantized_embedding import QuantizedEmbeddingPass
from onnxport.passes.ort.skip_norm import SkipNormalizationPass
from onnxport.passes.ort.unpacked_gate_up import UnpackedGateUpPass

__all__ = ["QuantizeOptions", "optimize_for_onnxruntime"]


def optimize_for_onnxruntime(
    model: ir.Model,
    *,
    fuse: bool = True,
    quantize: QuantizeOptions | None = None,
    report: dict[str, dict[str, float]] | None = None,
    windows: Mapping[str, int] | None = None,
    rotary_positions: int | None = None,
    shared_kv_buffer: bool = False,
    rotary_embedding: int | None = None,
) -> ir.Model:
    """Rewrite ``model`` in place for onnxruntime's CPU provider and return it.

    Args:
        model: A model produced by onnxport's standard pipeline.
        fuse: Run the contrib-op fusions (attention, linear attention, causal convolution, normalization, bias + GELU) and pack the MatMuls
            sharing an input (q/k/v: :mod:`~onnxport.passes.ort.packed_matmul`).
        quantize: Weight-only quantization of MatMul weights to MatMulNBits and of MoE experts to
            QMoE (``None``: keep float); the MatMuls are packed first (when ``fuse`` did not
            already), so packed weights are quantized whole.
        report: Filled with each quantized weight's error when the weights are written.
        windows: Sliding-window layers, by past-key graph input name → window (positions
            attended, the query's included): their GroupQueryAttention gets ``local_window_size``
            (:mod:`~onnxport.passes.ort.local_window`).
        rotary_positions: ``max_position_embeddings``: fold the rotary embedding into
            GroupQueryAttention (positions from the lengths, not ``position_ids``; see
            :mod:`onnxport.passes.ort.group_query_attention`). ``None`` keeps it in the graph.
        shared_kv_buffer: Make the in-place KV cache graph onnxruntime-genai runs with
            ``past_present_share_buffer: true``.
        rotary_embedding: ``max_position_embeddings``: where the rotary is not folded into
            GroupQueryAttention, replace it by ``com.microsoft.RotaryEmbedding`` nodes (positions
            from ``position_ids``); ``None`` keeps the graph's rotary.

    Raises:
        InputError: ``shared_kv_buffer`` and an attention that cannot be fused.
    """
    passes: list[ir.passes.PassBase] = []
    if fuse:
        passes += [
            GroupQueryAttentionPass(rotary_positions, shared_kv_buffer, rotary_embedding),
            LocalWindowPass(windows or {}),
            LinearAttentionPass(),
            CausalConvPass(),
            SkipNormalizationPass(),
            GeluPass(),
        ]
    if fuse or quantize is not None:
        # After the fusions (their matchers see the unpacked projections), before MatMulNBits;
        # a packed gate|up (Phi-3) split first, so it is not packed with other readers of its input
        passes += [UnpackedGateUpPass(), PackedMatMulPass()]
    if fuse:
        # the shared-buffer graph's q|k|v straight into the attention; the unpacking nodes the
        # attention fusion bypassed are removed first, so the Split's outputs have one use each
        passes += [common.RemoveUnusedNodesPass(), PackedQKVPass()]
    if quantize is not None:
        passes += [
            MatMulNBitsPass(quantize, report),
            QuantizedEmbeddingPass(quantize, report),
            QMoEPass(quantize, report),
        ]
    passes += [
        common.RemoveUnusedNodesPass(),
        common.CommonSubexpressionEliminationPass(),
        common.LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0),
        common.RemoveUnusedOpsetsPass(),
    ]
    try:
        ir.passes.PassManager(passes)(model)
    except ir.passes.PassError as e:  # onnx_ir wraps a pass's exception (twice); keep onnxport's
        cause = e.__cause__
        while isinstance(cause, ir.passes.PassError):
            cause = cause.__cause__
        if isinstance(cause, OnnxportError):
            raise cause from None
        raise
    return model
