"""LDLᵀ factorization with Bunch-Kaufman pivoting (onnxport.ops.linalg.ldl) against eager torch.linalg."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn1, check_against_eager
from onnxport.errors import UnsupportedOpError

# -- linalg.ldl_factor ------------------------------------------------------------------------

def _mixed_symmetric(n: int, batch: int, seed: int) -> torch.Tensor:
    """Matrices that need 1×1 and 2×2 pivots, zero columns (info > 0) and tiny entries, mixed in one batch."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(batch, n, n, generator=g)
    A[::3].diagonal(dim1=-2, dim2=-1).zero_()  # zero diagonal: 2×2 blocks
    j = min(1, n - 1)
    A[1::5, :, j] = 0
    A[1::5, j, :] = 0  # a zero column: info = j + 1
    A[2::7] *= 0.01
    return A  # not symmetric: only the lower triangle is read


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16])
def test_ldl_factor_matches_lapack_pivots_exactly(n: int) -> None:
    A = _mixed_symmetric(n, 30, n)
    LD, piv, info = check_against_eager(lambda a: tuple(torch.linalg.ldl_factor_ex(a)), A, exact=False)
    LD_ref, piv_ref, info_ref = torch.linalg.ldl_factor_ex(A)
    assert piv.dtype == info.dtype == torch.int32
    assert torch.equal(piv, piv_ref) and torch.equal(info, info_ref)
    if n >= 3:
        assert (piv_ref < 0).any() and (piv_ref > 0).any() and (info_ref > 0).any()
    assert torch.equal(LD.triu(1), torch.zeros_like(LD))


def test_ldl_factor_hermitian_float64_unbatched_and_solve_round_trip() -> None:
    torch.manual_seed(6)
    A = torch.randn(6, 6, dtype=torch.float64)
    A = A + A.mT
    A.diagonal().zero_()
    check_against_eager(lambda a: tuple(torch.linalg.ldl_factor(a, hermitian=True)), A)
    B = torch.randn(6, 2, dtype=torch.float64)
    check_against_eager(lambda a, b: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a), b), A, B)


def test_ldl_factor_empty_and_dynamic_size_refused() -> None:
    check_against_eager(lambda a: tuple(torch.linalg.ldl_factor_ex(a)), torch.zeros(3, 0, 0))
    check_against_eager(lambda a: tuple(torch.linalg.ldl_factor_ex(a)), torch.zeros(0, 4, 4))
    A = torch.randn(4, 4)
    n = torch.export.Dim("n", min=2)
    with pytest.raises(UnsupportedOpError, match="dynamic size"):
        onnxport.export(Fn1(lambda a: torch.linalg.ldl_factor(a)), (A + A.mT,), dynamic_shapes=({0: n, 1: n},))
