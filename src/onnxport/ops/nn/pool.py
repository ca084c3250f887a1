"""Pooling: max/avg pooling, adaptive average and max pooling."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import input_val, rank
from onnxport.ops.nn.conv import _expand
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

_AVG_POOL_TYPES = {ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16, ir.DataType.DOUBLE}
_INT64_MAX = 2**63 - 1


def _pool_attrs(n: int, kernel_size: Sequence[int], stride: Sequence[int], padding: Sequence[int] | int,
                ceil_mode: bool) -> dict:
    kernel = _expand(kernel_size, n)
    strides = _expand(stride, n) if stride else kernel  # torch: stride defaults to kernel_size
    pads = _expand(padding, n)
    return {"kernel_shape": kernel, "strides": strides, "pads": pads + pads, "ceil_mode": int(ceil_mode)}


def _batched(ctx: Ctx, x: ir.Value, n: int) -> tuple[ir.Value, bool]:
    if rank(x) == n + 1:
        return ctx.op.Unsqueeze(x, ctx.const([0])), True
    return x, False


def _max_pool_input(ctx: Ctx, x: ir.Value) -> ir.Value:
    """onnxruntime's MaxPool has float, double, float16, int8 and uint8 kernels: others (bfloat16)
    pool in float (exact: max only selects)."""
    if x.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.FLOAT16, ir.DataType.INT8, ir.DataType.UINT8):
        return x
    return ctx.op.Cast(x, to=ir.DataType.FLOAT)


@translates(aten.max_pool1d.default, aten.max_pool2d.default, aten.max_pool3d.default)
def aten_max_pool(
    ctx: Ctx, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int] = (),
    padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,), ceil_mode: bool = False,
) -> ir.Value:
    """max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor"""
    n = {aten.max_pool1d.default: 1, aten.max_pool2d.default: 2, aten.max_pool3d.default: 3}[ctx.node.target]  # type: ignore[union-attr,index]
    x, unbatched = _batched(ctx, self, n)
    attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
    work = _max_pool_input(ctx, x)
    out = ctx.op.MaxPool(work, dilations=_expand(dilation, n), **attrs)
    if work is not x:
        out = ctx.op.Cast(out, to=x.dtype)
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


@translates(aten.avg_pool1d.default, aten.avg_pool2d.default, aten.avg_pool3d.default)
def aten_avg_pool(
    ctx: Ctx, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int] = (),
    padding: Sequence[int] = (0,), ceil_mode: bool = False, count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> ir.Value:
    """avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor

    Integers (no onnxruntime kernel) pool in float: exact while window sums stay below 2**23;
    torch's integer division truncates toward zero. float64 (no onnxruntime kernel either) sums
    strided slices in float64 (:func:`_window_sums`).
    """
    n = {aten.avg_pool1d.default: 1, aten.avg_pool2d.default: 2, aten.avg_pool3d.default: 3}[ctx.node.target]  # type: ignore[union-attr,index]
    x, unbatched = _batched(ctx, self, n)
    if x.dtype == ir.DataType.DOUBLE:
        if ceil_mode:
            ctx.unsupported("float64 avg_pool with ceil_mode: onnxruntime has no float64 AveragePool; "
                            "pool a float32 tensor, or use ceil_mode=False")
        attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
        out = _window_sums(ctx, x, n, attrs, divisor=divisor_override, count_include_pad=count_include_pad)
        return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out
    integer = self.dtype not in _AVG_POOL_TYPES
    if x.dtype == ir.DataType.BFLOAT16:  # no onnxruntime AveragePool kernel: pool in float
        x = ctx.op.Cast(x, to=ir.DataType.FLOAT)
    elif integer:
        x = ctx.op.Cast(x, to=ir.DataType.FLOAT)
    attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
    if divisor_override is not None:
        # Window sum / divisor: the mean counting padding, times the kernel size, is the sum
        # (ceil_mode windows past the padding count fewer elements: explicit zero padding).
        if ceil_mode:
            mean = _mean_over_zero_padded(ctx, x, n, attrs)
        else:
            mean = ctx.op.AveragePool(x, count_include_pad=1, **attrs)
        size = 1
        for k in attrs["kernel_shape"]:
            size *= k
        if integer:  # the exact window sum, then a truncating integer division
            total = ctx.op.Cast(ctx.op.Round(ctx.op.Mul(mean, ctx.const(float(size), x.dtype))), to=self.dtype)
            out = ctx.op.Div(total, ctx.const(divisor_override, self.dtype))
        else:
            out = ctx.op.Mul(mean, ctx.const(size / divisor_override, x.dtype))
    else:
        out = ctx.op.AveragePool(x, count_include_pad=int(count_include_pad), **attrs)
        if integer:  # sum/divisor correctly rounded in float: truncating it is the integer quotient
            zero = ctx.const(0.0, ir.DataType.FLOAT)
            out = ctx.op.Cast(ctx.op.Where(ctx.op.Less(out, zero), ctx.op.Ceil(out), ctx.op.Floor(out)), to=self.dtype)
    if self.dtype == ir.DataType.BFLOAT16:
        out = ctx.op.Cast(out, to=self.dtype)
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


def _window_sums(ctx: Ctx, x: ir.Value, n: int, attrs: dict, *, divisor: int | None = None,
                 count_include_pad: bool = True) -> ir.Value:
    """Average pooling of a float64 ``x`` (N, C, *spatial) without ``AveragePool``, which
    onnxruntime 1.31 has for float only (``passes/ort_kernels.json``).

    Each kernel offset is a strided ``Slice`` of the zero-padded input (from the offset to
    ``kernel - 1 - offset`` before the end: exactly the ``floor((size - kernel) / stride) + 1``
    windows), added in the order of torch's CPU loop over the window (``AvgPoolKernel.cpp``), then
    divided by ``divisor`` (``divisor_override``), the kernel size, or — ``count_include_pad``
    False — the same sums over a padded ones mask (the elements each window holds). No ceil_mode.
    """
    kernel, strides, pads = attrs["kernel_shape"], attrs["strides"], attrs["pads"]
    axes = ctx.const(list(range(2, 2 + n)))
    steps = ctx.const(list(strides))

    def sums(t: ir.Value) -> ir.Value:
        padded = t if not any(pads) else ctx.op.Pad(t, ctx.const([0, 0, *pads[:n], 0, 0, *pads[n:]]), ctx.const(0.0, x.dtype))
        total: ir.Value | None = None
        for offset in itertools.product(*(range(k) for k in kernel)):
            ends = [-(k - 1 - o) if k - 1 - o > 0 else _INT64_MAX for k, o in zip(kernel, offset)]
            piece = ctx.op.Slice(padded, ctx.const(list(offset)), ctx.const(ends), axes, steps)
            total = piece if total is None else ctx.op.Add(total, piece)
        assert total is not None
        return total

    total = sums(x)
    if divisor is not None or count_include_pad or not any(pads):
        count = divisor if divisor is not None else int(np.prod(kernel))
        return ctx.op.Div(total, ctx.const(float(count), x.dtype))
    ones = ctx.op.ConstantOfShape(ctx.op.Shape(x), value=ir.tensor(np.ones(1, dtype=np.float64)))
    return ctx.op.Div(total, sums(ones))


def _mean_over_zero_padded(ctx: Ctx, x: ir.Value, n: int, attrs: dict) -> ir.Value:
    """Window means over x zero-padded explicitly (ceil_mode with divisor_override, static sizes).

    ceil_mode's last windows may run past the padding; there torch sums only what exists. Padding
    with zeros up to the end of the last window ((out − 1)·stride + kernel) and pooling without
    ONNX pads makes every window full-size, so mean × kernel size is torch's window sum.
    """
    spatial = list(input_val(ctx).shape)[-n:]
    out = list(ctx.val().shape)[-n:]
    if not all(isinstance(d, int) for d in (*spatial, *out)):
        ctx.unsupported("avg_pool with divisor_override and ceil_mode on dynamic spatial sizes")
    kernel, strides, pads = attrs["kernel_shape"], attrs["strides"], attrs["pads"][:n]
    tail = [max(0, (o - 1) * s + k - (size + 2 * p)) for o, s, k, size, p in zip(out, strides, kernel, spatial, pads)]
    padded = ctx.op.Pad(x, ctx.const([0, 0, *pads, 0, 0, *[p + t for p, t in zip(pads, tail)]]),
                        ctx.const(0, x.dtype))
    return ctx.op.AveragePool(padded, kernel_shape=kernel, strides=strides)


@translates(aten.adaptive_avg_pool1d.default, aten.adaptive_avg_pool2d.default, aten.adaptive_avg_pool3d.default,
            aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default)
def aten_adaptive_avg_pool(ctx: Ctx, self: ir.Value, output_size: Sequence[int]) -> ir.Value:
    """adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor

    Output 1 → GlobalAveragePool; input sizes divisible by the output sizes → AveragePool with
    kernel = stride = in/out (the bins PyTorch computes are then uniform).
    """
    n = len(output_size)
    x, unbatched = _batched(ctx, self, n)
    spatial = list(input_val(ctx).shape)[-n:]
    double = x.dtype == ir.DataType.DOUBLE  # no float64 (Global)AveragePool in onnxruntime: _window_sums
    if all(o == 1 for o in output_size):
        out = ctx.op.ReduceMean(x, ctx.const(list(range(2, 2 + n))), keepdims=1) if double else ctx.op.GlobalAveragePool(x)
    elif all(isinstance(s, int) and s % o == 0 for s, o in zip(spatial, output_size)):
        kernel = [s // o for s, o in zip(spatial, output_size)]
        out = (_window_sums(ctx, x, n, {"kernel_shape": kernel, "strides": kernel, "pads": [0] * 2 * n}) if double
               else ctx.op.AveragePool(x, kernel_shape=kernel, strides=kernel))
    else:  # PyTorch's bins, computed from the sizes at run time where they are dynamic
        out = _adaptive_bins(ctx, x, spatial, output_size)
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


def _with_indices(ctx: Ctx, n: int, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int],
                  padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool) -> tuple[ir.Value, ir.Value]:
    """MaxPool's Indices index the whole (N, C, *spatial) tensor; torch's index one (n, c) plane:
    the plane offset is removed with Mod by the plane size."""
    x, unbatched = _batched(ctx, self, n)
    attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
    work = _max_pool_input(ctx, x)
    values, indices = ctx.op.MaxPool(work, dilations=_expand(dilation, n), _outputs=2, **attrs)
    if work is not x:
        values = ctx.op.Cast(values, to=x.dtype)
    plane = ctx.op.ReduceProd(ctx.op.Shape(x, start=2), keepdims=0)
    indices = ctx.op.Mod(indices, plane)
    if unbatched:
        zero = ctx.const([0])
        return ctx.op.Squeeze(values, zero), ctx.op.Squeeze(indices, zero)
    return values, indices


@translates(aten.max_pool2d_with_indices.default)
def aten_max_pool2d_with_indices(
    ctx: Ctx, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int] = (),
    padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,), ceil_mode: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return _with_indices(ctx, 2, self, kernel_size, stride, padding, dilation, ceil_mode)


@translates(aten.max_pool3d_with_indices.default)
def aten_max_pool3d_with_indices(
    ctx: Ctx, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int] = (),
    padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,), ceil_mode: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"""
    return _with_indices(ctx, 3, self, kernel_size, stride, padding, dilation, ceil_mode)


@translates(aten.max_pool2d_with_indices_backward.default)
def aten_max_pool2d_with_indices_backward(
    ctx: Ctx, grad_output: ir.Value, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int],
    padding: Sequence[int], dilation: Sequence[int], ceil_mode: bool, indices: ir.Value,
) -> ir.Value:
    """max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor

    Each output gradient is added at its argmax (plane-local ``indices``): ScatterElements with
    reduction "add" on the flattened planes.
    """
    lead = ctx.op.Shape(self, start=0, end=-2)
    flat_shape = ctx.op.Concat(lead, ctx.const([-1]), axis=0)
    zeros = ctx.op.Reshape(ctx.op.Expand(ctx.const(0, grad_output.dtype), ctx.op.Shape(self)), flat_shape)
    grads = ctx.op.Reshape(grad_output, flat_shape)
    idx = ctx.op.Reshape(indices, flat_shape)
    out = ctx.op.ScatterElements(zeros, idx, grads, axis=rank(self) - 2, reduction="add")
    return ctx.op.Reshape(out, ctx.op.Shape(self))


@translates(aten.adaptive_max_pool2d.default, aten.adaptive_max_pool1d.default, aten.adaptive_max_pool3d.default)
def aten_adaptive_max_pool(ctx: Ctx, self: ir.Value, output_size: Sequence[int]) -> tuple[ir.Value, ir.Value]:
    """adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)

    Uniform bins (input sizes divisible by the output sizes): MaxPool with kernel = stride.
    Otherwise, static sizes: :func:`_adaptive_max_bins` gathers every bin into a window; dynamic
    sizes: :func:`_adaptive_bins` (ReduceMax per bin, bounds from ``Shape``), values only.
    """
    n = len(output_size)
    spatial = list(input_val(ctx).shape)[-n:]
    if all(isinstance(s, int) and s % o == 0 for s, o in zip(spatial, output_size)):
        kernel = [s // o for s, o in zip(spatial, output_size)]
        return _with_indices(ctx, n, self, kernel, kernel, [0] * n, [1] * n, False)
    x, unbatched = _batched(ctx, self, n)
    if all(isinstance(s, int) for s in spatial):
        values, indices = _adaptive_max_bins(ctx, x, spatial, output_size)  # type: ignore[arg-type]
    else:  # bins from the sizes at run time; the max separates over a rectangle's dims
        used = ctx.used_outputs()
        if used is None or used - {0}:
            ctx.unsupported(f"adaptive_max_pool from dynamic sizes {spatial} to {list(output_size)} with "
                            "its indices used (non-uniform bins: only the values are encoded)")
        values = _adaptive_bins(ctx, x, spatial, output_size, "ReduceMax")
        indices = ctx.op.Cast(values, to=ir.DataType.INT64)  # never read (checked above)
    if unbatched:
        zero = ctx.const([0])
        return ctx.op.Squeeze(values, zero), ctx.op.Squeeze(indices, zero)
    return values, indices


def _bins(size: int, bins: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive bins [⌊i·in/out⌋, ⌈(i+1)·in/out⌉) (aten AdaptivePooling.h)."""
    return [((i * size) // bins, -((-(i + 1) * size) // bins)) for i in range(bins)]


def _adaptive_max_bins(ctx: Ctx, x: ir.Value, spatial: Sequence[int], output_size: Sequence[int]) -> tuple[ir.Value, ir.Value]:
    """Max and plane-local argmax over PyTorch's adaptive bins, for static sizes.

    A constant (P, K) table lists, for each of the P output positions, the flat plane indices of
    its bin in row-major order, padded to the largest bin size K with the bin's first index (a
    repeat changes neither the max nor the first argmax). The planes are gathered through it
    into (N, C, P, K) windows: ReduceMax gives the values, ArgMax the window slot (first maximum,
    as torch's scan), and the table maps the slot back to the plane index torch returns.
    """
    n = len(spatial)
    bins = [_bins(s, o) for s, o in zip(spatial, output_size)]
    widths = [max(e - b for b, e in axis_bins) for axis_bins in bins]
    strides = [int(np.prod(spatial[d + 1:])) for d in range(n)]
    table = []
    for cell in itertools.product(*bins):
        row = []
        for offsets in itertools.product(*(range(w) for w in widths)):
            inside = all(b + k < e for (b, e), k in zip(cell, offsets))
            row.append(sum((b + (k if inside else 0)) * st for (b, _), k, st in zip(cell, offsets, strides)))
        table.append(row)
    table_np = np.asarray(table, dtype=np.int64)  # (P, K)
    positions, window = table_np.shape
    plane = int(np.prod(spatial))
    lead = ctx.op.Shape(x, start=0, end=2)
    flat = ctx.op.Reshape(x, ctx.op.Concat(lead, ctx.const([plane]), axis=0), allowzero=1)
    # ArgMax/ReduceMax kernels: float, double, int32; others compare in float.
    work = flat if flat.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.INT32) \
        else ctx.op.Cast(flat, to=ir.DataType.FLOAT)
    windows = ctx.op.Gather(work, ctx.const(table_np), axis=2)  # (N, C, P, K)
    values = ctx.op.ReduceMax(windows, ctx.const([3]), keepdims=0)
    slot = ctx.op.ArgMax(windows, axis=3, keepdims=0, select_last_index=0)
    slot = ctx.op.Add(slot, ctx.const(np.arange(positions, dtype=np.int64) * window))
    indices = ctx.op.Gather(ctx.const(table_np.reshape(-1)), slot, axis=0)
    if work is not flat:
        values = ctx.op.Cast(values, to=flat.dtype)
    out_shape = ctx.op.Concat(lead, ctx.const(list(output_size)), axis=0)
    return ctx.op.Reshape(values, out_shape, allowzero=1), ctx.op.Reshape(indices, out_shape, allowzero=1)


def _adaptive_bins(ctx: Ctx, x: ir.Value, spatial: Sequence[Any], output_size: Sequence[int],
                   reduce: str = "ReduceMean") -> ir.Value:
    """Mean (or max) over PyTorch's adaptive bins [⌊i·in/out⌋, ⌈(i+1)·in/out⌉) (aten
    AdaptiveAveragePooling), one spatial dim at a time: the bins are rectangles, so it separates.
    A dynamic size's bin bounds are computed from ``Shape`` at run time (int64 ``Div`` of
    non-negative values is the floor)."""
    out = x
    for d, (size, bins) in enumerate(zip(spatial, output_size)):
        axis = 2 + d
        if isinstance(size, int) and size == bins:
            continue
        if isinstance(size, int):
            bounds = [(ctx.const([start]), ctx.const([end])) for start, end in _bins(size, bins)]
        else:
            length = ctx.op.Shape(x, start=axis, end=axis + 1)
            count = ctx.const([bins])
            bounds = [
                (ctx.op.Div(ctx.op.Mul(length, ctx.const([i])), count),
                 ctx.op.Div(ctx.op.Add(ctx.op.Mul(length, ctx.const([i + 1])), ctx.const([bins - 1])), count))
                for i in range(bins)
            ]  # fmt: skip
        parts = []
        for start, end in bounds:
            piece = ctx.op.Slice(out, start, end, ctx.const([axis]))
            parts.append(ctx.op.node(reduce, [piece, ctx.const([axis])], {"keepdims": 1}))
        out = parts[0] if len(parts) == 1 else ctx.op.Concat(*parts, axis=axis)
    return out
