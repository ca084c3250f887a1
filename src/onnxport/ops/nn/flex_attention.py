"""FlexAttention (``torch.ops.higher_order.flex_attention``) → dense attention.

``torch.nn.attention.flex_attention`` records one higher-order op with the user's ``score_mod``
and ``mask_mod`` as FX subgraphs of scalar tensors ``(score, b, h, q_idx, kv_idx, *buffers)``.
The translation computes what torch's CPU implementation computes (``math_attention`` and
``_math_attention_inner`` in ``torch/_higher_order_ops/flex_attention.py``, the eager
reference of the PyTorch docs' ``flex_attention``), in its working precision (float64 for float64
inputs, float32 otherwise)::

    scores = (Q · Kᵀ) · scale                        (B, Hq, L, S); K, V repeated per query head (GQA)
    post   = where(mask_mod(b, h, m, n), score_mod(scores, b, h, m, n), -inf)
    out    = safe_softmax(post) · V                  a row hidden everywhere gives 0
    lse    = logsumexp(post) / ln 2,  max = max(post) / ln 2   (the op's base-2 statistics)

The two subgraphs are inlined once over broadcast index tensors ``b`` (B,1,1,1), ``h``
(1,Hq,1,1), ``m`` (1,1,L,1), ``n`` (1,1,1,S) instead of vmapped per position; that is the same
function when every op that reads a per-position value is elementwise and an index into a captured
buffer indexes all of its dims at once (``bias[h, kv_idx]``, ``doc_ids[q_idx]``): the forms
``score_mod``/``mask_mod`` take in the FlexAttention docs and in transformers' masks. Any other op
on a per-position value (``buf[b][q_idx]``, a reduction) is refused with the op named. Like
torch's CPU path, the block-sparsity tensors of the ``BlockMask`` are not read (during capture
onnxport makes them one block, :mod:`onnxport.capture.flex`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch
import torch.utils._pytree as pytree

from onnxport.ops._common import shape_of
from onnxport.ops.nn.attention import _repeat_heads
from onnxport.ops.tensor.indexing import aten_index
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.dispatch import stamp_metadata
from onnxport.translate.registry import translates

aten = torch.ops.aten
_FLAT_APPLY = torch.ops.higher_order.flat_apply
# What a score_mod's ``x[i]`` records in the pre-dispatch graph (torch.export's IR):
# ``flat_apply(func_spec, in_spec, "…ModIndex", x, i, ...)`` calling this function with that name
# (``torch/_dynamo/_trace_wrapped_higher_order_op.py``: ``TransformGetItemToIndex``).
_PRE_DISPATCH_AUTOGRAD = "_call_custom_autograd_function_in_pre_dispatch"
_MOD_INDEX = "torch._dynamo._trace_wrapped_higher_order_op.ModIndex"
_ONE_BLOCK = 1 << 30  # torch's _LARGE_SPARSE_BLOCK_SIZE: one block over every position

# Ops a per-position value may pass through besides those tagged ``torch.Tag.pointwise``: casts,
# aliases, the Python operators, and constants made from it (torch's ``noop_mask`` is
# ``b.new_ones(())``), which broadcast.
_ELEMENTWISE = {
    aten._to_copy.default, aten.to.dtype, aten.floor_divide.default, aten.alias.default,
    aten.detach.default, aten.clone.default, aten.lift_fresh_copy.default,
    aten.__and__.Tensor, aten.__or__.Tensor, aten.__xor__.Tensor,  # &, |, ^ (the subgraphs are not decomposed)
    aten.new_ones.default, aten.new_zeros.default, aten.new_full.default, aten.ones_like.default,
    aten.zeros_like.default, aten.full_like.default,
}


def _check_broadcastable(ctx: Ctx, module: torch.fx.GraphModule, positional: int, what: str) -> None:
    """Refuse ``module`` unless each op reading a per-position value (the first ``positional``
    placeholders and what derives from them) is elementwise, or a full index of a captured tensor."""
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    varying = set(placeholders[:positional])
    for node in module.graph.nodes:
        if node.op != "call_function" or not any(a in varying for a in node.all_input_nodes):
            continue
        target = node.target
        val = node.meta.get("val")
        scalar = isinstance(val, torch.Tensor) and val.dim() == 0
        if target is aten.index.Tensor:
            ok = scalar and node.args[0] not in varying
        elif target is _FLAT_APPLY:  # x[i] before decomposition (hop_flat_apply): x is args[3]
            ok = scalar and len(node.args) > 3 and node.args[3] not in varying
        else:
            ok = scalar and (target in _ELEMENTWISE or torch.Tag.pointwise in getattr(target, "tags", ()))
        if not ok:
            shown = aten.index.Tensor if target is _FLAT_APPLY else target  # x[i] (hop_flat_apply)
            ctx.unsupported(
                f"{what} applies {shown} to a per-position value; onnxport computes {what} once over "
                "all positions, which is exact for elementwise ops and for an index of a captured "
                "tensor by all its dims at once (write bias[b, h] rather than bias[b][h])"
            )
        varying.add(node)


def _warn_if_block_sparse(block_mask: Sequence[Any]) -> None:
    """Warn when the block mask has blocks of its own (not one block: ``BlockMask.from_kv_blocks``,
    which onnxport's capture does not replace): its block tables may leave out blocks ``mask_mod``
    allows (Kandinsky 5's NABLA sparsity has no ``mask_mod`` at all), which torch's compiled kernel
    skips while its CPU implementation, and this translation, attend to them."""
    sizes = [b for b in block_mask[-3:-1] if isinstance(b, int)]
    if sizes and any(size < _ONE_BLOCK for size in sizes):
        warnings.warn(
            f"flex_attention with a block-sparse BlockMask (blocks of {sizes}): onnxport computes dense "
            "attention with mask_mod applied everywhere, as torch's CPU implementation does; blocks the "
            "mask's tables leave out but mask_mod allows are attended to (torch.compile's kernel skips "
            "them). Put the sparsity in mask_mod to export it.",
            UserWarning,
            stacklevel=2,
        )


def _positions(ctx: Ctx, query: ir.Value, key: ir.Value, dims: list[Any], dtype: ir.DataType) -> list[ir.Value]:
    """``b``, ``h``, ``m``, ``n``: aranges over batch, query heads, query and key positions (their
    recorded ``dims``), each along its own axis of a rank-4 broadcast shape, in ``dtype``."""
    sources = [(query, 0), (query, 1), (query, 2), (key, 2)]  # B, Hq, L from the query; S from the key
    out = []
    for axis, ((source, index), dim) in enumerate(zip(sources, dims)):
        # Range in int64 and a Cast after it: onnxruntime 1.31 types a Range over a Cast of a
        # static Shape slice as int64 ("All inputs to 'Range' op must be of the same type").
        count = ctx.const(dim) if isinstance(dim, int) else ctx.op.Squeeze(
            ctx.op.Shape(source, start=index, end=index + 1), ctx.const([0]))
        arange = ctx.op.Range(ctx.const(0), count, ctx.const(1))
        shape = [1, 1, 1, 1]
        shape[axis] = -1
        value = ctx.op.Reshape(arange, ctx.const(shape))
        if dtype != ir.DataType.INT64:
            value = ctx.op.Cast(value, to=dtype)
        value.dtype = dtype
        value.shape = ir.Shape([dim if i == axis else 1 for i in range(4)])
        out.append(value)
    return out


def _broadcast(ctx: Ctx, module: torch.fx.GraphModule, operands: list[Any]) -> ir.Value:
    """``module`` inlined over broadcast operands; the values it made get no recorded shape
    (their FX metadata describes one position)."""
    fx_node = ctx.node
    assert fx_node is not None
    stamp_metadata(ctx.op.take_nodes(), fx_node)  # the nodes made so far are the op's, not the subgraph's
    start = len(ctx.graph)
    (result,) = ctx.inline(module, operands)
    ctx.node = fx_node  # the inlined translations set it to theirs
    for made in list(ctx.graph)[start:]:
        for value in made.outputs:
            value.shape = None
    return result if isinstance(result, ir.Value) else ctx.const(result)


def _placeholder_dtype(module: torch.fx.GraphModule, index: int, default: ir.DataType) -> ir.DataType:
    val = [n for n in module.graph.nodes if n.op == "placeholder"][index].meta.get("val")
    return ir_dtype(val.dtype) if isinstance(val, torch.Tensor) else default


@translates(torch.ops.higher_order.flex_attention)
def hop_flex_attention(
    ctx: Ctx, query: ir.Value, key: ir.Value, value: ir.Value, score_mod: torch.fx.GraphModule,
    block_mask: Sequence[Any], scale: float, kernel_options: dict[str, Any],
    score_mod_other_buffers: Sequence[Any] = (), mask_mod_other_buffers: Sequence[Any] = (),
) -> tuple[ir.Value | None, ...]:
    """flex_attention(query, key, value, score_mod, block_mask, scale, kernel_options,
    score_mod_other_buffers, mask_mod_other_buffers) -> (output, logsumexp, max_scores).

    query (B, Hq, L, E), key (B or 1, Hkv, S, E), value (B or 1, Hkv, S, Ev); output (B, Hq, L, Ev)
    in the query's dtype; logsumexp and max_scores (B, Hq, L) in the working precision, base 2 as
    the op returns them (``flex_attention`` multiplies them by ln 2). See the module docstring.

    Raises:
        UnsupportedOpError: a ``score_mod``/``mask_mod`` op that cannot be computed over all
            positions at once, or a dynamic number of heads with grouped-query attention.
    """
    mask_mod = block_mask[-1]
    _warn_if_block_sparse(block_mask)
    _check_broadcastable(ctx, score_mod, 5, "score_mod")
    _check_broadcastable(ctx, mask_mod, 4, "mask_mod")
    assert query.dtype is not None
    work = ir.DataType.DOUBLE if query.dtype == ir.DataType.DOUBLE else ir.DataType.FLOAT
    dims = [*shape_of(query)[:3], shape_of(key)[2]]  # B, Hq, L, S
    hq, hkv = dims[1], shape_of(key)[1]
    if hq != hkv:
        if not (isinstance(hq, int) and isinstance(hkv, int)):
            ctx.unsupported("grouped-query flex_attention with a dynamic number of heads")
        key, value = _repeat_heads(ctx, key, hq // hkv), _repeat_heads(ctx, value, hq // hkv)
    q, k = (x if x.dtype == work else ctx.op.Cast(x, to=work) for x in (query, key))
    scores = ctx.op.Mul(ctx.op.MatMul(q, ctx.op.Transpose(k, perm=[0, 1, 3, 2])), ctx.const(float(scale), work))
    scores.dtype, scores.shape = work, ir.Shape(dims)
    index_dtype = _placeholder_dtype(mask_mod, 0, ir.DataType.INT32)
    positions = _positions(ctx, query, key, dims, index_dtype)
    score_dtype = _placeholder_dtype(score_mod, 0, work)
    scored = scores if score_dtype == work else ctx.op.Cast(scores, to=score_dtype)
    scored.shape = scores.shape
    modified = _broadcast(ctx, score_mod, [scored, *positions, *score_mod_other_buffers])
    if modified.dtype != work:
        modified = ctx.op.Cast(modified, to=work)
    keep = _broadcast(ctx, mask_mod, [*positions, *mask_mod_other_buffers])
    if keep.dtype != ir.DataType.BOOL:
        keep = ctx.op.Cast(keep, to=ir.DataType.BOOL)
    neg_inf = ctx.const(float("-inf"), work)
    post = ctx.op.Where(keep, modified, neg_inf)
    row_max = ctx.op.ReduceMax(post, ctx.const([-1]), keepdims=1)
    hidden = ctx.op.Equal(row_max, neg_inf)  # torch's _safe_softmax: such a row gives 0, not NaN
    probs = ctx.op.Where(hidden, ctx.const(0.0, work), ctx.op.Softmax(post, axis=-1))
    v = value if value.dtype == work else ctx.op.Cast(value, to=work)
    out = ctx.op.MatMul(probs, v)
    if query.dtype != work:
        out = ctx.op.Cast(out, to=query.dtype)
    used = ctx.used_outputs()
    lse = max_scores = None
    log2 = ctx.const(math.log(2.0), work)
    if used is None or 1 in used:
        total = ctx.op.ReduceLogSumExp(post, ctx.const([-1]), keepdims=0)
        lse = ctx.op.Div(ctx.op.Where(ctx.op.Squeeze(hidden, ctx.const([-1])), neg_inf, total), log2)
    if used is None or 2 in used:
        max_scores = ctx.op.Div(ctx.op.Squeeze(row_max, ctx.const([-1])), log2)
    return out, lse, max_scores


@translates(_FLAT_APPLY)
def hop_flat_apply(ctx: Ctx, func_spec: Any, in_spec: Any, *flat_args: Any, **kwargs: Any) -> ir.Value:
    """flat_apply(func_spec, in_spec, *flat_args): ``func(*args, **kwargs)`` with both rebuilt by
    ``pytree.tree_unflatten`` (``torch/_higher_order_ops/flat_apply.py``).

    Translated for the one call torch.export records in FlexAttention's subgraphs: indexing
    ``x[i, ...]`` as ``ModIndex`` (an autograd function applied in the pre-dispatch IR), which is
    ``aten.index.Tensor(x, [i, ...])``. With it translated, a FlexAttention program skips the
    re-trace of ``run_decompositions`` (docs/architecture.md, "Decomposition fast path").

    Raises:
        UnsupportedOpError: any other function.
    """
    func = pytree.tree_unflatten([], func_spec) if isinstance(func_spec, pytree.TreeSpec) else func_spec
    args, call_kwargs = pytree.tree_unflatten(list(flat_args), in_spec)
    inner = getattr(func, "func", func)
    if getattr(inner, "__name__", "") == _PRE_DISPATCH_AUTOGRAD and args and args[0] == _MOD_INDEX and not call_kwargs:
        _, x, indices = args
        return aten_index(ctx, x, list(indices))
    ctx.unsupported(f"flat_apply of {getattr(inner, '__qualname__', inner)!r} {args[:1]}: only indexing (ModIndex)")
