"""Helpers shared by the special-function modules (gamma, incomplete_gamma, bessel,
orthogonal_polynomials, error_function); no translations: Horner and Chebyshev-series evaluation,
sin(πx) argument reduction, and the rational approximations of erf and erfc (Cephes ndtr.c) used by
several functions. The generic float64 casting (``_f64``/``_back``/``_c``) and the ONNX ``Loop``
builder are in :mod:`onnxport.ops._common`.

The transcendental functions are evaluated in float64 (Cast to DOUBLE, evaluate, Cast back): the
approximations are the double-precision ones, and onnxruntime has float64 kernels for the
arithmetic, Exp, Log, Sqrt, Sin, Cos, Floor, Pow and comparisons they use (not for Tan, Acos or Erf,
which are therefore not used in float64). Branches of the published algorithms become ``Where``
selections between every branch's value. The orthogonal polynomials are evaluated by their
three-term recurrences in the promoted dtype, like torch, in an ONNX ``Loop`` up to ``max(n)``.

Coefficient tables are those of the Cephes Math Library (S. L. Moshier, netlib.org/cephes), which
is also the source of PyTorch's CPU kernels, so edge cases (poles, ±inf, NaN, negative arguments)
follow the same published algorithm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import onnx_ir as ir

from onnxport.ops._common import _D, _c
from onnxport.translate.context import Ctx

# Cephes ndtr.c: erf(x) = x T(x²)/U(x²) on |x| ≤ 1; erfc(x) exp(x²) = P(x)/Q(x) on [1, 8), R(x)/S(x) above.
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0, 4.86371970985681366614e1,
           1.96520832956077098242e2, 5.26445194995477358631e2, 9.34528527171957607540e2, 1.02755188689515710272e3,
           5.57535335369399327526e2)
_ERFC_Q = (1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2, 9.75708501743205489753e2,
           1.82390916687909736289e3, 2.24633760818710981792e3, 1.65666309194161350182e3, 5.57535340817727675546e2)
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0, 6.16021097993053585195e0,
           7.40974269950448939160e0, 2.97886665372100240670e0)
_ERFC_S = (2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1, 1.70814450747565897222e1,
           9.60896809063285878198e0, 3.36907645100081516050e0)
_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3, 7.00332514112805075473e3,
          5.55923013010394962768e4)
_ERF_U = (3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3, 2.26290000613890934246e4,
          4.92673942608635921086e4)

_SQRT_PI = math.sqrt(math.pi)
_MACHEP = 1.11022302462515654042e-16


def _polevl(ctx: Ctx, x: ir.Value, coeffs: Sequence[float], dtype: ir.DataType = _D) -> ir.Value:
    """Horner's rule, c₀xⁿ + c₁xⁿ⁻¹ + … + cₙ (coefficients from the highest power: Cephes polevl)."""
    acc = _c(ctx, coeffs[0], dtype)
    for c in coeffs[1:]:
        acc = ctx.op.Add(ctx.op.Mul(acc, x), _c(ctx, c, dtype))
    return acc


def _p1evl(ctx: Ctx, x: ir.Value, coeffs: Sequence[float]) -> ir.Value:
    """Horner's rule with an implicit leading coefficient 1 (Cephes p1evl)."""
    return _polevl(ctx, x, (1.0, *coeffs))


def _chbevl(ctx: Ctx, x: ir.Value, coeffs: Sequence[float]) -> ir.Value:
    """Σ' cᵢ Tᵢ(x/2) by Clenshaw's recurrence (Cephes chbevl; Numerical Recipes §5.8)."""
    b0 = _c(ctx, coeffs[0])
    b1 = _c(ctx, 0.0)
    b2 = b1
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = ctx.op.Add(ctx.op.Sub(ctx.op.Mul(x, b1), b2), _c(ctx, c))
    return ctx.op.Mul(_c(ctx, 0.5), ctx.op.Sub(b0, b2))


def _is_integer(ctx: Ctx, x: ir.Value) -> ir.Value:
    return ctx.op.Equal(x, ctx.op.Floor(x))


def _sin_pi_frac(ctx: Ctx, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(sin πr, cos πr) for r = x − ⌊x⌋ ∈ [0, 1): the argument reduction is exact in float64."""
    r = ctx.op.Mul(ctx.op.Sub(x, ctx.op.Floor(x)), _c(ctx, math.pi))
    return ctx.op.Sin(r), ctx.op.Cos(r)


# --- error function family ---------------------------------------------------------------------

def _erf_small64(ctx: Ctx, x: ir.Value) -> ir.Value:
    """erf(x) = x T(x²)/U(x²), accurate on |x| ≤ 1 (Cephes ndtr.c)."""
    z = ctx.op.Mul(x, x)
    return ctx.op.Div(ctx.op.Mul(x, _polevl(ctx, z, _ERF_T)), _p1evl(ctx, z, _ERF_U))


def _erfcx_pos64(ctx: Ctx, ax: ir.Value) -> ir.Value:
    """erfc(x)·exp(x²) for x ≥ 1: P/Q on [1, 8), R/S above (Cephes ndtr.c), 1/(√π x) past 5e7."""
    op = ctx.op
    clipped = op.Min(ax, _c(ctx, 5e7))
    mid = op.Div(_polevl(ctx, clipped, _ERFC_P), _p1evl(ctx, clipped, _ERFC_Q))
    far = op.Div(_polevl(ctx, clipped, _ERFC_R), _p1evl(ctx, clipped, _ERFC_S))
    out = op.Where(op.Less(ax, _c(ctx, 8.0)), mid, far)
    return op.Where(op.Greater(ax, _c(ctx, 5e7)), op.Div(_c(ctx, 1 / _SQRT_PI), ax), out)


def _erfc64(ctx: Ctx, x: ir.Value) -> ir.Value:
    """erfc(x) with full relative accuracy in both tails (Cephes ndtr.c)."""
    op = ctx.op
    ax = op.Abs(x)
    tail = op.Mul(op.Exp(op.Neg(op.Mul(ax, ax))), _erfcx_pos64(ctx, ax))
    tail = op.Where(op.Less(x, _c(ctx, 0.0)), op.Sub(_c(ctx, 2.0), tail), tail)
    return op.Where(op.Less(ax, _c(ctx, 1.0)), op.Sub(_c(ctx, 1.0), _erf_small64(ctx, x)), tail)
