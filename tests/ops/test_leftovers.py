"""Leftover ops against eager: 5-D grid_sample, histogram/histogramdd, LDLᵀ factorization, ormqr."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn, Fn1, check_against_eager
from onnxport.errors import UnsupportedOpError

# -- grid_sampler_3d --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_modes(mode: str, padding_mode: str, align_corners: bool) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, 6)
    grid = torch.rand(2, 3, 4, 2, 3) * 3 - 1.5  # a third of the points fall outside [-1, 1]
    check_against_eager(lambda a, g: torch.nn.functional.grid_sample(a, g, mode=mode, padding_mode=padding_mode,
                                                        align_corners=align_corners), x, grid)


def test_grid_sample_5d_exact_corners_and_float64() -> None:
    x = torch.arange(2 * 3 * 4, dtype=torch.float64).reshape(1, 1, 2, 3, 4)
    corners = torch.tensor([[-1.0, -1, -1], [1, 1, 1], [1, -1, 1], [0, 0, 0], [2, 2, 2]], dtype=torch.float64)
    grid = corners.reshape(1, 5, 1, 1, 3)
    out = check_against_eager(lambda a, g: torch.nn.functional.grid_sample(a, g, align_corners=True), x, grid, opset=20)
    assert out[0].flatten()[:2].tolist() == [0.0, 23.0]  # (x, y, z) = last-dim order W, H, D


def test_grid_sample_5d_below_opset_20_refused() -> None:
    x, grid = torch.randn(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3)
    with pytest.raises(UnsupportedOpError, match="opset 20"):
        onnxport.export(Fn(lambda a, g: torch.nn.functional.grid_sample(a, g, align_corners=False)),
                        (x, grid), opset_version=19)


# -- histogram, histogramdd -------------------------------------------------------------------

@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_bin_count_data_range(density: bool, weighted: bool) -> None:
    torch.manual_seed(2)
    x = torch.randn(4, 50)
    w = torch.rand(4, 50)
    if weighted:
        check_against_eager(lambda a, b: torch.histogram(a, 7, weight=b, density=density), x, w)
    else:
        check_against_eager(lambda a: torch.histogram(a, 7, density=density), x)


def test_histogram_edges_hit_exactly_and_right_edge_included() -> None:
    # Points on the edges of linspace(0, 1, 11) and on the outer edges; 2.0, -1 and NaN ignored.
    x = torch.cat([torch.linspace(0, 1, 11), torch.tensor([0.0, 1.0, 1.0, 2.0, -1.0, float("nan")])])
    hist, _ = check_against_eager(lambda a: torch.histogram(a, 10, range=(0.0, 1.0)), x, exact=True)
    assert hist[-1] == 4 and hist.sum() == 14  # [0.9, 1.0] holds 0.9 and three 1.0s


def test_histogram_many_bins_and_data_edges_bit_exact() -> None:
    # 257 data-derived edges: the linspace must round as eager's for values sitting on them.
    edges = torch.linspace(-3.7, 5.3, 257)
    x = torch.cat([edges, edges[1:-1] + 1e-7, torch.randn(300)])
    check_against_eager(lambda a: torch.histogram(a, 256), x, exact=True)


def test_histogram_constant_input_float64_and_empty() -> None:
    check_against_eager(lambda a: torch.histogram(a, 4), torch.full((6,), 2.5))  # range widened to [2, 3]
    check_against_eager(lambda a: torch.histogram(a, 3, density=True), torch.randn(20, dtype=torch.float64))
    check_against_eager(lambda a: torch.histogram(a, 5, range=(-1.0, 1.0), density=False), torch.randn(2, 3).double())
    hist, edges = check_against_eager(lambda a: torch.histogram(a, 3), torch.zeros(0))  # edges linspace(0, 1)
    assert hist.tolist() == [0, 0, 0] and edges[-1] == 1


def test_histogram_bin_tensor_uneven_edges() -> None:
    torch.manual_seed(3)
    x = torch.randn(40)
    bins = torch.tensor([-2.0, -0.5, 0.0, 0.1, 3.0])
    check_against_eager(lambda a, b: torch.histogram(a, b), x, bins, exact=True)
    check_against_eager(lambda a, b, c: torch.histogram(a, b, weight=c, density=True), x, bins, torch.rand(40))


@pytest.mark.parametrize("density", [False, True])
def test_histogramdd_counts_range_and_weight(density: bool) -> None:
    torch.manual_seed(4)
    x, w = torch.randn(3, 30, 3), torch.rand(3, 30)
    check_against_eager(lambda a, b: torch.histogramdd(a, bins=[2, 3, 4], weight=b, density=density), x, w)
    check_against_eager(lambda a: torch.histogramdd(a, bins=[3, 2, 2], range=[-1.0, 1.0, 0.0, 0.0, -2.0, 0.5],
                                       density=density), x)


def test_histogramdd_bin_tensors_and_two_outputs() -> None:
    torch.manual_seed(5)
    x = torch.randn(25, 2)
    bx, by = torch.tensor([-1.0, 0.0, 0.5, 2.0]), torch.tensor([-3.0, 3.0])
    hist, ex, ey = check_against_eager(lambda a, b, c: tuple(torch.histogramdd(a, bins=[b, c])), x, bx, by, exact=True)
    assert hist.shape == (3, 1) and ex.tolist() == bx.tolist() and ey.tolist() == by.tolist()


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
