"""Grouped matrix multiplication of mixture-of-experts layers.

transformers 5 computes the experts of a MoE block (Mixtral, Qwen2/3-MoE, OLMoE, DeepSeek-V3, ...)
with ``experts_implementation="grouped_mm"`` (its default): the (token, expert) pairs are sorted by
expert and every expert's rows are multiplied by that expert's weight, through ``aten._grouped_mm``
(bfloat16 weights, or eager CUDA) or the custom op ``transformers::grouped_mm_fallback``
(``transformers/integrations/moe.py``; float32 under torch.export). Both take ``input`` (S, K)
sorted by group, ``weight`` (E, K, N) and ``offs`` (E,), the cumulative end row of each group
(int32), and return (S, N); rows past ``offs[-1]`` are zero in the fallback and unspecified in
``aten._grouped_mm`` (its CPU kernel leaves them uninitialized), zero here.

Encoding: an ONNX ``Loop`` over the E experts whose body slices the expert's rows
``input[offs[e-1]:offs[e]]``, multiplies them by ``weight[e]`` and writes them with ``ScatterND``
into the carried (S, N) result, so the multiply-adds are those of the S rows only (as the CUDA
kernel's), not E times as many (as a dense ``MatMul`` over every expert followed by a selection,
the form torch.onnx's decomposition of the fallback's Python loop cannot produce at all because it
specializes ``offs.tolist()``). onnxruntime's contrib ``com.microsoft.MoE`` fuses a whole block
(router included) and needs its own weight layout; it is not emitted.

The transformers op is registered by its qualified name when transformers is installed, so
importing onnxport does not import transformers (the registry resolves the name when a graph
uses the op).

``onnxport::moe_experts`` is onnxport's own op for the onnxruntime target: a whole experts module
(SwiGLU experts, ``gate_up_proj`` (E, 2I, H) with gate rows first, ``down_proj`` (E, H, I), as
transformers' ``MixtralExperts`` and its kin store them), called instead of transformers'
implementation only while :mod:`onnxport.hf.moe` captures a model for ``target="onnxruntime"``.
It becomes onnxruntime's ``com.microsoft.MoE`` (docs/ContribOperators.md): the kernel takes router
logits, applies softmax, top-k and (``normalize_routing_weights=1``) renormalizes the k weights,
then sums ``w_i * down(silu(gate) * up)`` over the k experts. Since transformers' routers differ
(softmax then top-k, with or without renormalization, grouped top-k, sigmoid scores...), the
graph feeds the kernel the router's *result*: ``log(w)`` at the chosen experts and ``-inf``
elsewhere, whose softmax is ``w / sum(w)`` on those k experts, and multiplies the output by
``sum(w)`` (the experts' output is linear in the weights): exactly ``sum_i w_i expert_i(x)``.
A router that is the kernel's own computation, the softmax of the top-k logits (gpt-oss), gives
the kernel its logits instead (:func:`_softmax_of_top_k`; the builder feeds gpt-oss's logits too).
The CPU kernel reads the SwiGLU weights interleaved (``swiglu_fusion=1``: row ``2j`` gate ``j``,
``2j + 1`` up ``j``), so ``gate_up_proj`` goes through ``Reshape → Transpose → Reshape``, which
:mod:`onnxport.passes.weight_layout` folds into a weight written so (no run copies it).

``onnxport::clamped_swiglu_experts`` is the same for gpt-oss's experts (``GptOssExperts``): biases
on both projections, ``gate_up_proj`` (E, H, 2I) and ``down_proj`` (E, I, H) stored input-major,
gate and up already interleaved, and the clamped SwiGLU ``(clamp(up, -l, l) + 1) * g *
sigmoid(alpha * g)`` with ``g = min(gate, l)``. The kernel computes exactly that with
``activation_alpha = alpha``, ``activation_beta = 1`` and ``swiglu_limit = l`` (checked against
the formula in ``tests/passes/ort/test_moe.py``); the weights are fed transposed to its
``[E, out, in]`` layout, which :mod:`onnxport.passes.weight_layout` folds into the written tensors.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import _loop, rank, static_dim
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.registry import translates

aten = torch.ops.aten
TRANSFORMERS_GROUPED_MM = "transformers::grouped_mm_fallback.default"


@torch.library.custom_op("onnxport::moe_experts", mutates_args=())
def moe_experts(
    hidden: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    gate_up_proj: torch.Tensor,
    down_proj: torch.Tensor,
) -> torch.Tensor:
    """SwiGLU experts of a mixture-of-experts layer (module docstring), in eager PyTorch.

    Args:
        hidden: (T, H) token rows.
        top_k_index: (T, k) int64 chosen experts per token.
        top_k_weights: (T, k) their weights (the router's output).
        gate_up_proj: (E, 2I, H): rows ``[:I]`` the gate projection, ``[I:]`` the up projection.
        down_proj: (E, H, I).

    Returns:
        (T, H): ``sum_j top_k_weights[t, j] * down_e(silu(gate_e(x)) * up_e(x))``, ``e = top_k_index[t, j]``
        (transformers ``MixtralExperts.forward``).
    """
    def expert(e: int, rows: torch.Tensor) -> torch.Tensor:
        gate, up = torch.nn.functional.linear(rows, gate_up_proj[e]).chunk(2, dim=-1)
        return torch.nn.functional.linear(torch.nn.functional.silu(gate) * up, down_proj[e])

    return _weighted_sum(hidden, top_k_index, top_k_weights, gate_up_proj.shape[0], expert)


def _weighted_sum(
    hidden: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor, experts: int,
    expert: Callable[[int, torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """``out[t] = sum_j top_k_weights[t, j] * expert(top_k_index[t, j], hidden[t])``, each expert
    run once on the rows routed to it (the eager side of both experts ops)."""
    out = torch.zeros_like(hidden)
    for e in range(experts):
        token, slot = torch.where(top_k_index == e)
        if token.numel():
            y = expert(e, hidden[token])
            out.index_add_(0, token, (y * top_k_weights[token, slot, None]).to(out.dtype))
    return out


@torch.library.custom_op("onnxport::clamped_swiglu_experts", mutates_args=())
def clamped_swiglu_experts(
    hidden: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    gate_up_proj: torch.Tensor,
    gate_up_bias: torch.Tensor,
    down_proj: torch.Tensor,
    down_bias: torch.Tensor,
    alpha: float,
    limit: float,
) -> torch.Tensor:
    """gpt-oss's experts (module docstring), in eager PyTorch.

    Args:
        hidden: (T, H) token rows.
        top_k_index: (T, k) int64 chosen experts per token.
        top_k_weights: (T, k) their weights.
        gate_up_proj: (E, H, 2I), columns ``2j`` gate ``j`` and ``2j + 1`` up ``j``.
        gate_up_bias: (E, 2I), interleaved likewise.
        down_proj: (E, I, H).
        down_bias: (E, H).
        alpha: The sigmoid's slope (gpt-oss: 1.702).
        limit: The clamp (gpt-oss: 7.0).

    Returns:
        (T, H): ``sum_j w[t, j] * ((clamp(up, -limit, limit) + 1) * g * sigmoid(alpha * g)) @
        down_e + down_bias_e``, ``g = min(gate, limit)`` (transformers ``GptOssExperts.forward``).
    """
    def expert(e: int, rows: torch.Tensor) -> torch.Tensor:
        gate_up = rows @ gate_up_proj[e] + gate_up_bias[e]
        gate, up = gate_up[..., ::2].clamp(max=limit), gate_up[..., 1::2].clamp(-limit, limit)
        return ((up + 1) * gate * torch.sigmoid(gate * alpha)) @ down_proj[e] + down_bias[e]

    return _weighted_sum(hidden, top_k_index, top_k_weights, gate_up_proj.shape[0], expert)


def _like_hidden(hidden: torch.Tensor, *_: object) -> torch.Tensor:
    """The fake (shape) implementation of both experts ops: the token rows' shape and dtype."""
    return torch.empty_like(hidden)


moe_experts.register_fake(_like_hidden)
clamped_swiglu_experts.register_fake(_like_hidden)


def grouped_mm_rows(ctx: Ctx, x: ir.Value, weight: ir.Value, offs: ir.Value, bias: ir.Value | None = None) -> ir.Value:
    """``out[r] = x[r] @ weight[g(r)] (+ bias[g(r)])`` for the rows of group ``g`` (``offs``).

    Args:
        x: (S, K) rows sorted by group.
        weight: (E, K, N).
        offs: (E,) int32/int64, cumulative end row of each group (non-decreasing).
        bias: Optional (E, N).

    Returns:
        (S, N) in ``x``'s dtype; rows at or past ``offs[-1]`` are zero.
    """
    i64 = ir.DataType.INT64
    ends = ctx.op.Cast(offs, to=i64)
    starts = ctx.op.Concat(ctx.const([0], i64), ctx.op.Slice(ends, ctx.const([0]), ctx.const([-1])), axis=0)
    n = static_dim(weight, 2)
    n_value = ctx.const([n], i64) if n is not None else ctx.op.Shape(weight, start=2, end=3)
    out_shape = ctx.op.Concat(ctx.op.Shape(x, start=0, end=1), n_value, axis=0)
    zero = ir.tensor([0], dtype=x.dtype) if x.dtype is not None else ir.tensor([0.0])
    init = ctx.op.ConstantOfShape(out_shape, value=zero)
    init.dtype = x.dtype
    experts = ctx.op.Shape(weight, start=0, end=1)
    trips = ctx.op.Squeeze(experts, ctx.const([0]))

    def step(b: Ctx, it: ir.Value, states: list[ir.Value]) -> list[ir.Value]:
        index = b.op.Unsqueeze(it, b.const([0]))
        start, end = b.op.Gather(starts, index), b.op.Gather(ends, index)
        rows = b.op.Slice(x, start, end, b.const([0]))
        w = b.op.Gather(weight, it, axis=0)  # (K, N)
        y = b.op.MatMul(rows, w)
        if bias is not None:
            y = b.op.Add(y, b.op.Gather(bias, it, axis=0))
        positions = b.op.Range(b.op.Squeeze(start, b.const([0])), b.op.Squeeze(end, b.const([0])), b.const(1))
        return [b.op.ScatterND(states[0], b.op.Unsqueeze(positions, b.const([1])), y)]

    return _loop(ctx, trips, [init], step)[0]


@translates(aten._grouped_mm.default)
def aten_grouped_mm(
    ctx: Ctx, self: ir.Value, mat2: ir.Value, offs: ir.Value | None = None, bias: ir.Value | None = None,
    out_dtype: torch.dtype | None = None,
) -> ir.Value:
    """_grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None, Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor

    Forms (ATen's ``_grouped_mm`` documentation, ``torch/nn/functional.py: grouped_mm``): 3-D × 3-D
    without ``offs`` is a batched ``MatMul``; 2-D (S, K) × 3-D (E, K, N) with ``offs`` is the MoE form
    (:func:`grouped_mm_rows`). The forms grouping the K dim (2-D × 2-D) or ``mat2``'s rows
    (3-D × 2-D) are refused: no model exported for inference uses them (they are the backward's).
    """
    ranks = (rank(self), rank(mat2))
    if ranks == (3, 3) and offs is None:
        y = ctx.op.MatMul(self, mat2)
        if bias is not None:
            y = ctx.op.Add(y, ctx.op.Unsqueeze(bias, ctx.const([1])))
    elif ranks == (2, 3) and offs is not None:
        y = grouped_mm_rows(ctx, self, mat2, offs, bias)
    else:
        ctx.unsupported(
            f"aten._grouped_mm of ranks {ranks} with{'' if offs is not None else 'out'} offs: only the "
            "batched (3-D × 3-D) and the mixture-of-experts (2-D × 3-D with offs) forms are translated"
        )
    if out_dtype is not None and ir_dtype(out_dtype) != self.dtype:
        y = ctx.op.Cast(y, to=ir_dtype(out_dtype))
    return y


def transformers_grouped_mm_fallback(ctx: Ctx, input: ir.Value, weight: ir.Value, offs: ir.Value) -> ir.Value:
    """transformers::grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor

    transformers' Python loop ``for i, end in enumerate(offs.tolist()): out[start:end] =
    input[start:end] @ weight[i]`` (``transformers/integrations/moe.py``): :func:`grouped_mm_rows`.
    """
    return grouped_mm_rows(ctx, input, weight, offs)


if importlib.util.find_spec("transformers") is not None:  # the op exists only with transformers
    transformers_grouped_mm_fallback = translates(TRANSFORMERS_GROUPED_MM)(transformers_grouped_mm_fallback)


@translates(torch.ops.onnxport.moe_experts.default)
def onnxport_moe_experts(
    ctx: Ctx, hidden: ir.Value, top_k_index: ir.Value, top_k_weights: ir.Value, gate_up_proj: ir.Value,
    down_proj: ir.Value,
) -> ir.Value:
    """onnxport::moe_experts(Tensor hidden, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up_proj, Tensor down_proj) -> Tensor

    ``com.microsoft.MoE`` fed the router's result (module docstring): float32, static expert count,
    sizes and k.
    """
    experts, rows, size = (static_dim(gate_up_proj, a) for a in range(3))
    k = _static_k(ctx, hidden, top_k_index, experts, rows, size)
    assert experts is not None and rows is not None and size is not None
    i64 = ir.DataType.INT64
    pairs = ctx.op.Reshape(gate_up_proj, ctx.const([experts, 2, rows // 2, size], i64))
    interleaved = ctx.op.Reshape(
        ctx.op.Transpose(pairs, perm=[0, 2, 1, 3]), ctx.const([experts, rows, size], i64)
    )
    y = ctx.op.MoE(
        hidden, _router(ctx, hidden, top_k_index, top_k_weights, experts), interleaved, None, down_proj,
        _domain="com.microsoft", k=k, activation_type="swiglu", swiglu_fusion=1, activation_alpha=1.0,
        activation_beta=0.0, normalize_routing_weights=1,
    )  # fmt: skip
    return _weighted(ctx, y, hidden, top_k_weights)


@translates(torch.ops.onnxport.clamped_swiglu_experts.default)
def onnxport_clamped_swiglu_experts(
    ctx: Ctx, hidden: ir.Value, top_k_index: ir.Value, top_k_weights: ir.Value, gate_up_proj: ir.Value,
    gate_up_bias: ir.Value, down_proj: ir.Value, down_bias: ir.Value, alpha: float, limit: float,
) -> ir.Value:
    """onnxport::clamped_swiglu_experts(Tensor hidden, Tensor top_k_index, Tensor top_k_weights, Tensor gate_up_proj, Tensor gate_up_bias, Tensor down_proj, Tensor down_bias, float alpha, float limit) -> Tensor

    ``com.microsoft.MoE`` with the clamped SwiGLU and both biases (module docstring), the weights
    transposed to the kernel's ``[E, out, in]``.
    """
    experts, size, rows = (static_dim(gate_up_proj, a) for a in range(3))
    k = _static_k(ctx, hidden, top_k_index, experts, rows, size)
    assert experts is not None
    logits = _softmax_of_top_k(top_k_index, top_k_weights)
    y = ctx.op.MoE(
        hidden, logits if logits is not None else _router(ctx, hidden, top_k_index, top_k_weights, experts),
        ctx.op.Transpose(gate_up_proj, perm=[0, 2, 1]), gate_up_bias,
        ctx.op.Transpose(down_proj, perm=[0, 2, 1]), down_bias,
        _domain="com.microsoft", k=k, activation_type="swiglu", swiglu_fusion=1,
        activation_alpha=float(alpha), activation_beta=1.0, swiglu_limit=float(limit),
        normalize_routing_weights=1,
    )  # fmt: skip
    return _weighted(ctx, y, hidden, top_k_weights if logits is None else None)


def _static_k(ctx: Ctx, hidden: ir.Value, top_k_index: ir.Value, *dims: int | None) -> int:
    """The experts per token; refuses dynamic sizes and non-float32 rows (the kernel's float path)."""
    k = static_dim(top_k_index, 1)
    if None in (*dims, k) or hidden.dtype != ir.DataType.FLOAT:
        ctx.unsupported("the fused experts need float32 rows and static expert count, sizes and k")
    assert k is not None
    return k


def _softmax_of_top_k(top_k_index: ir.Value, top_k_weights: ir.Value) -> ir.Value | None:
    """The router logits ``l`` when ``w = softmax(topk(l).values)`` over the last axis and the
    indices are that TopK's (gpt-oss's ``GptOssTopKRouter``): the kernel's softmax over all experts,
    top-k and renormalization give exactly those weights, ``exp(l_i) / sum_topk exp(l_j)``, so it is
    fed ``l`` itself and the output needs no ``sum(w)`` factor (it is 1). Else ``None``."""
    softmax = top_k_weights.producer()
    if softmax is None or softmax.op_type != "Softmax" or softmax.domain != "":
        return None
    axis = softmax.attributes.get("axis")
    topk = softmax.inputs[0].producer() if softmax.inputs[0] is not None else None
    if axis is None or axis.as_int() not in (-1, 1) or topk is None or topk.op_type != "TopK" or topk.domain != "":
        return None
    top_axis, largest = topk.attributes.get("axis"), topk.attributes.get("largest")
    if (top_axis is not None and top_axis.as_int() not in (-1, 1)) or (largest is not None and largest.as_int() != 1):
        return None
    if topk.outputs[0] is not softmax.inputs[0] or topk.outputs[1] is not top_k_index:
        return None
    logits = topk.inputs[0]
    return logits if logits is not None and logits.shape is not None and logits.shape.rank() == 2 else None


def _router(ctx: Ctx, hidden: ir.Value, top_k_index: ir.Value, top_k_weights: ir.Value, experts: int) -> ir.Value:
    """The kernel's router logits: ``log(w)`` at the chosen experts, ``-inf`` elsewhere."""
    f32, i64 = ir.DataType.FLOAT, ir.DataType.INT64
    tokens = ctx.op.Shape(hidden, start=0, end=1)
    blank = ctx.op.ConstantOfShape(
        ctx.op.Concat(tokens, ctx.const([experts], i64), axis=0), value=ir.tensor([-np.inf], dtype=f32)
    )
    blank.dtype = f32
    return ctx.op.ScatterElements(blank, top_k_index, ctx.op.Log(top_k_weights), axis=1)


def _weighted(ctx: Ctx, y: ir.Value, hidden: ir.Value, top_k_weights: ir.Value | None) -> ir.Value:
    """The kernel's output times ``sum(w)`` (it renormalized the weights to sum to 1); as it is
    when the kernel read the router's logits (``top_k_weights`` ``None``: the sum is 1)."""
    y.dtype, y.shape = ir.DataType.FLOAT, hidden.shape  # float32: checked by _static_k
    if top_k_weights is None:
        return y
    return ctx.op.Mul(y, ctx.op.ReduceSum(top_k_weights, ctx.const([1], ir.DataType.INT64), keepdims=1))
