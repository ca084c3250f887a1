"""Bessel-type functions in float64 by Cephes (netlib.org/cephes): the modified Bessel functions
i0/i0e/i1/i1e and I₀, I₁, K₀, K₁ (scaled and not), the Bessel functions J₀, J₁, Y₀, Y₁, the
spherical Bessel function j₀ and the Airy function Ai.
"""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

from onnxport.ops._common import _back, _c, _f64, _inf, _nan
from onnxport.ops.special._cephes import _SQRT_PI, _chbevl, _polevl
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten

# --- Cephes coefficient tables (netlib.org/cephes: i0.c, i1.c, k0.c, k1.c, airy.c, j0.c, j1.c) ---
_I0_A = (-4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16, 1.715391285555133e-15,
    -1.1685332877993451e-14, 7.676185498604936e-14, -4.856446783111929e-13, 2.95505266312964e-12,
    -1.726826291441556e-11, 9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07, 1.1173875391201037e-06,
    -4.4167383584587505e-06, 1.6448448070728896e-05, -5.754195010082104e-05, 0.00018850288509584165,
    -0.0005763755745385824, 0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764, 0.17162090152220877, -0.3046826723431984,
    0.6767952744094761,)
_I0_B = (-7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15, 3.8116806693526224e-15,
    -9.554846698828307e-15, -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09, 2.266668990498178e-08,
    2.0489185894690638e-07, 2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088,)
_I1_A = (2.7779141127610464e-18, -2.111421214358166e-17, 1.5536319577362005e-16, -1.1055969477353862e-15,
    7.600684294735408e-15, -5.042185504727912e-14, 3.223793365945575e-13, -1.9839743977649436e-12,
    1.1736186298890901e-11, -6.663489723502027e-11, 3.625590281552117e-10, -1.8872497517228294e-09,
    9.381537386495773e-09, -4.445059128796328e-08, 2.0032947535521353e-07, -8.568720264695455e-07,
    3.4702513081376785e-06, -1.3273163656039436e-05, 4.781565107550054e-05, -0.00016176081582589674,
    0.0005122859561685758, -0.0015135724506312532, 0.004156422944312888, -0.010564084894626197,
    0.024726449030626516, -0.05294598120809499, 0.1026436586898471, -0.17641651835783406, 0.25258718644363365,)
_I1_B = (7.517296310842105e-18, 4.414348323071708e-18, -4.6503053684893586e-17, -3.209525921993424e-17,
    2.96262899764595e-16, 3.3082023109209285e-16, -1.8803547755107825e-15, -3.8144030724370075e-15,
    1.0420276984128802e-14, 4.272440016711951e-14, -2.1015418427726643e-14, -4.0835511110921974e-13,
    -7.198551776245908e-13, 2.0356285441470896e-12, 1.4125807436613782e-11, 3.2526035830154884e-11,
    -1.8974958123505413e-11, -5.589743462196584e-10, -3.835380385964237e-09, -2.6314688468895196e-08,
    -2.512236237870209e-07, -3.882564808877691e-06, -0.00011058893876262371, -0.009761097491361469,
    0.7785762350182801,)
_AIRY_AN = (0.346538101525629, 12.007595273964581, 76.27960536152345, 168.08922493463058, 159.75639135016442,
    70.53609068404442, 14.026469116338967, 1.0,)
_AIRY_AD = (0.5675945326387702, 14.75625625848472, 84.51389701414746, 177.31808814540045, 164.2346928715297,
    71.47784008255756, 14.095913560783403, 1.0,)
_AIRY_AFN = (-0.1316963234183318, -0.6264565444319123, -0.6931580360369335, -0.2797799815451191,
    -0.04919001326095003, -0.004062659235948854, -0.0001592764962392621, -2.776491081552329e-06,
    -1.6778769848911465e-08,)
_AIRY_AFD = (13.356042070655324, 32.682503279522464, 26.736704094149957, 9.187074029072596, 1.4752914677166642,
    0.11568717379518804, 0.004402916416152112, 7.547203482874142e-05, 4.5185009297058035e-07,)
_AIRY_AGN = (0.01973399320916857, 0.39110302961568827, 1.0657989759959559, 0.9391692298166502,
    0.35146565610554764, 0.06338889196289255, 0.005858041130483885, 0.000282851600836737, 6.98793669997261e-06,
    8.117892395543892e-08, 3.415517847659236e-10,)
_AIRY_AGD = (9.30892908077442, 19.835292871831214, 15.564662893286462, 5.476860694229755, 0.9542936116189619,
    0.08645808263523921, 0.004126565238242226, 0.00010125908511650914, 1.1716673321441352e-06,
    4.9183457006293e-09,)
_J0_PP = (0.0007969367292973471, 0.08283523921074408, 1.239533716464143, 5.447250030587687, 8.74716500199817,
    5.303240382353949, 1.0,)
_J0_PQ = (0.0009244088105588637, 0.08562884743544745, 1.2535274390105895, 5.470977403304171, 8.761908832370695,
    5.306052882353947, 1.0,)
_J0_QP = (-0.011366383889846916, -1.2825271867050931, -19.553954425773597, -93.20601521237683,
    -177.68116798048806, -147.07750515495118, -51.41053267665993, -6.050143506007285,)
_J0_QQ = (64.3178256118178, 856.4300259769806, 3882.4018360540163, 7240.467741956525, 5930.727011873169,
    2062.0933166032783, 242.0057402402914,)
_J0_RP = (-4794432209.782018, 1956174919465.5657, -249248344360967.72, 9708622510473064.0,)
_J0_RQ = (499.563147152651, 173785.4016763747, 48440965.83399621, 11185553704.535683, 2112775201154.892,
    310518229857422.56, 3.1812195594320496e+16, 1.7108629408104315e+18,)
_J1_PP = (0.0007621256162081731, 0.07313970569409176, 1.1271960812968493, 5.112079511468076, 8.424045901417724,
    5.214515986823615, 1.0,)
_J1_PQ = (0.0005713231280725487, 0.06884559087544954, 1.105142326340617, 5.073863861286015, 8.399855543276042,
    5.209828486823619, 1.0,)
_J1_QP = (0.05108625947501766, 4.982138729512334, 75.82382841325453, 366.7796093601508, 710.8563049989261,
    597.4896124006136, 211.68875710057213, 25.207020585802372,)
_J1_QQ = (74.23732770356752, 1056.4488603826283, 4986.410583376536, 9562.318924047562, 7997.041604473507,
    2826.1927851763908, 336.0936078106983,)
_J1_RP = (-899971225.7055594, 452228297998.19403, -72749424522181.83, 3682957328638529.0,)
_J1_RQ = (620.8364781180543, 256987.25675774884, 83514679.14319493, 22151159547.97925, 4749141220799.914,
    784369607876235.9, 8.952223361846274e+16, 5.322786203326801e+18,)
_Y0_YP = (15592.436785523574, -14663929.59039716, 5435264770.518765, -982136065717.9115, 87590639439536.7,
    -3466283033847297.0, 4.4273326857256984e+16, -1.8495080043698668e+16,)
_Y0_YQ = (1041.2835366425984, 626107.330137135, 268919633.39381415, 86400248710.3935, 20297961275010.555,
    3171577528429750.5, 2.5059625617265306e+17,)
_Y1_YP = (1263204747.9017804, -647355876379.1603, 114509511541823.73, -8127702555013251.0, 2.024394757135949e+17,
    -7.788771962659501e+17,)
_Y1_YQ = (594.3015923461282, 235564.09294306856, 73481194.44597217, 18760131610.870617, 3882312774962.3857,
    620557727146953.8, 6.871410873553005e+16, 3.9727060811656064e+18,)
_K0_A = (1.374465435613523e-16, 4.25981614279661e-14, 1.0349695257633842e-11, 1.904516377220209e-09,
    2.5347910790261494e-07, 2.286212103119452e-05, 0.001264615411446926, 0.0359799365153615, 0.3442898999246285,
    -0.5353273932339028,)
_K0_B = (5.300433772686263e-18, -1.6475804301524212e-17, 5.2103915050390274e-17, -1.678231096805412e-16,
    5.512055978524319e-16, -1.848593377343779e-15, 6.3400764774050706e-15, -2.2275133269916698e-14,
    8.032890775363575e-14, -2.9800969231727303e-13, 1.140340588208475e-12, -4.514597883373944e-12,
    1.8559491149547177e-11, -7.957489244477107e-11, 3.577397281400301e-10, -1.69753450938906e-09,
    8.574034017414225e-09, -4.660489897687948e-08, 2.766813639445015e-07, -1.8317555227191195e-06,
    1.39498137188765e-05, -0.00012849549581627802, 0.0015698838857300533, -0.0314481013119645, 2.4403030820659555,)
_K1_A = (-7.023863479386288e-18, -2.427449850519366e-15, -6.666901694199329e-13, -1.4114883926335278e-10,
    -2.213387630734726e-08, -2.4334061415659684e-06, -0.0001730288957513052, -0.006975723859639864,
    -0.12261118082265715, -0.3531559607765449, 1.5253002273389478,)
_K1_B = (-5.756744483665017e-18, 1.7940508731475592e-17, -5.689462558442859e-17, 1.838093544366639e-16,
    -6.057047248373319e-16, 2.038703165624334e-15, -7.019837090418314e-15, 2.4771544244813043e-14,
    -8.976705182324994e-14, 3.3484196660784293e-13, -1.2891739609510289e-12, 5.13963967348173e-12,
    -2.1299678384275683e-11, 9.218315187605006e-11, -4.1903547593418965e-10, 2.015049755197033e-09,
    -1.0345762465678097e-08, 5.7410841254500495e-08, -3.5019606030878126e-07, 2.406484947837217e-06,
    -1.936197974166083e-05, 0.00019521551847135162, -0.002857816859622779, 0.10392373657681724,
    2.7206261904844427,)


# --- modified Bessel functions -----------------------------------------------------------------

def _i0e64(ctx: Ctx, ax: ir.Value) -> ir.Value:
    op = ctx.op
    small = _chbevl(ctx, op.Sub(op.Div(ax, _c(ctx, 2.0)), _c(ctx, 2.0)), _I0_A)
    large = op.Div(_chbevl(ctx, op.Sub(op.Div(_c(ctx, 32.0), ax), _c(ctx, 2.0)), _I0_B), op.Sqrt(ax))
    return op.Where(op.LessOrEqual(ax, _c(ctx, 8.0)), small, large)


def _i1e64(ctx: Ctx, ax: ir.Value) -> ir.Value:
    op = ctx.op
    small = op.Mul(_chbevl(ctx, op.Sub(op.Div(ax, _c(ctx, 2.0)), _c(ctx, 2.0)), _I1_A), ax)
    large = op.Div(_chbevl(ctx, op.Sub(op.Div(_c(ctx, 32.0), ax), _c(ctx, 2.0)), _I1_B), op.Sqrt(ax))
    return op.Where(op.LessOrEqual(ax, _c(ctx, 8.0)), small, large)


def _i0_64(ctx: Ctx, ax: ir.Value) -> ir.Value:
    # exp(|x|)·(chbevl / √|x|) overflows to inf where torch's (exp·chbevl)/√|x| does, and inf at inf.
    return ctx.op.Mul(ctx.op.Exp(ax), _i0e64(ctx, ax))


def _odd(ctx: Ctx, x: ir.Value, magnitude: ir.Value) -> ir.Value:
    return ctx.op.Where(ctx.op.Less(x, _c(ctx, 0.0)), ctx.op.Neg(magnitude), magnitude)


@translates(aten.i0.default, aten.special_modified_bessel_i0.default, promote=Promote.INT_TO_FLOAT)
def aten_i0(ctx: Ctx, self: ir.Value) -> ir.Value:
    """i0(Tensor self) -> Tensor

    I₀(x) = e^|x| · Σ Chebyshev series (Cephes i0.c): in |x|/2 − 2 on [0, 8], in 32/|x| − 2 (divided
    by √|x|) above; float64. Also special_modified_bessel_i0, the same function.
    """
    x = _f64(ctx, self)
    return _back(ctx, _i0_64(ctx, ctx.op.Abs(x)))


@translates(aten.special_i0e.default, promote=Promote.INT_TO_FLOAT)
def aten_special_i0e(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_i0e(Tensor self) -> Tensor: e^−|x| I₀(x), the Chebyshev series of Cephes i0.c (float64)."""
    return _back(ctx, _i0e64(ctx, ctx.op.Abs(_f64(ctx, self))))


@translates(aten.special_i1.default, aten.special_modified_bessel_i1.default, promote=Promote.INT_TO_FLOAT)
def aten_special_i1(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_i1(Tensor self) -> Tensor

    I₁(x) = sign(x) e^|x| · Chebyshev series of Cephes i1.c (float64); odd in x. Also
    special_modified_bessel_i1.
    """
    x = _f64(ctx, self)
    ax = ctx.op.Abs(x)
    return _back(ctx, _odd(ctx, x, ctx.op.Mul(ctx.op.Exp(ax), _i1e64(ctx, ax))))


@translates(aten.special_i1e.default, promote=Promote.INT_TO_FLOAT)
def aten_special_i1e(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_i1e(Tensor self) -> Tensor: e^−|x| I₁(x), the Chebyshev series of Cephes i1.c (float64)."""
    x = _f64(ctx, self)
    return _back(ctx, _odd(ctx, x, _i1e64(ctx, ctx.op.Abs(x))))


def _k_small_large(ctx: Ctx, x: ir.Value, order: int) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(x ≤ 2 value, e^x K(x) for x > 2, mask x ≤ 2) of K₀ / K₁ by Cephes k0.c / k1.c."""
    op = ctx.op
    a, b = (_K0_A, _K0_B) if order == 0 else (_K1_A, _K1_B)
    log_half = op.Log(op.Mul(_c(ctx, 0.5), x))
    series = _chbevl(ctx, op.Sub(op.Mul(x, x), _c(ctx, 2.0)), a)
    if order == 0:
        small = op.Sub(series, op.Mul(log_half, _i0_64(ctx, x)))
    else:
        i1 = op.Mul(op.Exp(x), _i1e64(ctx, x))
        small = op.Add(op.Mul(log_half, i1), op.Div(series, x))
    scaled_large = op.Div(_chbevl(ctx, op.Sub(op.Div(_c(ctx, 8.0), x), _c(ctx, 2.0)), b), op.Sqrt(x))
    return small, scaled_large, op.LessOrEqual(x, _c(ctx, 2.0))


def _k_edges(ctx: Ctx, x: ir.Value, out: ir.Value) -> ir.Value:
    out = ctx.op.Where(ctx.op.Less(x, _c(ctx, 0.0)), _nan(ctx), out)
    return ctx.op.Where(ctx.op.Equal(x, _c(ctx, 0.0)), _inf(ctx), out)


def _modified_bessel_k(ctx: Ctx, self: ir.Value, order: int, scaled: bool) -> ir.Value:
    op = ctx.op
    x = _f64(ctx, self)
    small, scaled_large, is_small = _k_small_large(ctx, x, order)
    if scaled:
        out = op.Where(is_small, op.Mul(small, op.Exp(x)), scaled_large)
    else:
        out = op.Where(is_small, small, op.Mul(op.Exp(op.Neg(x)), scaled_large))
    return _back(ctx, _k_edges(ctx, x, out))


@translates(aten.special_modified_bessel_k0.default, promote=Promote.INT_TO_FLOAT)
def aten_special_modified_bessel_k0(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_modified_bessel_k0(Tensor self) -> Tensor

    K₀(x) by Cephes k0.c (float64): Chebyshev series in x² − 2 minus ln(x/2) I₀(x) on (0, 2],
    e^−x/√x · Chebyshev series in 8/x − 2 above; K₀(0) = inf, x < 0 → NaN.
    """
    return _modified_bessel_k(ctx, self, 0, scaled=False)


@translates(aten.special_modified_bessel_k1.default, promote=Promote.INT_TO_FLOAT)
def aten_special_modified_bessel_k1(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_modified_bessel_k1(Tensor self) -> Tensor

    K₁(x) by Cephes k1.c (float64): ln(x/2) I₁(x) + Chebyshev series/x on (0, 2], e^−x/√x ·
    Chebyshev series in 8/x − 2 above; K₁(0) = inf, x < 0 → NaN.
    """
    return _modified_bessel_k(ctx, self, 1, scaled=False)


@translates(aten.special_scaled_modified_bessel_k0.default, promote=Promote.INT_TO_FLOAT)
def aten_special_scaled_modified_bessel_k0(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_scaled_modified_bessel_k0(Tensor self) -> Tensor: e^x K₀(x) (Cephes k0.c, k0e)."""
    return _modified_bessel_k(ctx, self, 0, scaled=True)


@translates(aten.special_scaled_modified_bessel_k1.default, promote=Promote.INT_TO_FLOAT)
def aten_special_scaled_modified_bessel_k1(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_scaled_modified_bessel_k1(Tensor self) -> Tensor: e^x K₁(x) (Cephes k1.c, k1e)."""
    return _modified_bessel_k(ctx, self, 1, scaled=True)


# --- Bessel functions of the first and second kind, Airy, spherical Bessel ----------------------

def _bessel_asymptotic(ctx: Ctx, x: ir.Value, order: int, second_kind: bool) -> ir.Value:
    """Hankel's asymptotic form for x > 5 (Cephes j0.c / j1.c): √(2/(πx)) (P cos ξ − (5/x) Q sin ξ),
    ξ = x − π/4 (order 0) or x − 3π/4 (order 1); sin and cos swap (and Q changes sign) for Y."""
    op = ctx.op
    pp, pq, qp, qq = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ) if order == 0 else (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
    five_x = op.Div(_c(ctx, 5.0), x)
    w = op.Mul(five_x, five_x)
    p = op.Div(_polevl(ctx, w, pp), _polevl(ctx, w, pq))
    q = op.Mul(five_x, op.Div(_polevl(ctx, w, qp), _polevl(ctx, w, qq)))
    xi = op.Sub(x, _c(ctx, math.pi / 4 if order == 0 else 3 * math.pi / 4))
    s, c = op.Sin(xi), op.Cos(xi)
    wave = op.Add(op.Mul(p, s), op.Mul(q, c)) if second_kind else op.Sub(op.Mul(p, c), op.Mul(q, s))
    return op.Div(op.Mul(wave, _c(ctx, math.sqrt(2 / math.pi))), op.Sqrt(x))


def _j0_64(ctx: Ctx, ax: ir.Value) -> ir.Value:
    op = ctx.op
    z = op.Mul(ax, ax)
    small = op.Div(op.Mul(op.Mul(op.Sub(z, _c(ctx, 5.78318596294678452118)), op.Sub(z, _c(ctx, 30.4712623436620863991))),
                          _polevl(ctx, z, _J0_RP)), _polevl(ctx, z, _J0_RQ))
    tiny = op.Sub(_c(ctx, 1.0), op.Div(z, _c(ctx, 4.0)))
    small = op.Where(op.Less(ax, _c(ctx, 1e-5)), tiny, small)
    return op.Where(op.LessOrEqual(ax, _c(ctx, 5.0)), small, _bessel_asymptotic(ctx, ax, 0, False))


def _j1_64(ctx: Ctx, x: ir.Value) -> ir.Value:
    op = ctx.op
    ax = op.Abs(x)
    z = op.Mul(ax, ax)
    small = op.Mul(op.Mul(op.Mul(op.Div(_polevl(ctx, z, _J1_RP), _polevl(ctx, z, _J1_RQ)), ax),
                          op.Sub(z, _c(ctx, 14.6819706421238932572))), op.Sub(z, _c(ctx, 49.2184563216946036703)))
    out = op.Where(op.LessOrEqual(ax, _c(ctx, 5.0)), small, _bessel_asymptotic(ctx, ax, 1, False))
    return _odd(ctx, x, out)


@translates(aten.special_bessel_j0.default, promote=Promote.INT_TO_FLOAT)
def aten_special_bessel_j0(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_bessel_j0(Tensor self) -> Tensor

    J₀(x) by Cephes j0.c (float64): (x² − j₁²)(x² − j₂²) R(x²)/S(x²) on |x| ≤ 5 (j₁, j₂ the first
    zeros), Hankel's asymptotic expansion with rational P, Q above; even in x.
    """
    return _back(ctx, _j0_64(ctx, ctx.op.Abs(_f64(ctx, self))))


@translates(aten.special_bessel_j1.default, promote=Promote.INT_TO_FLOAT)
def aten_special_bessel_j1(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_bessel_j1(Tensor self) -> Tensor

    J₁(x) by Cephes j1.c (float64): x (x² − j₁²)(x² − j₂²) R(x²)/S(x²) on |x| ≤ 5, Hankel's
    asymptotic expansion above; odd in x.
    """
    return _back(ctx, _j1_64(ctx, _f64(ctx, self)))


def _y_edges(ctx: Ctx, x: ir.Value, out: ir.Value) -> ir.Value:
    out = ctx.op.Where(ctx.op.Less(x, _c(ctx, 0.0)), _nan(ctx), out)
    return ctx.op.Where(ctx.op.Equal(x, _c(ctx, 0.0)), _c(ctx, -math.inf), out)


@translates(aten.special_bessel_y0.default, promote=Promote.INT_TO_FLOAT)
def aten_special_bessel_y0(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_bessel_y0(Tensor self) -> Tensor

    Y₀(x) by Cephes j0.c (float64): R(x²)/S(x²) + (2/π) ln(x) J₀(x) on (0, 5], Hankel's asymptotic
    expansion above; Y₀(0) = −inf, x < 0 → NaN.
    """
    op = ctx.op
    x = _f64(ctx, self)
    z = op.Mul(x, x)
    small = op.Add(op.Div(_polevl(ctx, z, _Y0_YP), _polevl(ctx, z, _Y0_YQ)),
                   op.Mul(op.Mul(_c(ctx, 2 / math.pi), op.Log(x)), _j0_64(ctx, x)))
    out = op.Where(op.LessOrEqual(x, _c(ctx, 5.0)), small, _bessel_asymptotic(ctx, x, 0, True))
    return _back(ctx, _y_edges(ctx, x, out))


@translates(aten.special_bessel_y1.default, promote=Promote.INT_TO_FLOAT)
def aten_special_bessel_y1(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_bessel_y1(Tensor self) -> Tensor

    Y₁(x) by Cephes j1.c (float64): x R(x²)/S(x²) + (2/π)(J₁(x) ln x − 1/x) on (0, 5], Hankel's
    asymptotic expansion above; Y₁(0) = −inf, x < 0 → NaN.
    """
    op = ctx.op
    x = _f64(ctx, self)
    z = op.Mul(x, x)
    small = op.Add(op.Mul(x, op.Div(_polevl(ctx, z, _Y1_YP), _polevl(ctx, z, _Y1_YQ))),
                   op.Mul(_c(ctx, 2 / math.pi), op.Sub(op.Mul(_j1_64(ctx, x), op.Log(x)), op.Reciprocal(x))))
    out = op.Where(op.LessOrEqual(x, _c(ctx, 5.0)), small, _bessel_asymptotic(ctx, x, 1, True))
    return _back(ctx, _y_edges(ctx, x, out))


@translates(aten.special_spherical_bessel_j0.default, promote=Promote.INT_TO_FLOAT)
def aten_special_spherical_bessel_j0(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_spherical_bessel_j0(Tensor self) -> Tensor

    j₀(x) = sin(x)/x (A&S 10.1.11), its Taylor series to x¹² for |x| < ½; 0 at ±inf. Float64.
    """
    op = ctx.op
    x = _f64(ctx, self)
    z = op.Mul(x, x)
    series = _polevl(ctx, z, [(-1) ** k / math.factorial(2 * k + 1) for k in range(6, -1, -1)])
    out = op.Where(op.Less(op.Abs(x), _c(ctx, 0.5)), series, op.Div(op.Sin(x), x))
    return _back(ctx, op.Where(op.IsInf(x), _c(ctx, 0.0), out))


@translates(aten.special_airy_ai.default, promote=Promote.INT_TO_FLOAT)
def aten_special_airy_ai(ctx: Ctx, self: ir.Value) -> ir.Value:
    """special_airy_ai(Tensor self) -> Tensor

    Ai(x) by Cephes airy.c (float64): the Maclaurin series Ai = c₁f − c₂g (A&S 10.4.2) on
    |x| < 2.09 (30 terms), the asymptotic expansions A&S 10.4.59 (x ≥ 2.09) and 10.4.60
    (x < −2.09) with Cephes' rational approximations of their series; 0 beyond x = 103.892,
    NaN at ±inf. The rational functions are evaluated as torch's airy_ai evaluates the tables.
    """
    op = ctx.op
    x = _f64(ctx, self)
    ax = op.Abs(x)
    # x < -2.09: oscillating expansion.
    zeta_neg = op.Div(op.Mul(op.Mul(_c(ctx, -2.0), x), op.Sqrt(ax)), _c(ctx, 3.0))
    z = op.Reciprocal(zeta_neg)
    zz = op.Mul(z, z)
    f = op.Div(_polevl(ctx, zz, _AIRY_AFN), _polevl(ctx, zz, _AIRY_AFD))
    g = op.Div(_polevl(ctx, zz, _AIRY_AGN), _polevl(ctx, zz, _AIRY_AGD))
    theta = op.Add(zeta_neg, _c(ctx, 0.25 * math.pi))
    wave = op.Sub(op.Mul(op.Sin(theta), op.Add(_c(ctx, 1.0), op.Mul(zz, f))), op.Mul(op.Cos(theta), op.Mul(z, g)))
    negative = op.Div(op.Mul(_c(ctx, 1 / _SQRT_PI), wave), op.Sqrt(op.Sqrt(ax)))
    # x >= 2.09: exponentially decaying expansion.
    zeta = op.Div(op.Mul(op.Mul(_c(ctx, 2.0), x), op.Sqrt(ax)), _c(ctx, 3.0))
    iz = op.Reciprocal(zeta)
    ratio = op.Div(_polevl(ctx, iz, _AIRY_AN), _polevl(ctx, iz, _AIRY_AD))
    positive = op.Div(op.Mul(_c(ctx, 1 / _SQRT_PI), ratio),
                      op.Mul(op.Mul(_c(ctx, 2.0), op.Sqrt(op.Sqrt(ax))), op.Exp(zeta)))
    # |x| < 2.09: power series f = Σ 3ᵏ(1/3)ₖ x³ᵏ/(3k)!, g = Σ 3ᵏ(2/3)ₖ x³ᵏ⁺¹/(3k+1)!.
    cube = op.Mul(op.Mul(x, x), x)
    m, n, fs, gs = _c(ctx, 1.0), x, _c(ctx, 1.0), x
    k = 1.0
    for _ in range(30):
        m = op.Div(op.Mul(m, cube), _c(ctx, (k + 1) * (k + 2)))
        n = op.Div(op.Mul(n, cube), _c(ctx, (k + 2) * (k + 3)))
        fs, gs = op.Add(fs, m), op.Add(gs, n)
        k += 3.0
    series = op.Sub(op.Mul(_c(ctx, 0.355028053887817239260), fs), op.Mul(_c(ctx, 0.258819403792806798405), gs))
    out = op.Where(op.Less(x, _c(ctx, -2.09)), negative,
                   op.Where(op.GreaterOrEqual(x, _c(ctx, 2.09)), positive, series))
    out = op.Where(op.Greater(x, _c(ctx, 103.892)), _c(ctx, 0.0), out)
    return _back(ctx, op.Where(op.IsInf(x), _nan(ctx), out))
