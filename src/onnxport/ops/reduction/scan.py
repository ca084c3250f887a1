"""Cumulative (scan) ops along a dim: cumsum, cumprod, logcumsumexp, cummax, cummin."""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops._common import rank
from onnxport.ops.reduction.reduce import _in_dtype
from onnxport.ops.tensor.sort import _TOPK_TYPES
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.cumprod.default)
def aten_cumprod(ctx: Ctx, self: ir.Value, dim: int, *, dtype: Any = None) -> ir.Value:
    """cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor

    ONNX has no CumProd: a masked product over a lower-triangular (n, n) selection along ``dim``
    (``out[i] = Π_{j≤i} x[j]``), with ones where j > i; exact, including zeros and signs.
    """
    out_dtype = ctx.out_dtype()
    x = self if self.dtype == out_dtype else ctx.op.Cast(self, to=out_dtype)
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(x)
    axis = dim % r
    n = ctx.op.Shape(x, start=axis, end=axis + 1)
    # x moved to the last axis, then (..., 1, n) against a (n, n) lower-triangular mask.
    perm = [i for i in range(r) if i != axis] + [axis]
    xt = ctx.op.Transpose(x, perm=perm) if axis != r - 1 else x
    tri = ctx.op.Trilu(ctx.op.Expand(ctx.const(True), ctx.op.Concat(n, n, axis=0)), upper=0)
    rows = ctx.op.Unsqueeze(xt, ctx.const([-2]))  # (..., 1, n)
    work = rows if out_dtype not in (ir.DataType.BOOL,) else ctx.op.Cast(rows, to=ir.DataType.INT64)
    picked = ctx.op.Where(tri, work, ctx.const(1, work.dtype))  # (..., n, n)
    prod = ctx.op.ReduceProd(picked, ctx.const([-1]), keepdims=0)
    if work is not rows:
        prod = ctx.op.Cast(prod, to=out_dtype)
    if axis == r - 1:
        return prod
    return ctx.op.Transpose(prod, perm=[perm.index(i) for i in range(r)])


@translates(aten.logcumsumexp.default)
def aten_logcumsumexp(ctx: Ctx, self: ir.Value, dim: int) -> ir.Value:
    """logcumsumexp(Tensor self, int dim) -> Tensor: m + log(cumsum(exp(x − m))), m the max along dim."""
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self)
    axis = ctx.const([dim % r])
    m = ctx.op.ReduceMax(self, axis, keepdims=1)
    m = ctx.op.Where(ctx.op.IsInf(m), ctx.const(0, self.dtype), m)
    return ctx.op.Add(ctx.op.Log(ctx.op.CumSum(ctx.op.Exp(ctx.op.Sub(self, m)), ctx.const(dim % r))), m)


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


@translates(aten.cumsum.default)
def aten_cumsum(ctx: Ctx, self: ir.Value, dim: int, *, dtype: Any = None) -> ir.Value:
    """cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor (bool/int inputs sum as int64)."""
    x = _in_dtype(ctx, self)
    if rank(x) == 0:
        return ctx.op.Identity(x)
    return ctx.op.CumSum(x, ctx.const(dim % rank(x)))
