"""Small dense linear algebra (det, slogdet, inverse, solve, svdvals/matrix_rank) against eager, edge cases included."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager
from onnxport.errors import UnsupportedOpError

nan, inf = float("nan"), float("inf")

# torch's default tolerances unless a test gives its own
_check = partial(check_against_eager, rtol=None, atol=None)


# -- det, slogdet, logdet -------------------------------------------------------------------------

def test_det_batched_singular_and_empty() -> None:
    torch.manual_seed(0)
    a = torch.randn(2, 3, 4, 4)
    a[0, 1] = torch.tensor([[1.0, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [1, 0, 1, 0]])  # singular
    _check(torch.linalg.det, a, rtol=1e-4, atol=1e-5)
    _check(torch.linalg.det, torch.randn(3, 0, 0))  # det of 0×0 is 1
    _check(torch.linalg.det, torch.randn(0, 5, 5))


def test_slogdet_and_logdet_signs() -> None:
    a = torch.stack([torch.diag(torch.tensor(d)) for d in ([2.0, 3.0], [-2.0, 3.0], [0.0, 1.0])])
    sign, logabs = _check(torch.linalg.slogdet, a)
    assert sign.tolist() == [1.0, -1.0, 0.0] and logabs[2] == -inf
    out = _check(torch.logdet, a)[0]
    assert torch.isnan(out[1]) and out[2] == -inf  # negative det → nan, zero det → -inf


# -- inverse, solve ---------------------------------------------------------------------------

def test_inv_needs_pivoting() -> None:
    a = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [4.0, -3.0, 8.0]])  # zero on the diagonal
    _check(torch.linalg.inv, a, rtol=1e-4, atol=1e-5)
    torch.manual_seed(0)
    _check(torch.inverse, torch.randn(2, 3, 6, 6) + 3 * torch.eye(6), rtol=1e-4, atol=1e-5)


def test_inv_ex_reports_singular_pivot() -> None:
    a = torch.stack([torch.eye(3), torch.tensor([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])])
    inv, info = onnxport.export(Fn(torch.linalg.inv_ex), (a,))(a)
    assert info.dtype == torch.int32 and info[0] == 0 and info[1] > 0
    torch.testing.assert_close(inv[0], torch.eye(3))


def test_solve_vector_matrix_left_and_broadcast() -> None:
    torch.manual_seed(0)
    a = torch.randn(2, 4, 4) + 4 * torch.eye(4)
    _check(torch.linalg.solve, a, torch.randn(2, 4), rtol=1e-4, atol=1e-5)  # batch of vectors
    _check(torch.linalg.solve, a, torch.randn(4, 3), rtol=1e-4, atol=1e-5)  # B broadcast over the batch
    _check(torch.linalg.solve, a[0], torch.randn(5, 4, 2), rtol=1e-4, atol=1e-5)  # A broadcast
    _check(lambda a, b: torch.linalg.solve(a, b, left=False), a, torch.randn(2, 3, 4), rtol=1e-4, atol=1e-5)
    _check(lambda a, b: torch.linalg.solve_ex(a, b)[0], a, torch.randn(2, 4, 1), rtol=1e-4, atol=1e-5)


def test_inverse_of_large_matrix_is_refused() -> None:
    with pytest.raises(UnsupportedOpError, match="unrolled"):
        onnxport.export(Fn(torch.linalg.inv), (torch.randn(20, 20),))


# -- singular values (one-sided Jacobi) ---------------------------------------------------------------

def test_svdvals_and_matrix_rank_of_rank_deficient() -> None:
    torch.manual_seed(0)
    low = torch.randn(2, 6, 2) @ torch.randn(2, 2, 5)  # rank 2, 6×5
    _check(torch.linalg.svdvals, torch.randn(3, 4, 7), rtol=1e-4, atol=1e-5)  # wide: Aᵀ's columns
    _check(torch.linalg.svdvals, low, rtol=1e-4, atol=1e-4)
    assert _check(torch.linalg.matrix_rank, low)[0].tolist() == [2, 2]
    _check(lambda a: torch.linalg.matrix_rank(a, hermitian=False, atol=0.5), torch.diag(torch.tensor([3.0, 0.4, 1.0])))
    with pytest.raises(UnsupportedOpError, match="singular vectors"):
        onnxport.export(Fn(lambda a: torch.linalg.svd(a)[0]), (torch.randn(3, 3),))
