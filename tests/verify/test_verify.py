"""onnxport.verify: every output on every input set, structured results, NaN-aware rules, real checks."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import onnx_ir as ir
import pytest
import torch

import onnxport
from onnxport.verify.compare import TOLERANCES, compare_tensors


class TwoOutputs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(6, 5)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.fc(x) * mask.unsqueeze(-1)
        return h.softmax(-1), (mask.sum(-1) + 1)


def inputs(batch: int = 2, seq: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(batch, seq, 6, generator=generator)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[0, -1] = 0
    return x, mask


DYNAMIC = {"x": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}}


def test_dynamic_model_gets_a_second_input_set() -> None:
    x, mask = inputs()
    program = onnxport.export(TwoOutputs().eval(), (x, mask), dynamic_shapes=DYNAMIC)
    result = onnxport.verify(program, (x, mask))
    assert result.passed and result.sessions == 1
    assert [c.name for c in result.checks] == ["onnx.checker (full_check)", "onnxruntime load"]
    assert all(c.passed for c in result.checks)
    example, generated = result.input_sets
    assert example.shapes == {"x": (2, 4, 6), "mask": (2, 4)}
    assert generated.label == "generated: batch=3, seq=5"
    assert generated.shapes == {"x": (3, 5, 6), "mask": (3, 5)}
    softmax, count = generated.outputs
    assert softmax.actual_shape == (3, 5, 5) and softmax.actual_dtype == torch.float32
    assert (softmax.rtol, softmax.atol) == TOLERANCES[torch.float32]
    assert 0 < softmax.max_abs_diff < 1e-6
    assert sum(c for _, c in softmax.histogram) == 3 * 5 * 5
    # int64 output compares exactly; the generated mask repeats the example's rows cyclically,
    # so row 2 of the second set is row 0 of the first (last token masked): 4 + 1 = 5 ... + 1.
    assert count.actual_dtype == torch.int64 and (count.rtol, count.atol) == (0.0, 0.0)
    assert count.max_abs_diff == 0.0 and count.histogram == [("== 0", 3)]


def test_static_model_and_extra_input_sets() -> None:
    x, mask = inputs()
    program = onnxport.export(TwoOutputs().eval(), (x, mask))
    extra = inputs()
    result = program.verify((x, mask), inputs=[extra, (extra, {})], rtol=0.5, atol=0.25)
    assert [s.label for s in result.input_sets] == ["example inputs", "inputs[0]", "inputs[1]"]
    assert result.passed
    softmax = result.input_sets[1].outputs[0]
    assert (softmax.rtol, softmax.atol) == (0.5, 0.25)


def test_mismatch_is_a_result_not_an_exception() -> None:
    x, mask = inputs()
    program = onnxport.export(TwoOutputs().eval(), (x, mask))
    other = TwoOutputs().eval()  # different random weights
    result = onnxport.verify(program, (x, mask), reference=other)
    assert not result.passed
    softmax, count = result.outputs
    assert not softmax.passed and softmax.mismatched > 0 and softmax.max_abs_diff > 1e-3
    assert count.passed  # the mask count does not depend on the weights
    assert "MISMATCH" in result.summary()


def test_nan_aware_rules() -> None:
    nan, inf = math.nan, math.inf
    eager = torch.tensor([1.0, nan, nan, inf, 2.0])
    # NaN where eager is NaN matches; a finite ONNX value where eager is NaN is explained, not failed.
    ok = compare_tensors("y", eager, torch.tensor([1.0, nan, 0.5, inf, 2.0]))
    assert ok.passed and ok.nan_ignored == 1 and ok.max_abs_diff == 0.0
    assert any("eager is NaN at 2 position(s): ONNX is NaN at 1, finite at 1" in n for n in ok.notes)
    # NaN in ONNX where eager is finite fails; so does an infinity of the wrong sign.
    bad = compare_tensors("y", eager, torch.tensor([nan, nan, nan, -inf, 2.0]))
    assert not bad.passed and bad.mismatched == 2 and bad.max_abs_diff == math.inf
    assert any("ONNX is NaN/inf at 1 position(s) where eager is finite" in n for n in bad.notes)


def test_shape_and_dtype_mismatch() -> None:
    shape = compare_tensors("y", torch.zeros(2, 3), torch.zeros(3, 2))
    assert not shape.passed and shape.max_abs_diff == math.inf and "shape differs" in shape.notes[0]
    dtype = compare_tensors("y", torch.zeros(2), torch.zeros(2, dtype=torch.float64))
    assert not dtype.passed and dtype.max_abs_diff == 0.0 and "dtype differs" in dtype.notes[0]
    exact = compare_tensors("i", torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert not exact.passed and exact.max_abs_diff == 1.0 and exact.mismatched == 1


def test_nan_in_eager_end_to_end() -> None:
    class Log(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.log(x)

    x = torch.tensor([-1.0, 1.0, 2.0])
    result = onnxport.export(Log(), (x,)).verify((x,))
    assert result.passed
    out = result.outputs[0]
    assert out.nan_ignored == 0 and "eager is NaN at 1 position(s): ONNX is NaN at 1, finite at 0" in out.notes[0]


def test_fully_masked_attention_row() -> None:
    class ManualAttention(torch.nn.Module):
        def forward(self, q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            scores = (q @ q.transpose(-1, -2)).masked_fill(~mask, float("-inf"))
            return scores.softmax(-1) @ q

    q = torch.randn(1, 4, 8, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(1, 4, 4, dtype=torch.bool)
    mask[0, 2, :] = False  # row 2 attends to nothing: eager softmax gives NaN
    result = onnxport.export(ManualAttention(), (q, mask)).verify((q, mask))
    out = result.outputs[0]
    assert result.passed and out.max_abs_diff < 1e-5
    assert out.notes == [
        "eager is NaN at 8 position(s): ONNX is NaN at 8, finite at 0 (eager's own result is undefined "
        "there, e.g. a fully-masked attention row: NaN matches NaN, a finite ONNX value is not counted "
        "as a mismatch)"
    ]
    assert sum(c for _, c in out.histogram) == 4 * 8 - 8  # finite positions only


def _program_with(node_attrs: dict[str, Any], domain: str = "") -> onnxport.ONNXProgram:
    x = ir.Value(name="x", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([2]))
    node = ir.Node(domain, "Relu", [x], attributes=[ir.AttrString(k, v) for k, v in node_attrs.items()])
    node.outputs[0].name, node.outputs[0].dtype, node.outputs[0].shape = "y", ir.DataType.FLOAT, ir.Shape([2])
    graph = ir.Graph([x], node.outputs, nodes=[node], name="g", opset_imports={"": 23, **({domain: 1} if domain else {})})
    return onnxport.ONNXProgram(ir.Model(graph, ir_version=11), None)


def test_checker_failure_is_a_model_check_error() -> None:
    program = _program_with({"not_an_attribute": "x"})
    checks: list[Any] = []
    with pytest.raises(onnxport.ModelCheckError) as info:
        onnxport.verify(program, (torch.randn(2),), reference=torch.nn.ReLU(), checks=checks)
    assert info.value.check == "onnx.checker"
    assert "not_an_attribute" in str(info.value)
    assert [(c.name, c.passed) for c in checks] == [("onnx.checker (full_check)", False)]


def test_onnxruntime_refusal_is_a_model_check_error(tmp_path: Path) -> None:
    program = _program_with({}, domain="com.example")  # the checker skips custom domains
    checks: list[Any] = []
    with pytest.raises(onnxport.ModelCheckError) as info:
        onnxport.verify(program, (torch.randn(2),), reference=torch.nn.ReLU(), checks=checks)
    assert info.value.check == "onnxruntime load"
    assert [(c.name, c.passed) for c in checks] == [
        ("onnx.checker (full_check)", True), ("onnxruntime load", False)
    ]


def test_export_verify_records_truthful_steps(tmp_path: Path) -> None:
    registry = onnxport.default_registry().copy()
    registry.register_translation(torch.ops.aten.relu.default, lambda ctx, x: ctx.op.MyRelu(x, _domain="com.example"))
    report = tmp_path / "r.md"
    with pytest.raises(onnxport.ModelCheckError):
        onnxport.export(torch.nn.ReLU(), (torch.randn(2),), registry=registry, verify=True, report=report)
    md = report.read_text(encoding="utf-8")
    assert "- [x] onnx.checker (full_check)" in md and "- [ ] onnxruntime load" in md
    assert "- [ ] accuracy" not in md and "- [x] accuracy" not in md


def test_loaded_program_needs_a_reference(tmp_path: Path) -> None:
    x, mask = inputs()
    path = tmp_path / "m.onnx"
    model = TwoOutputs().eval()
    onnxport.export(model, (x, mask), dynamic_shapes=DYNAMIC, f=path)
    loaded = onnxport.ONNXProgram.load(path)
    with pytest.raises(onnxport.InputError, match="reference="):
        onnxport.verify(loaded, (x, mask))
    result = onnxport.verify(loaded, (x, mask), reference=model)
    # Without ExportedProgram the second set comes from the ONNX inputs' named dims.
    assert [s.label for s in result.input_sets] == ["example inputs", "generated: batch=3, seq=5"]
    assert result.passed
