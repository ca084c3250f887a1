"""scaled_dot_product_attention.

The explicit encoding follows the reference implementation in the PyTorch docs of
``torch.nn.functional.scaled_dot_product_attention``: softmax(Q·Kᵀ·scale + mask)·V, with boolean
masks meaning "attend" and ``is_causal`` a top-left-aligned lower-triangular mask. As torch's math
backend (``_safe_softmax``), rows where a mask hides every key (boolean False, or an additive
-inf) give 0, not NaN.
"""

from __future__ import annotations

import math

import numpy as np
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
    neg_inf = ctx.const(float("-inf"), query.dtype)
    if keep is not None:
        scores = ctx.op.Where(keep, scores, neg_inf)
        probs = ctx.op.Where(keep, ctx.op.Softmax(scores, axis=-1), ctx.const(0.0, query.dtype))
    else:
        probs = ctx.op.Softmax(scores, axis=-1)
    if attn_mask is not None and attn_mask.dtype != ir.DataType.BOOL:
        # torch's _safe_softmax: a row whose scores are all -inf (an additive mask hiding every key)
        # gives 0, not Softmax's NaN.
        hidden = ctx.op.Equal(ctx.op.ReduceMax(scores, ctx.const([-1]), keepdims=1), neg_inf)
        probs = ctx.op.Where(hidden, ctx.const(0.0, query.dtype), probs)
    return ctx.op.MatMul(probs, value)


@translates(aten.scaled_dot_product_attention.default, since=23)
def aten_scaled_dot_product_attention_23(
    ctx: Ctx, query: ir.Value, key: ir.Value, value: ir.Value, attn_mask: ir.Value | None = None,
    dropout_p: float = 0.0, is_causal: bool = False, *, scale: float | None = None, enable_gqa: bool = False,
) -> ir.Value:
    """scaled_dot_product_attention(...) -> Tensor: ONNX Attention (opset 23).

    Attention-23 takes 4-D (batch, heads, sequence, head_size) inputs, boolean ("attend") or additive
    masks, broadcasts key/value heads for grouped-query attention, and gives 0 on fully masked rows
    like torch's math backend. Other ranks use the explicit encoding. The mask is first given the
    shape onnxruntime's kernel accepts (:func:`_mask_to_l_s`: last two dims (L, S)). ``is_causal``
    is top-left aligned in both torch (its docs' reference implementation, ``tril(ones(L, S))``) and
    ONNX Attention, so L ≠ S (a query block after a cache) needs no offset.
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
    if attn_mask is not None:
        attn_mask = _mask_to_l_s(ctx, attn_mask, query, key)
        if attn_mask.dtype != ir.DataType.BOOL and _may_hold_lowest(attn_mask):
            attn_mask = _lowest_not_minus_inf(ctx, attn_mask)
    return ctx.op.Attention(
        query, key, value, attn_mask, is_causal=int(is_causal), scale=None if scale is None else float(scale)
    )


def _lowest_not_minus_inf(ctx: Ctx, mask: ir.Value) -> ir.Value:
    """An additive mask with its entries equal to the dtype's lowest value made half that.

    onnxruntime 1.31's Attention kernel reads a mask entry equal to the lowest float as -inf and
    gives 0 for a row where every entry is, whereas torch adds the lowest value like any other
    (the scores are absorbed: every score of the row equals it, the softmax is uniform and the
    row gets the mean of V). transformers' float masks use ``torch.finfo(dtype).min`` for hidden
    keys (Doge's dynamic mask, masks built by hand), so left-padded query rows would differ. Half
    the lowest value is absorbed the same way (|score| ≪ its ulp of ~1e31), so every row equals
    torch's; a true -inf keeps its 0 row in both (torch's ``_safe_softmax``).
    """
    assert mask.dtype is not None  # an additive mask: float32 or float64 here (half masks are cast)
    lowest = float(np.finfo(mask.dtype.numpy()).min)
    return ctx.op.Where(
        ctx.op.Equal(mask, ctx.const(lowest, mask.dtype)), ctx.const(lowest / 2, mask.dtype), mask
    )


# Ops whose output can carry an input's exact lowest value (a mask's hidden entries): shape ops,
# selection and the arithmetic masks are built with (``(1 - m) * finfo.min``, ``mask + bias``).
_CARRIES = frozenset({
    "Add", "Sub", "Mul", "Div", "Neg", "Min", "Max", "Where", "Cast", "CastLike", "Identity", "Expand",
    "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Transpose", "Slice", "Gather", "GatherElements",
    "Concat", "Tile", "Split", "Pad", "Clip",
})
# Ops whose output is computed from their inputs' values (products, sums of products): no entry
# equals the dtype's lowest value unless it overflows, which a finite softmax input does not.
_COMPUTES = frozenset({"MatMul", "Gemm", "Einsum", "Conv", "ConvTranspose", "Softmax", "LayerNormalization"})
_KNOWN = _CARRIES | _COMPUTES
_LINEAGE_LIMIT = 256  # nodes read before the answer is "maybe"


def _holds_fill(array: np.ndarray, huge: float) -> bool:
    """Whether a float constant holds a value of mask-fill magnitude (``finfo.min``, ``-finfo.max``)."""
    return array.dtype.kind == "f" and bool(np.any(np.abs(array) >= huge))


def _may_hold_lowest(mask: ir.Value) -> bool:
    """Whether an additive mask can hold the dtype's lowest value (:func:`_lowest_not_minus_inf`).

    Walks the mask's producers through :data:`_CARRIES` ops: a graph input, a float constant of
    magnitude near the dtype's range (``finfo.min`` fills, ``-finfo.max``), an op outside both
    tables or a lineage longer than :data:`_LINEAGE_LIMIT` nodes answer yes; a bias computed only by
    :data:`_COMPUTES` ops answers no (SAM's decomposed relative position bias, ``[batch, heads,
    H*W, H*W]``, then skips the ``Equal``/``Where`` copies of it).
    """
    assert mask.dtype is not None
    huge = float(np.finfo(mask.dtype.numpy()).max) * 1e-8  # constants this large are mask fills
    seen: set[int] = set()
    stack = [mask]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if len(seen) > _LINEAGE_LIMIT:
            return True
        node = value.producer()
        if node is None:
            tensor = value.const_value
            if tensor is None or tensor.size > 1 << 16:
                return True  # a graph input, or a buffer too large to read here
            if value.dtype is None or not value.dtype.is_floating_point():
                continue  # indices (Swin's relative position index): no mask fill
            raw = getattr(tensor, "raw", None)
            if isinstance(raw, torch.Tensor) and raw.is_meta:
                return True  # a streamed export's meta parameter: no values to read
            if _holds_fill(tensor.numpy(), huge):
                return True
            continue
        if node.op_type == "Constant" and node.domain == "":
            attr = node.attributes.get("value")
            if attr is None or _holds_fill(attr.as_tensor().numpy(), huge):
                return True
            continue
        if node.domain != "" or node.op_type not in _KNOWN:
            return True
        if node.op_type in _CARRIES:
            stack.extend(v for v in node.inputs if v is not None)
    return False


def _same_dim(a: int | ir.SymbolicDim, b: int | ir.SymbolicDim) -> bool:
    """Whether two recorded dims are provably equal (same int, or the same named symbol)."""
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    return a.value is not None and a.value == b.value


def _mask_to_l_s(ctx: Ctx, mask: ir.Value, query: ir.Value, key: ir.Value) -> ir.Value:
    """``mask`` with its last two dims made (L, S) = (query length, key length) by ``Expand``.

    The mask-shape rule for ``Attention``: the ONNX spec lets ``attn_mask`` broadcast to
    (batch, q_heads, L, S), but onnxruntime 1.31's CPU kernel (``attention_helper.h``:
    ``ComputeOutputShapeForAttention``) reads the mask's last two dims as the query and total
    sequence lengths and refuses any other size ("inconsistent q_sequence_length"); its leading
    dims may stay 1 (or be absent) and broadcast. So a mask whose last two recorded dims are not
    already provably (L, S) is expanded along those two axes only, a (1, S) key padding row or
    (B, 1, 1, S) padding mask becoming (1..., L, S); batch and head dims are left to broadcast.
    """
    m_shape, q_len, k_len = shape_of(mask), shape_of(query)[-2], shape_of(key)[-2]
    if len(m_shape) >= 2 and _same_dim(m_shape[-2], q_len) and _same_dim(m_shape[-1], k_len):
        return mask
    l_s = ctx.op.Concat(ctx.op.Shape(query, start=-2, end=-1), ctx.op.Shape(key, start=-2, end=-1), axis=0)
    target = l_s if len(m_shape) <= 2 else ctx.op.Concat(ctx.const([1] * (len(m_shape) - 2)), l_s, axis=0)
    return ctx.op.Expand(mask, target)
