"""verify/runtime_check.py: the exported graph runs in onnxruntime on the example inputs and on a
second input set of other sizes; a refused node becomes RuntimeCheckError naming the ONNX node, the
FX node and the user's source line."""

from __future__ import annotations

import onnx_ir as ir
import pytest
import torch

import onnxport
from onnxport.errors import DynamicShapesError, RuntimeCheckError
from onnxport.testing.coverage_cases import TF_SAME_PAD, case
from onnxport.translate.context import Ctx
from onnxport.verify.runtime_check import check_runtime, skip_reason

DYN = torch.export.Dim.DYNAMIC


class ReluNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))  # the line the error must name


def baked_relu(ctx: Ctx, self: ir.Value) -> ir.Value:
    """A broken translation: reshapes to the example's static shape (fails at another batch)."""
    return ctx.op.Relu(ctx.op.Reshape(self, ctx.const([2, 4])))


def test_dynamic_model_runs_at_both_sizes() -> None:
    c = case("sdpa/bool_mask_B11S")
    program = onnxport.export(c.build(), c.inputs(0), dynamic_shapes=c.dynamic_shapes)
    result = check_runtime(program, c.inputs(0), {})
    assert result.skipped is None
    assert result.ran[0] == "example inputs"
    assert len(result.ran) == 2 and result.ran[1].startswith("generated inputs (")


def test_static_model_runs_once() -> None:
    program = onnxport.export(ReluNet().eval(), (torch.randn(2, 4),))
    assert check_runtime(program, (torch.randn(2, 4),), {}).ran == ["example inputs"]


def test_refusal_at_the_second_size_names_node_and_source_line() -> None:
    x = torch.randn(2, 4)
    program = onnxport.export(ReluNet().eval(), (x,), dynamic_shapes=({0: DYN},),
                              custom_translations={torch.ops.aten.relu.default: baked_relu})
    with pytest.raises(RuntimeCheckError) as info:
        check_runtime(program, (x,), {})
    error = info.value
    assert error.op_type == "Reshape"
    assert error.input_set.startswith("generated inputs (")
    assert error.node is not None and error.node.target is torch.ops.aten.relu.default
    assert "the line the error must name" in (error.source_line or "")
    assert "check_runtime=False" in str(error)


def test_skipped_without_weight_data() -> None:
    program = onnxport.export(ReluNet().eval(), (torch.randn(2, 4),))
    for value in program.model.graph.initializers.values():
        value.const_value = None
        break
    assert "has no data" in (skip_reason(program.model) or "")
    assert check_runtime(program, (torch.randn(2, 4),), {}).ran == []


def test_guard_from_a_size_branch_is_an_export_error() -> None:
    """TF "same" padding branches on H % 2: torch.export records the guard silently and the ONNX
    model would be wrong on odd sizes; the check names the guard instead."""
    c = TF_SAME_PAD
    program = onnxport.export(c.build(), c.inputs(0), dynamic_shapes=c.dynamic_shapes)
    with pytest.raises(DynamicShapesError, match="Guard failed: .*% 2"):
        check_runtime(program, c.inputs(0), {})
