"""Floating-point elementwise ops beyond the 1:1 ONNX ones: log2/log10/exp2, isinf/signbit,
atan2.out, round(decimals), erfc, copysign, fmax/fmin, hypot, ldexp, angle, conj of a real tensor, and
the decompositions frexp and nextafter (bit-exact, from the IEEE 754 formats)."""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

from onnxport.ops._common import _D, _F, _FLOAT_TYPES, _back, _c, _f64, _nan
from onnxport.ops.pointwise.arithmetic import aten_atan2
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten


@translates(aten.log2.default, promote=Promote.INT_TO_FLOAT)
def aten_log2(ctx: Ctx, self: ir.Value) -> ir.Value:
    """log2(Tensor self) -> Tensor: ln(x)/ln 2."""
    return ctx.op.Div(ctx.op.Log(self), ctx.const(math.log(2.0), self.dtype))


@translates(aten.log10.default, promote=Promote.INT_TO_FLOAT)
def aten_log10(ctx: Ctx, self: ir.Value) -> ir.Value:
    """log10(Tensor self) -> Tensor: ln(x)/ln 10."""
    return ctx.op.Div(ctx.op.Log(self), ctx.const(math.log(10.0), self.dtype))


@translates(aten.isinf.default)
def aten_isinf(ctx: Ctx, self: ir.Value) -> ir.Value:
    """isinf(Tensor self) -> Tensor (integers and bools are never infinite)."""
    if self.dtype not in _FLOAT_TYPES:
        return ctx.op.Expand(ctx.const(False), ctx.op.Shape(self))
    x = self if self.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE) else ctx.op.Cast(self, to=ir.DataType.FLOAT)
    return ctx.op.IsInf(x)


@translates(aten.atan2.out, promote=Promote.INT_TO_FLOAT, promote_args=("self", "other"))
def aten_atan2_out(ctx: Ctx, self: ir.Value, other: ir.Value, *, out: ir.Value | None = None) -> ir.Value:
    """atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)

    Functional graphs hold no ``out=`` calls; when one appears the result is computed as atan2 and
    ``out`` (only a destination buffer) is ignored.
    """
    return aten_atan2(ctx, self, other)


@translates(aten.round.decimals)
def aten_round_decimals(ctx: Ctx, self: ir.Value, *, decimals: int = 0) -> ir.Value:
    """round.decimals(Tensor self, *, int decimals) -> Tensor: round(x·10^d)/10^d, half to even."""
    scale = ctx.const(10.0 ** decimals, self.dtype)
    return ctx.op.Div(ctx.op.Round(ctx.op.Mul(self, scale)), scale)


@translates(aten.erfc.default, promote=Promote.INT_TO_FLOAT)
def aten_erfc(ctx: Ctx, self: ir.Value) -> ir.Value:
    """erfc(Tensor self) -> Tensor: 1 − erf(x)."""
    return ctx.op.Sub(ctx.const(1, self.dtype), ctx.op.Erf(self))


@translates(aten.exp2.default, promote=Promote.INT_TO_FLOAT)
def aten_exp2(ctx: Ctx, self: ir.Value) -> ir.Value:
    """exp2(Tensor self) -> Tensor: 2^x."""
    return ctx.op.Pow(ctx.const(2.0, self.dtype), self)


@translates(aten.copysign.Tensor, aten.copysign.Scalar, promote=Promote.INT_TO_FLOAT)
def aten_copysign(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """copysign.Tensor(Tensor self, Tensor other) -> Tensor: |x| with the sign of other (−0 counts negative)."""
    negative = ctx.op.Or(ctx.op.Less(other, ctx.const(0, other.dtype)),
                         ctx.op.Less(ctx.op.Reciprocal(other), ctx.const(0, other.dtype)))
    a = ctx.op.Abs(self)
    return ctx.op.Where(negative, ctx.op.Neg(a), a)


@translates(aten.fmax.default, promote=Promote.DEFAULT)
def aten_fmax(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """fmax(Tensor self, Tensor other) -> Tensor: maximum ignoring NaN (NaN only if both are)."""
    return _nan_ignoring(ctx, "Max", self, other)


@translates(aten.fmin.default, promote=Promote.DEFAULT)
def aten_fmin(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """fmin(Tensor self, Tensor other) -> Tensor: minimum ignoring NaN (NaN only if both are)."""
    return _nan_ignoring(ctx, "Min", self, other)


def _nan_ignoring(ctx: Ctx, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
    if a.dtype == ir.DataType.BOOL:  # no bool Max/Min kernels: Or/And
        return ctx.op.Or(a, b) if op == "Max" else ctx.op.And(a, b)
    if a.dtype not in _FLOAT_TYPES:
        return ctx.op.node(op, [a, b], {})
    out = ctx.op.node(op, [a, b], {})
    out = ctx.op.Where(ctx.op.IsNaN(a), b, out)
    return ctx.op.Where(ctx.op.IsNaN(b), ctx.op.Where(ctx.op.IsNaN(a), b, a), out)


@translates(aten.hypot.default, promote=Promote.DEFAULT)
def aten_hypot(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """hypot(Tensor self, Tensor other) -> Tensor: √(x² + y²)."""
    return ctx.op.Sqrt(ctx.op.Add(ctx.op.Mul(self, self), ctx.op.Mul(other, other)))


@translates(aten.ldexp.Tensor, promote=Promote.INT_TO_FLOAT)
def aten_ldexp(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """ldexp.Tensor(Tensor self, Tensor other) -> Tensor: x · 2^e."""
    return ctx.op.Mul(self, ctx.op.Pow(ctx.const(2.0, self.dtype), other))


@translates(aten._conj.default, aten._conj_physical.default, aten.conj_physical.default, aten.resolve_conj.default,
            aten.resolve_neg.default)
def aten_conj_real(ctx: Ctx, self: ir.Value) -> ir.Value:
    """_conj(Tensor(a) self) -> Tensor(a): identity on real tensors (complex ones reach the
    ``complex=True`` translations of ops/fft/complex.py instead)."""
    return ctx.op.Identity(self)


@translates(aten.angle.default, promote=Promote.INT_TO_FLOAT)
def aten_angle(ctx: Ctx, self: ir.Value) -> ir.Value:
    """angle(Tensor self) -> Tensor: of a real number, π where negative, else 0 (NaN stays NaN)."""
    zero = ctx.const(0.0, self.dtype)
    out = ctx.op.Where(ctx.op.Less(self, zero), ctx.const(math.pi, self.dtype), zero)
    return ctx.op.Where(ctx.op.IsNaN(self), self, out)


@translates(aten.signbit.default)
def aten_signbit(ctx: Ctx, self: ir.Value) -> ir.Value:
    """signbit(Tensor self) -> Tensor: x < 0, and −0.0 (1/x < 0) for floats."""
    if self.dtype == ir.DataType.BOOL:
        return ctx.op.Expand(ctx.const(False), ctx.op.Shape(self))
    zero = ctx.const(0, self.dtype)
    negative = ctx.op.Less(self, zero)
    if self.dtype not in _FLOAT_TYPES:
        return negative
    negative_zero = ctx.op.Less(ctx.op.Reciprocal(self), zero)
    return ctx.op.Or(negative, ctx.op.And(ctx.op.Equal(self, zero), negative_zero))


# --- floating-point decomposition ---------------------------------------------------------------

def _frexp64(ctx: Ctx, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(m, e) with ax = m·2^e, m ∈ [½, 1), for finite ax > 0, exactly: e from log₂ in float64, then
    corrected by one where rounding put m outside [½, 1) (C99 frexp, §7.12.6.4)."""
    op = ctx.op
    e = op.Add(op.Floor(op.Div(op.Log(ax), _c(ctx, math.log(2.0)))), _c(ctx, 1.0))
    m = op.Div(ax, op.Pow(_c(ctx, 2.0), e))
    e = op.Where(op.GreaterOrEqual(m, _c(ctx, 1.0)), op.Add(e, _c(ctx, 1.0)),
                 op.Where(op.Less(m, _c(ctx, 0.5)), op.Sub(e, _c(ctx, 1.0)), e))
    return op.Div(ax, op.Pow(_c(ctx, 2.0), e)), e


@translates(aten.frexp.Tensor)
def aten_frexp(ctx: Ctx, self: ir.Value) -> tuple[ir.Value, ir.Value]:
    """frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)

    x = m·2^e with ½ ≤ |m| < 1 (C99 §7.12.6.4), computed exactly in float64 (every float32,
    float16 and bfloat16 value, subnormals included, is a normal float64); 0, ±inf and NaN give
    (x, 0) as torch.
    """
    op = ctx.op
    if self.dtype not in (_F, _D, ir.DataType.FLOAT16, ir.DataType.BFLOAT16):
        ctx.unsupported("frexp of a non-floating tensor (torch rejects it)")
    x = _f64(ctx, self)
    ax = op.Abs(x)
    special = op.Or(op.Or(op.Equal(ax, _c(ctx, 0.0)), op.IsInf(x)), op.IsNaN(x))
    safe = op.Where(special, _c(ctx, 1.0), ax)
    m, e = _frexp64(ctx, safe)
    mantissa = op.Where(special, x, op.Where(op.Less(x, _c(ctx, 0.0)), op.Neg(m), m))
    exponent = op.Cast(op.Where(special, _c(ctx, 0.0), e), to=ir.DataType.INT32)
    return _back(ctx, mantissa, self.dtype), exponent


# (precision p in bits, minimum normal exponent) of IEEE 754 binary32/binary16 and bfloat16.
_FLOAT_FORMATS = {_F: (24, -126), ir.DataType.FLOAT16: (11, -14), ir.DataType.BFLOAT16: (8, -126)}


@translates(aten.nextafter.default, promote=Promote.DEFAULT)
def aten_nextafter(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """nextafter(Tensor self, Tensor other) -> Tensor

    The next representable value after x towards y (C99 §7.12.11.3), without bit access (ONNX
    BitCast is opset 26): in float64, where every value of the narrower format is exact, x ± one
    unit in the last place, ulp(x) = 2^(max(e, e_min + 1) − p) for |x| ∈ [2^(e−1), 2^e), halved when
    stepping down from a power of two (IEEE 754-2019 §3.3 formats). x = 0 steps to the smallest
    subnormal, ±inf to ±max, x = y gives y, NaN stays NaN. float64 inputs would need float128 and
    are refused.
    """
    op = ctx.op
    dtype = ctx.out_dtype()
    if dtype not in _FLOAT_FORMATS:
        ctx.unsupported(f"nextafter in {dtype} (only float32, float16 and bfloat16 are computed exactly via float64)")
    p, emin = _FLOAT_FORMATS[dtype]
    largest = float(torch.finfo(ir.tensor_adapters.to_torch_dtype(dtype)).max)
    x, y = _f64(ctx, self), _f64(ctx, other)
    ax = op.Abs(x)
    zero = op.Equal(ax, _c(ctx, 0.0))
    special = op.Or(zero, op.Or(op.IsInf(x), op.IsNaN(x)))
    m, e = _frexp64(ctx, op.Where(special, _c(ctx, 1.0), ax))
    ulp = op.Pow(_c(ctx, 2.0), op.Sub(op.Max(e, _c(ctx, float(emin + 1))), _c(ctx, float(p))))
    up = op.Greater(y, x)
    grows = op.Equal(up, op.Greater(x, _c(ctx, 0.0)))  # moving away from zero
    power_of_two = op.And(op.Equal(m, _c(ctx, 0.5)), op.Greater(e, _c(ctx, float(emin + 1))))
    step = op.Where(op.And(op.Not(grows), power_of_two), op.Mul(ulp, _c(ctx, 0.5)), ulp)
    out = op.Where(up, op.Add(x, step), op.Sub(x, step))
    tiny = 2.0 ** (emin - p + 1)
    out = op.Where(zero, op.Where(up, _c(ctx, tiny), _c(ctx, -tiny)), out)
    out = op.Where(op.IsInf(x), op.Where(op.Greater(x, _c(ctx, 0.0)), _c(ctx, largest), _c(ctx, -largest)), out)
    out = op.Where(op.Equal(x, y), y, out)
    out = op.Where(op.Or(op.IsNaN(x), op.IsNaN(y)), _nan(ctx), out)
    return _back(ctx, out, dtype)
