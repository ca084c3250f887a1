"""Reductions: sum, mean, prod, amax/amin, max/min along a dim, argmax/argmin, any/all, var/std,
segment_reduce."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops._common import INT64_MAX, rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


def _axes(ctx: Ctx, x: ir.Value, dim: int | Sequence[int] | None) -> ir.Value | None:
    """Reduce* axes input (an input since opset 18 for every Reduce op); None reduces all."""
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return None
    r = max(rank(x), 1)
    return ctx.const([d % r for d in dims])


def _reduce(ctx: Ctx, op: str, x: ir.Value, dim: Any, keepdim: bool) -> ir.Value:
    if rank(x) == 0:
        return ctx.op.Identity(x)
    if x.dtype == ir.DataType.BOOL and op in ("ReduceMax", "ReduceMin"):  # no bool kernels: via int32
        as_int = ctx.op.Cast(x, to=ir.DataType.INT32)
        out = ctx.op.node(op, [as_int, _axes(ctx, x, dim)], {"keepdims": int(bool(keepdim))})
        return ctx.op.Cast(out, to=ir.DataType.BOOL)
    return ctx.op.node(op, [x, _axes(ctx, x, dim)], {"keepdims": int(bool(keepdim))})


def _in_dtype(ctx: Ctx, x: ir.Value) -> ir.Value:
    out = ctx.out_dtype()
    return x if x.dtype == out else ctx.op.Cast(x, to=out)


@translates(aten.sum.dim_IntList, aten.sum.default)
def aten_sum(ctx: Ctx, self: ir.Value, dim: Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None) -> ir.Value:
    """sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(ctx, "ReduceSum", _in_dtype(ctx, self), dim, keepdim)


@translates(aten.mean.dim, aten.mean.default)
def aten_mean(ctx: Ctx, self: ir.Value, dim: Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None) -> ir.Value:
    """mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(ctx, "ReduceMean", _in_dtype(ctx, self), dim, keepdim)


@translates(aten.prod.dim_int, aten.prod.default)
def aten_prod(ctx: Ctx, self: ir.Value, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> ir.Value:
    """prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"""
    return _reduce(ctx, "ReduceProd", _in_dtype(ctx, self), dim, keepdim)


@translates(aten.amax.default)
def aten_amax(ctx: Ctx, self: ir.Value, dim: Sequence[int] = (), keepdim: bool = False) -> ir.Value:
    """amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return _reduce(ctx, "ReduceMax", self, dim, keepdim)


@translates(aten.amin.default)
def aten_amin(ctx: Ctx, self: ir.Value, dim: Sequence[int] = (), keepdim: bool = False) -> ir.Value:
    """amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor"""
    return _reduce(ctx, "ReduceMin", self, dim, keepdim)


def _bool_reduce(ctx: Ctx, op: str, self: ir.Value, dim: Any, keepdim: bool) -> ir.Value:
    """any / all as ReduceMax / ReduceMin over 0/1, then ``> 0``: over no elements ONNX's
    ReduceMax gives the lowest INT32 (any → False) and ReduceMin the highest (all → True), as
    ``torch.any`` / ``torch.all`` of an empty tensor."""
    as_int = ctx.op.Cast(self if self.dtype == ir.DataType.BOOL else ctx.op.Cast(self, to=ir.DataType.BOOL), to=ir.DataType.INT32)
    return ctx.op.Greater(_reduce(ctx, op, as_int, dim, keepdim), ctx.const(0, ir.DataType.INT32))


@translates(aten.any.dim, aten.any.dims, aten.any.default)
def aten_any(ctx: Ctx, self: ir.Value, dim: Any = None, keepdim: bool = False) -> ir.Value:
    """any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return _bool_reduce(ctx, "ReduceMax", self, dim, keepdim)


@translates(aten._is_any_true.default)
def aten_is_any_true(ctx: Ctx, self: ir.Value) -> ir.Value:
    """_is_any_true(Tensor self) -> Tensor: a 0-d bool, any element of a bool tensor true (the
    operand of ``torch._assert_async`` that a ``torch._check`` on a tensor leaves)."""
    return _bool_reduce(ctx, "ReduceMax", self, None, False)


@translates(aten._is_all_true.default)
def aten_is_all_true(ctx: Ctx, self: ir.Value) -> ir.Value:
    """_is_all_true(Tensor self) -> Tensor: a 0-d bool, every element of a bool tensor true
    (transformers' VITS spline checks its bins this way)."""
    return _bool_reduce(ctx, "ReduceMin", self, None, False)


@translates(aten.all.dim, aten.all.dims, aten.all.default)
def aten_all(ctx: Ctx, self: ir.Value, dim: Any = None, keepdim: bool = False) -> ir.Value:
    """all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor"""
    return _bool_reduce(ctx, "ReduceMin", self, dim, keepdim)


def _arg(ctx: Ctx, op: str, self: ir.Value, dim: int | None, keepdim: bool) -> ir.Value:
    if self.dtype == ir.DataType.BOOL:  # no bool ArgMax/ArgMin kernels; the order is that of 0/1
        self = ctx.op.Cast(self, to=ir.DataType.INT32)
    if dim is None:
        flat = ctx.op.Reshape(self, ctx.const([-1]))
        out = ctx.op.node(op, [flat], {"axis": 0, "keepdims": 0})
        return ctx.op.Reshape(out, ctx.const([1] * rank(self))) if keepdim else out
    if rank(self) == 0:
        return ctx.op.Identity(ctx.const(0))
    return ctx.op.node(op, [self], {"axis": dim % rank(self), "keepdims": int(keepdim), "select_last_index": 0})


@translates(aten.argmax.default)
def aten_argmax(ctx: Ctx, self: ir.Value, dim: int | None = None, keepdim: bool = False) -> ir.Value:
    """argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor (first maximal index)."""
    return _arg(ctx, "ArgMax", self, dim, keepdim)


@translates(aten.argmin.default)
def aten_argmin(ctx: Ctx, self: ir.Value, dim: int | None = None, keepdim: bool = False) -> ir.Value:
    """argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor (first minimal index)."""
    return _arg(ctx, "ArgMin", self, dim, keepdim)


@translates(aten.max.dim)
def aten_max_dim(ctx: Ctx, self: ir.Value, dim: int, keepdim: bool = False) -> tuple[ir.Value, ir.Value]:
    """max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    return _reduce(ctx, "ReduceMax", self, dim, keepdim), _arg(ctx, "ArgMax", self, dim, keepdim)


@translates(aten.min.dim)
def aten_min_dim(ctx: Ctx, self: ir.Value, dim: int, keepdim: bool = False) -> tuple[ir.Value, ir.Value]:
    """min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"""
    return _reduce(ctx, "ReduceMin", self, dim, keepdim), _arg(ctx, "ArgMin", self, dim, keepdim)


@translates(aten.max.default)
def aten_max(ctx: Ctx, self: ir.Value) -> ir.Value:
    """max(Tensor self) -> Tensor"""
    return _reduce(ctx, "ReduceMax", self, None, False)


@translates(aten.min.default)
def aten_min(ctx: Ctx, self: ir.Value) -> ir.Value:
    """min(Tensor self) -> Tensor"""
    return _reduce(ctx, "ReduceMin", self, None, False)


@translates(aten.var.correction, aten.std.correction)
def aten_var(ctx: Ctx, self: ir.Value, dim: Sequence[int] | None = None, *, correction: float | None = None, keepdim: bool = False) -> ir.Value:
    """var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor

    Σ(x − mean)² / max(N − correction, 0), correction defaulting to 1 (PyTorch docs, torch.var):
    NaN for an empty reduction or N ≤ correction, as in torch. bfloat16 computes in float.
    """
    if self.dtype == ir.DataType.BFLOAT16:
        out = aten_var(ctx, ctx.op.Cast(self, to=ir.DataType.FLOAT), dim, correction=correction, keepdim=keepdim)
        return ctx.op.Cast(out, to=self.dtype)
    correction = 1 if correction is None else correction
    axes = _axes(ctx, self, dim)
    mean = ctx.op.ReduceMean(self, axes, keepdims=1)
    centered = ctx.op.Sub(self, mean)
    sq = ctx.op.ReduceSum(ctx.op.Mul(centered, centered), axes, keepdims=int(keepdim))
    denom = ctx.op.Max(ctx.op.Sub(reduced_count(ctx, self, axes), ctx.const(correction, self.dtype)),
                       ctx.const(0, self.dtype))
    var = ctx.op.Div(sq, denom)
    assert ctx.node is not None
    return ctx.op.Sqrt(var) if ctx.node.target is aten.std.correction else var


def reduced_count(ctx: Ctx, x: ir.Value, axes: ir.Value | None) -> ir.Value:
    """The number of elements each reduction over ``axes`` (None: all) sees, as a 0-D x.dtype."""
    shape = ctx.op.Shape(x)
    count = ctx.op.ReduceProd(ctx.op.Gather(shape, axes, axis=0) if axes is not None else shape, keepdims=0)
    return ctx.op.Cast(count, to=x.dtype)


def mean_nan_if_empty(ctx: Ctx, x: ir.Value, axes: ir.Value | None, keepdim: bool) -> ir.Value:
    """Σx / N, so an empty reduction gives NaN as torch.mean does (onnxruntime's ReduceMean gives 0)."""
    return ctx.op.Div(ctx.op.ReduceSum(x, axes, keepdims=int(keepdim)), reduced_count(ctx, x, axes))


_SEGMENT_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": float("-inf"), "min": float("inf")}


@translates(aten.segment_reduce.default)
def aten_segment_reduce(
    ctx: Ctx, data: ir.Value, reduce: str, *, lengths: ir.Value | None = None, indices: ir.Value | None = None,
    offsets: ir.Value | None = None, axis: int = 0, unsafe: bool = False, initial: float | None = None,
) -> ir.Value:
    """segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor

    Segment s covers [start_s, end_s) along ``axis`` (ends = cumsum(lengths), or consecutive
    ``offsets``); a (…, S, L) membership mask selects each segment's elements, the others are
    replaced by the reduction's identity and reduced away. ``initial`` joins every segment (for
    mean: (Σ + initial)/count); empty segments give ``initial``, else 0 (sum), 1 (prod), ∓inf
    (max/min), NaN (mean) (aten SegmentReduce.cpp). float16/bfloat16 compute in float.
    """
    if reduce not in _SEGMENT_IDENTITY:
        ctx.unsupported(f"segment_reduce with reduce={reduce!r}")
    i64 = ir.DataType.INT64
    r = rank(data)
    axis = axis % r
    dtype = data.dtype
    x = data if dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE) else ctx.op.Cast(data, to=ir.DataType.FLOAT)
    if lengths is not None:
        seg = lengths if lengths.dtype == i64 else ctx.op.Cast(lengths, to=i64)
        ends = ctx.op.CumSum(seg, ctx.const(rank(lengths) - 1))
        starts = ctx.op.Sub(ends, seg)
    elif offsets is not None:
        offs = offsets if offsets.dtype == i64 else ctx.op.Cast(offsets, to=i64)
        last = ctx.const([rank(offsets) - 1])
        starts = ctx.op.Slice(offs, ctx.const([0]), ctx.const([-1]), last)
        ends = ctx.op.Slice(offs, ctx.const([1]), ctx.const([INT64_MAX]), last)
    else:
        ctx.unsupported("segment_reduce needs lengths or offsets")
    size = ctx.op.Squeeze(ctx.op.Shape(data, start=axis, end=axis + 1), ctx.const([0]))
    pos = ctx.op.Range(ctx.const(0), size, ctx.const(1))
    minus1 = ctx.const([-1])
    mask = ctx.op.And(ctx.op.LessOrEqual(ctx.op.Unsqueeze(starts, minus1), pos),
                      ctx.op.Less(pos, ctx.op.Unsqueeze(ends, minus1)))  # (pre..., S, L)
    post = list(range(axis + 2, r + 1))
    mask_x = ctx.op.Unsqueeze(mask, ctx.const(post)) if post else mask  # (pre..., S, L, 1...)
    picked = ctx.op.Where(mask_x, ctx.op.Unsqueeze(x, ctx.const([axis])),
                          ctx.const(_SEGMENT_IDENTITY[reduce], x.dtype))
    reduce_axis = ctx.const([axis + 1])
    op = {"sum": "ReduceSum", "mean": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin"}[reduce]
    out = ctx.op.node(op, [picked, reduce_axis], {"keepdims": 0})  # (pre..., S, post...)
    init = None if initial is None else ctx.const(float(initial), x.dtype)
    if reduce == "mean":
        count = ctx.op.ReduceSum(ctx.op.Cast(mask, to=x.dtype), ctx.const([axis + 1]), keepdims=0)
        count = ctx.op.Unsqueeze(count, ctx.const([p - 1 for p in post])) if post else count
        out = ctx.op.Div(out if init is None else ctx.op.Add(out, init), count)
        if init is not None:
            out = ctx.op.Where(ctx.op.Equal(count, ctx.const(0.0, x.dtype)), init, out)
    elif init is not None:
        combine = {"sum": "Add", "prod": "Mul", "max": "Max", "min": "Min"}[reduce]
        out = ctx.op.node(combine, [out, init], {})
    return out if x is data else ctx.op.Cast(out, to=dtype)
