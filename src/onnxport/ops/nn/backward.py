"""The backward ops of the Core ATen set (gradients of pooling, convolution and normalization),
translated from their closed-form derivatives.

Pooling gradients are linear maps with constant coefficients once the spatial sizes are static:
average pooling along one axis is a constant (out × in) matrix P, the pooled plane is P_h · X · P_wᵀ,
and its gradient is P_hᵀ · G · P_w (two MatMuls). Convolution gradients are convolutions again
(the input gradient is the adjoint convolution, the weight gradient a correlation of the input with
the output gradient). Normalization gradients use the closed form of the derivative of
x̂ = (x − μ)·rstd through the mean and the variance.

An output not requested by ``output_mask`` (or that ATen's meta function reports as undefined) is
returned as ``None``, like ATen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops._common import rank, static_dims
from onnxport.ops.nn.conv import _expand
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.registry import translates

aten = torch.ops.aten

_HALF = (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)


def _wanted(ctx: Ctx, output_mask: Sequence[bool]) -> list[bool]:
    """Which outputs to produce: requested by ``output_mask`` and defined in the node's FakeTensors
    (ATen's meta functions return None for, e.g., a layer-norm weight gradient without weight)."""
    vals = ctx.val() if ctx.node is not None else None
    if not isinstance(vals, (tuple, list)):
        vals = [True] * len(output_mask)
    return [bool(m) and v is not None for m, v in zip(output_mask, vals)]


def _out_dtypes(ctx: Ctx, default: ir.DataType | None) -> list[ir.DataType | None]:
    vals = ctx.val() if ctx.node is not None else None
    if not isinstance(vals, (tuple, list)):
        return [default] * 3
    return [default if v is None else ir_dtype(v.dtype) for v in vals]


# -- pooling --------------------------------------------------------------------------------------


def _adaptive_matrix(size: int, bins: int) -> torch.Tensor:
    """(bins × size) averaging matrix of adaptive average pooling along one axis: row i averages
    [⌊i·size/bins⌋, ⌈(i+1)·size/bins⌉) (start_index / end_index in PyTorch's
    aten/src/ATen/native/AdaptivePooling.h)."""
    m = torch.zeros(bins, size, dtype=torch.float64)
    for i in range(bins):
        start = (i * size) // bins
        end = -((-(i + 1) * size) // bins)
        m[i, start:end] = 1.0 / (end - start)
    return m


def _avg_matrix(size: int, bins: int, kernel: int, stride: int, pad: int, count_include_pad: bool,
                scale: float | None) -> torch.Tensor:
    """(bins × size) matrix of avg_pool along one axis, per PyTorch's CPU kernel
    (aten/src/ATen/native/cpu/AvgPoolKernel.cpp): window [i·stride − pad, +kernel) clipped to
    in + pad gives the pool size counted with padding; clipped to [0, in) the elements summed and,
    without count_include_pad, the divisor. ``scale`` (1/divisor_override) replaces the divisor.

    Both divisors are products of one factor per axis ((h1 − h0)·(w1 − w0)), and a constant divisor
    can be put on one axis, so the 2-D average is separable into one matrix per axis.
    """
    m = torch.zeros(bins, size, dtype=torch.float64)
    for i in range(bins):
        start = i * stride - pad
        end = min(start + kernel, size + pad)
        pool = end - start
        start, end = max(start, 0), min(end, size)
        count = pool if count_include_pad else end - start
        if end > start:
            m[i, start:end] = scale if scale is not None else 1.0 / count
    return m


def _separable_backward(ctx: Ctx, grad: ir.Value, rows: torch.Tensor, cols: torch.Tensor) -> ir.Value:
    """rowsᵀ · G · cols over the last two axes (MatMul broadcasts the leading ones)."""
    left = ctx.const(rows.t().contiguous(), grad.dtype)
    right = ctx.const(cols.contiguous(), grad.dtype)
    return ctx.op.MatMul(ctx.op.MatMul(left, grad), right)


def _check_float(ctx: Ctx, grad: ir.Value) -> None:
    if grad.dtype is not None and not grad.dtype.is_floating_point():
        ctx.unsupported(f"pooling gradient of dtype {grad.dtype}: the averaging matrices are fractional")


@translates(aten._adaptive_avg_pool2d_backward.default)
def aten_adaptive_avg_pool2d_backward(ctx: Ctx, grad_output: ir.Value, self: ir.Value) -> ir.Value:
    """_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor

    With static sizes, adaptive average pooling is Y = P_h · X · P_wᵀ per plane, P the constant
    averaging matrices of PyTorch's bins (aten/src/ATen/native/AdaptivePooling.h); its gradient is
    P_hᵀ · G · P_w: two MatMuls with constant matrices.
    """
    _check_float(ctx, grad_output)
    height, width = static_dims(ctx, self, "_adaptive_avg_pool2d_backward", slice(-2, None))
    out_h, out_w = static_dims(ctx, grad_output, "_adaptive_avg_pool2d_backward", slice(-2, None))
    return _separable_backward(ctx, grad_output, _adaptive_matrix(height, out_h), _adaptive_matrix(width, out_w))


@translates(aten.avg_pool2d_backward.default)
def aten_avg_pool2d_backward(
    ctx: Ctx, grad_output: ir.Value, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int],
    padding: Sequence[int], ceil_mode: bool, count_include_pad: bool, divisor_override: int | None,
) -> ir.Value:
    """avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor

    avg_pool2d is separable (see ``_avg_matrix``): Y = P_h · X · P_wᵀ per plane with constant
    matrices holding PyTorch's divisors (aten/src/ATen/native/cpu/AvgPoolKernel.cpp), so the
    gradient is P_hᵀ · G · P_w. The output sizes, ceil_mode included, are those of ``grad_output``.
    """
    _check_float(ctx, grad_output)
    kernel = _expand(kernel_size, 2)
    strides = _expand(stride, 2) if stride else kernel  # torch: stride defaults to kernel_size
    pads = _expand(padding, 2)
    height, width = static_dims(ctx, self, "avg_pool2d_backward", slice(-2, None))
    out_h, out_w = static_dims(ctx, grad_output, "avg_pool2d_backward", slice(-2, None))
    scale = None if divisor_override is None else 1.0 / divisor_override
    rows = _avg_matrix(height, out_h, kernel[0], strides[0], pads[0], count_include_pad, scale)
    cols = _avg_matrix(width, out_w, kernel[1], strides[1], pads[1], count_include_pad,
                       None if scale is None else 1.0)
    return _separable_backward(ctx, grad_output, rows, cols)


# -- convolution ----------------------------------------------------------------------------------


def _weight_grad(ctx: Ctx, x: ir.Value, grad: ir.Value, x_channels: int, x_spatial: Sequence[int],
                 grad_spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                 pads: Sequence[int], dilations: Sequence[int], groups: int) -> ir.Value:
    """dW[a, b, k] = Σ_{n,o} grad[n, a, o] · x[n, group(a)·C_x/g + b, o·s − p + k·d], shape
    (C_grad, C_x/g, *kernel): a convolution of x (batch and channel axes swapped, the batch folded
    into the channels of each group) with grad (batch and channel axes swapped) as the kernel,
    stride and dilation exchanged: the kernel gradient g(G, V, s) of Goodfellow, Bengio & Courville,
    "Deep Learning" (2016), section 9.5, with padding, dilation and groups.
    """
    n = len(kernel)
    spatial = list(range(2, n + 2))
    if groups == 1:
        xt = ctx.op.Transpose(x, perm=[1, 0, *spatial])
    else:
        per_group = x_channels // groups
        split = ctx.op.Reshape(x, ctx.const([0, groups, per_group, *x_spatial]))
        swapped = ctx.op.Transpose(split, perm=[2, 1, 0, *(a + 1 for a in spatial)])
        xt = ctx.op.Reshape(swapped, ctx.const([per_group, -1, *x_spatial]))
    gt = ctx.op.Transpose(grad, perm=[1, 0, *spatial])
    corr = ctx.op.Conv(xt, gt, strides=list(dilations), dilations=list(strides), pads=[*pads, *pads], group=groups)
    # The correlation may reach past the kernel (the forward's floor dropped the input's tail).
    full = [(i + 2 * p - s * (o - 1) - 1) // d + 1
            for i, p, s, o, d in zip(x_spatial, pads, strides, grad_spatial, dilations)]
    if full != list(kernel):
        corr = ctx.op.Slice(corr, ctx.const([0] * n), ctx.const(list(kernel)), ctx.const(spatial))
    return ctx.op.Transpose(corr, perm=[1, 0, *spatial])


@translates(aten.convolution_backward.default)
def aten_convolution_backward(
    ctx: Ctx, grad_output: ir.Value, input: ir.Value, weight: ir.Value, bias_sizes: Sequence[int] | None,
    stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int], transposed: bool,
    output_padding: Sequence[int], groups: int, output_mask: Sequence[bool],
) -> tuple[ir.Value | None, ir.Value | None, ir.Value | None]:
    """convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)

    Convolution is linear in its input and in its weight (Goodfellow, Bengio & Courville, "Deep
    Learning", 2016, section 9.5: the gradients h(K, G, s) and g(G, V, s)): the input gradient is
    the adjoint operator, ConvTranspose with the same weight for a
    convolution (its output_padding restoring the input rows the forward's floor dropped) and Conv
    for a transposed convolution; the weight gradient is a correlation of the input with the output
    gradient (``_weight_grad``; for a transposed convolution input and output gradient exchange
    roles); the bias gradient sums the output gradient over all axes but the channels.
    Static spatial sizes are needed to size the adjoint.
    """
    want = _wanted(ctx, output_mask)
    n = rank(weight) - 2
    if rank(input) != n + 2:
        ctx.unsupported("convolution_backward of an unbatched input")
    strides, pads = _expand(stride, n), _expand(padding, n)
    dilations = _expand(dilation, n)  # output_padding is implied by the static sizes of input and grad_output
    groups = int(groups)
    in_spatial = static_dims(ctx, input, "convolution_backward", slice(2, None))
    out_spatial = static_dims(ctx, grad_output, "convolution_backward", slice(2, None))
    kernel = static_dims(ctx, weight, "convolution_backward", slice(2, None))
    in_channels, out_channels = (static_dims(ctx, v, "convolution_backward", slice(1, 2))[0]
                                 for v in (input, grad_output))
    spatial_axes = list(range(2, n + 2))
    attrs = {"strides": strides, "pads": pads + pads, "dilations": dilations, "group": groups}

    grad_input = grad_weight = grad_bias = None
    if want[0]:
        if not transposed:
            # ConvTranspose size: (o − 1)·s − 2p + d·(k − 1) + 1 + output_padding = in.
            extra = [i + 2 * p - d * (k - 1) - 1 - (o - 1) * s
                     for i, p, d, k, o, s in zip(in_spatial, pads, dilations, kernel, out_spatial, strides)]
            grad_input = ctx.op.ConvTranspose(grad_output, weight, output_padding=extra, **attrs)
        else:
            grad_input = ctx.op.Conv(grad_output, weight, **attrs)
            # Conv size ⌊(o + 2p − d·(k − 1) − 1)/s⌋ + 1 exceeds in when output_padding ≥ stride.
            full = [(o + 2 * p - d * (k - 1) - 1) // s + 1
                    for o, p, d, k, s in zip(out_spatial, pads, dilations, kernel, strides)]
            if full != in_spatial:
                grad_input = ctx.op.Slice(grad_input, ctx.const([0] * n), ctx.const(in_spatial),
                                          ctx.const(spatial_axes))
    if want[1]:
        if not transposed:
            grad_weight = _weight_grad(ctx, input, grad_output, in_channels, in_spatial, out_spatial, kernel,
                                       strides, pads, dilations, groups)
        else:
            grad_weight = _weight_grad(ctx, grad_output, input, out_channels, out_spatial, in_spatial, kernel,
                                       strides, pads, dilations, groups)
    if want[2]:
        grad_bias = ctx.op.ReduceSum(grad_output, ctx.const([0, *spatial_axes]), keepdims=0)
    return grad_input, grad_weight, grad_bias


# -- normalization --------------------------------------------------------------------------------


def _upcast(ctx: Ctx, *values: ir.Value | None) -> list[Any]:
    """float16/bfloat16 operands in float32 (ATen's opmath type for these kernels)."""
    return [v if v is None or v.dtype not in _HALF else ctx.op.Cast(v, to=ir.DataType.FLOAT) for v in values]


def _cast_to(ctx: Ctx, value: ir.Value | None, dtype: ir.DataType | None) -> ir.Value | None:
    if value is None or dtype is None or value.dtype == dtype:
        return value
    return ctx.op.Cast(value, to=dtype)


def _normalized_input_grad(ctx: Ctx, g: ir.Value, xhat: ir.Value, rstd: ir.Value, axes: ir.Value) -> ir.Value:
    """dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)), means over the normalized axes, g = dy·γ:
    the derivative of x̂ = (x − μ)·rstd through μ and σ² (Ioffe & Szegedy 2015, section 3, for the
    batch axes; Ba et al. 2016 "Layer Normalization" apply it to the feature axes)."""
    mean_g = ctx.op.ReduceMean(g, axes, keepdims=1)
    mean_gx = ctx.op.ReduceMean(ctx.op.Mul(g, xhat), axes, keepdims=1)
    return ctx.op.Mul(rstd, ctx.op.Sub(ctx.op.Sub(g, mean_g), ctx.op.Mul(xhat, mean_gx)))


@translates(aten.native_layer_norm_backward.default)
def aten_native_layer_norm_backward(
    ctx: Ctx, grad_out: ir.Value, input: ir.Value, normalized_shape: Sequence[int], mean: ir.Value,
    rstd: ir.Value, weight: ir.Value | None, bias: ir.Value | None, output_mask: Sequence[bool],
) -> tuple[ir.Value | None, ir.Value | None, ir.Value | None]:
    """native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)

    With x̂ = (x − mean)·rstd over the normalized (trailing) axes and the saved mean and rstd:
    dx = rstd·(dy·γ − mean(dy·γ) − x̂·mean(dy·γ·x̂)), dγ = Σ_lead dy·x̂, dβ = Σ_lead dy — the
    closed form PyTorch's aten/src/ATen/native/cpu/layer_norm_kernel.cpp evaluates (Ba et al. 2016).
    float16/bfloat16 are computed in float32 like ATen's opmath.
    """
    want = _wanted(ctx, output_mask)
    dtypes = _out_dtypes(ctx, input.dtype)
    r = rank(input)
    first = r - len(normalized_shape)
    dy, x, mean, rstd, weight = _upcast(ctx, grad_out, input, mean, rstd, weight)
    xhat = ctx.op.Mul(ctx.op.Sub(x, mean), rstd)
    lead = ctx.const(list(range(first)))

    def over_lead(v: ir.Value) -> ir.Value:  # ReduceSum with no axes would reduce them all
        return ctx.op.ReduceSum(v, lead, keepdims=0) if first > 0 else v

    dx = dw = db = None
    if want[0]:
        g = dy if weight is None else ctx.op.Mul(dy, weight)
        dx = _normalized_input_grad(ctx, g, xhat, rstd, ctx.const(list(range(first, r))))
    if want[1]:
        dw = over_lead(ctx.op.Mul(dy, xhat))
    if want[2]:
        db = over_lead(dy)
    return _cast_to(ctx, dx, dtypes[0]), _cast_to(ctx, dw, dtypes[1]), _cast_to(ctx, db, dtypes[2])


@translates(aten.native_group_norm_backward.default)
def aten_native_group_norm_backward(
    ctx: Ctx, grad_out: ir.Value, input: ir.Value, mean: ir.Value, rstd: ir.Value, weight: ir.Value | None,
    N: int | ir.Value, C: int | ir.Value, HxW: int | ir.Value, group: int, output_mask: Sequence[bool],
) -> tuple[ir.Value | None, ir.Value | None, ir.Value | None]:
    """native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)

    The layer-norm closed form per (sample, group) on the (N, group, C/group·HxW) view, with the
    saved (N, group) mean and rstd and γ per channel (Wu & He 2018, "Group Normalization";
    PyTorch's aten/src/ATen/native/cpu/group_norm_kernel.cpp): dx = rstd·(g − mean(g) −
    x̂·mean(g·x̂)), g = dy·γ; dγ = Σ_{n,hw} dy·x̂, dβ = Σ_{n,hw} dy. float16/bfloat16 are computed in
    float32.
    """
    want = _wanted(ctx, output_mask)
    dtypes = _out_dtypes(ctx, input.dtype)
    r = rank(input)
    group = int(group)
    dy, x, mean, rstd, weight = _upcast(ctx, grad_out, input, mean, rstd, weight)
    grouped = ctx.const([0, group, -1])
    stat_shape = ctx.const([0, group, 1])
    mean3, rstd3 = ctx.op.Reshape(mean, stat_shape), ctx.op.Reshape(rstd, stat_shape)
    xhat = ctx.op.Mul(ctx.op.Sub(ctx.op.Reshape(x, grouped), mean3), rstd3)
    shape = ctx.op.Shape(input)
    reduce_axes = ctx.const([0, *range(2, r)])

    dx = dw = db = None
    if want[0]:
        g = dy if weight is None else ctx.op.Mul(dy, ctx.op.Reshape(weight, ctx.const([-1, *[1] * (r - 2)])))
        dxg = _normalized_input_grad(ctx, ctx.op.Reshape(g, grouped), xhat, rstd3, ctx.const([2]))
        dx = ctx.op.Reshape(dxg, shape)
    if want[1]:
        dw = ctx.op.ReduceSum(ctx.op.Mul(dy, ctx.op.Reshape(xhat, shape)), reduce_axes, keepdims=0)
    if want[2]:
        db = ctx.op.ReduceSum(dy, reduce_axes, keepdims=0)
    return _cast_to(ctx, dx, dtypes[0]), _cast_to(ctx, dw, dtypes[1]), _cast_to(ctx, db, dtypes[2])
