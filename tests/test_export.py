"""The orchestrator (_export.py): the stages in order, one status, progress, verify + save + report."""

from __future__ import annotations

import pathlib

import pytest
import torch

import onnxport
from onnxport.errors import SaveError


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def test_stages_in_order_with_progress_verify_and_save(tmp_path: pathlib.Path) -> None:
    seen: list[str] = []
    out = tmp_path / "tiny.onnx"
    report = tmp_path / "report.md"
    x = torch.randn(2, 4)
    program = onnxport.export(Tiny(), (x,), f=out, verify=True, report=report, external_data=True,
                              dynamic_shapes={"x": {0: "batch"}}, progress=seen.append)
    steps = [s.name for s in program.status.steps]
    assert steps == ["capture", "decompose", "pre-flight", "translate", "half-precision compute",
                     "optimize", "onnxruntime run", "onnx.checker (full_check)", "onnxruntime load", "accuracy",
                     "save"]
    assert all(s.ok for s in program.status.steps)
    assert seen == ["capture", "decompose", "pre-flight", "translate", "half-precision compute",
                    "optimize", "onnxruntime run", "verify", "save"]
    assert program.status.files == [out, tmp_path / "tiny.onnx.data"]
    assert out.is_file() and (tmp_path / "tiny.onnx.data").is_file()
    assert program.status.verification.passed
    assert "**Result: success**" in report.read_text(encoding="utf-8")
    # the saved model runs on another batch size and matches eager
    loaded = onnxport.ONNXProgram.load(out)
    y = torch.randn(5, 4)
    torch.testing.assert_close(loaded(y)[0], program.exported_program.module()(y), rtol=1e-5, atol=1e-6)


def test_failed_save_is_a_failed_step_and_leaves_nothing(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "missing" / "tiny.onnx"
    report = tmp_path / "report.md"
    with pytest.raises(SaveError, match="does not exist"):
        onnxport.export(Tiny(), (torch.randn(2, 4),), f=out, report=report)
    text = report.read_text(encoding="utf-8")
    assert "**Result: failure**" in text and "- [ ] save" in text
    assert not out.parent.exists()
