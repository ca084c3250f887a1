"""Matrix factorizations and triangular solves (onnxport.ops.linalg.factorization) against eager torch.linalg."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import onnxport
from _eager import Fn, Fn1, check_against_eager
from onnxport.errors import UnsupportedOpError

pytestmark = pytest.mark.filterwarnings("ignore:torch.(cholesky|triangular_solve) is deprecated")


def _spd(*shape: int) -> torch.Tensor:
    a = torch.randn(*shape)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_batched_upper_and_lower(upper: bool) -> None:
    torch.manual_seed(0)
    A = _spd(2, 3, 5, 5)
    check_against_eager(lambda a: (torch.linalg.cholesky(a, upper=upper), torch.cholesky(a, upper=upper)), A)
    L = torch.linalg.cholesky(A, upper=upper)
    B = torch.randn(3, 5, 2)  # batch broadcast against L's
    check_against_eager(lambda b, f: torch.cholesky_solve(b, f, upper=upper), B, L)
    check_against_eager(lambda f: torch.cholesky_inverse(f, upper=upper), L[0, 0])


def test_cholesky_ex_info_is_the_first_failing_minor() -> None:
    A = torch.stack([
        torch.tensor([[4.0, 2, 2, 1], [2, 1, 3, 1], [2, 3, 9, 1], [1, 1, 1, 8]]),  # fails at minor 2
        torch.tensor([[4.0, 2, 2, 1], [2, -1, 3, 1], [2, 3, 9, 1], [1, 1, 1, 8]]),  # fails at minor 2
        _spd(4, 4),
    ])
    for upper in (False, True):
        model = Fn(lambda a, upper=upper: torch.linalg.cholesky_ex(a, upper=upper))
        L, info = onnxport.export(model, (A,))(A)
        L_ref, info_ref = model(A)
        assert info.dtype == torch.int32 and info.tolist() == info_ref.tolist() == [2, 2, 0]
        torch.testing.assert_close(L, L_ref)  # LAPACK's partial factor on failure, as eager


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular_variants(left: bool, upper: bool, unit: bool) -> None:
    torch.manual_seed(1)
    A = torch.randn(2, 4, 4) + 4 * torch.eye(4)  # the other triangle is garbage: must be ignored
    B = torch.randn(4, 3) if left else torch.randn(3, 4)
    check_against_eager(lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit), A, B)


@pytest.mark.parametrize("transpose", [False, True])
def test_triangular_solve_transpose(transpose: bool) -> None:
    torch.manual_seed(2)
    A = torch.randn(2, 5, 5) + 5 * torch.eye(5)
    check_against_eager(lambda b, a: torch.triangular_solve(b, a, upper=False, transpose=transpose), torch.randn(2, 5, 3), A)


def test_lu_factor_pivots_info_and_singular() -> None:
    torch.manual_seed(3)
    A = torch.stack([
        torch.tensor([[0.0, 0, 1], [0, 0, 2], [1, 2, 3]]),  # zero pivot at step 2, eager: info 2
        torch.tensor([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]]),  # info 3
        torch.randn(3, 3),
    ])
    model = Fn(torch.linalg.lu_factor_ex)
    LU, piv, info = onnxport.export(model, (A,))(A)
    LU_ref, piv_ref, info_ref = model(A)
    assert piv.dtype == torch.int32 and piv.tolist() == piv_ref.tolist()
    assert info.tolist() == info_ref.tolist() == [2, 3, 0]
    torch.testing.assert_close(LU, LU_ref)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (2, 5, 3)])
def test_lu_and_unpack_rectangular(shape: tuple[int, ...]) -> None:
    torch.manual_seed(4)
    A = torch.randn(*shape)
    check_against_eager(torch.linalg.lu, A)
    check_against_eager(lambda a: torch.linalg.lu_factor(a), A)
    LU, piv = torch.linalg.lu_factor(A)
    check_against_eager(torch.lu_unpack, LU, piv)


@pytest.mark.parametrize(("left", "adjoint"), [(True, False), (True, True), (False, False), (False, True)])
def test_lu_solve_left_adjoint(left: bool, adjoint: bool) -> None:
    torch.manual_seed(5)
    LU, piv = torch.linalg.lu_factor(torch.randn(2, 4, 4))
    B = torch.randn(2, 4, 3) if left else torch.randn(2, 3, 4)
    check_against_eager(lambda lu, p, b: torch.linalg.lu_solve(lu, p, b, left=left, adjoint=adjoint), LU, piv, B)


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5), (4, 4)])
def test_qr_modes_match_lapack_signs(mode: str, shape: tuple[int, ...]) -> None:
    torch.manual_seed(6)
    A = torch.randn(*shape)
    check_against_eager(lambda a: torch.linalg.qr(a, mode=mode), A)


def test_geqrf_and_householder_product() -> None:
    torch.manual_seed(7)
    A = torch.randn(2, 6, 4)
    check_against_eager(torch.geqrf, A)
    a, tau = torch.geqrf(A)
    check_against_eager(torch.linalg.householder_product, a, tau)
    check_against_eager(torch.linalg.householder_product, a, tau[..., :2])
    # a zero column below the diagonal: τ = 0, as LAPACK larfg
    check_against_eager(torch.geqrf, torch.tensor([[2.0, 1], [0, 3], [0, 1]]))


def test_dynamic_batch_static_n() -> None:
    batch = torch.export.Dim("batch")
    A = _spd(3, 4, 4)
    check_against_eager(torch.linalg.cholesky, A, dynamic_shapes={"x": {0: batch}}, others=((_spd(5, 4, 4),),))


@pytest.mark.parametrize("fn", [torch.linalg.cholesky, torch.linalg.lu_factor, torch.linalg.qr])
def test_dynamic_n_is_refused(fn: Any) -> None:
    n = torch.export.Dim("n", min=2, max=8)
    with pytest.raises(UnsupportedOpError, match="dynamic size"):
        onnxport.export(Fn1(fn), (_spd(4, 4),), dynamic_shapes={"x": {0: n, 1: n}})


def test_ldl_solve_with_1x1_and_2x2_bunch_kaufman_blocks() -> None:
    torch.manual_seed(8)
    A = torch.randn(16, 6, 6)
    A = A + A.mT
    A[:4] = torch.tensor([[0.0, 1], [1, 0]]).repeat(3, 3) + 0.01 * A[:4]  # forces 2×2 pivots
    LD, piv = torch.linalg.ldl_factor(A)
    assert bool((piv < 0).any()) and bool((piv > 0).any())
    check_against_eager(torch.linalg.ldl_solve, LD, piv, torch.randn(16, 6, 3))
    check_against_eager(torch.linalg.ldl_solve, LD[:2], piv[:2], torch.randn(6, 2))  # B broadcast over the batch


# -- ormqr ------------------------------------------------------------------------------------

@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_from_geqrf_batched(left: bool, transpose: bool) -> None:
    torch.manual_seed(7)
    A = torch.randn(2, 6, 4)
    a, tau = torch.geqrf(A)
    C = torch.randn(2, 6, 3) if left else torch.randn(2, 3, 6)
    out = check_against_eager(lambda x, t, c: torch.ormqr(x, t, c, left=left, transpose=transpose), a, tau, C)[0]
    Q = torch.linalg.qr(A, mode="complete").Q
    Qop = Q.mT if transpose else Q
    torch.testing.assert_close(out, Qop @ C if left else C @ Qop, atol=1e-5, rtol=1e-4)


def test_ormqr_wide_reflectors_random_tau_float64_and_empty() -> None:
    torch.manual_seed(8)
    a, tau = torch.randn(3, 5, dtype=torch.float64), torch.rand(3, dtype=torch.float64)  # τ not from geqrf
    for left in (True, False):
        C = torch.randn(3, 4, dtype=torch.float64) if left else torch.randn(4, 3, dtype=torch.float64)
        check_against_eager(lambda x, t, c, left=left: torch.ormqr(x, t, c, left=left, transpose=True), a, tau, C)
    check_against_eager(lambda x, t, c: torch.ormqr(x, t, c), torch.randn(4, 0), torch.zeros(0), torch.randn(4, 2))
    check_against_eager(lambda x, t, c: torch.ormqr(x, t, c), torch.randn(0, 4, 2), torch.zeros(0, 2), torch.randn(0, 4, 3))
