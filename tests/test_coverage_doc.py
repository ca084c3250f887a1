"""docs/coverage.md is generated (python -m onnxport.coverage write) and must not be stale; every
Core ATen overload is translated (cases ONNX cannot express are refused inside the translation,
with ``ctx.unsupported`` and the reason)."""

from __future__ import annotations

import subprocess
import sys

from onnxport import coverage
from onnxport.ops import default_registry


def test_every_core_aten_overload_is_translated() -> None:
    registry = default_registry()
    core = coverage.core_aten_overloads()
    assert len(core) >= 190
    missing = [str(op) for op in core if not registry.is_registered(op)]
    assert not missing, f"Core ATen overloads without translation: {missing}"


def test_coverage_doc_is_up_to_date() -> None:
    # In a fresh interpreter: the test session's other imports may register more aten overloads.
    result = subprocess.run([sys.executable, "-m", "onnxport.coverage", "check"], capture_output=True, text=True)
    assert result.returncode == 0, (
        "docs/coverage.md is stale: run `python -m onnxport.coverage write` (and "
        "`python -m onnxport.coverage run` after changing translations, to refresh the pass rates).\n"
        + result.stderr[-2000:]
    )
