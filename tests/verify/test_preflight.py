"""Acceptance 1: two unsupported custom ops are reported in one run, with source lines, in the error
and in the report."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import onnxport


@torch.library.custom_op("onnxport_preflight::first", mutates_args=())
def _first(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_first.register_fake
def _first_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("onnxport_preflight::second", mutates_args=())
def _second(x: torch.Tensor) -> torch.Tensor:
    return x + 3


@_second.register_fake
def _second_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class TwoCustomOps(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.ops.onnxport_preflight.first(x)  # first unsupported op
        b = torch.ops.onnxport_preflight.second(a)  # second unsupported op
        c = torch.ops.onnxport_preflight.first(b)  # first op again
        return torch.relu(c)


def test_both_ops_in_one_error_with_counts_and_source_lines(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    with pytest.raises(onnxport.UnsupportedOpsError) as info:
        onnxport.export(TwoCustomOps(), (torch.randn(3),), report=report)
    err = info.value
    assert isinstance(err, onnxport.UnsupportedOpError)
    assert [(op.name, op.count, op.example.name) for op in err.ops] == [
        ("onnxport_preflight.first.default", 2, "first"),
        ("onnxport_preflight.second.default", 1, "second"),
    ]
    assert "# first unsupported op" in err.ops[0].source_line
    assert "# second unsupported op" in err.ops[1].source_line
    text = str(err)
    assert "2 operator(s) have no ONNX translation" in text
    assert "onnxport_preflight.first.default: 2 node(s), e.g. first" in text
    assert "onnxport_preflight.second.default: 1 node(s), e.g. second" in text
    assert "a = torch.ops.onnxport_preflight.first(x)  # first unsupported op" in text
    assert "b = torch.ops.onnxport_preflight.second(a)  # second unsupported op" in text
    assert "register_translation(torch.ops.onnxport_preflight.first.default)" in text

    md = report.read_text(encoding="utf-8")
    assert "**Result: failure**" in md and "## Unsupported operators" in md
    section = md.split("## Unsupported operators")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `onnxport_preflight.")]
    assert len(rows) == 2
    assert rows[0].startswith("| `onnxport_preflight.first.default` | 2 | `first` |")
    assert "# first unsupported op" in rows[0] and "test_preflight.py" in rows[0]
    assert rows[1].startswith("| `onnxport_preflight.second.default` | 1 | `second` |")
    assert "- [ ] pre-flight" in md and "- [x] capture" in md


def test_preflight_passes_when_translated() -> None:
    registry = onnxport.default_registry().copy()
    registry.register_translation(torch.ops.onnxport_preflight.first.default,
                                  lambda ctx, x: ctx.op.Add(x, x))
    registry.register_translation(torch.ops.onnxport_preflight.second.default,
                                  lambda ctx, x: ctx.op.Add(x, ctx.const(3.0, x.dtype)))
    x = torch.randn(3)
    program = onnxport.export(TwoCustomOps(), (x,), registry=registry)
    assert program.status.unsupported == []
    torch.testing.assert_close(program(x)[0], TwoCustomOps()(x))
