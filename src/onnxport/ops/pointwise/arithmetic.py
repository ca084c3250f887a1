"""Elementwise arithmetic, comparison and logic ops.

1:1 unary and binary ops are registered from tables; promotion (``torch.result_type`` rules) is
done by the dispatcher from the FakeTensor dtypes, so the bodies see operands of one dtype.
"""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops._common import _FLOAT_TYPES
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten


def _unary(onnx_op: str) -> Any:
    def fn(ctx: Ctx, self: ir.Value) -> ir.Value:
        return ctx.op.node(onnx_op, [self], {})

    fn.__qualname__ = fn.__name__ = f"unary_{onnx_op}"
    fn.__doc__ = f"(Tensor self) -> Tensor: ONNX {onnx_op}."
    return fn


# ATen overload → ONNX op. Ops computing in floating point promote integer inputs to float.
_UNARY_SAME = {
    aten.abs.default: "Abs",
    aten.neg.default: "Neg",
}
_UNARY_FLOAT = {
    aten.exp.default: "Exp",
    aten.log.default: "Log",
    aten.sqrt.default: "Sqrt",
    aten.reciprocal.default: "Reciprocal",
    aten.sin.default: "Sin",
    aten.cos.default: "Cos",
    aten.tan.default: "Tan",
    aten.asin.default: "Asin",
    aten.acos.default: "Acos",
    aten.atan.default: "Atan",
    aten.sinh.default: "Sinh",
    aten.cosh.default: "Cosh",
    aten.asinh.default: "Asinh",
    aten.acosh.default: "Acosh",
    aten.atanh.default: "Atanh",
    aten.tanh.default: "Tanh",
    aten.sigmoid.default: "Sigmoid",
    aten.erf.default: "Erf",
}
for _target, _op in _UNARY_SAME.items():
    globals()[f"aten_{_target.__name__.replace('.', '_')}"] = translates(_target)(_unary(_op))
for _target, _op in _UNARY_FLOAT.items():
    globals()[f"aten_{_target.__name__.replace('.', '_')}"] = translates(_target, promote=Promote.INT_TO_FLOAT)(_unary(_op))


def _rounding(onnx_op: str) -> Any:
    def fn(ctx: Ctx, self: ir.Value) -> ir.Value:
        if self.dtype not in _FLOAT_TYPES:  # integers are already whole: ONNX has no int kernel
            return ctx.op.Identity(self)
        return ctx.op.node(onnx_op, [self], {})

    fn.__qualname__ = fn.__name__ = f"rounding_{onnx_op}"
    fn.__doc__ = f"(Tensor self) -> Tensor: ONNX {onnx_op} (identity for integers)."
    return fn


aten_floor = translates(aten.floor.default)(_rounding("Floor"))
aten_ceil = translates(aten.ceil.default)(_rounding("Ceil"))
aten_round = translates(aten.round.default)(_rounding("Round"))


@translates(aten.relu.default)
def aten_relu(ctx: Ctx, self: ir.Value) -> ir.Value:
    """relu(Tensor self) -> Tensor (integers: Max with 0, onnxruntime has no integer Relu)."""
    if self.dtype in _FLOAT_TYPES:
        return ctx.op.Relu(self)
    return ctx.op.Max(self, ctx.const(0, self.dtype))


@translates(aten.sign.default)
def aten_sign(ctx: Ctx, self: ir.Value) -> ir.Value:
    """sign(Tensor self) -> Tensor (of a bool, the bool itself)."""
    return ctx.op.Identity(self) if self.dtype == ir.DataType.BOOL else ctx.op.Sign(self)


@translates(aten.rsqrt.default, promote=Promote.INT_TO_FLOAT)
def aten_rsqrt(ctx: Ctx, self: ir.Value) -> ir.Value:
    """rsqrt(Tensor self) -> Tensor"""
    return ctx.op.Reciprocal(ctx.op.Sqrt(self))


@translates(aten.log1p.default, promote=Promote.INT_TO_FLOAT)
def aten_log1p(ctx: Ctx, self: ir.Value) -> ir.Value:
    """log1p(Tensor self) -> Tensor"""
    return ctx.op.Log(ctx.op.Add(self, ctx.const(1, self.dtype)))


@translates(aten.expm1.default, promote=Promote.INT_TO_FLOAT)
def aten_expm1(ctx: Ctx, self: ir.Value) -> ir.Value:
    """expm1(Tensor self) -> Tensor"""
    return ctx.op.Sub(ctx.op.Exp(self), ctx.const(1, self.dtype))


@translates(aten.logical_not.default)
def aten_logical_not(ctx: Ctx, self: ir.Value) -> ir.Value:
    """logical_not(Tensor self) -> Tensor"""
    return ctx.op.Not(_to_bool(ctx, self))


@translates(aten.bitwise_not.default)
def aten_bitwise_not(ctx: Ctx, self: ir.Value) -> ir.Value:
    """bitwise_not(Tensor self) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:
        return ctx.op.Not(self)
    return ctx.op.BitwiseNot(self)


@translates(aten.isnan.default)
def aten_isnan(ctx: Ctx, self: ir.Value) -> ir.Value:
    """isnan(Tensor self) -> Tensor"""
    if self.dtype not in _FLOAT_TYPES:
        return ctx.op.Expand(ctx.const(False), ctx.op.Shape(self))
    return ctx.op.IsNaN(self)


def _to_bool(ctx: Ctx, x: ir.Value) -> ir.Value:
    return x if x.dtype == ir.DataType.BOOL else ctx.op.Cast(x, to=ir.DataType.BOOL)


def _scaled(ctx: Ctx, other: ir.Value, alpha: Any) -> ir.Value:
    if alpha is None or alpha == 1:
        return other
    return ctx.op.Mul(other, ctx.const(alpha, other.dtype))


@translates(aten.add.Tensor, aten.add.Scalar, promote=Promote.DEFAULT)
def aten_add(ctx: Ctx, self: ir.Value, other: ir.Value, *, alpha: Any = 1) -> ir.Value:
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:
        return ctx.op.Or(self, other)
    return ctx.op.Add(self, _scaled(ctx, other, alpha))


@translates(aten.sub.Tensor, aten.sub.Scalar, promote=Promote.DEFAULT)
def aten_sub(ctx: Ctx, self: ir.Value, other: ir.Value, *, alpha: Any = 1) -> ir.Value:
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return ctx.op.Sub(self, _scaled(ctx, other, alpha))


@translates(aten.rsub.Scalar, aten.rsub.Tensor, promote=Promote.DEFAULT)
def aten_rsub(ctx: Ctx, self: ir.Value, other: ir.Value, alpha: Any = 1) -> ir.Value:
    """rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor: other - alpha * self"""
    return ctx.op.Sub(other, _scaled(ctx, self, alpha))


@translates(aten.mul.Tensor, aten.mul.Scalar, promote=Promote.DEFAULT)
def aten_mul(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """mul.Tensor(Tensor self, Tensor other) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:
        return ctx.op.And(self, other)
    return ctx.op.Mul(self, other)


@translates(aten.div.Tensor, aten.div.Scalar, promote=Promote.INT_TO_FLOAT)
def aten_div(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """div.Tensor(Tensor self, Tensor other) -> Tensor: true division."""
    return ctx.op.Div(self, other)


@translates(aten.div.Tensor_mode, aten.div.Scalar_mode, promote=Promote.DEFAULT)
def aten_div_mode(ctx: Ctx, self: ir.Value, other: ir.Value, *, rounding_mode: str | None = None) -> ir.Value:
    """div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor

    ONNX Div truncates integers toward zero; "floor" on integers subtracts 1 where the signs differ
    and the division is inexact (Python floor division), as torch does.
    """
    if rounding_mode is None:
        return ctx.op.Div(self, other)
    if self.dtype in _FLOAT_TYPES:
        quotient = ctx.op.Div(self, other)
        quotient.dtype = self.dtype
        return ctx.op.Floor(quotient) if rounding_mode == "floor" else _trunc(ctx, quotient)
    quotient = ctx.op.Div(self, other)  # truncation toward zero for integers
    if rounding_mode == "trunc":
        return quotient
    return _int_floor_fix(ctx, self, other, quotient)


def _int_floor_fix(ctx: Ctx, a: ir.Value, b: ir.Value, q: ir.Value) -> ir.Value:
    zero = ctx.const(0, a.dtype)
    inexact = ctx.op.Not(ctx.op.Equal(ctx.op.Mul(q, b), a))
    signs_differ = ctx.op.Xor(ctx.op.Less(a, zero), ctx.op.Less(b, zero))
    fix = ctx.op.Cast(ctx.op.And(inexact, signs_differ), to=a.dtype)
    return ctx.op.Sub(q, fix)


def _trunc(ctx: Ctx, x: ir.Value) -> ir.Value:
    return ctx.op.Where(ctx.op.Less(x, ctx.const(0, x.dtype)), ctx.op.Ceil(x), ctx.op.Floor(x))


@translates(aten.trunc.default)
def aten_trunc(ctx: Ctx, self: ir.Value) -> ir.Value:
    """trunc(Tensor self) -> Tensor"""
    return _trunc(ctx, self) if self.dtype in _FLOAT_TYPES else ctx.op.Identity(self)


@translates(aten.floor_divide.default, promote=Promote.DEFAULT)
def aten_floor_divide(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """floor_divide(Tensor self, Tensor other) -> Tensor"""
    return aten_div_mode(ctx, self, other, rounding_mode="floor")


@translates(aten.remainder.Tensor, aten.remainder.Scalar, promote=Promote.DEFAULT)
def aten_remainder(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """remainder.Tensor(Tensor self, Tensor other) -> Tensor: Python modulo (sign of divisor)."""
    if self.dtype in _FLOAT_TYPES:
        return ctx.op.Sub(self, ctx.op.Mul(ctx.op.Floor(ctx.op.Div(self, other)), other))
    return ctx.op.Mod(self, other, fmod=0)


@translates(aten.fmod.Tensor, aten.fmod.Scalar, promote=Promote.DEFAULT)
def aten_fmod(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """fmod.Tensor(Tensor self, Tensor other) -> Tensor: C fmod (sign of dividend)."""
    return ctx.op.Mod(self, other, fmod=1)


@translates(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar, promote=Promote.DEFAULT)
def aten_pow(ctx: Ctx, self: ir.Value, exponent: ir.Value) -> ir.Value:
    """pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor"""
    if exponent.const_value is not None and exponent.const_value.size == 1:
        e = float(exponent.const_value.numpy().reshape(-1)[0])
        if e == 2:
            return ctx.op.Mul(self, self)
        if e == 1:
            return ctx.op.Identity(self)
        if e == 0.5 and self.dtype in _FLOAT_TYPES:
            return ctx.op.Sqrt(self)
    return ctx.op.Pow(self, exponent)


@translates(aten.atan2.default, promote=Promote.INT_TO_FLOAT)
def aten_atan2(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """atan2(Tensor self, Tensor other) -> Tensor (quadrant-correct arctangent of self/other)."""
    pi = ctx.const(3.141592653589793, self.dtype)
    zero = ctx.const(0, self.dtype)
    # 0/0 is NaN where atan2(±0, +0) is ±0: the quotient is taken as 0 there (then shifted by ±π
    # for a negative divisor, as below).
    both_zero = ctx.op.And(ctx.op.Equal(self, zero), ctx.op.Equal(other, zero))
    base = ctx.op.Where(both_zero, self, ctx.op.Atan(ctx.op.Div(self, other)))
    shift = ctx.op.Where(ctx.op.Less(self, zero), ctx.op.Neg(pi), pi)
    return ctx.op.Where(ctx.op.Less(other, zero), ctx.op.Add(base, shift), base)


def _compare(onnx_op: str, negate: bool = False) -> Any:
    def fn(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
        if self.dtype == ir.DataType.BOOL and onnx_op != "Equal":  # no bool ordering kernels
            self, other = ctx.op.Cast(self, to=ir.DataType.INT32), ctx.op.Cast(other, to=ir.DataType.INT32)
        out = ctx.op.node(onnx_op, [self, other], {})
        return ctx.op.Not(out) if negate else out

    fn.__qualname__ = fn.__name__ = f"compare_{onnx_op}{'_not' if negate else ''}"
    fn.__doc__ = f"(Tensor self, Tensor other) -> Tensor: ONNX {onnx_op}."
    return fn


_COMPARE = {
    "eq": ("Equal", False),
    "ne": ("Equal", True),
    "lt": ("Less", False),
    "le": ("LessOrEqual", False),
    "gt": ("Greater", False),
    "ge": ("GreaterOrEqual", False),
}
for _name, (_op, _neg) in _COMPARE.items():
    _packet = getattr(aten, _name)
    globals()[f"aten_{_name}"] = translates(_packet.Tensor, _packet.Scalar, promote=Promote.DEFAULT)(_compare(_op, _neg))


def _logical(onnx_op: str) -> Any:
    def fn(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
        return ctx.op.node(onnx_op, [_to_bool(ctx, self), _to_bool(ctx, other)], {})

    fn.__qualname__ = fn.__name__ = f"logical_{onnx_op}"
    return fn


aten_logical_and = translates(aten.logical_and.default)(_logical("And"))
aten_logical_or = translates(aten.logical_or.default)(_logical("Or"))
aten_logical_xor = translates(aten.logical_xor.default)(_logical("Xor"))


def _bitwise(bool_op: str, int_op: str) -> Any:
    def fn(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
        op = bool_op if self.dtype == ir.DataType.BOOL else int_op
        return ctx.op.node(op, [self, other], {})

    fn.__qualname__ = fn.__name__ = f"bitwise_{bool_op}"
    return fn


aten_bitwise_and = translates(
    aten.bitwise_and.Tensor, aten.bitwise_and.Scalar, aten.__and__.Tensor, aten.__and__.Scalar, promote=Promote.DEFAULT
)(_bitwise("And", "BitwiseAnd"))
aten_bitwise_or = translates(
    aten.bitwise_or.Tensor, aten.bitwise_or.Scalar, aten.__or__.Tensor, aten.__or__.Scalar, promote=Promote.DEFAULT
)(_bitwise("Or", "BitwiseOr"))
aten_bitwise_xor = translates(
    aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar, aten.__xor__.Tensor, aten.__xor__.Scalar, promote=Promote.DEFAULT
)(_bitwise("Xor", "BitwiseXor"))


@translates(aten.maximum.default, promote=Promote.DEFAULT)
def aten_maximum(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """maximum(Tensor self, Tensor other) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:
        return ctx.op.Or(self, other)
    return ctx.op.Max(self, other)


@translates(aten.minimum.default, promote=Promote.DEFAULT)
def aten_minimum(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """minimum(Tensor self, Tensor other) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:
        return ctx.op.And(self, other)
    return ctx.op.Min(self, other)


@translates(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar,
            promote=Promote.DEFAULT, promote_args=("self", "other"))
def aten_where(ctx: Ctx, condition: ir.Value, self: ir.Value, other: ir.Value) -> ir.Value:
    """where.self(Tensor condition, Tensor self, Tensor other) -> Tensor

    With two Python scalars (where.Scalar) no tensor promotes them: they take the output dtype.
    """
    dtype = ctx.out_dtype()
    self = self if isinstance(self, ir.Value) else ctx.const(self, dtype)
    other = other if isinstance(other, ir.Value) else ctx.const(other, dtype)
    cond = _to_bool(ctx, condition)
    if dtype == ir.DataType.BOOL:  # onnxruntime has no bool Where kernel: (c ∧ a) ∨ (¬c ∧ b)
        return ctx.op.Or(ctx.op.And(cond, self), ctx.op.And(ctx.op.Not(cond), other))
    return ctx.op.Where(cond, self, other)


@translates(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def aten_masked_fill(ctx: Ctx, self: ir.Value, mask: ir.Value, value: Any) -> ir.Value:
    """masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor (and .Tensor, a 0-D value)

    ``value`` where ``mask`` (broadcast), else ``self``; the value takes self's dtype, as torch
    casts it (PyTorch docs, Tensor.masked_fill_). Translated whole so the training IR's
    ``masked_fill`` does not force a decomposition of the whole program (capture/decomp.py).
    """
    dtype = self.dtype
    fill = ctx.op.Cast(value, to=dtype) if isinstance(value, ir.Value) else ctx.const(value, dtype)
    cond = _to_bool(ctx, mask)
    if dtype == ir.DataType.BOOL:  # onnxruntime has no bool Where kernel: (m ∧ v) ∨ (¬m ∧ self)
        return ctx.op.Or(ctx.op.And(cond, fill), ctx.op.And(ctx.op.Not(cond), self))
    return ctx.op.Where(cond, fill, self)


@translates(aten.clamp.default, aten.clamp.Tensor, promote=Promote.DEFAULT)
def aten_clamp(ctx: Ctx, self: ir.Value, min: ir.Value | None = None, max: ir.Value | None = None) -> ir.Value:
    """clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor

    Max/Min rather than Clip: Clip requires scalar bounds, clamp.Tensor allows tensors.
    """
    out = self
    boolean = self.dtype == ir.DataType.BOOL  # no bool Max/Min kernels: Or/And
    if min is not None:
        out = ctx.op.Or(out, min) if boolean else ctx.op.Max(out, min)
    if max is not None:
        out = ctx.op.And(out, max) if boolean else ctx.op.Min(out, max)
    return out if out is not self else ctx.op.Identity(self)


@translates(aten.clamp_min.default, aten.clamp_min.Tensor, promote=Promote.DEFAULT)
def aten_clamp_min(ctx: Ctx, self: ir.Value, min: ir.Value) -> ir.Value:
    """clamp_min(Tensor self, Scalar min) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:  # no bool Max kernel: max of bools is Or
        return ctx.op.Or(self, min)
    return ctx.op.Max(self, min)


@translates(aten.clamp_max.default, aten.clamp_max.Tensor, promote=Promote.DEFAULT)
def aten_clamp_max(ctx: Ctx, self: ir.Value, max: ir.Value) -> ir.Value:
    """clamp_max(Tensor self, Scalar max) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:  # no bool Min kernel: min of bools is And
        return ctx.op.And(self, max)
    return ctx.op.Min(self, max)
