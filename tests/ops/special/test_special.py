"""Special functions (onnxport/ops/special/: error_function.py, gamma.py, incomplete_gamma.py, bessel.py,
orthogonal_polynomials.py) against eager PyTorch: values at poles, ±inf, NaN, negative arguments,
both tails, integer inputs, float64, and orthogonal polynomials whose degree is only known at run
time (an ONNX Loop up to max(n))."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import pytest
import torch

from _eager import check_against_eager

INF, NAN = math.inf, math.nan
TOL = {torch.float32: (2e-4, 2e-5), torch.float64: (1e-9, 1e-12), torch.float16: (2e-3, 2e-3),
       torch.bfloat16: (1.6e-2, 1e-2)}

# TOL by dtype for floating outputs, exact for the others
_check = partial(check_against_eager, tol_by_dtype=TOL)


def t(values: list[float], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lgamma_poles_reflection_and_infinities(dtype: torch.dtype) -> None:
    x = t([0.0, -0.0, -1.0, -2.5, -7.3, 0.5, 1.0, 2.0, 1e-30, 30.0, 1e10, INF, -INF, NAN, -1e30, 3.7], dtype)
    _check(torch.lgamma, x)


def test_lgamma_integer_input_promotes_to_float() -> None:
    _check(torch.lgamma, torch.tensor([-3, 0, 1, 5, 100], dtype=torch.int64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_digamma_signed_zero_poles_and_root(dtype: torch.dtype) -> None:
    x = t([0.0, -0.0, -1.0, -2.5, -0.3, 1.0, 1.4616321449683622, 10.0, 1e6, INF, -INF, NAN, 1e-8], dtype)
    _check(torch.digamma, x)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_polygamma_negative_and_positive_arguments(n: int) -> None:
    x = t([-3.0, -2.5, -0.5, 0.0, 0.25, 1.0, 2.0, 7.5, 30.0, -INF, NAN])
    _check(lambda v: torch.polygamma(n, v), x)


def test_zeta_domain_edges_and_negative_q_loop() -> None:
    x = t([2.0, 3.5, 1.0, 0.5, 2.0, 3.0, 4.0, 2.0, 6.0])
    q = t([1.0, 2.5, 1.0, 1.0, -2.0, -2.5, -20.5, 100.0, 0.1])
    _check(torch.special.zeta, x, q)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_erfcx_both_tails(dtype: torch.dtype) -> None:
    x = t([-30.0, -10.0, -1.0, -0.5, 0.0, 0.5, 1.0, 7.9, 8.0, 50.0, 1e8, INF, -INF, NAN], dtype)
    _check(torch.special.erfcx, x)


def test_log_ndtr_far_tails() -> None:
    _check(torch.special.log_ndtr, t([-40.0, -5.0, -1.0, 0.0, 3.0, 10.0]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_erfinv_ends_and_tiny(dtype: torch.dtype) -> None:
    x = t([-1.0, 1.0, 1.5, -1.5, -0.999, 0.0, 1e-3, 0.5, 0.9999, -0.3, NAN], dtype)
    _check(torch.erfinv, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ndtri_branches(dtype: torch.dtype) -> None:
    x = t([0.0, 1.0, -0.1, 1.1, 1e-30, 1e-10, 0.01, 0.2, 0.5, 0.9, 0.999999, NAN], dtype)
    _check(torch.special.ndtri, x)


@pytest.mark.parametrize("fn", [torch.i0, torch.special.i0e, torch.special.i1, torch.special.i1e,
                                torch.special.modified_bessel_i0, torch.special.modified_bessel_i1])
def test_modified_bessel_i_both_intervals(fn: Any) -> None:
    _check(fn, t([-100.0, -10.0, -8.0, -1.0, 0.0, 1e-5, 1.0, 8.0, 9.0, 50.0, NAN]))


@pytest.mark.parametrize("fn", [torch.special.modified_bessel_k0, torch.special.modified_bessel_k1,
                                torch.special.scaled_modified_bessel_k0, torch.special.scaled_modified_bessel_k1])
def test_modified_bessel_k_domain(fn: Any) -> None:
    _check(fn, t([-1.0, 0.0, 1e-3, 1.0, 2.0, 3.0, 50.0, INF, NAN]))


@pytest.mark.parametrize("fn", [torch.special.bessel_j0, torch.special.bessel_j1,
                                torch.special.bessel_y0, torch.special.bessel_y1])
def test_bessel_small_and_asymptotic(fn: Any) -> None:
    _check(fn, t([-7.0, -1.0, 0.0, 1e-6, 1.0, 2.404825557695773, 5.0, 5.1, 30.0, 1000.0, NAN]))


def test_spherical_bessel_j0_and_airy_ai() -> None:
    _check(torch.special.spherical_bessel_j0, t([-INF, -3.0, 0.0, 0.3, 0.5, 10.0, INF, NAN]))
    _check(torch.special.airy_ai, t([-INF, -50.0, -3.0, -2.1, -1.0, 0.0, 1.0, 2.09, 5.0, 9.0, 104.0, INF, NAN]))


POLYNOMIALS = [
    torch.special.chebyshev_polynomial_t, torch.special.chebyshev_polynomial_u,
    torch.special.chebyshev_polynomial_v, torch.special.chebyshev_polynomial_w,
    torch.special.shifted_chebyshev_polynomial_t, torch.special.shifted_chebyshev_polynomial_u,
    torch.special.shifted_chebyshev_polynomial_v, torch.special.shifted_chebyshev_polynomial_w,
    torch.special.hermite_polynomial_h, torch.special.hermite_polynomial_he,
    torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p,
]


@pytest.mark.parametrize("fn", POLYNOMIALS, ids=lambda f: f.__name__)
def test_polynomial_degree_known_only_at_run_time(fn: Any) -> None:
    x = t([-1.0, 0.0, 0.3, 1.0, 1.5, -2.0]).reshape(6, 1)
    n = t([-2.0, 0.0, 1.0, 3.0])
    larger = t([2.0, 7.0, 12.0, 25.0])  # loop bound from the run-time n, closed forms past the thresholds
    _check(fn, x, n, others=((x, larger), (x * 0.5, t([9.0, 5.0, -1.0, 30.0]))))


@pytest.mark.parametrize("fn", POLYNOMIALS[:4] + POLYNOMIALS[8:], ids=lambda f: f.__name__)
def test_polynomial_float64_uses_the_recurrence(fn: Any) -> None:
    x = t([-1.0, -0.7, 0.0, 0.2, 0.9, 1.0, 1.3], torch.float64)
    n = t([0.0, 1.0, 2.0, 9.0, 12.0, 15.0, 4.0], torch.float64)
    _check(fn, x, n)


def test_polynomial_integer_inputs_and_hermite_limit() -> None:
    x = torch.tensor([-8, 0, 1, 2, 3], dtype=torch.int64)
    n = torch.tensor([5, 7, -3, 0, 6], dtype=torch.int64)
    _check(torch.special.chebyshev_polynomial_t, x, n)
    _check(torch.special.hermite_polynomial_h, t([0.5, 0.5, 0.5]), t([128.0, 129.0, NAN]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_frexp_exact_including_subnormals(dtype: torch.dtype) -> None:
    finfo = torch.finfo(dtype)
    x = t([0.0, -0.0, INF, -INF, NAN, 1.0, 0.75, -3.0, finfo.tiny / 4, finfo.max, 1.0 - finfo.eps / 2], dtype)
    _check(torch.frexp, x, exact=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_nextafter_ulp_steps_zero_and_infinities(dtype: torch.dtype) -> None:
    finfo = torch.finfo(dtype)
    x = t([0.0, 0.0, 1.0, 1.0, -1.0, 2.0, finfo.max, INF, INF, 3.0, NAN, finfo.tiny, -finfo.tiny / 2, 1.0], dtype)
    y = t([1.0, -1.0, 2.0, 0.0, 0.0, -INF, INF, 0.0, INF, 3.0, 1.0, 0.0, 0.0, NAN], dtype)
    _check(torch.nextafter, x, y, exact=True)


IGAMMA = [torch.igamma, torch.igammac]
# Every branch of Cephes igam/igamc: series of P and of Q, continued fraction, 1 − the other, Temme's
# expansion for 20 < a < 200 and for a > 200, and the edge values (checked in torch's order).
IGAMMA_A = [-1.0, -INF, 0.0, 1e-30, 0.5, 1.0, 3.0, 25.0, 150.0, 250.0, 1e4, 1e8, INF, NAN]
IGAMMA_X = [-1.0, 0.0, 1e-20, 0.3, 0.7, 1.05, 2.0, 24.0, 160.0, 260.0, 1.01e4, 1.00002e8, INF, NAN]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("fn", IGAMMA, ids=lambda f: f.__name__)
def test_igamma_branches_and_edges(fn: Any, dtype: torch.dtype) -> None:
    a = t(IGAMMA_A, dtype).reshape(-1, 1)
    x = t(IGAMMA_X, dtype)
    _check(fn, a, x, others=((x.reshape(-1, 1), t(IGAMMA_A, dtype)),))


@pytest.mark.parametrize("fn", IGAMMA, ids=lambda f: f.__name__)
def test_igamma_iterations_bound_at_run_time(fn: Any) -> None:
    a, x = t([2.0, 1e-3, 30.0, 1.0], torch.float64), t([1.0, 1e-3, 31.0, 0.5], torch.float64)  # a few terms
    slow = (t([0.5, 1e7, 199.0, 3.0], torch.float64), t([60.0, 0.998e7, 130.0, 2.9], torch.float64))  # up to 2000
    no_loop = (t([50.0, 0.0, -1.0, INF], torch.float64), t([51.0, 1.0, 2.0, 1.0], torch.float64))  # Temme/edges
    tiny_a = (t([1e-300, 1e-30, 1e-8, 5e-324], torch.float64), t([1.0, 1e-300, 0.25, 1e-300], torch.float64))
    _check(fn, a, x, others=(slow, no_loop, tiny_a))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_igamma_half_types(dtype: torch.dtype) -> None:
    a, x = t([0.5, 2.0, 30.0, 0.0, 4.0], dtype), t([0.25, 3.0, 28.0, 1.0, INF], dtype)
    _check(torch.igamma, a, x)
    _check(torch.igammac, a, x)
