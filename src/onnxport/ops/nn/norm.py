"""Normalization layers: layer, batch, group norm, RMS norm."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import dtype_of, rank, shape_of
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.registry import translates

aten = torch.ops.aten


def _ones_like_channels(ctx: Ctx, x: ir.Value, shape: Sequence[int | ir.Value]) -> ir.Value:
    return ctx.op.Expand(ctx.const(1.0, x.dtype), ctx.shape_tensor(list(shape)))


def _layer_norm(ctx: Ctx, input: ir.Value, normalized_shape: Sequence[int], weight: ir.Value | None,
                bias: ir.Value | None, eps: float, outputs: int) -> tuple[ir.Value, ...]:
    axis = rank(input) - len(normalized_shape)
    if weight is None:
        weight = _ones_like_channels(ctx, input, normalized_shape)
    out = ctx.op.LayerNormalization(input, weight, bias, axis=axis, epsilon=float(eps), _outputs=outputs)
    return out if isinstance(out, tuple) else (out,)


@translates(aten.layer_norm.default)
def aten_layer_norm(
    ctx: Ctx, input: ir.Value, normalized_shape: Sequence[int], weight: ir.Value | None = None,
    bias: ir.Value | None = None, eps: float = 1e-5, cudnn_enable: bool = True,
) -> ir.Value:
    """layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor"""
    return _layer_norm(ctx, input, normalized_shape, weight, bias, eps, 1)[0]


@translates(aten.native_layer_norm.default)
def aten_native_layer_norm(
    ctx: Ctx, input: ir.Value, normalized_shape: Sequence[int], weight: ir.Value | None,
    bias: ir.Value | None, eps: float,
) -> tuple[ir.Value, ...]:
    """native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)"""
    return _layer_norm(ctx, input, normalized_shape, weight, bias, eps, 3)


def _batch_norm_eval(ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None,
                     running_mean: ir.Value, running_var: ir.Value, eps: float) -> ir.Value:
    channels = ctx.op.Shape(input, start=1, end=2)
    if weight is None:
        weight = ctx.op.Expand(ctx.const(1.0, input.dtype), channels)
    if bias is None:
        bias = ctx.op.Expand(ctx.const(0.0, input.dtype), channels)
    return ctx.op.BatchNormalization(input, weight, bias, running_mean, running_var, epsilon=float(eps))


@translates(aten.batch_norm.default)
def aten_batch_norm(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None,
    running_mean: ir.Value | None, running_var: ir.Value | None, training: bool, momentum: float,
    eps: float, cudnn_enabled: bool,
) -> ir.Value:
    """batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor

    Eval mode: BatchNormalization with the running statistics. Training mode normalizes with the
    batch's mean and biased variance over every dim but 1 (PyTorch docs, BatchNorm2d); the
    running-stat update is a side effect outside this op's result, not represented (a module
    in train mode captures it through ``_native_batch_norm_legit_functional``). A 1-D input is
    one sample of C channels.
    """
    dtype = input.dtype
    if dtype == ir.DataType.BFLOAT16:  # no onnxruntime kernels for the reductions: float
        f32 = ir.DataType.FLOAT
        input = ctx.op.Cast(input, to=f32)
        weight, bias, running_mean, running_var = (
            None if v is None else ctx.op.Cast(v, to=f32) for v in (weight, bias, running_mean, running_var))
    x = input
    if rank(input) == 1:
        x = ctx.op.Unsqueeze(input, ctx.const([0]))
        x.shape = ir.Shape([1, *shape_of(input)])
    if training:
        normed, _, _ = _batch_stats(ctx, x, float(eps))
        out = _channel_affine(ctx, normed, weight, bias, rank(x))
    elif running_mean is None or running_var is None:
        ctx.unsupported("batch_norm in eval mode without running statistics")
    else:
        out = _batch_norm_eval(ctx, x, weight, bias, running_mean, running_var, eps)
    if x is not input:
        out = ctx.op.Squeeze(out, ctx.const([0]))
    return out if dtype != ir.DataType.BFLOAT16 else ctx.op.Cast(out, to=dtype)


@translates(aten._native_batch_norm_legit_no_training.default)
def aten_native_batch_norm_no_training(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None,
    running_mean: ir.Value, running_var: ir.Value, momentum: float, eps: float,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)"""
    out = _batch_norm_eval(ctx, input, weight, bias, running_mean, running_var, eps)
    empty = ctx.const(torch.zeros(0, dtype=torch.float32), input.dtype)
    return out, ctx.op.Identity(empty), ctx.op.Identity(empty)


@translates(aten.rms_norm.default)
def aten_rms_norm(
    ctx: Ctx, input: ir.Value, normalized_shape: Sequence[int], weight: ir.Value | None = None,
    eps: float | None = None,
) -> ir.Value:
    """rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor

    x / sqrt(mean(x², normalized dims) + eps) · weight; eps defaults to the dtype's machine epsilon
    (PyTorch docs, torch.nn.functional.rms_norm).
    """
    eps = torch.finfo(ir.tensor_adapters.to_torch_dtype(dtype_of(input))).eps if eps is None else eps
    axes = ctx.const(list(range(rank(input) - len(normalized_shape), rank(input))))
    ms = ctx.op.ReduceMean(ctx.op.Mul(input, input), axes, keepdims=1)
    out = ctx.op.Mul(input, ctx.op.Reciprocal(ctx.op.Sqrt(ctx.op.Add(ms, ctx.const(eps, input.dtype)))))
    return out if weight is None else ctx.op.Mul(out, weight)


@translates(aten.rms_norm.default, since=23)
def aten_rms_norm_23(
    ctx: Ctx, input: ir.Value, normalized_shape: Sequence[int], weight: ir.Value | None = None,
    eps: float | None = None,
) -> ir.Value:
    """rms_norm(...) -> Tensor: ONNX RMSNormalization (opset 23)."""
    eps = torch.finfo(ir.tensor_adapters.to_torch_dtype(dtype_of(input))).eps if eps is None else eps
    if weight is None:
        weight = _ones_like_channels(ctx, input, normalized_shape)
    return ctx.op.RMSNormalization(input, weight, axis=rank(input) - len(normalized_shape), epsilon=float(eps))


@translates(aten.group_norm.default)
def aten_group_norm(
    ctx: Ctx, input: ir.Value, num_groups: int, weight: ir.Value | None = None,
    bias: ir.Value | None = None, eps: float = 1e-5, cudnn_enabled: bool = True,
) -> ir.Value:
    """group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor

    Normalizes (N, G, -1) with LayerNormalization over the last axis, then applies the per-channel
    affine, at every opset. Not ONNX GroupNormalization: at opset 18 its scale is per group; at
    opset 21 its function body (ONNX operator spec, GroupNormalization-21) takes the variance as
    ``E[x²] - E[x]²``, which onnxruntime 1.31 runs as written (it inlines the function, having no
    CPU kernel) and which cancels in float32 when a group's mean is large against its spread: on
    x ~ N(3, 0.01²) its error against float64 was 0.029, eager's 4.4e-5, LayerNormalization's
    1.2e-7 (onnxruntime's kernel subtracts the mean first); BiT's weight-standardized layers gave
    logits 0.008 off eager through it (session 31).
    """
    shape = ctx.op.Shape(input)
    grouped = ctx.op.Reshape(input, ctx.shape_tensor([0, num_groups, -1]))
    one = ctx.const([1.0], input.dtype)
    zero = ctx.const([0.0], input.dtype)
    normed = ctx.op.LayerNormalization(grouped, one, zero, axis=2, epsilon=float(eps))
    return _channel_affine(ctx, ctx.op.Reshape(normed, shape), weight, bias, rank(input))


def _group_stats(ctx: Ctx, input: ir.Value, group: int, eps: float) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(normalized (N, G, -1), mean (N, G, 1), rstd (N, G, 1)) with biased variance."""
    grouped = ctx.op.Reshape(input, ctx.shape_tensor([0, group, -1]))
    axes = ctx.const([2])
    mean = ctx.op.ReduceMean(grouped, axes, keepdims=1)
    centered = ctx.op.Sub(grouped, mean)
    var = ctx.op.ReduceMean(ctx.op.Mul(centered, centered), axes, keepdims=1)
    rstd = ctx.op.Reciprocal(ctx.op.Sqrt(ctx.op.Add(var, ctx.const(eps, input.dtype))))
    return ctx.op.Mul(centered, rstd), mean, rstd


def _channel_affine(ctx: Ctx, out: ir.Value, weight: ir.Value | None, bias: ir.Value | None, r: int) -> ir.Value:
    extra = [1] * (r - 2)
    if weight is not None:
        out = ctx.op.Mul(out, ctx.op.Reshape(weight, ctx.const([-1, *extra])))
    if bias is not None:
        out = ctx.op.Add(out, ctx.op.Reshape(bias, ctx.const([-1, *extra])))
    return out


@translates(aten.native_group_norm.default)
def aten_native_group_norm(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None, N: int | ir.Value,
    C: int | ir.Value, HxW: int | ir.Value, group: int, eps: float,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)

    Returns (out, mean (N, group), rstd (N, group)) like ATen.
    """
    normed, mean, rstd = _group_stats(ctx, input, group, float(eps))
    out = _channel_affine(ctx, ctx.op.Reshape(normed, ctx.op.Shape(input)), weight, bias, rank(input))
    two_d = ctx.shape_tensor([0, group])
    return out, ctx.op.Reshape(mean, two_d), ctx.op.Reshape(rstd, two_d)


def _batch_stats(ctx: Ctx, input: ir.Value, eps: float) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Training-mode batch norm statistics over every dim but 1: (normalized, mean, rstd)."""
    r = rank(input)
    axes = ctx.const([0, *range(2, r)])
    mean = ctx.op.ReduceMean(input, axes, keepdims=1)
    centered = ctx.op.Sub(input, mean)
    var = ctx.op.ReduceMean(ctx.op.Mul(centered, centered), axes, keepdims=1)
    rstd = ctx.op.Reciprocal(ctx.op.Sqrt(ctx.op.Add(var, ctx.const(eps, input.dtype))))
    flat = ctx.const([-1])
    return ctx.op.Mul(centered, rstd), ctx.op.Reshape(mean, flat), ctx.op.Reshape(rstd, flat)


@translates(aten._native_batch_norm_legit.default)
def aten_native_batch_norm_legit(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None, running_mean: ir.Value,
    running_var: ir.Value, training: bool, momentum: float, eps: float,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)

    Training mode normalizes with the batch's statistics (biased variance) and returns them
    (mean, 1/√(var + eps)); the running-stat update is a buffer mutation torch.export represents
    separately. Eval mode is the BatchNormalization of ``_native_batch_norm_legit_no_training``.
    """
    if not training:
        return aten_native_batch_norm_no_training(ctx, input, weight, bias, running_mean, running_var, momentum, eps)
    return aten_native_batch_norm_legit_no_stats(ctx, input, weight, bias, training, momentum, eps)


@translates(aten._native_batch_norm_legit.no_stats)
def aten_native_batch_norm_legit_no_stats(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None, training: bool,
    momentum: float, eps: float,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)

    Half-precision inputs take their statistics in float (as torch's CPU kernel accumulates) and
    are rounded once at the end.
    """
    half = input.dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)
    x = ctx.op.Cast(input, to=ir.DataType.FLOAT) if half else input
    normed, mean, rstd = _batch_stats(ctx, x, float(eps))
    if half:
        weight, bias = (None if v is None else ctx.op.Cast(v, to=ir.DataType.FLOAT) for v in (weight, bias))
    out = _channel_affine(ctx, normed, weight, bias, rank(input))
    if not half:
        return out, mean, rstd
    vals = ctx.val()
    out_types = [ir_dtype(v.dtype) for v in vals[:3]] if isinstance(vals, (tuple, list)) else [input.dtype] * 3
    return tuple(v if t == ir.DataType.FLOAT else ctx.op.Cast(v, to=t)  # type: ignore[return-value]
                 for v, t in zip((out, mean, rstd), out_types))


@translates(aten.instance_norm.default)
def aten_instance_norm(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None, running_mean: ir.Value | None,
    running_var: ir.Value | None, use_input_stats: bool, momentum: float, eps: float, cudnn_enabled: bool,
) -> ir.Value:
    """instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor

    With input statistics: ONNX InstanceNormalization (per-(N, C) mean and biased variance).
    """
    if not use_input_stats:
        if running_mean is None or running_var is None:
            ctx.unsupported("instance_norm without input statistics needs running stats")
        return _batch_norm_eval(ctx, input, weight, bias, running_mean, running_var, eps)
    channels = ctx.op.Shape(input, start=1, end=2)
    scale = weight if weight is not None else ctx.op.Expand(ctx.const([1.0], input.dtype), channels)
    shift = bias if bias is not None else ctx.op.Expand(ctx.const([0.0], input.dtype), channels)
    return ctx.op.InstanceNormalization(input, scale, shift, epsilon=float(eps))


def _updated_running(ctx: Ctx, input: ir.Value, mean: ir.Value, rstd: ir.Value, running_mean: ir.Value,
                     running_var: ir.Value, momentum: float, eps: float) -> tuple[ir.Value, ir.Value]:
    """(1 − m)·running + m·batch, the variance unbiased by n/(n − 1) (PyTorch docs, BatchNorm)."""
    r = rank(input)
    n = ctx.op.ReduceProd(ctx.op.Gather(ctx.op.Shape(input), ctx.const([0, *range(2, r)]), axis=0), keepdims=0)
    n = ctx.op.Cast(n, to=input.dtype)
    var = ctx.op.Sub(ctx.op.Reciprocal(ctx.op.Mul(rstd, rstd)), ctx.const(eps, input.dtype))
    unbiased = ctx.op.Div(ctx.op.Mul(var, n), ctx.op.Max(ctx.op.Sub(n, ctx.const(1, input.dtype)), ctx.const(1, input.dtype)))
    m = ctx.const(momentum, input.dtype)
    keep = ctx.const(1 - momentum, input.dtype)
    new_mean = ctx.op.Add(ctx.op.Mul(running_mean, keep), ctx.op.Mul(mean, m))
    new_var = ctx.op.Add(ctx.op.Mul(running_var, keep), ctx.op.Mul(unbiased, m))
    return new_mean, new_var


@translates(aten._native_batch_norm_legit_functional.default)
def aten_native_batch_norm_legit_functional(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None, running_mean: ir.Value,
    running_var: ir.Value, training: bool, momentum: float, eps: float,
) -> tuple[ir.Value, ...]:
    """_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)"""
    return _as_declared(ctx, _functional(ctx, input, weight, bias, running_mean, running_var, training, momentum, eps))


def _functional(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None, running_mean: ir.Value,
    running_var: ir.Value, training: bool, momentum: float, eps: float,
) -> tuple[ir.Value, ...]:
    if not training:
        out, a, b = aten_native_batch_norm_no_training(ctx, input, weight, bias, running_mean, running_var, momentum, eps)
        return out, a, b, ctx.op.Identity(running_mean), ctx.op.Identity(running_var)
    out, mean, rstd = aten_native_batch_norm_legit_no_stats(ctx, input, weight, bias, True, momentum, eps)
    new_mean, new_var = _updated_running(ctx, input, mean, rstd, running_mean, running_var, momentum, float(eps))
    return out, mean, rstd, new_mean, new_var


def _as_declared(ctx: Ctx, outs: Sequence[ir.Value]) -> tuple[ir.Value, ...]:
    """Cast outputs to the dtypes torch declares: a half-precision batch norm's functional form
    reports its running statistics in float32 (the decomposition's opmath), not the input's dtype."""
    vals = ctx.val()
    if not isinstance(vals, (tuple, list)):
        return tuple(outs)
    return tuple(
        v if not isinstance(m, torch.Tensor) or v.dtype == ir_dtype(m.dtype) else ctx.op.Cast(v, to=ir_dtype(m.dtype))
        for v, m in zip(outs, vals))


@translates(aten._batch_norm_with_update_functional.default)
def aten_batch_norm_with_update_functional(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None, running_mean: ir.Value,
    running_var: ir.Value, momentum: float, eps: float,
) -> tuple[ir.Value, ...]:
    """_batch_norm_with_update_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)"""
    out, mean, rstd, new_mean, new_var = _functional(
        ctx, input, weight, bias, running_mean, running_var, True, momentum, eps)
    reserve = ctx.const(torch.zeros(0, dtype=torch.uint8))
    return _as_declared(ctx, (out, mean, rstd, reserve, new_mean, new_var))
