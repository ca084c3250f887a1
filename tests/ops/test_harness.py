"""The OpInfo harness's own comparison rules (onnxport.testing.opinfo.compare_outputs)."""

from __future__ import annotations

import pytest
import torch

oi = pytest.importorskip("onnxport.testing.opinfo")


def test_values_dtypes_and_shapes_are_compared() -> None:
    x = torch.randn(4, 3)
    assert oi.compare_outputs("add", [x], [x.clone()]) == ""
    assert "dtype" in oi.compare_outputs("add", [x], [x.double()])
    assert "shape" in oi.compare_outputs("add", [x], [x.reshape(3, 4)])
    assert oi.compare_outputs("add", [x], [x + 1e-3]) != ""


def test_random_outputs_compare_by_distribution() -> None:
    g = torch.Generator().manual_seed(0)
    eager, ours = torch.randn(1000, generator=g), torch.randn(1000, generator=g)
    assert oi.compare_outputs("randn_like", [eager], [ours]) == ""
    assert "mean" in oi.compare_outputs("randn_like", [eager], [ours + 2.0])
    assert "central 90%" in oi.compare_outputs("randn_like", [eager], [ours * 100])
    assert "non-finite" in oi.compare_outputs("randn_like", [eager], [ours.log()])


def test_heavy_tailed_outputs_compare_by_median() -> None:
    g = torch.Generator().manual_seed(0)
    cauchy = torch.empty(2000).cauchy_(generator=g)
    other = torch.empty(2000).cauchy_(generator=g)
    assert oi.compare_outputs("cauchy", [cauchy], [other]) == ""  # extreme draws alone do not fail it
    assert "median" in oi.compare_outputs("cauchy", [cauchy], [other + 3.0])


def test_a_few_random_draws_are_only_checked_for_finiteness() -> None:
    assert oi.compare_outputs("randint_like", [torch.tensor(7)], [torch.tensor(2)]) == ""
    assert oi.compare_outputs("normal", [torch.tensor([1.5])], [torch.tensor([float("nan")])]) != ""


def test_unstable_argsort_is_compared_through_the_values_it_picks() -> None:
    import types

    x = torch.tensor([2.0, 1.0, 2.0, 1.0])
    sample = types.SimpleNamespace(input=x, args=(), kwargs={})
    eager, ours = torch.tensor([1, 3, 0, 2]), torch.tensor([3, 1, 2, 0])  # ties in another order
    assert oi.compare_outputs("argsort", [eager], [ours]) != ""
    assert oi.compare_outputs("argsort", *(oi._sorted_values(sample, [t]) for t in (eager, ours))) == ""
    assert not oi._asks_stable(sample) and oi._asks_stable(types.SimpleNamespace(kwargs={"stable": True}))
