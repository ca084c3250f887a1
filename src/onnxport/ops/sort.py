"""Sorting and selection: sort, topk, argsort (via sort), nonzero, kthvalue-free helpers.

ONNX TopK returns, among equal elements, the one with the lower index first (ONNX operator spec,
TopK), which is the order of torch's stable sort; sort is TopK with k = the dim's length.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops.shape import rank
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


def _cum_extreme(ctx: Ctx, self: ir.Value, dim: int, largest: bool) -> tuple[ir.Value, ir.Value]:
    """cummax/cummin over an (n, n) lower-triangular selection: for output i, the extreme of
    x[0..i] and the last index reaching it (torch returns the last one on ties)."""
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self), ctx.op.Identity(ctx.const(0))
    axis = dim % r
    perm = [i for i in range(r) if i != axis] + [axis]
    x = ctx.op.Transpose(self, perm=perm) if axis != r - 1 else self
    work = x if x.dtype in _TOPK_TYPES - {ir.DataType.FLOAT16} else ctx.op.Cast(x, to=ir.DataType.FLOAT)
    n = ctx.op.Shape(self, start=axis, end=axis + 1)
    tri = ctx.op.Trilu(ctx.op.Expand(ctx.const(True), ctx.op.Concat(n, n, axis=0)), upper=0)
    fill = ctx.const(float("-inf") if largest else float("inf"), ir.DataType.FLOAT) if work.dtype == ir.DataType.FLOAT \
        else ctx.const(torch.iinfo(torch.int64 if work.dtype == ir.DataType.INT64 else torch.int32).min if largest
                       else torch.iinfo(torch.int64 if work.dtype == ir.DataType.INT64 else torch.int32).max, work.dtype)
    rows = ctx.op.Where(tri, ctx.op.Unsqueeze(work, ctx.const([-2])), fill)  # (..., n, n)
    reduce = "ReduceMax" if largest else "ReduceMin"
    values = ctx.op.node(reduce, [rows, ctx.const([r])], {"keepdims": 1})  # positive axes: see _search
    # Last index reaching the extreme: NaN counts as the extreme (torch propagates NaN).
    hit = ctx.op.And(tri, ctx.op.Or(ctx.op.Equal(rows, values), ctx.op.IsNaN(rows))) if work.dtype == ir.DataType.FLOAT \
        else ctx.op.And(tri, ctx.op.Equal(rows, values))
    positions = ctx.op.Range(ctx.const(0), ctx.op.Squeeze(n, ctx.const([0])), ctx.const(1))
    idx = ctx.op.ReduceMax(ctx.op.Where(hit, positions, ctx.const(-1)), ctx.const([r]), keepdims=0)
    nan_seen = None
    values = ctx.op.Squeeze(values, ctx.const([-1]))
    if work.dtype == ir.DataType.FLOAT:
        nan_seen = ctx.op.Cast(ctx.op.CumSum(ctx.op.Cast(ctx.op.IsNaN(work), to=ir.DataType.INT32), ctx.const(-1)),
                               to=ir.DataType.BOOL)
        values = ctx.op.Where(nan_seen, ctx.const(float("nan")), values)
    if work is not x:
        values = ctx.op.Cast(values, to=x.dtype)
    if axis != r - 1:
        inverse = [perm.index(i) for i in range(r)]
        values, idx = ctx.op.Transpose(values, perm=inverse), ctx.op.Transpose(idx, perm=inverse)
    return values, idx


@translates(aten.cummax.default)
def aten_cummax(ctx: Ctx, self: ir.Value, dim: int) -> tuple[ir.Value, ir.Value]:
    """cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)"""
    return _cum_extreme(ctx, self, dim, True)


@translates(aten.cummin.default)
def aten_cummin(ctx: Ctx, self: ir.Value, dim: int) -> tuple[ir.Value, ir.Value]:
    """cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)"""
    return _cum_extreme(ctx, self, dim, False)


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


# -- order statistics: median, nanmedian, mode ----------------------------------------------------

_HALF_TYPES = {ir.DataType.FLOAT16, ir.DataType.BFLOAT16}
_FLOAT_TYPES = {ir.DataType.FLOAT, ir.DataType.DOUBLE} | _HALF_TYPES


def _float_work(ctx: Ctx, x: ir.Value) -> ir.Value:
    """Half types computed in float32 (exact: comparisons and selections only)."""
    return ctx.op.Cast(x, to=ir.DataType.FLOAT) if x.dtype in _HALF_TYPES else x


def _nan_as_inf(ctx: Ctx, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(isnan, x with NaN → +inf): onnxruntime's TopK does not order NaN; torch sorts it last."""
    isnan = ctx.op.IsNaN(x)
    return isnan, ctx.op.Where(isnan, ctx.const(float("inf"), x.dtype), x)


def _median(ctx: Ctx, self: ir.Value, dim: int, keepdim: bool, skip_nan: bool) -> tuple[ir.Value, ir.Value]:
    """The lower median along ``dim``: the ⌊(n-1)/2⌋-th smallest value (torch.median docs: "the
    lower of the two medians"). ``median`` returns NaN (and the first NaN's index) when the row
    holds a NaN; ``nanmedian`` takes the ⌊(m-1)/2⌋-th of the m non-NaN values, NaN when m = 0."""
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self), ctx.op.Identity(ctx.const(0))
    axis = dim % r
    dtype = self.dtype
    x = _float_work(ctx, self)
    n = ctx.op.Shape(x, start=axis, end=axis + 1)
    is_float = dtype in _FLOAT_TYPES
    if is_float:
        isnan, x = _nan_as_inf(ctx, x)
    if is_float and skip_nan:
        count = ctx.op.ReduceSum(ctx.op.Cast(ctx.op.Not(isnan), to=ir.DataType.INT64), ctx.const([axis]), keepdims=1)
        pos = ctx.op.Div(ctx.op.Sub(count, ctx.const(1)), ctx.const(2))  # m = 0 → 0 (Div truncates)
        values, indices = _topk(ctx, x, n, axis, False, True)
        v, i = ctx.op.GatherElements(values, pos, axis=axis), ctx.op.GatherElements(indices, pos, axis=axis)
        v = ctx.op.Where(ctx.op.Equal(count, ctx.const(0)), ctx.const(float("nan"), v.dtype), v)
    else:
        k = ctx.op.Div(ctx.op.Sub(n, ctx.const([1])), ctx.const([2]))
        values, indices = _topk(ctx, x, ctx.op.Add(k, ctx.const([1])), axis, False, True)
        v, i = ctx.op.Gather(values, k, axis=axis), ctx.op.Gather(indices, k, axis=axis)
        if is_float:
            nan_int = ctx.op.Cast(isnan, to=ir.DataType.INT32)
            any_nan = ctx.op.Greater(ctx.op.ReduceMax(nan_int, ctx.const([axis]), keepdims=1), ctx.const(0, ir.DataType.INT32))
            v = ctx.op.Where(any_nan, ctx.const(float("nan"), v.dtype), v)
            i = ctx.op.Where(any_nan, ctx.op.ArgMax(nan_int, axis=axis, keepdims=1), i)
    if v.dtype != dtype:
        v = ctx.op.Cast(v, to=dtype)
    if not keepdim:
        v, i = ctx.op.Squeeze(v, ctx.const([axis])), ctx.op.Squeeze(i, ctx.const([axis]))
    return v, i


def _median_all(ctx: Ctx, self: ir.Value, skip_nan: bool) -> ir.Value:
    """Median of all elements (flattened); NaN for an empty float tensor, as torch."""
    val = ctx.arg_val(0)
    if val is not None and isinstance(val.numel(), int) and val.numel() == 0:
        return ctx.const(float("nan"), self.dtype)
    flat = ctx.op.Reshape(self, ctx.const([-1]))
    flat.shape = ir.Shape([None])
    return _median(ctx, flat, 0, False, skip_nan)[0]


@translates(aten.median.default)
def aten_median(ctx: Ctx, self: ir.Value) -> ir.Value:
    """median(Tensor self) -> Tensor: the lower median of all elements; NaN if any is NaN."""
    return _median_all(ctx, self, False)


@translates(aten.median.dim)
def aten_median_dim(ctx: Ctx, self: ir.Value, dim: int, keepdim: bool = False) -> tuple[ir.Value, ir.Value]:
    """median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    return _median(ctx, self, dim, keepdim, False)


@translates(aten.nanmedian.default)
def aten_nanmedian(ctx: Ctx, self: ir.Value) -> ir.Value:
    """nanmedian(Tensor self) -> Tensor: the lower median of the non-NaN elements."""
    return _median_all(ctx, self, True)


@translates(aten.nanmedian.dim)
def aten_nanmedian_dim(ctx: Ctx, self: ir.Value, dim: int, keepdim: bool = False) -> tuple[ir.Value, ir.Value]:
    """nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    return _median(ctx, self, dim, keepdim, True)


@translates(aten.mode.default)
def aten_mode(ctx: Ctx, self: ir.Value, dim: int = -1, keepdim: bool = False) -> tuple[ir.Value, ir.Value]:
    """mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)

    The most frequent value of each row; among equally frequent values the smallest, and the index
    of its last occurrence (torch's CPU kernel sorts the row and keeps the first longest run,
    aten/src/ATen/native/cpu/TensorCompareKernel.cpp). NaN never equals itself, so each NaN is a
    value seen once and the mode only when every value is NaN (torch std::sorts with ``<``, so its
    answer for rows with NaN depends on where the sort leaves them). Counts come from the n×n
    equality matrix of each row (memory n² per row).
    """
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self), ctx.op.Identity(ctx.const(0))
    axis = dim % r
    dtype = self.dtype
    perm = [i for i in range(r) if i != axis] + [axis]
    x = ctx.op.Transpose(self, perm=perm) if axis != r - 1 else self
    x = ctx.op.Cast(x, to=ir.DataType.INT32) if dtype == ir.DataType.BOOL else _float_work(ctx, x)
    last = ctx.const([r - 1])
    eq = ctx.op.Equal(ctx.op.Unsqueeze(x, ctx.const([r])), ctx.op.Unsqueeze(x, ctx.const([r - 1])))  # (..., n, n)
    count = ctx.op.ReduceSum(ctx.op.Cast(eq, to=ir.DataType.INT64), ctx.const([r]), keepdims=0)  # (..., n)
    is_float = dtype in _FLOAT_TYPES
    if is_float:
        isnan = ctx.op.IsNaN(x)
        count = ctx.op.Add(count, ctx.op.Cast(isnan, to=ir.DataType.INT64))
    cand = ctx.op.Equal(count, ctx.op.ReduceMax(count, last, keepdims=1))
    if is_float:
        real = ctx.op.And(cand, ctx.op.Not(isnan))
        v = ctx.op.ReduceMin(ctx.op.Where(real, x, ctx.const(float("inf"), x.dtype)), last, keepdims=1)
        none = ctx.op.Equal(ctx.op.ReduceMax(ctx.op.Cast(real, to=ir.DataType.INT32), last, keepdims=1),
                            ctx.const(0, ir.DataType.INT32))
        v = ctx.op.Where(none, ctx.const(float("nan"), x.dtype), v)  # every value NaN
        hit = ctx.op.Or(ctx.op.Equal(x, v), ctx.op.And(isnan, ctx.op.IsNaN(v)))
    else:
        top = torch.iinfo(torch.int32 if x.dtype == ir.DataType.INT32 else torch.int64).max \
            if x.dtype in (ir.DataType.INT32, ir.DataType.INT64) else None
        if top is None:
            x = ctx.op.Cast(x, to=ir.DataType.INT64)
            top = torch.iinfo(torch.int64).max
        v = ctx.op.ReduceMin(ctx.op.Where(cand, x, ctx.const(top, x.dtype)), last, keepdims=1)
        hit = ctx.op.Equal(x, v)
    n = ctx.op.Shape(x, start=r - 1, end=r)
    positions = ctx.op.Range(ctx.const(0), ctx.op.Squeeze(n, ctx.const([0])), ctx.const(1))
    i = ctx.op.ReduceMax(ctx.op.Where(hit, positions, ctx.const(-1)), last, keepdims=1)
    if v.dtype != dtype:
        v = ctx.op.Cast(v, to=dtype)
    if axis != r - 1:
        inverse = [perm.index(k) for k in range(r)]
        v, i = ctx.op.Transpose(v, perm=inverse), ctx.op.Transpose(i, perm=inverse)
    if not keepdim:
        v, i = ctx.op.Squeeze(v, ctx.const([axis])), ctx.op.Squeeze(i, ctx.const([axis]))
    return v, i


# -- counting: histc, unique, unique_consecutive ----------------------------------------------------


@translates(aten.histc.default)
def aten_histc(ctx: Ctx, self: ir.Value, bins: int = 100, min: float = 0, max: float = 0) -> ir.Value:
    """histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor

    torch.histc docs: equal-width bins over [min, max]; min = max means the data's minimum and
    maximum, widened by ±1 when those are equal too; elements outside (and NaN) are ignored. An
    element's bin is trunc((x - min)·bins / (max - min)) in the input's precision, x = max in the
    last bin (aten/src/ATen/native/cpu/HistogramKernel.cpp, linear interpolation). Counts are a
    ScatterElements add (ONNX spec, ScatterElements-16 ``reduction="add"``) into bins + 1 slots, the
    extra one taking the ignored elements.
    """
    dtype = self.dtype
    x = ctx.op.Reshape(_float_work(ctx, self), ctx.const([-1]))
    ft = x.dtype

    def rounded(v: ir.Value) -> ir.Value:  # half types: round every step to the input type, as c10::Half does
        return ctx.op.Cast(ctx.op.Cast(v, to=dtype), to=ft) if dtype in _HALF_TYPES else v

    if min == max:
        val = ctx.arg_val(0)
        if val is not None and isinstance(val.numel(), int) and val.numel() == 0:
            lo, hi = ctx.const(float(min), ft), ctx.const(float(max), ft)
        else:
            lo = ctx.op.ReduceMin(x, ctx.const([0]), keepdims=0)
            hi = ctx.op.ReduceMax(x, ctx.const([0]), keepdims=0)
        same = ctx.op.Equal(lo, hi)
        lo = ctx.op.Where(same, rounded(ctx.op.Sub(lo, ctx.const(1.0, ft))), lo)
        hi = ctx.op.Where(same, rounded(ctx.op.Add(hi, ctx.const(1.0, ft))), hi)
    else:
        lo, hi = rounded(ctx.const(float(min), ft)), rounded(ctx.const(float(max), ft))
    valid = ctx.op.And(ctx.op.GreaterOrEqual(x, lo), ctx.op.LessOrEqual(x, hi))
    scaled = rounded(ctx.op.Div(rounded(ctx.op.Mul(rounded(ctx.op.Sub(x, lo)), rounded(ctx.const(float(bins), ft)))),
                                rounded(ctx.op.Sub(hi, lo))))
    pos = ctx.op.Min(ctx.op.Cast(ctx.op.Where(valid, scaled, ctx.const(0.0, ft)), to=ir.DataType.INT64),
                     ctx.const(bins - 1))
    pos = ctx.op.Where(valid, pos, ctx.const(bins))
    zeros = ctx.op.Expand(ctx.const(0.0, ir.DataType.FLOAT), ctx.const([bins + 1]))
    ones = ctx.op.Expand(ctx.const(1.0, ir.DataType.FLOAT), ctx.op.Shape(x))
    counts = ctx.op.ScatterElements(zeros, pos, ones, axis=0, reduction="add")
    hist = ctx.op.Slice(counts, ctx.const([0]), ctx.const([bins]))
    return hist if dtype == ir.DataType.FLOAT else ctx.op.Cast(hist, to=dtype)


# -- histogram, histogramdd --------------------------------------------------------------------

def _static_numel(ctx: Ctx) -> int | None:
    """The input's element count when static (None when unknown or dynamic)."""
    val = ctx.arg_val(0)  # type: ignore[union-attr]
    numel = val.numel() if val is not None else None
    return numel if isinstance(numel, int) else None


def _linspace(ctx: Ctx, lo: ir.Value, hi: ir.Value, steps: int) -> ir.Value:
    """torch.linspace(lo, hi, steps) on CPU, bit for bit, for scalar ``lo``/``hi`` of the work type.

    aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp (``linspace_kernel``): step = (hi - lo)/(steps - 1)
    in the tensor's type; the first half of the points is lo + step·i, the second hi - step·(steps-1-i),
    each a fused multiply-add in torch's CPU build. The fma is exact here for float32 (the product
    and the sum in float64, rounded once); float64 edges may differ from eager's in the last bit.
    """
    dtype = lo.dtype
    step = ctx.op.Div(ctx.op.Sub(hi, lo), ctx.const(float(builtins.max(steps - 1, 1)), dtype))
    half = steps // 2
    wide = ir.DataType.DOUBLE
    mult = ctx.const([float(i) if i < half else float(-(steps - 1 - i)) for i in range(steps)], wide)
    base = ctx.op.Where(ctx.const([i < half for i in range(steps)]), ctx.op.Cast(lo, to=wide), ctx.op.Cast(hi, to=wide))
    points = ctx.op.Add(base, ctx.op.Mul(ctx.op.Cast(step, to=wide), mult))
    return points if dtype == wide else ctx.op.Cast(points, to=dtype)


def _bin_edges(
    ctx: Ctx, x: ir.Value, bins: Sequence[int], range: Sequence[float] | None,
) -> list[ir.Value]:
    """Per-dim bin edges of torch.histogramdd for bin counts, ``x`` (M, D) of the input type.

    aten/src/ATen/native/Histogram.cpp (``select_outer_bin_edges``): the outer edges are ``range``,
    else each column's min and max (0 and 1 for an empty input), in float64, widened by ±0.5 when
    equal; the edges are linspace(lo, hi, bins + 1) in the input type (:func:`_linspace`).
    """
    dtype = x.dtype
    wide = ir.DataType.DOUBLE
    edges = []
    empty = _static_numel(ctx) == 0
    for d, n in enumerate(bins):
        if range is not None:
            lo_f, hi_f = float(range[2 * d]), float(range[2 * d + 1])
            if lo_f == hi_f:
                lo_f, hi_f = lo_f - 0.5, hi_f + 0.5
            # constant edges: torch's own linspace, as eager computes them
            edges.append(ctx.const(torch.linspace(lo_f, hi_f, n + 1,
                                                  dtype=torch.float64 if dtype == wide else torch.float32)))
            continue
        if empty:
            lo, hi = ctx.const(0.0, wide), ctx.const(1.0, wide)
        else:
            col = ctx.op.Gather(x, ctx.const(d), axis=1)
            lo = ctx.op.Cast(ctx.op.ReduceMin(col, ctx.const([0]), keepdims=0), to=wide)
            hi = ctx.op.Cast(ctx.op.ReduceMax(col, ctx.const([0]), keepdims=0), to=wide)
        same = ctx.op.Equal(lo, hi)
        lo = ctx.op.Where(same, ctx.op.Sub(lo, ctx.const(0.5, wide)), lo)
        hi = ctx.op.Where(same, ctx.op.Add(hi, ctx.const(0.5, wide)), hi)
        if dtype != wide:
            lo, hi = ctx.op.Cast(lo, to=dtype), ctx.op.Cast(hi, to=dtype)
        edges.append(_linspace(ctx, lo, hi, n + 1))
    return edges


def _histogramdd(
    ctx: Ctx, x: ir.Value, edges: Sequence[ir.Value], weight: ir.Value | None, density: bool,
) -> ir.Value:
    """The D-dim histogram of the rows of ``x`` (M, D) over increasing ``edges`` (one 1-D tensor per dim).

    aten/src/ATen/native/cpu/HistogramKernel.cpp (``histogramdd_cpu_contiguous``): an element outside
    [edges[0], edges[-1]] (or NaN) in any dim is skipped; else its bin in each dim is the number of
    edges ≤ it minus one (upper_bound; the linear-interpolation path of bin counts checks its guess
    against the edges the same way), the last bin keeping its right edge. Counts (or weights) are a
    ScatterElements add (ONNX spec, ScatterElements-16 ``reduction="add"``) into one extra slot for
    the skipped. ``density``: divided by the total, then by each dim's bin widths (torch.histogramdd
    docs).
    """
    dtype = x.dtype
    i64 = ir.DataType.INT64
    valid = None
    index = None
    sizes = []
    for d, e in enumerate(edges):
        col = ctx.op.Gather(x, ctx.const(d), axis=1)  # (M,)
        nbins = ctx.op.Sub(ctx.op.Shape(e), ctx.const([1]))  # (1,)
        first = ctx.op.Gather(e, ctx.const(0), axis=0)
        last = ctx.op.Squeeze(ctx.op.Slice(e, ctx.const([-1]), ctx.const([2**62])), ctx.const([0]))
        inside = ctx.op.And(ctx.op.GreaterOrEqual(col, first), ctx.op.LessOrEqual(col, last))
        hits = ctx.op.LessOrEqual(ctx.op.Unsqueeze(e, ctx.const([0])), ctx.op.Unsqueeze(col, ctx.const([1])))
        count = ctx.op.ReduceSum(ctx.op.Cast(hits, to=i64), ctx.const([1]), keepdims=0)
        pos = ctx.op.Min(ctx.op.Sub(count, ctx.const(1)), ctx.op.Sub(nbins, ctx.const([1])))
        valid = inside if valid is None else ctx.op.And(valid, inside)
        index = pos if index is None else ctx.op.Add(ctx.op.Mul(index, nbins), pos)
        sizes.append(nbins)
    assert valid is not None and index is not None
    total = sizes[0]
    for s in sizes[1:]:
        total = ctx.op.Mul(total, s)
    index = ctx.op.Where(valid, index, ctx.op.Squeeze(total, ctx.const([0])))
    updates = ctx.op.Reshape(weight, ctx.const([-1])) if weight is not None else \
        ctx.op.Expand(ctx.const(1.0, dtype), ctx.op.Shape(index))
    zeros = ctx.op.Expand(ctx.const(0.0, dtype), ctx.op.Add(total, ctx.const([1])))
    hist = ctx.op.ScatterElements(zeros, index, updates, axis=0, reduction="add")
    hist = ctx.op.Reshape(ctx.op.Slice(hist, ctx.const([0]), total), ctx.op.Concat(*sizes, axis=0))
    if density:
        hist = ctx.op.Div(hist, ctx.op.ReduceSum(hist, keepdims=0))
        D = len(edges)
        for d, e in enumerate(edges):
            widths = ctx.op.Sub(ctx.op.Slice(e, ctx.const([1]), ctx.const([2**62])),
                                ctx.op.Slice(e, ctx.const([0]), ctx.const([-1])))
            shape = [1] * D
            shape[d] = -1
            hist = ctx.op.Div(hist, ctx.op.Reshape(widths, ctx.const(shape)))
    return hist


def _rows(ctx: Ctx, self: ir.Value, D: int) -> ir.Value:
    return ctx.op.Reshape(self, ctx.const([-1, D]))


def _dims(ctx: Ctx, self: ir.Value, what: str) -> int:
    D = self.shape[-1] if self.shape is not None and rank(self) > 0 else None
    if not isinstance(D, int):
        ctx.unsupported(f"{what} of an input whose last dim (the number of dims binned) is not static")
    return D


@translates(aten.histogram.bin_ct)
def aten_histogram_bin_ct(
    ctx: Ctx, self: ir.Value, bins: int = 100, *, range: Sequence[float] | None = None,
    weight: ir.Value | None = None, density: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)

    torch.histogram docs: ``bins`` equal-width bins over ``range`` (default: the data's min and
    max) of the flattened input; :func:`_bin_edges`, :func:`_histogramdd` with one dim.
    """
    x = _rows(ctx, self, 1)
    edges = _bin_edges(ctx, x, [bins], range)
    return _histogramdd(ctx, x, edges, weight, density), edges[0]


@translates(aten.histogram.bins_tensor)
def aten_histogram_bins_tensor(
    ctx: Ctx, self: ir.Value, bins: ir.Value, *, weight: ir.Value | None = None, density: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)

    torch.histogram docs: the bins are given by their increasing edges; :func:`_histogramdd`.
    """
    x = _rows(ctx, self, 1)
    return _histogramdd(ctx, x, [bins], weight, density), ctx.op.Identity(bins)


@translates(aten._histogramdd_bin_edges.default)
def aten_histogramdd_bin_edges(
    ctx: Ctx, self: ir.Value, bins: Sequence[int], *, range: Sequence[float] | None = None,
    weight: ir.Value | None = None, density: bool = False,
) -> tuple[ir.Value, ...]:
    """_histogramdd_bin_edges(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, bool density=False) -> Tensor[]

    The bin edges torch.histogramdd returns for bin counts (:func:`_bin_edges`); the last dim of
    ``self`` indexes the D binned coordinates.
    """
    D = _dims(ctx, self, "histogramdd")
    return tuple(_bin_edges(ctx, _rows(ctx, self, D), bins, range))


@translates(aten._histogramdd_from_bin_cts.default)
def aten_histogramdd_from_bin_cts(
    ctx: Ctx, self: ir.Value, bins: Sequence[int], *, range: Sequence[float] | None = None,
    weight: ir.Value | None = None, density: bool = False,
) -> ir.Value:
    """_histogramdd_from_bin_cts(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, bool density=False) -> Tensor

    torch.histogramdd docs with bin counts: :func:`_bin_edges`, then :func:`_histogramdd`.
    """
    D = _dims(ctx, self, "histogramdd")
    x = _rows(ctx, self, D)
    return _histogramdd(ctx, x, _bin_edges(ctx, x, bins, range), weight, density)


@translates(aten._histogramdd_from_bin_tensors.default)
def aten_histogramdd_from_bin_tensors(
    ctx: Ctx, self: ir.Value, bins: Sequence[ir.Value], *, weight: ir.Value | None = None, density: bool = False,
) -> ir.Value:
    """_histogramdd_from_bin_tensors(Tensor self, Tensor[] bins, *, Tensor? weight=None, bool density=False) -> Tensor

    torch.histogramdd docs with each dim's increasing bin edges given: :func:`_histogramdd`.
    """
    D = _dims(ctx, self, "histogramdd")
    return _histogramdd(ctx, _rows(ctx, self, D), list(bins), weight, density)


# onnxruntime's Unique kernels: float, double, float16, int64, int8 (others go via int64 / float).
_UNIQUE_TYPES = {ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.INT64, ir.DataType.INT8}


def _unique_work(ctx: Ctx, x: ir.Value) -> ir.Value:
    if x.dtype in _UNIQUE_TYPES:
        return x
    return ctx.op.Cast(x, to=ir.DataType.FLOAT if x.dtype in _HALF_TYPES else ir.DataType.INT64)


def _empty_index(ctx: Ctx) -> ir.Value:
    """An output torch leaves empty when not requested (return_inverse/return_counts False)."""
    return ctx.const(np.zeros((0,), np.int64))


@translates(aten._unique2.default)
def aten_unique2(
    ctx: Ctx, self: ir.Value, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)

    ONNX Unique (ONNX operator spec, Unique-11, ``sorted=1``) of the flattened input. torch sorts
    on CPU whatever ``sorted`` says, and treats every NaN as a distinct value placed last; ORT's
    kernel merges NaNs, so NaN goes in as +inf and comes back out: the +inf slot is dropped when it
    holds only NaNs, one NaN per NaN element is appended, and NaN elements' inverse indices point at
    their own slots in index order.
    """
    dtype = self.dtype
    flat = ctx.op.Reshape(_unique_work(ctx, self), ctx.const([-1]))
    is_float = flat.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE)
    if is_float:
        isnan, key = _nan_as_inf(ctx, flat)
    else:
        key = flat
    values, _, inverse, counts = ctx.op.Unique(key, sorted=1, _outputs=4)
    if is_float:
        inf = ctx.const(float("inf"), flat.dtype)
        nan_count = ctx.op.ReduceSum(ctx.op.Cast(isnan, to=ir.DataType.INT64), ctx.const([0]), keepdims=1)  # (1,)
        inf_count = ctx.op.ReduceSum(ctx.op.Cast(ctx.op.Equal(flat, inf), to=ir.DataType.INT64), ctx.const([0]),
                                     keepdims=1)
        placeholder = ctx.op.And(ctx.op.Greater(nan_count, ctx.const(0)), ctx.op.Equal(inf_count, ctx.const(0)))
        kept = ctx.op.Sub(ctx.op.Shape(values), ctx.op.Cast(placeholder, to=ir.DataType.INT64))  # (1,)
        real = ctx.op.Slice(values, ctx.const([0]), kept)
        values = ctx.op.Concat(real, ctx.op.Expand(ctx.const([float("nan")], flat.dtype), nan_count), axis=0)
        if return_inverse:
            nan_rank = ctx.op.CumSum(ctx.op.Cast(isnan, to=ir.DataType.INT64), ctx.const(0), exclusive=1)
            inverse = ctx.op.Where(isnan, ctx.op.Add(kept, nan_rank), inverse)
        if return_counts:
            real_counts = ctx.op.Slice(counts, ctx.const([0]), kept)
            real_counts = ctx.op.Where(ctx.op.Equal(real, inf), inf_count, real_counts)
            counts = ctx.op.Concat(real_counts, ctx.op.Expand(ctx.const([1]), nan_count), axis=0)
    if values.dtype != dtype:
        values = ctx.op.Cast(values, to=dtype)
    inverse = ctx.op.Reshape(inverse, ctx.op.Shape(self)) if return_inverse else _empty_index(ctx)
    return values, inverse, counts if return_counts else _empty_index(ctx)


@translates(aten.unique_dim.default)
def aten_unique_dim(
    ctx: Ctx, self: ir.Value, dim: int, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)

    ONNX Unique with ``axis`` (Unique-11): the distinct slices along ``dim`` in lexicographic order,
    as torch (which always sorts). Slices holding NaN compare as onnxruntime's kernel does (NaN
    equal to NaN), where torch keeps them apart.
    """
    dtype = self.dtype
    axis = dim % builtins.max(rank(self), 1)
    values, _, inverse, counts = ctx.op.Unique(_unique_work(ctx, self), sorted=1, axis=axis, _outputs=4)
    if values.dtype != dtype:
        values = ctx.op.Cast(values, to=dtype)
    return (values, inverse if return_inverse else _empty_index(ctx),
            counts if return_counts else _empty_index(ctx))


@translates(aten.unique_consecutive.default)
def aten_unique_consecutive(
    ctx: Ctx, self: ir.Value, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)

    Keeps the first of each run of equal elements (or slices along ``dim``; torch.unique_consecutive
    docs): a run starts where an element differs from its predecessor (NaN differs from NaN, as in
    torch); values = Compress of the run starts, inverse = running count of starts - 1, counts =
    distances between consecutive starts.
    """
    r = rank(self)
    if dim is None or r == 0:
        x, axis, out_rank = ctx.op.Reshape(self, ctx.const([-1])), 0, 1
    else:
        x, axis, out_rank = self, dim % r, r
    n = ctx.op.Shape(x, start=axis, end=axis + 1)
    work = ctx.op.Cast(x, to=ir.DataType.FLOAT) if x.dtype in _HALF_TYPES else x
    head = ctx.op.Slice(work, ctx.const([1]), ctx.const([2**62]), ctx.const([axis]))
    tail = ctx.op.Slice(work, ctx.const([0]), ctx.const([-1]), ctx.const([axis]))
    differs = ctx.op.Cast(ctx.op.Not(ctx.op.Equal(head, tail)), to=ir.DataType.INT64)
    others = [a for a in range(out_rank) if a != axis]
    if others:  # a slice differs when any of its elements does
        differs = ctx.op.ReduceSum(differs, ctx.const(others), keepdims=0)
    starts = ctx.op.Concat(ctx.const([True]), ctx.op.Greater(differs, ctx.const(0)), axis=0)
    starts = ctx.op.Slice(starts, ctx.const([0]), n)  # n = 0: no start
    values = ctx.op.Compress(work, starts, axis=axis)  # no bfloat16 Compress kernel in onnxruntime
    if work is not x:
        values = ctx.op.Cast(values, to=x.dtype)
    inverse = counts = _empty_index(ctx)
    if return_inverse:
        inverse = ctx.op.Sub(ctx.op.CumSum(ctx.op.Cast(starts, to=ir.DataType.INT64), ctx.const(0)), ctx.const(1))
        if dim is None:
            inverse = ctx.op.Reshape(inverse, ctx.op.Shape(self))
    if return_counts:
        first = ctx.op.Reshape(ctx.op.NonZero(starts), ctx.const([-1]))
        ends = ctx.op.Concat(ctx.op.Slice(first, ctx.const([1]), ctx.const([2**62])), n, axis=0)
        counts = ctx.op.Sub(ends, first)
    return values, inverse, counts
