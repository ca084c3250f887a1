"""Small dense linear algebra (det, slogdet, inverse, solve) and sorting/counting ops (median,
nanmedian, mode, histc, unique, unique_consecutive, searchsorted) against eager, edge cases included."""

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


# -- median, nanmedian, mode ----------------------------------------------------------------------

def test_median_lower_of_two_and_nan() -> None:
    x = torch.tensor([[4.0, 1.0, 3.0, 2.0], [1.0, nan, 5.0, nan], [7.0, 7.0, -1.0, 0.0]])
    out = _check(lambda x: torch.median(x, 1), x, skip=(1,))
    assert out[0].tolist()[0] == 2.0 and out[1][1] == 1  # lower median; index of the first NaN
    _check(lambda x: torch.median(x, 0, keepdim=True), x, skip=(1,))
    _check(torch.median, x)  # any NaN → NaN
    _check(torch.median, torch.tensor([5.0, 2.0, 9.0, 1.0]))
    _check(torch.median, torch.tensor([[5, 2], [9, 1]], dtype=torch.int32))


def test_nanmedian_ignores_nan() -> None:
    x = torch.tensor([[4.0, nan, 3.0, 2.0], [nan, nan, nan, nan], [inf, nan, 1.0, inf]])
    out = _check(lambda x: torch.nanmedian(x, 1), x, skip=(1,))
    assert out[0][0] == 3.0 and torch.isnan(out[0][1]) and out[0][2] == inf
    _check(torch.nanmedian, x)
    _check(torch.nanmedian, torch.tensor([1.0, nan, 3.0, 2.0], dtype=torch.float16))


def test_mode_ties_smallest_value_last_index() -> None:
    # Rows with some NaN are left out: torch's CPU kernel std::sorts with `<`, which leaves NaN's place
    # (and so its mode) undefined; an all-NaN row gives NaN in both.
    x = torch.tensor([[3.0, 1.0, 3.0, 1.0, 2.0], [4.0, 2.0, 4.0, 5.0, 9.0], [nan, nan, nan, nan, nan]])
    values, indices = _check(lambda x: torch.mode(x, 1), x, skip=(1,))
    assert values[0] == 1.0 and indices[0] == 3  # tie 3/1 → 1, at its last index
    assert values[1] == 4.0 and indices[1] == 2
    _check(lambda x: torch.mode(x, 0, keepdim=True), torch.tensor([[1, 2], [1, 3], [2, 3]]))
    _check(lambda x: torch.mode(x), torch.tensor([True, False, True, False]))


# -- histc ----------------------------------------------------------------------------------------

def test_histc_range_edges_and_ignored_values() -> None:
    x = torch.tensor([0.0, 10.0, 5.0, 4.999, -1.0, 11.0, nan, 2.5, 10.0])
    _check(lambda x: torch.histc(x, bins=4, min=0, max=10), x)  # x = max goes to the last bin
    _check(lambda x: torch.histc(x, bins=7), torch.tensor([3.0, 1.0, 2.0, 2.5]))  # data range
    _check(lambda x: torch.histc(x, bins=3), torch.tensor([2.0, 2.0]))  # equal range widened by ±1
    torch.manual_seed(0)
    _check(lambda x: torch.histc(x, bins=50, min=-2, max=2), torch.randn(1000).half())


# -- unique, unique_consecutive ---------------------------------------------------------------------

def test_unique_nan_distinct_and_inf() -> None:
    x = torch.tensor([[3.0, nan, inf], [1.0, 3.0, nan]])
    fn = lambda x: torch.unique(x, return_inverse=True, return_counts=True)  # noqa: E731
    values, inverse, counts = _check(fn, x)
    assert values.shape == (5,) and counts.tolist() == [1, 2, 1, 1, 1]
    _check(fn, torch.tensor([nan, 2.0, nan]))  # the NaN-only +inf slot is dropped
    _check(fn, torch.tensor([5, 3, 5, 1], dtype=torch.int32))
    _check(fn, torch.tensor([True, False, True]))
    _check(lambda x: torch.unique(x, sorted=False), torch.tensor([3.0, 1.0, 3.0]))


def test_unique_dim_sorts_slices() -> None:
    x = torch.tensor([[3, 1], [1, 5], [3, 1], [1, -1]])
    _check(lambda x: torch.unique(x, dim=0, return_inverse=True, return_counts=True), x)
    _check(lambda x: torch.unique(x, dim=1, return_counts=True), x.T.contiguous())


def test_unique_consecutive_runs() -> None:
    x = torch.tensor([1.0, 1.0, 2.0, nan, nan, 2.0, 2.0])
    _check(lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True), x)
    y = torch.tensor([[1, 1, 2, 2], [3, 3, 3, 4]])
    _check(lambda y: torch.unique_consecutive(y, return_inverse=True, return_counts=True, dim=1), y)
    _check(lambda x: torch.unique_consecutive(x, return_counts=True), torch.zeros(0))


# -- searchsorted ---------------------------------------------------------------------------------

def test_searchsorted_empty_sorter_and_scalar() -> None:
    _check(torch.searchsorted, torch.zeros(0), torch.zeros(0))
    _check(torch.searchsorted, torch.zeros(0), torch.tensor([1.0, 2.0]))
    seq, sorter = torch.tensor([3.0, 1.0, 2.0, 5.0]), torch.tensor([1, 2, 0, 3])
    _check(lambda s, v, o: torch.searchsorted(s, v, sorter=o, side="right"), seq, torch.tensor([2.0, 0.0, 9.0]), sorter)
    _check(lambda s: torch.searchsorted(s, 2.5), torch.tensor([1.0, 2.0, 3.0]))


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
