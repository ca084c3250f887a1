"""Tensor creation: arange, linspace, full, zeros/ones (and their _like / new_ variants), scalar_tensor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


def _scalar(ctx: Ctx, value: Any, dtype: ir.DataType) -> ir.Value:
    if isinstance(value, ir.Value):
        return value if value.dtype == dtype else ctx.op.Cast(value, to=dtype)
    return ctx.const(value, dtype)


@translates(aten.arange.default, aten.arange.start, aten.arange.start_step)
def aten_arange(ctx: Ctx, *args: Any, **kwargs: Any) -> ir.Value:
    """arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, ...) -> Tensor

    Also arange.default(Scalar end, ...) and arange.start(Scalar start, Scalar end, ...).
    """
    numbers: list[int | float | ir.Value] = [a for a in args if isinstance(a, (int, float, ir.Value))]
    start: int | float | ir.Value
    end: int | float | ir.Value
    step: int | float | ir.Value
    if len(numbers) == 1:
        start, end, step = 0, numbers[0], 1
    elif len(numbers) == 2:
        start, end, step = numbers[0], numbers[1], 1
    else:
        start, end, step = numbers[:3]
    dtype = ctx.out_dtype()
    if isinstance(start, int) and isinstance(end, int) and isinstance(step, int):
        return ctx.op.Identity(ctx.const(np.arange(start, end, step), dtype))
    return ctx.op.Range(_scalar(ctx, start, dtype), _scalar(ctx, end, dtype), _scalar(ctx, step, dtype))


@translates(aten.linspace.default)
def aten_linspace(ctx: Ctx, start: Any, end: Any, steps: int | ir.Value, **kwargs: Any) -> ir.Value:
    """linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, ...) -> Tensor

    As torch's CPU kernel (``aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp``, ``linspace_kernel``;
    ``RangeFactories.cpp`` fills ``[start]`` when ``steps == 1``): ``start`` and ``end`` are first
    converted to the output type (an integer type truncates them); ``step = (end - start) / (steps -
    1)``; the first ``steps // 2`` points are ``start + step·i``, the others ``end - step·(steps - 1
    - i)``, truncated toward zero for an integer output. Computed in float64: the kernel computes
    integer outputs in double, float32 ones with fused multiply-adds (which float64 reproduces; its
    vectorized loop for long outputs differs by an ulp) and half-precision ones in float (an ulp
    apart at most). ``steps`` may be symbolic.
    """
    dtype = ctx.out_dtype()
    if isinstance(steps, int) and not isinstance(start, ir.Value) and not isinstance(end, ir.Value):
        return ctx.op.Identity(ctx.const(torch.linspace(start, end, steps, dtype=ctx.val().dtype)))  # eager's own
    wide = ir.DataType.DOUBLE

    def to_output(v: ir.Value) -> ir.Value:  # v in the output type (Cast truncates toward zero, as C++ does)
        return v if dtype == wide else ctx.op.Cast(v, to=dtype)

    n = _scalar(ctx, steps, ir.DataType.INT64)
    lo, hi = (ctx.op.Cast(to_output(_scalar(ctx, x, wide)), to=wide) for x in (start, end))
    index = ctx.op.Range(ctx.const(0), n, ctx.const(1))
    step = ctx.op.Div(ctx.op.Sub(hi, lo), ctx.op.Cast(ctx.op.Max(ctx.op.Sub(n, ctx.const(1)), ctx.const(1)), to=wide))
    first_half = ctx.op.Less(index, ctx.op.Max(ctx.op.Div(n, ctx.const(2)), ctx.const(1)))  # steps == 1: [start]
    from_start = ctx.op.Add(lo, ctx.op.Mul(step, ctx.op.Cast(index, to=wide)))
    from_end = ctx.op.Sub(hi, ctx.op.Mul(step, ctx.op.Cast(ctx.op.Sub(ctx.op.Sub(n, ctx.const(1)), index), to=wide)))
    return to_output(ctx.op.Where(first_half, from_start, from_end))


def _filled(ctx: Ctx, shape: ir.Value, fill: Any) -> ir.Value:
    dtype = ctx.out_dtype()
    if dtype == ir.DataType.BFLOAT16:  # onnxruntime has no bfloat16 Expand: expand in float, cast
        return ctx.op.Cast(ctx.op.Expand(_scalar(ctx, fill, ir.DataType.FLOAT), shape), to=dtype)
    value = _scalar(ctx, fill, dtype)
    return ctx.op.Expand(value, shape)


@translates(aten.full.default)
def aten_full(ctx: Ctx, size: Sequence[int | ir.Value], fill_value: Any, **kwargs: Any) -> ir.Value:
    """full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.shape_tensor(list(size)), fill_value)


@translates(aten.zeros.default, aten.empty.memory_format)
def aten_zeros(ctx: Ctx, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """zeros(SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor (empty gives zeros)."""
    return _filled(ctx, ctx.shape_tensor(list(size)), 0)


@translates(aten.ones.default)
def aten_ones(ctx: Ctx, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """ones(SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.shape_tensor(list(size)), 1)


@translates(aten.new_ones.default)
def aten_new_ones(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.shape_tensor(list(size)), 1)


@translates(aten.new_zeros.default, aten.new_empty.default)
def aten_new_zeros(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.shape_tensor(list(size)), 0)


@translates(aten.new_full.default)
def aten_new_full(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], fill_value: Any, **kwargs: Any) -> ir.Value:
    """new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.shape_tensor(list(size)), fill_value)


@translates(aten.full_like.default)
def aten_full_like(ctx: Ctx, self: ir.Value, fill_value: Any, **kwargs: Any) -> ir.Value:
    """full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.op.Shape(self), fill_value)


@translates(aten.zeros_like.default, aten.empty_like.default)
def aten_zeros_like(ctx: Ctx, self: ir.Value, **kwargs: Any) -> ir.Value:
    """zeros_like(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.op.Shape(self), 0)


@translates(aten.ones_like.default)
def aten_ones_like(ctx: Ctx, self: ir.Value, **kwargs: Any) -> ir.Value:
    """ones_like(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _filled(ctx, ctx.op.Shape(self), 1)


@translates(aten.scalar_tensor.default)
def aten_scalar_tensor(ctx: Ctx, s: Any, **kwargs: Any) -> ir.Value:
    """scalar_tensor(Scalar s, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _scalar(ctx, s, ctx.out_dtype()) if isinstance(s, ir.Value) else ctx.op.Identity(ctx.const(s, ctx.out_dtype()))


@translates(aten.tril_indices.default, aten.triu_indices.default)
def aten_tril_indices(ctx: Ctx, row: int, col: int, offset: int = 0, **kwargs: Any) -> ir.Value:
    """tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor

    Also triu_indices. Every argument is static: the (2, N) coordinates are a constant.
    """
    if not all(isinstance(v, int) for v in (row, col, offset)):
        ctx.unsupported("tril_indices/triu_indices with symbolic sizes")
    fn = torch.tril_indices if ctx.node is not None and ctx.node.target is aten.tril_indices.default else torch.triu_indices
    return ctx.op.Identity(ctx.const(fn(row, col, offset), ctx.out_dtype()))
