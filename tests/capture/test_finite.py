"""Finiteness tests in Python branches (onnxport.capture.finite): decided as finite during the
non-strict capture, the finite branch traced, each decision's source line reported; any other
value test is still a data-dependent guard."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch

import onnxport
from onnxport.capture.finite import AssumedFinite


class Clamped(torch.nn.Module):
    """BART's float16 encoder-layer clamp (transformers ``BartEncoderLayer``) and its variants."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h * 2
        if h.dtype == torch.float16 and not torch.isfinite(h).all():
            h = torch.clamp(h, -100.0, 100.0)
        if torch.isinf(h).any() or torch.isnan(h).all():
            h = h - 1000
        return h + 1


class ValueBranch(torch.nn.Module):
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + 1 if h.sum() > 0 else h - 1


def test_the_finite_branch_is_traced_without_draft_export(tmp_path: pathlib.Path) -> None:
    x = torch.randn(2, 3, dtype=torch.float16)
    program = onnxport.export(Clamped(), (x,), dynamic_shapes=({0: "batch"},), report=tmp_path / "report.md")
    [attempt] = program.status.capture_attempts
    assert attempt.success and attempt.strategy == "torch.export.export(strict=False)"
    assert len(attempt.assumed_finite) == 2 and all("test_finite.py" in line for line in attempt.assumed_finite)
    assert "isfinite" in attempt.assumed_finite[0] and "isinf" in attempt.assumed_finite[1]
    assert {n.op_type for n in program.model.graph} <= {"Cast", "Mul", "Add"}  # no Clip, no Sub
    big = torch.full((5, 3), 300.0, dtype=torch.float16)  # finite: eager does not clamp either
    (got,) = program(big)
    np.testing.assert_array_equal(got, Clamped()(big).numpy())
    report = (tmp_path / "report.md").read_text()
    assert "2 finiteness test(s) taken as finite" in report and "Finiteness tests taken as finite" in report


def test_other_value_tests_are_still_data_dependent() -> None:
    with AssumedFinite() as mode, pytest.raises(Exception, match="(?i)data.dependent"):
        torch.export.export(ValueBranch(), (torch.randn(3),), strict=False)
    assert mode.decided == []


def test_eager_values_are_not_evaluated_only_decided() -> None:
    h = torch.tensor([1.0, float("inf")])
    with AssumedFinite() as mode:
        assert bool(torch.isfinite(h).all()) is True  # decided, not computed
        assert bool(torch.isfinite(h).all(dim=0)) is False  # a reduction with arguments is computed
    assert len(mode.decided) == 1
