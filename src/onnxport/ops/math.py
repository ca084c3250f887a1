"""More math: log2/log10, isinf, atan2.out, var.dim, cumprod, logcumsumexp, distances
(_cdist_forward, _pdist_forward)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops.elementwise import _FLOAT_TYPES, aten_atan2
from onnxport.ops.reduction import aten_var, mean_nan_if_empty
from onnxport.ops.shape import dtype_of, input_val, rank
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


@translates(aten.var.dim)
def aten_var_dim(ctx: Ctx, self: ir.Value, dim: Sequence[int] | None = None, unbiased: bool = True, keepdim: bool = False) -> ir.Value:
    """var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor"""
    return aten_var(ctx, self, dim, correction=1 if unbiased else 0, keepdim=keepdim)


@translates(aten.cumprod.default)
def aten_cumprod(ctx: Ctx, self: ir.Value, dim: int, *, dtype: Any = None) -> ir.Value:
    """cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor

    ONNX has no CumProd: a masked product over a lower-triangular (n, n) selection along ``dim``
    (``out[i] = Π_{j≤i} x[j]``), with ones where j > i; exact, including zeros and signs.
    """
    out_dtype = ctx.out_dtype()
    x = self if self.dtype == out_dtype else ctx.op.Cast(self, to=out_dtype)
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(x)
    axis = dim % r
    n = ctx.op.Shape(x, start=axis, end=axis + 1)
    # x moved to the last axis, then (..., 1, n) against a (n, n) lower-triangular mask.
    perm = [i for i in range(r) if i != axis] + [axis]
    xt = ctx.op.Transpose(x, perm=perm) if axis != r - 1 else x
    tri = ctx.op.Trilu(ctx.op.Expand(ctx.const(True), ctx.op.Concat(n, n, axis=0)), upper=0)
    rows = ctx.op.Unsqueeze(xt, ctx.const([-2]))  # (..., 1, n)
    work = rows if out_dtype not in (ir.DataType.BOOL,) else ctx.op.Cast(rows, to=ir.DataType.INT64)
    picked = ctx.op.Where(tri, work, ctx.const(1, work.dtype))  # (..., n, n)
    prod = ctx.op.ReduceProd(picked, ctx.const([-1]), keepdims=0)
    if work is not rows:
        prod = ctx.op.Cast(prod, to=out_dtype)
    if axis == r - 1:
        return prod
    return ctx.op.Transpose(prod, perm=[perm.index(i) for i in range(r)])


@translates(aten.logcumsumexp.default)
def aten_logcumsumexp(ctx: Ctx, self: ir.Value, dim: int) -> ir.Value:
    """logcumsumexp(Tensor self, int dim) -> Tensor: m + log(cumsum(exp(x − m))), m the max along dim."""
    r = rank(self)
    if r == 0:
        return ctx.op.Identity(self)
    axis = ctx.const([dim % r])
    m = ctx.op.ReduceMax(self, axis, keepdims=1)
    m = ctx.op.Where(ctx.op.IsInf(m), ctx.const(0, self.dtype), m)
    return ctx.op.Add(ctx.op.Log(ctx.op.CumSum(ctx.op.Exp(ctx.op.Sub(self, m)), ctx.const(dim % r))), m)


def _p_norm(ctx: Ctx, diff: ir.Value, p: float, axis: int) -> ir.Value:
    axes = ctx.const([axis])
    if p == 2:
        return ctx.op.Sqrt(ctx.op.ReduceSum(ctx.op.Mul(diff, diff), axes, keepdims=0))
    a = ctx.op.Abs(diff)
    if p == 1:
        return ctx.op.ReduceSum(a, axes, keepdims=0)
    if p == 0:
        nonzero = ctx.op.Cast(ctx.op.Not(ctx.op.Equal(a, ctx.const(0, diff.dtype))), to=diff.dtype)
        return ctx.op.ReduceSum(nonzero, axes, keepdims=0)
    if math.isinf(p):
        return ctx.op.ReduceMax(a, axes, keepdims=0)
    summed = ctx.op.ReduceSum(ctx.op.Pow(a, ctx.const(p, diff.dtype)), axes, keepdims=0)
    return ctx.op.Pow(summed, ctx.const(1.0 / p, diff.dtype))


@translates(aten._cdist_forward.default)
def aten_cdist_forward(ctx: Ctx, x1: ir.Value, x2: ir.Value, p: float, compute_mode: int | None = None) -> ir.Value:
    """_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor

    ‖x1ᵢ − x2ⱼ‖ₚ over every pair by broadcasting (…, P, 1, M) − (…, 1, R, M): exact for every p
    (torch's matmul shortcut for p = 2 is only a speed trade-off).
    """
    diff = ctx.op.Sub(ctx.op.Unsqueeze(x1, ctx.const([-2])), ctx.op.Unsqueeze(x2, ctx.const([-3])))
    return _p_norm(ctx, diff, float(p), -1)


@translates(aten._pdist_forward.default)
def aten_pdist_forward(ctx: Ctx, self: ir.Value, p: float = 2.0) -> ir.Value:
    """_pdist_forward(Tensor self, float p=2.) -> Tensor: distances of the row pairs i < j, row-major."""
    n = input_val(ctx).shape[0]
    if not isinstance(n, int):
        ctx.unsupported("pdist over a dynamic number of rows")
    if n < 2:  # no pairs
        return ctx.op.Identity(ctx.const(np.zeros(0, dtype=np.float32), ctx.out_dtype()))
    i, j = np.triu_indices(n, k=1)
    a = ctx.op.Gather(self, ctx.const(i.astype(np.int64)), axis=0)
    b = ctx.op.Gather(self, ctx.const(j.astype(np.int64)), axis=0)
    return _p_norm(ctx, ctx.op.Sub(a, b), float(p), -1)


@translates(aten.linalg_vector_norm.default)
def aten_linalg_vector_norm(
    ctx: Ctx, self: ir.Value, ord: float = 2, dim: Sequence[int] | None = None, keepdim: bool = False, *,
    dtype: Any = None,
) -> ir.Value:
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor

    ord 2 → ReduceL2, 1 → ReduceL1, ±inf → max/min of |x|, 0 → count of non-zeros, else
    (Σ|x|^p)^(1/p) (PyTorch docs, torch.linalg.vector_norm).
    """
    out_dtype = ctx.out_dtype()
    x = self if self.dtype == out_dtype else ctx.op.Cast(self, to=out_dtype)
    r = rank(self)
    if r == 0:
        x = ctx.op.Reshape(x, ctx.const([1]))
        dim, keep = [0], False
    else:
        dim = list(range(r)) if dim is None or (not isinstance(dim, int) and len(dim) == 0) else (
            [dim] if isinstance(dim, int) else list(dim))
        keep = keepdim
    axes = ctx.const([d % max(r, 1) for d in dim])
    k = int(keep)
    p = float(ord)
    if p == 2:
        return ctx.op.ReduceL2(x, axes, keepdims=k)
    a = ctx.op.Abs(x)
    if p == 1:
        return ctx.op.ReduceSum(a, axes, keepdims=k)
    if math.isinf(p):
        return ctx.op.ReduceMax(a, axes, keepdims=k) if p > 0 else ctx.op.ReduceMin(a, axes, keepdims=k)
    if p == 0:
        nz = ctx.op.Cast(ctx.op.Not(ctx.op.Equal(a, ctx.const(0, out_dtype))), to=out_dtype)
        return ctx.op.ReduceSum(nz, axes, keepdims=k)
    summed = ctx.op.ReduceSum(ctx.op.Pow(a, ctx.const(p, out_dtype)), axes, keepdims=k)
    return ctx.op.Pow(summed, ctx.const(1.0 / p, out_dtype))


@translates(aten.var_mean.correction)
def aten_var_mean(
    ctx: Ctx, self: ir.Value, dim: Sequence[int] | None = None, *, correction: float | None = None, keepdim: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)"""
    if self.dtype == ir.DataType.BFLOAT16:  # no onnxruntime bfloat16 reductions: in float
        var, mean = aten_var_mean(ctx, ctx.op.Cast(self, to=ir.DataType.FLOAT), dim, correction=correction,
                                  keepdim=keepdim)
        return ctx.op.Cast(var, to=self.dtype), ctx.op.Cast(mean, to=self.dtype)
    var = aten_var(ctx, self, dim, correction=correction, keepdim=keepdim)
    if rank(self) == 0:
        return var, ctx.op.Identity(self)
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return var, mean_nan_if_empty(ctx, self, None, keepdim)
    dims = [dim] if isinstance(dim, int) else list(dim)
    return var, mean_nan_if_empty(ctx, self, ctx.const([d % rank(self) for d in dims]), keepdim)


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
    ``complex=True`` translations of ops/fft.py instead)."""
    return ctx.op.Identity(self)


@translates(aten.dist.default, promote=Promote.DEFAULT, promote_args=("self", "other"))
def aten_dist(ctx: Ctx, self: ir.Value, other: ir.Value, p: float = 2) -> ir.Value:
    """dist(Tensor self, Tensor other, Scalar p=2) -> Tensor: ‖self − other‖ₚ over all elements."""
    diff = ctx.op.Reshape(ctx.op.Sub(self, other), ctx.const([-1]))
    return _p_norm(ctx, diff, float(p), 0)


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


@translates(aten.bilinear.default)
def aten_bilinear(ctx: Ctx, input1: ir.Value, input2: ir.Value, weight: ir.Value, bias: ir.Value | None = None) -> ir.Value:
    """bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor

    y_o = Σᵢⱼ x1ᵢ Wₒᵢⱼ x2ⱼ + bₒ (PyTorch docs, torch.nn.Bilinear): x1 (…, in1) MatMul W as
    (in1, out·in2), reshaped (…, out, in2), times x2 as (…, 1, in2), summed over the last axis.
    The MatMul's right operand is 2-D, so empty batches broadcast (onnxruntime rejects a 0-sized
    batch against a batched right operand). bfloat16 (no onnxruntime MatMul kernel) computes in float.
    """
    dtype = input1.dtype
    if dtype == ir.DataType.BFLOAT16:
        input1, input2, weight = (ctx.op.Cast(v, to=ir.DataType.FLOAT) for v in (input1, input2, weight))
    out_size, in2 = ctx.op.Shape(weight, start=0, end=1), ctx.op.Shape(weight, start=2, end=3)
    w = ctx.op.Reshape(ctx.op.Transpose(weight, perm=[1, 0, 2]), ctx.op.Concat(
        ctx.op.Shape(weight, start=1, end=2), ctx.op.Mul(out_size, in2), axis=0))
    left = ctx.op.MatMul(input1, w)
    lead = ctx.op.Shape(input1, start=0, end=rank(input1) - 1)
    left = ctx.op.Reshape(left, ctx.op.Concat(lead, out_size, in2, axis=0), allowzero=1)
    # A non-negative axis: onnxruntime's ReduceSum ignores a negative one on an empty input.
    r = rank(input1)
    out = ctx.op.ReduceSum(ctx.op.Mul(left, ctx.op.Unsqueeze(input2, ctx.const([r - 1]))), ctx.const([r]), keepdims=0)
    if bias is not None:
        out = ctx.op.Add(out, bias if dtype != ir.DataType.BFLOAT16 else ctx.op.Cast(bias, to=ir.DataType.FLOAT))
    return out if dtype != ir.DataType.BFLOAT16 else ctx.op.Cast(out, to=dtype)


@translates(aten._trilinear.default)
def aten_trilinear(
    ctx: Ctx, i1: ir.Value, i2: ir.Value, i3: ir.Value, expand1: Sequence[int], expand2: Sequence[int],
    expand3: Sequence[int], sumdim: Sequence[int], unroll_dim: int = 1,
) -> ir.Value:
    """_trilinear(Tensor i1, Tensor i2, Tensor i3, int[] expand1, int[] expand2, int[] expand3, int[] sumdim, int unroll_dim=1) -> Tensor

    Σ_sumdim i1.unsqueeze(expand1) · i2.unsqueeze(expand2) · i3.unsqueeze(expand3) (aten
    Linear.cpp, ``_trilinear``); ``unroll_dim`` only picks torch's loop order.
    """
    product = None
    for x, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        term = ctx.op.Unsqueeze(x, ctx.const(sorted(expand))) if expand else x
        product = term if product is None else ctx.op.Mul(product, term)
    assert product is not None
    if not sumdim:
        return product
    return ctx.op.ReduceSum(product, ctx.const(sorted(sumdim)), keepdims=0)


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
    from onnxport.ops.special_common import _loop

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
    from onnxport.ops.elementwise import _int_floor_fix

    bits = _signed_width(ctx, self, "bitwise_right_shift")
    divisor = _powers_of_two(ctx, bits, dtype_of(self), other, bits - 2)
    divisor = ctx.op.Expand(divisor, ctx.op.Shape(ctx.op.Add(self, divisor)))
    numerator = ctx.op.Expand(self, ctx.op.Shape(divisor))
    quotient = _int_floor_fix(ctx, numerator, divisor, ctx.op.Div(numerator, divisor))
    sign_fill = ctx.op.Where(ctx.op.Less(self, ctx.const(0, self.dtype)), ctx.const(-1, self.dtype), ctx.const(0, self.dtype))
    saturated = ctx.op.Or(_shift_out_of_range(ctx, other, bits),
                          ctx.op.Equal(other, ctx.const(bits - 1, other.dtype)))
    return ctx.op.Where(saturated, sign_fill, quotient)
