"""Unique values: _unique2, unique_dim and unique_consecutive (sorted output, inverse indices, counts)."""

from __future__ import annotations

import builtins

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import _HALF_TYPES, rank
from onnxport.ops.tensor.sort import _nan_as_inf
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


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
