"""The gamma function family in float64: lgamma (Lanczos), digamma and polygamma (Cephes psi.c,
trigamma series) and the Hurwitz zeta function (Cephes zeta.c, Euler–Maclaurin summation in an
ONNX ``Loop``). Shared helpers are in ``_cephes`` and ``ops._common``; the incomplete gamma function in
incomplete_gamma.
"""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

from onnxport.ops._common import (
    _D,
    _F,
    _I64,
    _back,
    _c,
    _f64,
    _finite,
    _inf,
    _loop,
    _nan,
    _not,
    _trip_count,
)
from onnxport.ops.special._cephes import _MACHEP, _is_integer, _polevl, _sin_pi_frac
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten

# Lanczos (1964) with g = 7, n = 9 (P. Godfrey's coefficients; Numerical Recipes 3rd ed. §6.1 uses the same form).
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
# Cephes psi.c: asymptotic series of digamma in 1/x² (Bernoulli numbers B_2k / 2k).
_PSI_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3, -4.16666666666666666667e-3,
          3.96825396825396825397e-3, -8.33333333333333333333e-3, 8.33333333333333333333e-2)
# Cephes zeta.c: (2k)!/B_2k, the Euler–Maclaurin tail of the Hurwitz zeta function.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)


def _lgamma64(ctx: Ctx, x: ir.Value) -> ir.Value:
    op = ctx.op
    half = op.Less(x, _c(ctx, 0.5))
    xr = op.Where(half, op.Sub(_c(ctx, 1.0), x), x)
    z = op.Sub(xr, _c(ctx, 1.0))
    a = _c(ctx, _LANCZOS[0])
    for i, coef in enumerate(_LANCZOS[1:], start=1):
        a = op.Add(a, op.Div(_c(ctx, coef), op.Add(z, _c(ctx, float(i)))))
    t = op.Add(z, _c(ctx, _LANCZOS_G + 0.5))
    lg = op.Add(op.Sub(op.Mul(op.Add(z, _c(ctx, 0.5)), op.Log(t)), t), op.Add(op.Log(a), _c(ctx, 0.5 * math.log(2 * math.pi))))
    sin_pi, _ = _sin_pi_frac(ctx, x)
    reflected = op.Sub(op.Sub(_c(ctx, math.log(math.pi)), op.Log(op.Abs(sin_pi))), lg)
    out = op.Where(half, reflected, lg)
    pole = op.Or(op.And(op.LessOrEqual(x, _c(ctx, 0.0)), _is_integer(ctx, x)), op.IsInf(x))
    return op.Where(pole, _inf(ctx), out)


@translates(aten.lgamma.default, promote=Promote.INT_TO_FLOAT)
def aten_lgamma(ctx: Ctx, self: ir.Value) -> ir.Value:
    """lgamma(Tensor self) -> Tensor

    ln|Γ(x)| by the Lanczos approximation (C. Lanczos, SIAM J. Numer. Anal. B 1, 1964; g = 7,
    n = 9, as in Numerical Recipes 3rd ed. §6.1) in float64, x < ½ by the reflection formula
    Γ(x)Γ(1−x) = π/sin(πx) (Abramowitz & Stegun 6.1.17) with sin(πx) from the exactly reduced
    fractional part. Poles (0, negative integers) and ±inf give +inf, as torch.
    """
    return _back(ctx, _lgamma64(ctx, _f64(ctx, self)))


def _digamma64(ctx: Ctx, x: ir.Value) -> ir.Value:
    op = ctx.op
    neg = op.Less(x, _c(ctx, 0.0))
    xp = op.Where(neg, op.Sub(_c(ctx, 1.0), x), x)
    acc = _c(ctx, 0.0)
    for k in range(10):  # ψ(x) = ψ(x + 10) − Σ 1/(x + k)  (A&S 6.3.6)
        acc = op.Sub(acc, op.Reciprocal(op.Add(xp, _c(ctx, float(k)))))
    w = op.Add(xp, _c(ctx, 10.0))
    z = op.Reciprocal(op.Mul(w, w))
    asym = op.Sub(op.Sub(op.Log(w), op.Div(_c(ctx, 0.5), w)), op.Mul(z, _polevl(ctx, z, _PSI_A)))
    psi = op.Add(acc, asym)
    sin_pi, cos_pi = _sin_pi_frac(ctx, x)
    reflected = op.Sub(psi, op.Div(op.Mul(_c(ctx, math.pi), cos_pi), sin_pi))  # A&S 6.3.7
    out = op.Where(neg, reflected, psi)
    out = op.Where(op.And(neg, _is_integer(ctx, x)), _nan(ctx), out)
    zero = op.Equal(x, _c(ctx, 0.0))
    signed_inf = op.Where(op.Less(op.Reciprocal(x), _c(ctx, 0.0)), _inf(ctx), _c(ctx, -math.inf))
    return op.Where(zero, signed_inf, out)


@translates(aten.digamma.default, promote=Promote.INT_TO_FLOAT)
def aten_digamma(ctx: Ctx, self: ir.Value) -> ir.Value:
    """digamma(Tensor self) -> Tensor

    ψ(x) as Cephes psi.c in float64: the recurrence ψ(x) = ψ(x+1) − 1/x (A&S 6.3.5) shifts x past
    10, where the asymptotic series A&S 6.3.18 holds; x < 0 by the reflection ψ(1−x) − π/tan(πx)
    (A&S 6.3.7). ψ(±0) = ∓inf, negative integers give NaN (C++ std, SciPy and torch).
    """
    return _back(ctx, _digamma64(ctx, _f64(ctx, self)))


def _trigamma64(ctx: Ctx, x: ir.Value, pi_x: ir.Value) -> ir.Value:
    """ψ′(x): x < ½ reflected, ψ′(1−x) + ψ′(x) = π²/sin²(πx) (A&S 6.4.7); 6 recurrence steps
    ψ′(x) = ψ′(x+1) + 1/x² (A&S 6.4.6), then the asymptotic series A&S 6.4.12. ``pi_x`` is πx as
    torch rounds it (in float32 for float32 inputs), which decides the value at the poles."""
    op = ctx.op
    small = op.Less(x, _c(ctx, 0.5))
    xs = op.Where(small, op.Sub(_c(ctx, 1.0), x), x)
    acc = _c(ctx, 0.0)
    for k in range(6):
        v = op.Add(xs, _c(ctx, float(k)))
        acc = op.Add(acc, op.Reciprocal(op.Mul(v, v)))
    w = op.Add(xs, _c(ctx, 6.0))
    ixx = op.Reciprocal(op.Mul(w, w))
    series = op.Sub(_c(ctx, 1 / 6), op.Mul(ixx, op.Sub(_c(ctx, 1 / 30), op.Mul(ixx, _c(ctx, 1 / 42)))))
    tail = op.Div(op.Add(op.Add(_c(ctx, 1.0), op.Reciprocal(op.Mul(_c(ctx, 2.0), w))), op.Mul(ixx, series)), w)
    psi1 = op.Add(acc, tail)
    s = op.Sin(pi_x)
    reflection = op.Div(_c(ctx, math.pi * math.pi), op.Mul(s, s))
    return op.Where(small, op.Sub(reflection, psi1), psi1)


def _zeta64(ctx: Ctx, x: ir.Value, q: ir.Value) -> ir.Value:
    """Hurwitz ζ(x, q) = Σₖ (k+q)^−x by Cephes zeta.c (Euler–Maclaurin summation, A&S 23.1.30):
    terms up to q + N ≥ 9 (N ≥ 9) summed in an ONNX Loop, then the tail integral and 12 Bernoulli
    terms (stopping, like Cephes, once a term is below machine epsilon relative to the sum)."""
    op = ctx.op
    shape = op.Shape(op.Add(x, q))
    x = op.Expand(x, shape)
    q = op.Expand(q, shape)
    q_nonpos = op.LessOrEqual(q, _c(ctx, 0.0))
    q_pole = op.And(q_nonpos, _is_integer(ctx, q))
    q_nan = op.And(q_nonpos, _not(ctx, _is_integer(ctx, x)))
    special = op.Or(op.Or(op.LessOrEqual(x, _c(ctx, 1.0)), op.Or(q_pole, q_nan)), op.IsNaN(x))
    active = op.And(_not(ctx, special), _finite(ctx, q))
    safe_q = op.Where(active, q, _c(ctx, 9.0))
    needed = op.Cast(op.Add(op.Floor(op.Sub(_c(ctx, 9.0), safe_q)), _c(ctx, 1.0)), to=_I64)
    trips = op.Max(_trip_count(ctx, needed, active), ctx.const(9, _I64))
    negx = op.Neg(x)

    def step(b: Ctx, it: ir.Value, states: list[ir.Value]) -> list[ir.Value]:
        k = b.op.Cast(it, to=_D)
        return [b.op.Add(states[0], b.op.Pow(b.op.Add(q, k), negx))]

    (s,) = _loop(ctx, trips, [op.Mul(x, _c(ctx, 0.0))], step)
    w = op.Add(q, op.Cast(trips, to=_D))
    b = op.Pow(w, negx)
    s = op.Add(s, op.Add(b, op.Sub(op.Div(op.Mul(b, w), op.Sub(x, _c(ctx, 1.0))), op.Mul(_c(ctx, 0.5), b))))
    fac = _c(ctx, 1.0)
    k = 0.0
    done = op.Equal(x, op.Add(x, _c(ctx, 1.0)))  # all false except x = ±inf
    for coef in _ZETA_A:
        fac = op.Mul(fac, op.Add(x, _c(ctx, k)))
        b = op.Div(b, w)
        t = op.Div(op.Mul(fac, b), _c(ctx, coef))
        s = op.Add(s, op.Where(done, _c(ctx, 0.0), t))
        done = op.Or(done, op.Less(op.Abs(op.Div(t, s)), _c(ctx, _MACHEP)))
        k += 1.0
        fac = op.Mul(fac, op.Add(x, _c(ctx, k)))
        b = op.Div(b, w)
        k += 1.0
    out = op.Where(q_nan, _nan(ctx), s)
    out = op.Where(q_pole, _inf(ctx), out)
    out = op.Where(op.Less(x, _c(ctx, 1.0)), _nan(ctx), out)
    return op.Where(op.Equal(x, _c(ctx, 1.0)), _inf(ctx), out)


@translates(aten.special_zeta.default, aten.special_zeta.self_scalar, aten.special_zeta.other_scalar,
            promote=Promote.INT_TO_FLOAT)
def aten_special_zeta(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """special_zeta(Tensor self, Tensor other) -> Tensor

    The Hurwitz zeta function ζ(x, q) in float64 by Euler–Maclaurin summation (Cephes zeta.c,
    A&S 23.1.30): x = 1 → inf, x < 1 → NaN, q a non-positive integer → inf, q < 0 with x not an
    integer → NaN.
    """
    return _back(ctx, _zeta64(ctx, _f64(ctx, self), _f64(ctx, other)))


@translates(aten.polygamma.default, promote=Promote.INT_TO_FLOAT, promote_args=("self",))
def aten_polygamma(ctx: Ctx, n: int, self: ir.Value) -> ir.Value:
    """polygamma(int n, Tensor self) -> Tensor

    ψ⁽⁰⁾ = digamma; ψ⁽¹⁾ by the trigamma recurrence and asymptotic series (A&S 6.4.6, 6.4.7,
    6.4.12); ψ⁽ⁿ⁾(x) = (−1)ⁿ⁺¹ n! ζ(n+1, x) for n ≥ 2 (A&S 6.4.10) with the Hurwitz zeta function
    of Cephes zeta.c. Evaluated in float64.
    """
    if not isinstance(n, int):
        ctx.unsupported("polygamma with a symbolic order n")
    if n < 0:
        ctx.unsupported("polygamma(n) with n < 0 (torch rejects it)")
    x = _f64(ctx, self)
    if n == 0:
        return _back(ctx, _digamma64(ctx, x))
    if n == 1:
        if self.dtype == _D:
            pi_x = ctx.op.Mul(x, _c(ctx, math.pi))
        else:  # πx rounded as torch's float kernel rounds it
            xf = self if self.dtype == _F else ctx.op.Cast(self, to=_F)
            pi_x = _f64(ctx, ctx.op.Mul(xf, ctx.const(math.pi, _F)))
        return _back(ctx, _trigamma64(ctx, x, pi_x))
    scale = (1.0 if n % 2 else -1.0) * math.factorial(n)
    zeta = _zeta64(ctx, _c(ctx, float(n + 1)), x)
    return _back(ctx, ctx.op.Mul(zeta, _c(ctx, scale)))
