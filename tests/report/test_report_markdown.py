"""Acceptance 4: the report is clean markdown with the expected sections, on success and on failure."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from markdown_it import MarkdownIt

import onnxport


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.tensor([2.0, 3.0, 4.0], dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x)) * self.scale.float()


def parse(text: str) -> tuple[list[str], int, list[str]]:
    """(h2 headings, number of tables, paragraphs that look like broken tables)."""
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
    tables = sum(1 for t in tokens if t.type == "table_open")
    broken = [t.content for t in tokens if t.type == "inline" and t.content.lstrip().startswith("|")]
    return headings, tables, broken


def test_success_report(tmp_path: Path) -> None:
    path = tmp_path / "ok.md"
    onnxport.export(Small(), (torch.randn(2, 4),), dynamic_shapes={"x": {0: "batch"}}, verify=True, report=path)
    text = path.read_text(encoding="utf-8")
    headings, tables, broken = parse(text)
    assert headings == ["Steps", "Timings", "Capture attempts", "Model statistics", "Verification", "Environment"]
    assert broken == [] and tables >= 9
    assert text.startswith("# onnxport export report: Small\n\n**Result: success**\n")
    for step in ("capture", "pre-flight", "translation", "optimize", "onnx.checker (full_check)", "onnxruntime load", "accuracy"):
        assert f"- [x] {step} (" in text
    assert "| float32 | 2 | 15 | 60 |" in text and "| float64 | 1 | 3 | 24 |" in text  # parameters per dtype
    assert "| `aten.gelu.default` | 1 |" in text and "| `Gelu` | 1 |" in text
    assert "### generated: batch=3: pass" in text
    assert f"| torch | {torch.__version__} |" in text


def test_failure_report(tmp_path: Path) -> None:
    @torch.library.custom_op("onnxport_report::opaque", mutates_args=())
    def opaque(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @opaque.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    class UsesOpaque(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.ops.onnxport_report.opaque(x) + 1

    path = tmp_path / "fail.md"
    with pytest.raises(onnxport.UnsupportedOpError):
        onnxport.export(UsesOpaque(), (torch.randn(2),), verify=True, report=path)
    text = path.read_text(encoding="utf-8")
    headings, tables, broken = parse(text)
    assert headings == ["Steps", "Timings", "Capture attempts", "Unsupported operators", "Model statistics",
                        "Error", "Environment"]
    assert broken == []
    assert "**Result: failure**" in text and "Failed with `UnsupportedOpsError`" in text
    assert "- [ ] pre-flight" in text
    assert "<details><summary>Traceback</summary>" in text and "```\nTraceback (most recent call last):" in text
    # Statistics still describe the captured program; no ONNX model was built.
    assert "| `onnxport_report.opaque.default` | 1 |" in text and "### ONNX ops" not in text


def test_verify_not_run_is_said(tmp_path: Path) -> None:
    path = tmp_path / "noverify.md"
    onnxport.export(Small(), (torch.randn(2, 4),), report=path)
    text = path.read_text(encoding="utf-8")
    assert "- [ ] onnxruntime load: not run (export(verify=False)" in text
    assert "## Verification" not in text


def test_fences_survive_backticks() -> None:
    from onnxport.report.markdown import fence, table

    assert fence("a ``` b")[0] == "````"
    assert table(["a"], [["x | y\nz"]])[2] == "| x \\| y z |"
