"""Acceptance 2: a wrong registered translation in one layer of a 6-layer MLP is localized to that
node and its source line with exactly one onnxruntime session."""

from __future__ import annotations

from typing import Any

import onnxruntime
import pytest
import torch
import torch.nn.functional as F

import onnxport
from onnxport.translate.registry import Translation


class Block(torch.nn.Module):
    def __init__(self, gelu: bool) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.gelu = gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        if self.gelu:
            return F.gelu(x)  # the layer whose translation is wrong
        return torch.relu(x)


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(Block(gelu=(i == 3)) for i in range(6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def sign_flipped_gelu(ctx: onnxport.Ctx, self: Any, *, approximate: str = "none") -> Any:
    """gelu(Tensor self, *, str approximate="none") -> Tensor"""
    return ctx.op.Neg(ctx.op.Gelu(self, approximate=approximate))


def wrong_registry() -> onnxport.Registry:
    registry = onnxport.default_registry().copy()
    registry.register(Translation(torch.ops.aten.gelu.default, sign_flipped_gelu, since=20))
    return registry


@pytest.fixture
def session_count(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    count = {"sessions": 0}
    original = onnxruntime.InferenceSession

    class Counting(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            count["sessions"] += 1
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", Counting)
    return count


def test_wrong_translation_is_localized_with_one_session(session_count: dict[str, int]) -> None:
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(4, 16)
    # the export's own onnxruntime run check would open a session; this test counts verify's alone
    program = onnxport.export(
        model, (x,), registry=wrong_registry(), dynamic_shapes={"x": {0: "batch"}}, check_runtime=False
    )
    assert session_count["sessions"] == 0

    result = onnxport.verify(program, (x,), localize=True)

    assert session_count["sessions"] == 1 and result.sessions == 1
    assert not result.passed
    loc = result.localization
    assert loc is not None and loc.first is not None
    first = loc.first
    assert first.node.name == "gelu"
    assert first.target == "aten.gelu.default"
    assert [n.split(" ")[1] for n in first.onnx_nodes] == ["(Gelu)", "(Neg)"]
    assert first.module_path == "layers.3: Block"
    assert first.source_line is not None
    assert "test_localize.py" in first.source_line
    assert "return F.gelu(x)  # the layer whose translation is wrong" in first.source_line
    # Every node before the gelu matched; the divergence propagates to the 2 later layers.
    assert loc.diverging[0] == "gelu" and len(loc.diverging) == 5
    assert loc.compared == 12 and loc.skipped == 0
    # Flipping the sign of gelu(v) makes the diff 2|gelu(v)|: the recorded max is exactly that.
    fc3 = model.layers[3].fc
    with torch.no_grad():
        h = x
        for layer in model.layers[:3]:
            h = layer(h)
        expected_max = float((2 * F.gelu(fc3(h)).abs()).max())
    assert first.comparison.max_abs_diff == pytest.approx(expected_max, rel=1e-5)
    assert first.comparison.mismatched > 0
    # The same session also compared the final output on both input sets.
    assert [s.label for s in result.input_sets] == ["example inputs", "generated: batch=5"]
    assert all(not s.passed for s in result.input_sets)


def test_correct_translation_localizes_nothing(session_count: dict[str, int]) -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    program = onnxport.export(MLP().eval(), (x,), check_runtime=False)  # count verify's sessions only
    result = program.verify((x,), localize=True)
    assert session_count["sessions"] == 1
    assert result.passed
    assert result.localization.first is None and result.localization.diverging == []
    assert result.localization.compared == 12
    assert result.outputs[0].max_abs_diff < 1e-5


def test_export_verify_names_the_node_and_source_line(tmp_path: Any) -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    report = tmp_path / "report.md"
    with pytest.raises(onnxport.VerificationError) as info:
        onnxport.export(MLP().eval(), (x,), registry=wrong_registry(), verify=True, report=report)
    err = info.value
    assert err.node is not None and err.node.name == "gelu"
    assert err.source_line is not None and "return F.gelu(x)" in err.source_line
    assert "First diverging node: gelu (aten.gelu.default)" in str(err)
    text = report.read_text(encoding="utf-8")
    assert "| first diverging FX node | `gelu` |" in text
    assert "| module | layers.3: Block |" in text
    assert "- [ ] accuracy" in text and "- [x] onnxruntime load" in text
