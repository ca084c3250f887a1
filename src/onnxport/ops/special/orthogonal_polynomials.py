"""Orthogonal polynomials of torch.special: Chebyshev T, U, V, W (and shifted), Hermite H and He,
Laguerre L and Legendre P, by their three-term recurrences in the promoted dtype in an ONNX
``Loop`` up to ``max(n)``, like torch (Chebyshev also by its trigonometric closed forms where torch
uses them).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import onnx_ir as ir
import torch

from onnxport.ops._common import _D, _F, _I64, _loop, _trip_count
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten

# --- orthogonal polynomials --------------------------------------------------------------------

class _Poly:
    """x and n broadcast together, n truncated to int64 (NaN and ±inf → −1, as torch's hermite
    does and as the out-of-range cast gives everywhere else on x86), and the three-term recurrence
    runner: P₀ = 1, P₁ given, P_{k+1} = step(k, P_{k−1}, P_k) for k = 1 … n−1, in an ONNX Loop up to
    max(n) over the elements that need it; each element keeps its value once k reaches its n."""

    def __init__(self, ctx: Ctx, x: ir.Value, n: ir.Value) -> None:
        op = ctx.op
        self.ctx = ctx
        self.out = ctx.out_dtype()
        self.dtype = self.out if self.out in (_F, _D) else _F
        x = x if x.dtype == self.dtype else op.Cast(x, to=self.dtype)
        n = n if n.dtype == self.dtype else op.Cast(n, to=self.dtype)
        shape = op.Shape(op.Add(x, n))
        self.x = op.Expand(x, shape)
        n = op.Expand(n, shape)
        bad = op.Or(op.IsNaN(n), op.IsInf(n))
        self.n = op.Where(bad, ctx.const(-1, _I64), op.Cast(op.Where(bad, self.c(0.0), n), to=_I64))
        self.nf = op.Cast(self.n, to=self.dtype)
        self.one = op.Add(op.Mul(self.x, self.c(0.0)), self.c(1.0))

    def c(self, value: float) -> ir.Value:
        return self.ctx.const(value, self.dtype)

    def n_eq(self, value: int) -> ir.Value:
        return self.ctx.op.Equal(self.n, self.ctx.const(value, _I64))

    def n_lt(self, value: int) -> ir.Value:
        return self.ctx.op.Less(self.n, self.ctx.const(value, _I64))

    def even(self) -> ir.Value:
        return self.ctx.op.Equal(self.ctx.op.Mod(self.n, self.ctx.const(2, _I64)), self.ctx.const(0, _I64))

    def recur(self, p1: ir.Value, step: Callable[[Ctx, ir.Value, ir.Value, ir.Value], ir.Value],
              skip: ir.Value | None = None) -> ir.Value:
        """P_n where n ≥ 1 (P₁ where n ≤ 1); ``skip`` marks elements whose value comes from elsewhere."""
        op = self.ctx.op
        active = op.Not(self.n_lt(2))
        if skip is not None:
            active = op.And(active, op.Not(skip))
        trips = _trip_count(self.ctx, self.n, active, offset=-1)
        n, dtype = self.n, self.dtype

        def body(b: Ctx, it: ir.Value, states: list[ir.Value]) -> list[ir.Value]:
            p, q = states
            k = b.op.Add(it, b.const(1, _I64))
            r = step(b, b.op.Cast(k, to=dtype), p, q)
            go = b.op.Less(k, n)
            return [b.op.Where(go, q, p), b.op.Where(go, r, q)]

        _, q = _loop(self.ctx, trips, [self.one, op.Add(p1, op.Mul(self.one, self.c(0.0)))], body)
        return q

    def finish(self, value: ir.Value) -> ir.Value:
        value = self.ctx.op.Where(self.n_lt(0), self.c(0.0), value)
        return value if self.out == self.dtype else self.ctx.op.Cast(value, to=self.out)


def _chebyshev(ctx: Ctx, x: ir.Value, n: ir.Value, kind: str, shifted: bool) -> ir.Value:
    """Chebyshev polynomials of the first to fourth kind (Mason & Handscomb, "Chebyshev
    Polynomials", 2003, §1.2–1.3): T, U, V, W share the recurrence P_{k+1} = 2t P_k − P_{k−1}
    with P₁ = t, 2t, 2t − 1, 2t + 1, where t = x (or 2x − 1, shifted: DLMF 18.7.9). For |t| < 1
    and n past torch's thresholds, the trigonometric closed forms T = cos nθ, U = sin (n+1)θ/sin θ,
    V = cos (n+½)θ/cos ½θ, W = sin (n+½)θ/sin ½θ with θ = arccos t (float64 inputs keep the
    recurrence: onnxruntime has no float64 Acos). End points as torch: t = ±1 (x = 1, 0 shifted)."""
    P = _Poly(ctx, x, n)
    op = ctx.op
    c = P.c
    t = op.Sub(op.Add(P.x, P.x), c(1.0)) if shifted else P.x
    two_t = op.Add(t, t)
    p1 = {"t": t, "u": two_t, "v": op.Sub(two_t, c(1.0)), "w": op.Add(two_t, c(1.0))}[kind]
    at_pos = op.Equal(P.x, c(1.0))
    at_neg = op.Equal(P.x, c(0.0)) if shifted else op.Equal(P.x, c(-1.0))
    threshold = ({"t": 6, "u": 6, "v": 6, "w": 4} if shifted else {"t": 6, "u": 8, "v": 8, "w": 8})[kind]
    closed = None
    if P.dtype != _D:
        closed = op.And(op.Less(op.Abs(t), c(1.0)), op.Not(P.n_lt(threshold + 1)))
    skip = op.Or(at_pos, at_neg)
    if closed is not None:
        skip = op.Or(skip, closed)
    value = P.recur(p1, lambda b, k, p, q: b.op.Sub(b.op.Mul(two_t, q), p), skip)
    value = op.Where(P.n_eq(0), c(1.0), value)
    n1 = op.Add(P.nf, c(1.0))
    n21 = op.Add(op.Add(P.nf, P.nf), c(1.0))
    even = P.even()
    signed = lambda v: op.Where(even, v, op.Neg(v))  # noqa: E731
    if closed is not None:
        theta = op.Acos(op.Where(closed, t, c(0.0)))
        nh = op.Mul(op.Add(P.nf, c(0.5)), theta)
        if kind == "t":
            form = op.Cos(op.Mul(P.nf, theta))
        elif kind == "u":
            s = op.Sin(theta)
            form = op.Where(op.Equal(s, c(0.0)), op.Div(op.Mul(n1, op.Cos(op.Mul(n1, theta))), t),
                            op.Div(op.Sin(op.Mul(n1, theta)), s))
        elif kind == "v":
            half = op.Div(theta, c(2.0))
            form = op.Where(op.Equal(op.Sin(half), c(1.0)), signed(n21), op.Div(op.Cos(nh), op.Cos(half)))
        else:
            half = op.Div(theta, c(2.0))
            fallback = signed(P.one) if shifted else op.Where(op.Greater(P.x, c(0.0)), n21, signed(P.one))
            form = op.Where(op.Equal(op.Cos(half), c(1.0)), fallback, op.Div(op.Sin(nh), op.Sin(half)))
        value = op.Where(closed, form, value)
    pos_value, neg_value = {
        "t": (P.one, signed(P.one)), "u": (n1, signed(n1)), "v": (P.one, signed(n21)), "w": (n21, signed(P.one)),
    }[kind]
    value = op.Where(at_neg, neg_value, value)
    value = op.Where(at_pos, pos_value, value)
    return P.finish(value)


def _register_chebyshev(kind: str, shifted: bool) -> Callable[..., ir.Value]:
    name = f"special_{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}"
    packet = getattr(aten, name)

    @translates(packet.default, packet.x_scalar, packet.n_scalar, promote=Promote.INT_TO_FLOAT)
    def fn(ctx: Ctx, x: ir.Value, n: ir.Value) -> ir.Value:
        return _chebyshev(ctx, x, n, kind, shifted)

    fn.__name__ = fn.__qualname__ = f"aten_{name}"
    letter = kind.upper()
    fn.__doc__ = (
        f"{name}(Tensor x, Tensor n) -> Tensor\n\n"
        f"{'Shifted ' if shifted else ''}Chebyshev polynomial {letter}ₙ({'2x − 1' if shifted else 'x'}) "
        "by its three-term recurrence in an ONNX Loop, or its trigonometric closed form where torch "
        "uses it (Mason & Handscomb, Chebyshev Polynomials, 2003); n < 0 → 0.\n"
    )
    return fn


aten_special_chebyshev_polynomial_t = _register_chebyshev("t", False)
aten_special_chebyshev_polynomial_u = _register_chebyshev("u", False)
aten_special_chebyshev_polynomial_v = _register_chebyshev("v", False)
aten_special_chebyshev_polynomial_w = _register_chebyshev("w", False)
aten_special_shifted_chebyshev_polynomial_t = _register_chebyshev("t", True)
aten_special_shifted_chebyshev_polynomial_u = _register_chebyshev("u", True)
aten_special_shifted_chebyshev_polynomial_v = _register_chebyshev("v", True)
aten_special_shifted_chebyshev_polynomial_w = _register_chebyshev("w", True)


def _hermite(ctx: Ctx, x: ir.Value, n: ir.Value, physicists: bool) -> ir.Value:
    """H_n(x) (``physicists``: H_{k+1} = 2x H_k − 2k H_{k−1}, A&S 22.7.13) or He_n(x)
    (He_{k+1} = x He_k − k He_{k−1}, A&S 22.7.14) in an ONNX Loop; n < 0 → 0, NaN past torch's
    limit (n > 128 in float32, 512 in float64)."""
    P = _Poly(ctx, x, n)
    op = ctx.op
    limit = 512 if P.dtype == _D else 128
    too_big = op.Not(P.n_lt(limit + 1))
    step_x = op.Add(P.x, P.x) if physicists else P.x
    value = P.recur(step_x, lambda b, k, p, q: b.op.Sub(b.op.Mul(step_x, q), b.op.Mul(b.op.Add(k, k) if physicists else k, p)),
                    too_big)
    value = op.Where(P.n_eq(0), P.c(1.0), value)
    value = op.Where(op.And(too_big, op.Not(P.n_lt(2))), P.c(math.nan), value)
    return P.finish(value)


@translates(aten.special_hermite_polynomial_h.default, aten.special_hermite_polynomial_h.x_scalar,
            aten.special_hermite_polynomial_h.n_scalar, promote=Promote.INT_TO_FLOAT)
def aten_special_hermite_polynomial_h(ctx: Ctx, x: ir.Value, n: ir.Value) -> ir.Value:
    """special_hermite_polynomial_h(Tensor x, Tensor n) -> Tensor

    Physicists' Hermite polynomial by H_{k+1} = 2x H_k − 2k H_{k−1} (A&S 22.7.13) in an ONNX Loop;
    n < 0 → 0, and NaN past torch's limit (n > 128 in float32, 512 in float64).
    """
    return _hermite(ctx, x, n, physicists=True)


@translates(aten.special_hermite_polynomial_he.default, aten.special_hermite_polynomial_he.x_scalar,
            aten.special_hermite_polynomial_he.n_scalar, promote=Promote.INT_TO_FLOAT)
def aten_special_hermite_polynomial_he(ctx: Ctx, x: ir.Value, n: ir.Value) -> ir.Value:
    """special_hermite_polynomial_he(Tensor x, Tensor n) -> Tensor

    Probabilists' Hermite polynomial by He_{k+1} = x He_k − k He_{k−1} (A&S 22.7.14) in an ONNX
    Loop; n < 0 → 0, NaN past torch's limit (n > 128 in float32, 512 in float64).
    """
    return _hermite(ctx, x, n, physicists=False)


@translates(aten.special_laguerre_polynomial_l.default, aten.special_laguerre_polynomial_l.x_scalar,
            aten.special_laguerre_polynomial_l.n_scalar, promote=Promote.INT_TO_FLOAT)
def aten_special_laguerre_polynomial_l(ctx: Ctx, x: ir.Value, n: ir.Value) -> ir.Value:
    """special_laguerre_polynomial_l(Tensor x, Tensor n) -> Tensor

    Laguerre polynomial by (k+1) L_{k+1} = (2k + 1 − x) L_k − k L_{k−1} (A&S 22.7.12) in an ONNX
    Loop; L_n(0) = 1, n < 0 → 0.
    """
    P = _Poly(ctx, x, n)
    op = ctx.op
    one_minus_x = op.Sub(P.c(1.0), P.x)
    zero = op.Equal(P.x, P.c(0.0))

    def step(b: Ctx, k: ir.Value, p: ir.Value, q: ir.Value) -> ir.Value:
        num = b.op.Sub(b.op.Mul(b.op.Add(b.op.Add(k, k), one_minus_x), q), b.op.Mul(k, p))
        return b.op.Div(num, b.op.Add(k, b.const(1.0, P.dtype)))

    value = P.recur(one_minus_x, step, zero)
    value = op.Where(op.Or(P.n_eq(0), zero), P.c(1.0), value)
    return P.finish(value)


@translates(aten.special_legendre_polynomial_p.default, aten.special_legendre_polynomial_p.x_scalar,
            aten.special_legendre_polynomial_p.n_scalar, promote=Promote.INT_TO_FLOAT)
def aten_special_legendre_polynomial_p(ctx: Ctx, x: ir.Value, n: ir.Value) -> ir.Value:
    """special_legendre_polynomial_p(Tensor x, Tensor n) -> Tensor

    Legendre polynomial by Bonnet's recurrence (k+1) P_{k+1} = (2k+1) x P_k − k P_{k−1}
    (A&S 22.7.10) in an ONNX Loop; P_n(1) = 1, P_n(−1) = (−1)ⁿ, n < 0 → 0.
    """
    P = _Poly(ctx, x, n)
    op = ctx.op
    ends = op.Equal(op.Abs(P.x), P.c(1.0))

    def step(b: Ctx, k: ir.Value, p: ir.Value, q: ir.Value) -> ir.Value:
        one = b.const(1.0, P.dtype)
        num = b.op.Sub(b.op.Mul(b.op.Mul(b.op.Add(b.op.Add(k, k), one), P.x), q), b.op.Mul(k, p))
        return b.op.Div(num, b.op.Add(k, one))

    value = P.recur(P.x, step, ends)
    value = op.Where(P.n_eq(0), P.c(1.0), value)
    end_value = op.Where(op.Or(op.Greater(P.x, P.c(0.0)), P.even()), P.one, op.Neg(P.one))
    value = op.Where(ends, end_value, value)
    return P.finish(value)
