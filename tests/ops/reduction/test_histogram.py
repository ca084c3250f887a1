"""Histograms against eager: histc, histogram (bin count and bin tensors), histogramdd."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from _eager import check_against_eager

nan, inf = float("nan"), float("inf")

# torch's default tolerances unless a test gives its own
_check = partial(check_against_eager, rtol=None, atol=None)


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


# -- histc ----------------------------------------------------------------------------------------

def test_histc_range_edges_and_ignored_values() -> None:
    x = torch.tensor([0.0, 10.0, 5.0, 4.999, -1.0, 11.0, nan, 2.5, 10.0])
    _check(lambda x: torch.histc(x, bins=4, min=0, max=10), x)  # x = max goes to the last bin
    _check(lambda x: torch.histc(x, bins=7), torch.tensor([3.0, 1.0, 2.0, 2.5]))  # data range
    _check(lambda x: torch.histc(x, bins=3), torch.tensor([2.0, 2.0]))  # equal range widened by ±1
    torch.manual_seed(0)
    _check(lambda x: torch.histc(x, bins=50, min=-2, max=2), torch.randn(1000).half())
