"""Sorting, selection and searching: sort, topk, argsort (via sort), nonzero, kthvalue,
searchsorted and bucketize; the TopK helpers the order statistics (``reduction/stats.py``) share.

ONNX TopK returns, among equal elements, the one with the lower index first (ONNX operator spec,
TopK), which is the order of torch's stable sort; sort is TopK with k = the dim's length.
"""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops._common import _HALF_TYPES, rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


# ORT's TopK kernels: float, double, float16 (since 1.x), int32, int64, uint8/int8. Others go via float.
_TOPK_TYPES = {ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.INT32, ir.DataType.INT64,
               ir.DataType.FLOAT16}


_EXACT_KEY_TYPES = {ir.DataType.BOOL, ir.DataType.INT8, ir.DataType.UINT8, ir.DataType.INT16, ir.DataType.INT32}


def _topk(ctx: Ctx, x: ir.Value, k: ir.Value, axis: int, largest: bool, sorted_: bool) -> tuple[ir.Value, ir.Value]:
    """TopK whose ties come out in index order, as torch's (stable) CPU sort and topk give them.

    onnxruntime's TopK does not order equal elements by index on large inputs, so small integer
    types (and bool) sort the unique int64 key value·n ± index instead, and gather the values.
    """
    if x.dtype in _EXACT_KEY_TYPES:
        n = ctx.op.Shape(x, start=axis, end=axis + 1)
        n0 = ctx.op.Squeeze(n, ctx.const([0]))
        shape = [1] * rank(x) if x.shape is not None else None
        if shape is None:
            ctx.unsupported("tie-stable topk on a value of unknown rank")
        shape[axis] = -1
        positions = ctx.op.Reshape(ctx.op.Range(ctx.const(0), n0, ctx.const(1)), ctx.const(shape))
        tie = ctx.op.Sub(ctx.op.Sub(n0, ctx.const(1)), positions) if largest else positions
        key = ctx.op.Add(ctx.op.Mul(ctx.op.Cast(x, to=ir.DataType.INT64), n0), tie)
        _, indices = ctx.op.TopK(key, k, axis=axis, largest=int(largest), sorted=int(sorted_), _outputs=2)
        return ctx.op.GatherElements(x, indices, axis=axis), indices
    dtype = x.dtype
    work = x if dtype in _TOPK_TYPES else ctx.op.Cast(x, to=ir.DataType.FLOAT)
    values, indices = ctx.op.TopK(work, k, axis=axis, largest=int(largest), sorted=int(sorted_), _outputs=2)
    if work is not x:
        values = ctx.op.Cast(values, to=dtype)
    return values, indices


@translates(aten.sort.default)
def aten_sort(ctx: Ctx, self: ir.Value, dim: int = -1, descending: bool = False) -> tuple[ir.Value, ir.Value]:
    """sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"""
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self), ctx.op.Identity(ctx.const(0))
    axis = dim % r
    k = ctx.op.Shape(self, start=axis, end=axis + 1)
    return _topk(ctx, self, k, axis, descending, True)


@translates(aten.sort.stable)
def aten_sort_stable(
    ctx: Ctx, self: ir.Value, *, stable: bool | None = None, dim: int = -1, descending: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)"""
    return aten_sort(ctx, self, dim, descending)


@translates(aten.topk.default)
def aten_topk(
    ctx: Ctx, self: ir.Value, k: int | ir.Value, dim: int = -1, largest: bool = True, sorted: bool = True,
) -> tuple[ir.Value, ir.Value]:
    """topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)

    ``sorted=False`` still sorts: torch leaves the order unspecified, sorted is one valid order.
    """
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self), ctx.op.Identity(ctx.const(0))
    return _topk(ctx, self, ctx.shape_tensor([k]), dim % r, largest, True)


@translates(aten.argsort.default, aten.argsort.stable)
def aten_argsort(ctx: Ctx, self: ir.Value, *args: Any, **kwargs: Any) -> ir.Value:
    """argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor (also argsort.stable)."""
    if ctx.node is not None and ctx.node.target is aten.argsort.stable:
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
    else:
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending", False)
    return aten_sort(ctx, self, dim, descending)[1]


@translates(aten.nonzero.default)
def aten_nonzero(ctx: Ctx, self: ir.Value) -> ir.Value:
    """nonzero(Tensor self) -> Tensor: (N, rank) indices of the non-zero elements, row-major."""
    if rank(self) == 0:
        flag = ctx.op.Cast(ctx.op.Cast(self, to=ir.DataType.BOOL), to=ir.DataType.INT64)
        return ctx.op.Expand(ctx.const([[0]], ir.DataType.INT64), ctx.op.Concat(
            ctx.op.Reshape(flag, ctx.const([1])), ctx.const([0]), axis=0))
    return ctx.op.Transpose(ctx.op.NonZero(self), perm=[1, 0])


@translates(aten.kthvalue.default)
def aten_kthvalue(ctx: Ctx, self: ir.Value, k: int | ir.Value, dim: int = -1, keepdim: bool = False) -> tuple[ir.Value, ir.Value]:
    """kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices): k-th smallest."""
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self), ctx.op.Identity(ctx.const(0))
    axis = dim % r
    values, indices = _topk(ctx, self, ctx.shape_tensor([k]), axis, False, True)
    pos = ctx.op.Sub(ctx.shape_tensor([k]), ctx.const([1]))
    v = ctx.op.Gather(values, pos, axis=axis)
    i = ctx.op.Gather(indices, pos, axis=axis)
    if not keepdim:
        v, i = ctx.op.Squeeze(v, ctx.const([axis])), ctx.op.Squeeze(i, ctx.const([axis]))
    return v, i


def _search(
    ctx: Ctx, boundaries: ir.Value, values: ir.Value, right: bool, out_int32: bool, inner: bool, values_rank: int,
) -> ir.Value:
    """Insertion index of each value: the count of boundaries < value (≤ with ``right``).

    ``inner``: the boundaries are a batch of sorted rows matching the values' leading dims.
    """
    cmp = "LessOrEqual" if right else "Less"
    if boundaries.dtype == ir.DataType.BFLOAT16:  # no bfloat16 Less kernels in onnxruntime; float32 is exact
        boundaries = ctx.op.Cast(boundaries, to=ir.DataType.FLOAT)
        values = ctx.op.Cast(values, to=ir.DataType.FLOAT)
    b = ctx.op.Unsqueeze(boundaries, ctx.const([-2])) if inner else boundaries  # (..., 1, m) or (m,)
    v = ctx.op.Unsqueeze(values, ctx.const([-1]))  # (..., n, 1)
    hits = ctx.op.node(cmp, [b, v], {})
    # A positive axis: onnxruntime 1.31 reduces an empty tensor over a negative axis to the input shape.
    count = ctx.op.ReduceSum(ctx.op.Cast(hits, to=ir.DataType.INT64), ctx.const([values_rank]), keepdims=0)
    return ctx.op.Cast(count, to=ir.DataType.INT32) if out_int32 else count


@translates(aten.searchsorted.Tensor)
def aten_searchsorted(
    ctx: Ctx, sorted_sequence: ir.Value, self: ir.Value, *, out_int32: bool = False, right: bool = False,
    side: str | None = None, sorter: ir.Value | None = None,
) -> ir.Value:
    """searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor"""
    right = right or side == "right"
    inner = rank(sorted_sequence) > 1
    if sorter is not None:
        sorted_sequence = ctx.op.GatherElements(sorted_sequence, sorter, axis=-1)
    values = self if self.dtype == sorted_sequence.dtype else ctx.op.Cast(self, to=sorted_sequence.dtype)
    if rank(self) == 0:
        values = ctx.op.Reshape(values, ctx.const([1]))
        return ctx.op.Squeeze(_search(ctx, sorted_sequence, values, right, out_int32, inner, 1), ctx.const([0]))
    return _search(ctx, sorted_sequence, values, right, out_int32, inner, rank(self))


@translates(aten.searchsorted.Scalar)
def aten_searchsorted_scalar(
    ctx: Ctx, sorted_sequence: ir.Value, self: float | int | bool, *, out_int32: bool = False, right: bool = False,
    side: str | None = None, sorter: ir.Value | None = None,
) -> ir.Value:
    """searchsorted.Scalar(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor"""
    if rank(sorted_sequence) != 1:
        ctx.unsupported("searchsorted of a scalar in a batch of sequences (torch requires 1-D boundaries)")
    if sorter is not None:
        sorted_sequence = ctx.op.GatherElements(sorted_sequence, sorter, axis=-1)
    values = ctx.const([self], sorted_sequence.dtype)
    return ctx.op.Squeeze(_search(ctx, sorted_sequence, values, right or side == "right", out_int32, False, 1),
                          ctx.const([0]))


@translates(aten.bucketize.Tensor)
def aten_bucketize(ctx: Ctx, self: ir.Value, boundaries: ir.Value, *, out_int32: bool = False, right: bool = False) -> ir.Value:
    """bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor"""
    values = self if self.dtype == boundaries.dtype else ctx.op.Cast(self, to=boundaries.dtype)
    return _search(ctx, boundaries, values, right, out_int32, False, rank(self))


# -- helpers the order statistics (reduction/stats.py) share ----------------------------------

def _float_work(ctx: Ctx, x: ir.Value) -> ir.Value:
    """Half types computed in float32 (exact: comparisons and selections only)."""
    return ctx.op.Cast(x, to=ir.DataType.FLOAT) if x.dtype in _HALF_TYPES else x


def _nan_as_inf(ctx: Ctx, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(isnan, x with NaN → +inf): onnxruntime's TopK does not order NaN; torch sorts it last."""
    isnan = ctx.op.IsNaN(x)
    return isnan, ctx.op.Where(isnan, ctx.const(float("inf"), x.dtype), x)
