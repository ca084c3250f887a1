"""Activation functions and softmax."""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.gelu.default)
def aten_gelu(ctx: Ctx, self: ir.Value, *, approximate: str = "none") -> ir.Value:
    """gelu(Tensor self, *, str approximate="none") -> Tensor

    Below opset 20 (no ONNX Gelu): 0.5·x·(1 + erf(x/√2)), or the tanh form for "tanh"
    (PyTorch docs, torch.nn.GELU).
    """
    half = ctx.const(0.5, self.dtype)
    one = ctx.const(1.0, self.dtype)
    if approximate == "tanh":
        inner = ctx.op.Mul(
            ctx.const(math.sqrt(2 / math.pi), self.dtype),
            ctx.op.Add(self, ctx.op.Mul(ctx.const(0.044715, self.dtype), ctx.op.Mul(self, ctx.op.Mul(self, self)))),
        )
        return ctx.op.Mul(ctx.op.Mul(half, self), ctx.op.Add(one, ctx.op.Tanh(inner)))
    erf = ctx.op.Erf(ctx.op.Mul(self, ctx.const(1 / math.sqrt(2), self.dtype)))
    return ctx.op.Mul(ctx.op.Mul(half, self), ctx.op.Add(one, erf))


@translates(aten.gelu.default, since=20)
def aten_gelu_20(ctx: Ctx, self: ir.Value, *, approximate: str = "none") -> ir.Value:
    """gelu(Tensor self, *, str approximate="none") -> Tensor: ONNX Gelu (opset 20)."""
    return ctx.op.Gelu(self, approximate=approximate)


@translates(aten.silu.default)
def aten_silu(ctx: Ctx, self: ir.Value) -> ir.Value:
    """silu(Tensor self) -> Tensor: x·sigmoid(x)."""
    return ctx.op.Mul(self, ctx.op.Sigmoid(self))


@translates(aten.hardsigmoid.default)
def aten_hardsigmoid(ctx: Ctx, self: ir.Value) -> ir.Value:
    """hardsigmoid(Tensor self) -> Tensor: clip(x/6 + 1/2, 0, 1) (PyTorch docs)."""
    return ctx.op.HardSigmoid(self, alpha=1 / 6, beta=0.5)


@translates(aten.hardswish.default)
def aten_hardswish(ctx: Ctx, self: ir.Value) -> ir.Value:
    """hardswish(Tensor self) -> Tensor"""
    return ctx.op.HardSwish(self)


@translates(aten.mish.default)
def aten_mish(ctx: Ctx, self: ir.Value) -> ir.Value:
    """mish(Tensor self) -> Tensor"""
    return ctx.op.Mish(self)


@translates(aten.leaky_relu.default)
def aten_leaky_relu(ctx: Ctx, self: ir.Value, negative_slope: float = 0.01) -> ir.Value:
    """leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"""
    return ctx.op.LeakyRelu(self, alpha=float(negative_slope))


@translates(aten.elu.default)
def aten_elu(ctx: Ctx, self: ir.Value, alpha: float = 1, scale: float = 1, input_scale: float = 1) -> ir.Value:
    """elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor"""
    if scale == 1 and input_scale == 1:
        return ctx.op.Elu(self, alpha=float(alpha))
    x = ctx.op.Mul(self, ctx.const(input_scale, self.dtype))
    return ctx.op.Mul(ctx.op.Elu(x, alpha=float(alpha)), ctx.const(scale, self.dtype))


@translates(aten.hardtanh.default)
def aten_hardtanh(ctx: Ctx, self: ir.Value, min_val: float = -1, max_val: float = 1) -> ir.Value:
    """hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor"""
    return ctx.op.Clip(self, ctx.const(min_val, self.dtype), ctx.const(max_val, self.dtype))


@translates(aten.softplus.default)
def aten_softplus(ctx: Ctx, self: ir.Value, beta: float = 1, threshold: float = 20) -> ir.Value:
    """softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor

    log(1 + exp(βx))/β, linear where βx > threshold (PyTorch docs, torch.nn.Softplus).
    """
    bx = ctx.op.Mul(self, ctx.const(beta, self.dtype)) if beta != 1 else self
    soft = ctx.op.Softplus(bx)
    if beta != 1:
        soft = ctx.op.Div(soft, ctx.const(beta, self.dtype))
    return ctx.op.Where(ctx.op.Greater(bx, ctx.const(threshold, self.dtype)), self, soft)


@translates(aten.softmax.int, aten._softmax.default)
def aten_softmax(ctx: Ctx, self: ir.Value, dim: int, dtype: torch.dtype | bool | None = None) -> ir.Value:
    """softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self
    if ctx.out_dtype() != x.dtype:  # dtype= (softmax.int) or half_to_float (_softmax)
        x = ctx.op.Cast(x, to=ctx.out_dtype())
    return ctx.op.Softmax(x, axis=dim)


@translates(aten.log_softmax.int, aten._log_softmax.default)
def aten_log_softmax(ctx: Ctx, self: ir.Value, dim: int, dtype: torch.dtype | bool | None = None) -> ir.Value:
    """log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self
    if ctx.out_dtype() != x.dtype:
        x = ctx.op.Cast(x, to=ctx.out_dtype())
    return ctx.op.LogSoftmax(x, axis=dim)
