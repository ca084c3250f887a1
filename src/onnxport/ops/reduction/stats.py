"""Order and moment statistics: var/var_mean over dims, median/nanmedian (whole tensor and along a dim)
and mode."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import _FLOAT_TYPES, rank
from onnxport.ops.reduction.reduce import aten_var, mean_nan_if_empty
from onnxport.ops.tensor.sort import _float_work, _nan_as_inf, _topk
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.var.dim)
def aten_var_dim(ctx: Ctx, self: ir.Value, dim: Sequence[int] | None = None, unbiased: bool = True, keepdim: bool = False) -> ir.Value:
    """var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return aten_var(ctx, self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


@translates(aten.var_mean.correction)
def aten_var_mean(
    ctx: Ctx, self: ir.Value, dim: Sequence[int] | None = None, *, correction: float | None = None, keepdim: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    if self.dtype == ir.DataType.BFLOAT16:  # no onnxruntime bfloat16 reductions: in float
        var, mean = aten_var_mean(ctx, ctx.op.Cast(self, to=ir.DataType.FLOAT), dim, correction=correction,
                                  keepdim=keepdim)
        return ctx.op.Cast(var, to=self.dtype), ctx.op.Cast(mean, to=self.dtype)
    var = aten_var(ctx, self, dim, correction=correction, keepdim=keepdim)
    if rank(self) == 0:
        return var, ctx.op.Identity(self)
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return var, mean_nan_if_empty(ctx, self, None, keepdim)
    dims = [dim] if isinstance(dim, int) else list(dim)
    return var, mean_nan_if_empty(ctx, self, ctx.const([d % rank(self) for d in dims]), keepdim)


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
