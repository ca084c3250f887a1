"""scaled_dot_product_attention.

The explicit encoding follows the reference implementation in the PyTorch docs of
``torch.nn.functional.scaled_dot_product_attention``: softmax(Q·Kᵀ·scale + mask)·V, with boolean
masks meaning "attend" and ``is_causal`` a top-left-aligned lower-triangular mask. As torch's math
backend (``_safe_softmax``), rows where a boolean mask hides every key give 0, not NaN.
"""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

from onnxport.ops._common import shape_of, static_dim
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


_HALF = (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)


def _in_float(ctx: Ctx, fn: object, query: ir.Value, key: ir.Value, value: ir.Value, attn_mask: ir.Value | None,
              *args: object, **kwargs: object) -> ir.Value:
    """Half-precision attention computed in float and cast back: torch's CPU math backend
    accumulates in float, and onnxruntime has no bfloat16 MatMul/Softmax kernels."""
    f32 = ir.DataType.FLOAT
    q, k, v = (ctx.op.Cast(x, to=f32) for x in (query, key, value))
    for cast, orig in ((q, query), (k, key), (v, value)):
        cast.shape = orig.shape
    mask = attn_mask if attn_mask is None or attn_mask.dtype == ir.DataType.BOOL else ctx.op.Cast(attn_mask, to=f32)
    out = fn(ctx, q, k, v, mask, *args, **kwargs)  # type: ignore[operator]
    return ctx.op.Cast(out, to=query.dtype)


def _repeat_heads(ctx: Ctx, x: ir.Value, n_rep: int) -> ir.Value:
    """(B, Hk, S, E) → (B, Hk·n_rep, S, E), each head repeated n_rep times (repeat_interleave)."""
    if n_rep == 1:
        return x
    hk, e = static_dim(x, 1), static_dim(x, -1)
    if hk is None or e is None:
        ctx.unsupported("grouped-query attention with a dynamic number of heads or head size")
    expanded = ctx.op.Expand(ctx.op.Unsqueeze(x, ctx.const([2])), ctx.const([1, 1, n_rep, 1, 1]))
    return ctx.op.Reshape(expanded, ctx.const([0, hk * n_rep, -1, e]))


@translates(aten.scaled_dot_product_attention.default)
def aten_scaled_dot_product_attention(
    ctx: Ctx, query: ir.Value, key: ir.Value, value: ir.Value, attn_mask: ir.Value | None = None,
    dropout_p: float = 0.0, is_causal: bool = False, *, scale: float | None = None, enable_gqa: bool = False,
) -> ir.Value:
    """scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor"""
    if dropout_p != 0.0:
        ctx.unsupported("attention dropout (dropout_p > 0) only exists in training; call model.eval()")
    if query.dtype in _HALF:
        return _in_float(ctx, aten_scaled_dot_product_attention, query, key, value, attn_mask, dropout_p, is_causal,
                         scale=scale, enable_gqa=enable_gqa)
    q_shape, k_shape = shape_of(query), shape_of(key)
    if enable_gqa and isinstance(q_shape[-3], int) and isinstance(k_shape[-3], int):
        key = _repeat_heads(ctx, key, q_shape[-3] // k_shape[-3])
        value = _repeat_heads(ctx, value, q_shape[-3] // k_shape[-3])
    head_dim = q_shape[-1]
    if isinstance(head_dim, int):
        scale_value: ir.Value = ctx.const(scale if scale is not None else 1 / math.sqrt(head_dim), query.dtype)
    else:
        e = ctx.op.Cast(ctx.op.Shape(query, start=-1), to=query.dtype)
        scale_value = ctx.const(scale, query.dtype) if scale is not None else ctx.op.Reciprocal(ctx.op.Sqrt(e))
    perm = list(range(len(k_shape)))  # key's rank: query may have fewer (broadcast) dims
    perm[-1], perm[-2] = perm[-2], perm[-1]
    scores = ctx.op.MatMul(ctx.op.Mul(query, scale_value), ctx.op.Transpose(key, perm=perm))
    keep: ir.Value | None = None  # boolean "attend" mask, for zeroing fully masked rows
    if is_causal:
        l_s = ctx.op.Concat(ctx.op.Shape(query, start=-2, end=-1), ctx.op.Shape(key, start=-2, end=-1), axis=0)
        keep = ctx.op.Trilu(ctx.op.Expand(ctx.const(True), l_s), upper=0)
    if attn_mask is not None:
        if attn_mask.dtype == ir.DataType.BOOL:
            keep = attn_mask if keep is None else ctx.op.And(keep, attn_mask)
        else:
            scores = ctx.op.Add(scores, attn_mask)
    if keep is not None:
        neg_inf = ctx.const(float("-inf"), query.dtype)
        scores = ctx.op.Where(keep, scores, neg_inf)
        probs = ctx.op.Where(keep, ctx.op.Softmax(scores, axis=-1), ctx.const(0.0, query.dtype))
    else:
        probs = ctx.op.Softmax(scores, axis=-1)
    return ctx.op.MatMul(probs, value)


@translates(aten.scaled_dot_product_attention.default, since=23)
def aten_scaled_dot_product_attention_23(
    ctx: Ctx, query: ir.Value, key: ir.Value, value: ir.Value, attn_mask: ir.Value | None = None,
    dropout_p: float = 0.0, is_causal: bool = False, *, scale: float | None = None, enable_gqa: bool = False,
) -> ir.Value:
    """scaled_dot_product_attention(...) -> Tensor: ONNX Attention (opset 23).

    Attention-23 takes 4-D (batch, heads, sequence, head_size) inputs, boolean ("attend") or additive
    masks, broadcasts key/value heads for grouped-query attention, and gives 0 on fully masked rows
    like torch's math backend. Other ranks use the explicit encoding.
    """
    if dropout_p != 0.0:
        ctx.unsupported("attention dropout (dropout_p > 0) only exists in training; call model.eval()")
    if query.dtype in _HALF:
        return _in_float(ctx, aten_scaled_dot_product_attention_23, query, key, value, attn_mask, dropout_p,
                         is_causal, scale=scale, enable_gqa=enable_gqa)
    if not all(v.shape is not None and len(v.shape) == 4 for v in (query, key, value)):
        return aten_scaled_dot_product_attention(
            ctx, query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
        )
    return ctx.op.Attention(
        query, key, value, attn_mask, is_causal=int(is_causal), scale=None if scale is None else float(scale)
    )
