"""docs/coverage.md is generated (python -m onnxport.coverage write) and must not be stale; every
Core ATen overload is translated or refused with a reason."""

from __future__ import annotations

from onnxport import coverage
from onnxport.ops.unsupported import REASONS
from onnxport.translate.registry import default_registry


def test_every_core_aten_overload_is_translated_or_explained() -> None:
    registry = default_registry()
    core = coverage.core_aten_overloads()
    assert len(core) >= 190
    missing = [str(op) for op in core if not registry.is_registered(op)]
    assert not missing, f"Core ATen overloads without translation or reason: {missing}"
    for op, reason in REASONS.items():
        assert len(reason) > 40, f"{op}: give the reason in a sentence"


def test_coverage_doc_is_up_to_date() -> None:
    fresh = coverage.render()
    assert coverage.MARKDOWN.exists(), "run `python -m onnxport.coverage write`"
    assert coverage.MARKDOWN.read_text() == fresh, (
        "docs/coverage.md is stale: run `python -m onnxport.coverage write` (and "
        "`python -m onnxport.coverage run` after changing translations, to refresh the pass rates)."
    )
