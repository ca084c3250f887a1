"""Integer elementwise ops: gcd and lcm (Euclid's algorithm unrolled to the worst-case step count of
the dtype), bitwise_left_shift and bitwise_right_shift (torch's semantics for shifts past the width)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import _loop, dtype_of
from onnxport.ops.pointwise.arithmetic import _int_floor_fix
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten


# -- integer number theory and shifts ---------------------------------------------------------

_INT_BITS = {ir.DataType.INT8: 8, ir.DataType.INT16: 16, ir.DataType.INT32: 32, ir.DataType.INT64: 64}
# Euclid's algorithm needs at most n steps when the operands are below Fibonacci(n + 2):
# Fibonacci(13) > 2**7, (25) > 2**15, (47) > 2**31, (93) > 2**63.
_EUCLID_STEPS = {8: 12, 16: 24, 32: 46, 64: 92}


def _signed_width(ctx: Ctx, x: ir.Value, what: str) -> int:
    if x.dtype not in _INT_BITS:
        ctx.unsupported(f"{what} on {x.dtype} (signed integers only)")
    return _INT_BITS[x.dtype]


def _gcd(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """|gcd| by Euclid's algorithm (a, b) → (b mod a, a) until a = 0, in an ONNX Loop that stops as
    soon as every a is 0 (at most the Fibonacci bound of the bit width)."""

    bits = _signed_width(ctx, self, "gcd")
    dtype = dtype_of(self)
    shape = ctx.op.Shape(ctx.op.Add(self, other))
    a = ctx.op.Expand(ctx.op.Abs(self), shape)
    b = ctx.op.Expand(ctx.op.Abs(other), shape)

    def any_nonzero(c: Ctx, v: ir.Value) -> ir.Value:
        flags = c.op.Cast(c.op.Not(c.op.Equal(v, c.const(0, dtype))), to=ir.DataType.INT32)
        flat = c.op.Concat(c.op.Reshape(flags, c.const([-1])), c.const([0], ir.DataType.INT32), axis=0)
        return c.op.Cast(c.op.ReduceMax(flat, keepdims=0), to=ir.DataType.BOOL)

    def step(c: Ctx, it: ir.Value, state: list[ir.Value]) -> tuple[ir.Value, list[ir.Value]]:
        x, y = state
        zero = c.op.Equal(x, c.const(0, dtype))
        safe = c.op.Where(zero, c.const(1, dtype), x)  # never a zero divisor
        new_x = c.op.Where(zero, c.const(0, dtype), c.op.Mod(y, safe, fmod=0))
        new_y = c.op.Where(zero, y, x)
        return any_nonzero(c, new_x), [new_x, new_y]

    trips = ctx.const(_EUCLID_STEPS[bits] + 1)
    _, g = _loop(ctx, trips, [a, b], step, cond=any_nonzero(ctx, a))
    return g


@translates(aten.gcd.default, promote=Promote.DEFAULT)
def aten_gcd(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """gcd(Tensor self, Tensor other) -> Tensor: non-negative; gcd(0, 0) = 0."""
    return _gcd(ctx, self, other)


@translates(aten.lcm.default, promote=Promote.DEFAULT)
def aten_lcm(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """lcm(Tensor self, Tensor other) -> Tensor: |a / gcd · b|, 0 where gcd is 0 (as torch computes it)."""
    g = _gcd(ctx, self, other)
    zero = ctx.op.Equal(g, ctx.const(0, g.dtype))
    safe = ctx.op.Where(zero, ctx.const(1, g.dtype), g)
    out = ctx.op.Abs(ctx.op.Mul(ctx.op.Div(self, safe), other))
    return ctx.op.Where(zero, ctx.const(0, g.dtype), out)


def _powers_of_two(ctx: Ctx, bits: int, dtype: ir.DataType, shift: ir.Value, top: int) -> ir.Value:
    """2**clip(shift, 0, top), from a table (2**(bits - 1) wraps to the type's minimum, as C does)."""
    table = np.array([1 << i for i in range(bits)], dtype=np.uint64).astype(dtype.numpy())
    index = ctx.op.Cast(ctx.op.Min(ctx.op.Max(shift, ctx.const(0, shift.dtype)), ctx.const(top, shift.dtype)),
                        to=ir.DataType.INT64)
    return ctx.op.Gather(ctx.const(table, dtype), index, axis=0)


def _shift_out_of_range(ctx: Ctx, shift: ir.Value, bits: int) -> ir.Value:
    return ctx.op.Or(ctx.op.Less(shift, ctx.const(0, shift.dtype)),
                     ctx.op.GreaterOrEqual(shift, ctx.const(bits, shift.dtype)))


@translates(aten.bitwise_left_shift.Tensor, aten.bitwise_left_shift.Tensor_Scalar, aten.__lshift__.Tensor,
            aten.__lshift__.Scalar, promote=Promote.DEFAULT)
def aten_bitwise_left_shift(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor

    ONNX BitShift is unsigned-only: a · 2**n, wrapping like torch's shift of the unsigned bits;
    n < 0 or n ≥ the bit width gives 0 (torch's rule).
    """
    bits = _signed_width(ctx, self, "bitwise_left_shift")
    shifted = ctx.op.Mul(self, _powers_of_two(ctx, bits, dtype_of(self), other, bits - 1))
    return ctx.op.Where(_shift_out_of_range(ctx, other, bits), ctx.const(0, self.dtype), shifted)


@translates(aten.bitwise_right_shift.Tensor, aten.bitwise_right_shift.Tensor_Scalar, aten.__rshift__.Tensor,
            aten.__rshift__.Scalar, promote=Promote.DEFAULT)
def aten_bitwise_right_shift(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor

    Arithmetic shift: floor(a / 2**n); n ≥ bit width − 1 or n < 0 gives the sign fill (−1 or 0), as
    torch does.
    """

    bits = _signed_width(ctx, self, "bitwise_right_shift")
    divisor = _powers_of_two(ctx, bits, dtype_of(self), other, bits - 2)
    divisor = ctx.op.Expand(divisor, ctx.op.Shape(ctx.op.Add(self, divisor)))
    numerator = ctx.op.Expand(self, ctx.op.Shape(divisor))
    quotient = _int_floor_fix(ctx, numerator, divisor, ctx.op.Div(numerator, divisor))
    sign_fill = ctx.op.Where(ctx.op.Less(self, ctx.const(0, self.dtype)), ctx.const(-1, self.dtype), ctx.const(0, self.dtype))
    saturated = ctx.op.Or(_shift_out_of_range(ctx, other, bits),
                          ctx.op.Equal(other, ctx.const(bits - 1, other.dtype)))
    return ctx.op.Where(saturated, sign_fill, quotient)
