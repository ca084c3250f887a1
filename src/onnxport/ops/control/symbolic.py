"""Symbolic-shape arithmetic: ``aten.sym_size.int`` and the Python ``operator``/``sym_*`` functions
torch.export emits for dynamic dims. A SymInt is a 0-D INT64 value."""

from __future__ import annotations

import math
import operator
from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops.pointwise.arithmetic import _int_floor_fix
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.sym_size.int)
def aten_sym_size(ctx: Ctx, self: ir.Value, dim: int) -> ir.Value:
    """sym_size.int(Tensor self, int dim) -> SymInt"""
    r = len(self.shape)  # type: ignore[arg-type]
    d = dim % r
    return ctx.op.Squeeze(ctx.op.Shape(self, start=d, end=d + 1), ctx.const([0]))


@translates(aten.sym_numel.default)
def aten_sym_numel(ctx: Ctx, self: ir.Value) -> ir.Value:
    """sym_numel(Tensor self) -> SymInt"""
    return ctx.op.Size(self)


def _operand(ctx: Ctx, x: Any, dtype: ir.DataType) -> ir.Value:
    if isinstance(x, ir.Value):
        return x if x.dtype == dtype else ctx.op.Cast(x, to=dtype)
    return ctx.const(x, dtype)


def _dtype_of(*xs: Any) -> ir.DataType:
    for x in xs:
        if isinstance(x, ir.Value) and x.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE):
            return ir.DataType.FLOAT
        if isinstance(x, float):
            return ir.DataType.FLOAT
    if all(isinstance(x, ir.Value) and x.dtype == ir.DataType.BOOL or isinstance(x, bool) for x in xs):
        return ir.DataType.BOOL
    return ir.DataType.INT64


def _binary(onnx_op: str) -> Any:
    def fn(ctx: Ctx, a: Any, b: Any) -> ir.Value:
        dtype = _dtype_of(a, b)
        return ctx.op.node(onnx_op, [_operand(ctx, a, dtype), _operand(ctx, b, dtype)], {})

    fn.__qualname__ = fn.__name__ = f"sym_{onnx_op}"
    return fn


sym_add = translates(operator.add)(_binary("Add"))
sym_sub = translates(operator.sub)(_binary("Sub"))
sym_mul = translates(operator.mul)(_binary("Mul"))
sym_eq = translates(operator.eq)(_binary("Equal"))
sym_lt = translates(operator.lt)(_binary("Less"))
sym_le = translates(operator.le)(_binary("LessOrEqual"))
sym_gt = translates(operator.gt)(_binary("Greater"))
sym_ge = translates(operator.ge)(_binary("GreaterOrEqual"))
sym_max = translates(torch.sym_max)(_binary("Max"))
sym_min = translates(torch.sym_min)(_binary("Min"))


def _logical(logical: str, bitwise: str) -> Any:
    on_bools, on_ints = _binary(logical), _binary(bitwise)

    def fn(ctx: Ctx, a: Any, b: Any) -> ir.Value:
        return (on_bools if _dtype_of(a, b) == ir.DataType.BOOL else on_ints)(ctx, a, b)

    fn.__qualname__ = fn.__name__ = f"sym_{logical}"
    return fn


# ``&``/``|`` of SymBools (conditions of data-dependent sizes: ``u0 >= 0 and u0 <= s0``) are ONNX
# And/Or; of SymInts, Python's bitwise operators (BitwiseAnd/BitwiseOr).
sym_and = translates(operator.and_)(_logical("And", "BitwiseAnd"))
sym_or = translates(operator.or_)(_logical("Or", "BitwiseOr"))


@translates(operator.floordiv)
def sym_floordiv(ctx: Ctx, a: Any, b: Any) -> ir.Value:
    """a // b on SymInts: Python floor division (rounds toward −∞)."""

    x, y = _operand(ctx, a, ir.DataType.INT64), _operand(ctx, b, ir.DataType.INT64)
    return _int_floor_fix(ctx, x, y, ctx.op.Div(x, y))


@translates(operator.mod)
def sym_mod(ctx: Ctx, a: Any, b: Any) -> ir.Value:
    """a % b on SymInts: Python modulo (sign of the divisor)."""
    return ctx.op.Mod(_operand(ctx, a, ir.DataType.INT64), _operand(ctx, b, ir.DataType.INT64), fmod=0)


@translates(operator.truediv)
def sym_truediv(ctx: Ctx, a: Any, b: Any) -> ir.Value:
    """a / b on SymInts → float."""
    return ctx.op.Div(_operand(ctx, a, ir.DataType.FLOAT), _operand(ctx, b, ir.DataType.FLOAT))


@translates(operator.pow)
def sym_pow(ctx: Ctx, a: Any, b: Any) -> ir.Value:
    """a ** b on symbolic scalars: INT64 for integer operands (ONNX ``Pow`` has int64 kernels in
    onnxruntime), FLOAT when either is a float."""
    dtype = _dtype_of(a, b)
    return ctx.op.Pow(_operand(ctx, a, dtype), _operand(ctx, b, dtype))


@translates(operator.neg)
def sym_neg(ctx: Ctx, a: Any) -> ir.Value:
    """-a on a SymInt."""
    return ctx.op.Neg(a)


@translates(torch.sym_float)
def sym_float(ctx: Ctx, a: Any) -> ir.Value:
    """sym_float(a): a SymInt as a float scalar."""
    return _operand(ctx, a, ir.DataType.FLOAT)


@translates(math.trunc)
@translates(torch.sym_int)
def sym_trunc(ctx: Ctx, a: Any) -> ir.Value:
    """math.trunc(a) / sym_int(a) of a SymFloat: rounded toward zero (Python's ``math.trunc``), as
    INT64: ``Sign(a) * Floor(|a|)`` then ``Cast``, which the ONNX spec leaves exact for integral
    floats (DPT's ``torch_int(sequence_length ** 0.5)``, a patch grid's side)."""
    if not isinstance(a, ir.Value):
        return ctx.const(math.trunc(a))
    x = _operand(ctx, a, ir.DataType.FLOAT)
    return ctx.op.Cast(ctx.op.Mul(ctx.op.Sign(x), ctx.op.Floor(ctx.op.Abs(x))), to=ir.DataType.INT64)


@translates(math.ceil)
def sym_ceil(ctx: Ctx, a: Any) -> ir.Value:
    """math.ceil(a) of a SymFloat, as INT64 (ONNX ``Ceil`` then ``Cast`` of an integral float:
    MobileViT's ``int(math.ceil(orig_height / patch_height) * patch_height)``)."""
    if not isinstance(a, ir.Value):
        return ctx.const(math.ceil(a))
    return ctx.op.Cast(ctx.op.Ceil(_operand(ctx, a, ir.DataType.FLOAT)), to=ir.DataType.INT64)


@translates(math.floor)
def sym_floor(ctx: Ctx, a: Any) -> ir.Value:
    """math.floor(a) of a SymFloat, as INT64 (ONNX ``Floor`` then ``Cast``)."""
    if not isinstance(a, ir.Value):
        return ctx.const(math.floor(a))
    return ctx.op.Cast(ctx.op.Floor(_operand(ctx, a, ir.DataType.FLOAT)), to=ir.DataType.INT64)


@translates(torch.sym_ite)
def sym_ite(ctx: Ctx, b: Any, t: Any, f: Any) -> ir.Value:
    """sym_ite(b, t, f): t if b else f, on symbolic scalars."""
    dtype = _dtype_of(t, f)
    cond = b if isinstance(b, ir.Value) else ctx.const(bool(b))
    if cond.dtype != ir.DataType.BOOL:
        cond = ctx.op.Cast(cond, to=ir.DataType.BOOL)
    return ctx.op.Where(cond, _operand(ctx, t, dtype), _operand(ctx, f, dtype))


@translates(torch.sym_not)
def sym_not(ctx: Ctx, a: Any) -> ir.Value:
    """sym_not(a) on a SymBool."""
    return ctx.op.Not(a if isinstance(a, ir.Value) else ctx.const(bool(a)))
