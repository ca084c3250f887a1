"""Symmetric eigenvalues, pseudo-inverse and matrix exponential (onnxport.ops.linalg.spectral) against eager."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager
from onnxport.errors import UnsupportedOpError


def _sym(*shape: int) -> torch.Tensor:
    a = torch.randn(*shape)
    return a + a.mT


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh_reads_one_triangle(n: int, uplo: str) -> None:
    torch.manual_seed(n)
    A = torch.randn(2, 3, n, n)  # not symmetric: only the UPLO triangle counts, as in LAPACK
    check_against_eager(lambda a: torch.linalg.eigvalsh(a, UPLO=uplo), A)


def test_eigvalsh_repeated_and_zero_eigenvalues() -> None:
    torch.manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(6, 6))
    A = q @ torch.diag(torch.tensor([3.0, 3.0, 0.0, 0.0, -1.0, 2.0])) @ q.T
    check_against_eager(torch.linalg.eigvalsh, torch.stack([A, torch.zeros(6, 6), torch.eye(6)]))


def test_eigh_eigenvalues_alone_are_encoded_vectors_refused() -> None:
    A = _sym(3, 4, 4)
    check_against_eager(lambda a: torch.linalg.eigh(a)[0], A)
    with pytest.raises(UnsupportedOpError, match="eigenvectors"):
        onnxport.export(Fn(torch.linalg.eigh), (A,))


def test_matrix_rank_hermitian() -> None:
    torch.manual_seed(1)
    b = torch.randn(3, 5, 2)
    A = b @ b.mT  # rank 2
    check_against_eager(lambda a: torch.linalg.matrix_rank(a, hermitian=True), A)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 1, 3, 6), (7, 1)])
def test_pinv_general(shape: tuple[int, ...]) -> None:
    torch.manual_seed(2)
    A = torch.randn(*shape)
    check_against_eager(torch.linalg.pinv, A)
    check_against_eager(torch.pinverse, A)


def test_pinv_rank_deficient_and_tolerances() -> None:
    torch.manual_seed(3)
    A = torch.randn(2, 6, 2) @ torch.randn(2, 2, 4)  # rank 2 of 4
    check_against_eager(torch.linalg.pinv, A)
    B = torch.diag(torch.tensor([4.0, 1.0, 0.1, 0.001]))
    atol, rtol = torch.tensor(0.05), torch.tensor([0.2, 0.01])  # rtol broadcast over a batch of 2
    check_against_eager(lambda a, t: torch.linalg.pinv(a, atol=t), B, atol)  # positive atol: rtol becomes 0
    check_against_eager(lambda a, r: torch.linalg.pinv(a, rtol=r), B.expand(2, 4, 4), rtol)
    check_against_eager(lambda a, t, r: torch.linalg.pinv(a, atol=t, rtol=r), B.expand(2, 4, 4), atol, rtol)


def test_pinv_hermitian() -> None:
    torch.manual_seed(4)
    b = torch.randn(2, 5, 3)
    A = torch.cat([b @ b.mT, _sym(1, 5, 5)])  # rank 3 and full rank, indefinite
    check_against_eager(lambda a: torch.linalg.pinv(a, hermitian=True), torch.tril(A) + 7 * torch.triu(A, 1).abs())


def test_pinv_empty() -> None:
    check_against_eager(torch.linalg.pinv, torch.randn(3, 0, 4))
    check_against_eager(torch.linalg.pinv, torch.randn(0, 4, 3))


def _expm_reference(A: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_exp(A.double()).to(A.dtype)


def test_matrix_exp_batch_with_different_squarings() -> None:
    torch.manual_seed(5)
    A = torch.stack([
        torch.zeros(4, 4),
        0.01 * torch.randn(4, 4),
        torch.randn(4, 4),
        8 * torch.randn(4, 4) / 4,
        -30 * torch.eye(4) + torch.randn(4, 4),  # large norm, tiny exponential
    ])
    check_against_eager(torch.linalg.matrix_exp, A, expected=_expm_reference(A), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 3, 7])
def test_matrix_exp_sizes(n: int) -> None:
    torch.manual_seed(n)
    A = torch.randn(2, n, n)
    check_against_eager(torch.linalg.matrix_exp, A, expected=_expm_reference(A), rtol=1e-5, atol=1e-6)
    check_against_eager(torch.linalg.matrix_exp, torch.randn(2, 0, 0))


def test_matrix_exp_known_values() -> None:
    t = 0.7
    rotation = torch.tensor([[0.0, -t], [t, 0.0]])  # exp = rotation by t
    nilpotent = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    check_against_eager(torch.linalg.matrix_exp, rotation,
           expected=torch.tensor([[torch.cos(torch.tensor(t)), -torch.sin(torch.tensor(t))],
                                  [torch.sin(torch.tensor(t)), torch.cos(torch.tensor(t))]]))
    check_against_eager(torch.linalg.matrix_exp, nilpotent,
           expected=torch.tensor([[1.0, 1.0, 0.5], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]))


def test_dynamic_size_refused() -> None:
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.linalg.eigvalsh(x)

    x = _sym(4, 4)
    n = torch.export.Dim("n", min=2, max=8)
    with pytest.raises(UnsupportedOpError, match="dynamic size"):
        onnxport.export(M(), (x,), dynamic_shapes={"x": {0: n, 1: n}})
