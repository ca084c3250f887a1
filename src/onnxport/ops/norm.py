"""Normalization layers: layer, batch, group norm, RMS norm."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops.shape import rank
from onnxport.translate.context import Ctx
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
    channels = ctx.val().shape[1] if ctx.val() is not None else None
    if weight is None:
        weight = ctx.op.Expand(ctx.const(1.0, input.dtype), ctx.shape_tensor([channels]))
    if bias is None:
        bias = ctx.op.Expand(ctx.const(0.0, input.dtype), ctx.shape_tensor([channels]))
    return ctx.op.BatchNormalization(input, weight, bias, running_mean, running_var, epsilon=float(eps))


@translates(aten.batch_norm.default)
def aten_batch_norm(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None,
    running_mean: ir.Value | None, running_var: ir.Value | None, training: bool, momentum: float,
    eps: float, cudnn_enabled: bool,
) -> ir.Value:
    """batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor"""
    if training or running_mean is None or running_var is None:
        ctx.unsupported("batch_norm in training mode (batch statistics); call model.eval() before export")
    return _batch_norm_eval(ctx, input, weight, bias, running_mean, running_var, eps)


@translates(aten._native_batch_norm_legit_no_training.default)
def aten_native_batch_norm_no_training(
    ctx: Ctx, input: ir.Value, weight: ir.Value | None, bias: ir.Value | None,
    running_mean: ir.Value, running_var: ir.Value, momentum: float, eps: float,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)"""
    out = _batch_norm_eval(ctx, input, weight, bias, running_mean, running_var, eps)
    empty = ctx.const(torch.zeros(0, dtype=torch.float32), input.dtype)
    return out, empty, empty


@translates(aten.rms_norm.default)
def aten_rms_norm(
    ctx: Ctx, input: ir.Value, normalized_shape: Sequence[int], weight: ir.Value | None = None,
    eps: float | None = None,
) -> ir.Value:
    """rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor

    x / sqrt(mean(x², normalized dims) + eps) · weight; eps defaults to the dtype's machine epsilon
    (PyTorch docs, torch.nn.functional.rms_norm).
    """
    eps = torch.finfo(ir.tensor_adapters.to_torch_dtype(input.dtype)).eps if eps is None else eps
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
    eps = torch.finfo(ir.tensor_adapters.to_torch_dtype(input.dtype)).eps if eps is None else eps
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
    affine (GroupNormalization-18's scale is per group, so it is not used).
    """
    shape = ctx.op.Shape(input)
    grouped = ctx.op.Reshape(input, ctx.shape_tensor([0, num_groups, -1]))
    one = ctx.const([1.0], input.dtype)
    zero = ctx.const([0.0], input.dtype)
    normed = ctx.op.LayerNormalization(grouped, one, zero, axis=2, epsilon=float(eps))
    out = ctx.op.Reshape(normed, shape)
    extra = [1] * (rank(input) - 2)
    if weight is not None:
        out = ctx.op.Mul(out, ctx.op.Reshape(weight, ctx.const([-1, *extra])))
    if bias is not None:
        out = ctx.op.Add(out, ctx.op.Reshape(bias, ctx.const([-1, *extra])))
    return out
