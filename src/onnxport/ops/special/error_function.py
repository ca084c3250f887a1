"""The error-function family in float64: the inverses erfinv (Giles) and ndtri (Cephes ndtri.c) and
the scaled complementary error function erfcx (Cephes ndtr.c). (frexp and nextafter, floating-point
decompositions, are in ``ops/pointwise/float_ops.py``.) The other special functions are in gamma,
incomplete_gamma, bessel and orthogonal_polynomials; shared helpers in ``_cephes`` and ``ops._common``.
"""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

from onnxport.ops._common import _back, _c, _f64, _inf, _nan
from onnxport.ops.special._cephes import _SQRT_PI, _erf_small64, _erfc64, _erfcx_pos64, _polevl
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten


# Cephes ndtri.c (netlib.org/cephes).
_NDTRI_P0 = (-59.96335010141079, 98.00107541859997, -56.67628574690703, 13.931260938727968, -1.2391658386738125,)
_NDTRI_Q0 = (1.0, 1.9544885833814176, 4.676279128988815, 86.36024213908905, -225.46268785411937,
    200.26021238006066, -82.03722561683334, 15.90562251262117, -1.1833162112133,)
_NDTRI_P1 = (4.0554489230596245, 31.525109459989388, 57.16281922464213, 44.08050738932008, 14.684956192885803,
    2.1866330685079025, -0.1402560791713545, -0.03504246268278482, -0.0008574567851546854,)
_NDTRI_Q1 = (1.0, 15.779988325646675, 45.39076351288792, 41.3172038254672, 15.04253856929075, 2.504649462083094,
    -0.14218292285478779, -0.03808064076915783, -0.0009332594808954574,)
_NDTRI_P2 = (3.2377489177694603, 6.915228890689842, 3.9388102529247444, 1.3330346081580755, 0.20148538954917908,
    0.012371663481782003, 0.00030158155350823543, 2.6580697468673755e-06, 6.239745391849833e-09,)
_NDTRI_Q2 = (1.0, 6.02427039364742, 3.6798356385616087, 1.3770209948908132, 0.21623699359449663,
    0.013420400608854318, 0.00032801446468212774, 2.8924786474538068e-06, 6.790194080099813e-09,)
# M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade (2011), single-precision version.
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
               0.00943887047, 1.00167406, 2.83297682)

_TWO_OVER_SQRT_PI = 2.0 / _SQRT_PI


@translates(aten.special_erfcx.default, promote=Promote.INT_TO_FLOAT)
def aten_special_erfcx(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_erfcx(Tensor self) -> Tensor

    exp(x²)·erfc(x) in float64 from the rational approximations of Cephes ndtr.c (which give
    erfc(x)·exp(x²) directly for x ≥ 1), exp(x²)(1 − erf x) on |x| < 1, and
    erfcx(x) = 2exp(x²) − erfcx(−x) for x ≤ −1; 1/(√π x) for x > 5e7 (continued fraction, DLMF 7.9.2).
    """
    op = ctx.op
    x = _f64(ctx, self)
    ax = op.Abs(x)
    z = op.Mul(x, x)
    pos = _erfcx_pos64(ctx, ax)
    small = op.Mul(op.Exp(z), op.Sub(_c(ctx, 1.0), _erf_small64(ctx, x)))
    out = op.Where(op.Less(x, _c(ctx, 0.0)), op.Sub(op.Mul(_c(ctx, 2.0), op.Exp(z)), pos), pos)
    return _back(ctx, op.Where(op.Less(ax, _c(ctx, 1.0)), small, out))


@translates(aten.erfinv.default, promote=Promote.INT_TO_FLOAT)
def aten_erfinv(ctx: Ctx, self: ir.Value) -> ir.Value:
    """erfinv(Tensor self) -> Tensor

    M. Giles' single-precision approximation ("Approximating the erfinv function", GPU Computing
    Gems Jade, 2011) refined by two Newton steps on erf(x) = |y| in float64, with erf from Cephes
    ndtr.c (the residual taken as (1 − |y|) − erfc(x) once |x| ≥ 1, so it stays exact near ±1).
    erfinv(±1) = ±inf, |y| > 1 → NaN.
    """
    op = ctx.op
    y = _f64(ctx, self)
    ay = op.Abs(y)
    w = op.Neg(op.Log(op.Mul(op.Sub(_c(ctx, 1.0), ay), op.Add(_c(ctx, 1.0), ay))))
    central = _polevl(ctx, op.Sub(w, _c(ctx, 2.5)), _GILES_CENTRAL)
    tail = _polevl(ctx, op.Sub(op.Sqrt(op.Max(w, _c(ctx, 0.0))), _c(ctx, 3.0)), _GILES_TAIL)
    x = op.Mul(op.Where(op.Less(w, _c(ctx, 5.0)), central, tail), ay)
    one_minus = op.Sub(_c(ctx, 1.0), ay)
    for _ in range(2):
        resid = op.Where(op.Less(x, _c(ctx, 1.0)), op.Sub(_erf_small64(ctx, x), ay),
                         op.Sub(one_minus, _erfc64(ctx, x)))
        slope = op.Mul(_c(ctx, _TWO_OVER_SQRT_PI), op.Exp(op.Neg(op.Mul(x, x))))
        x = op.Sub(x, op.Div(resid, slope))
    x = op.Where(op.Equal(ay, _c(ctx, 1.0)), _inf(ctx), x)
    x = op.Where(op.Greater(ay, _c(ctx, 1.0)), _nan(ctx), x)
    return _back(ctx, op.Where(op.Less(y, _c(ctx, 0.0)), op.Neg(x), op.Where(op.Equal(y, _c(ctx, 0.0)), y, x)))


@translates(aten.special_ndtri.default, promote=Promote.INT_TO_FLOAT)
def aten_special_ndtri(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_ndtri(Tensor self) -> Tensor

    The inverse of the standard normal CDF by Cephes ndtri.c in float64: a rational function of
    y − ½ for exp(−2) < y < 1 − exp(−2), else of 1/√(−2 ln y) on two intervals (by symmetry for
    y near 1). ndtri(0) = −inf, ndtri(1) = inf, y outside [0, 1] → NaN.
    """
    op = ctx.op
    y = _f64(ctx, self)
    e2 = 0.13533528323661269189  # exp(-2)
    flip = op.Greater(y, _c(ctx, 1.0 - e2))
    yy = op.Where(flip, op.Sub(_c(ctx, 1.0), y), y)
    u = op.Sub(y, _c(ctx, 0.5))
    u2 = op.Mul(u, u)
    central = op.Add(u, op.Mul(u, op.Div(op.Mul(u2, _polevl(ctx, u2, _NDTRI_P0)), _polevl(ctx, u2, _NDTRI_Q0))))
    central = op.Mul(central, _c(ctx, math.sqrt(2 * math.pi)))
    t = op.Sqrt(op.Mul(_c(ctx, -2.0), op.Log(yy)))
    x0 = op.Sub(t, op.Div(op.Log(t), t))
    z = op.Reciprocal(t)
    near = op.Div(op.Mul(z, _polevl(ctx, z, _NDTRI_P1)), _polevl(ctx, z, _NDTRI_Q1))
    far = op.Div(op.Mul(z, _polevl(ctx, z, _NDTRI_P2)), _polevl(ctx, z, _NDTRI_Q2))
    tail = op.Sub(x0, op.Where(op.Less(t, _c(ctx, 8.0)), near, far))
    tail = op.Where(flip, tail, op.Neg(tail))
    out = op.Where(op.Greater(yy, _c(ctx, e2)), central, tail)
    out = op.Where(op.Or(op.Less(y, _c(ctx, 0.0)), op.Greater(y, _c(ctx, 1.0))), _nan(ctx), out)
    out = op.Where(op.Equal(y, _c(ctx, 1.0)), _inf(ctx), out)
    return _back(ctx, op.Where(op.Equal(y, _c(ctx, 0.0)), _c(ctx, -math.inf), out))
