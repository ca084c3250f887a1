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
                              custom_translations={torch.ops.aten.relu.default: baked_relu}, check_runtime=False)
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


class EvenLength(torch.nn.Module):
    """Pairs of steps: ``reshape(b, t // 2, 2 * f)`` makes torch.export record ``t % 2 == 0``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, f = x.shape
        return x.reshape(b, t // 2, 2 * f).relu()


class ProductBranch(torch.nn.Module):
    """A branch on ``x.shape[1] * y.shape[1] == 20``: the guard holds at the example (4, 5) and at
    no size the search reaches from there."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.shape[1] * y.shape[1] == 20:
            return x.sum(1) * 2 + y.sum(1)
        return x.sum(1) + y.sum(1)


def test_guard_rejecting_the_first_size_is_retried_at_an_allowed_size() -> None:
    """The first choice (seq 6 → 9) is odd; the search takes an even length, runs it, and says so."""
    x = torch.randn(2, 6, 3)
    program = onnxport.export(EvenLength(), (x,), dynamic_shapes=({0: "batch", 1: "seq"},), check_runtime=False)
    with pytest.warns(UserWarning, match=r"rejected batch=3, seq=9 .*seq=10"):
        result = check_runtime(program, (x,), {})
    assert result.sizes == {"batch": 3, "seq": 10}
    assert result.guards and "seq" in result.guards[0]
    assert result.ran[1].startswith("generated inputs (batch=3, seq=10)")
    x2 = torch.randn(3, 10, 3)
    torch.testing.assert_close(program(x2)[0], EvenLength()(x2))


def test_guard_from_a_size_branch_is_kept_with_a_warning() -> None:
    """TF "same" padding branches on H % 2: the graph holds the even branch; the check runs at an
    even size it finds and warns that the model is only valid where the guard holds."""
    c = TF_SAME_PAD
    program = onnxport.export(c.build(), c.inputs(0), dynamic_shapes=c.dynamic_shapes, check_runtime=False)
    with pytest.warns(UserWarning, match=r"Mod\(x_dim_3, 2\)"):
        result = check_runtime(program, c.inputs(0), {})
    assert all(v % 2 == 0 for k, v in result.sizes.items() if k != "x_dim_0")
    assert len(result.ran) == 2


def test_no_size_satisfying_the_guards_is_an_export_error() -> None:
    with pytest.raises(DynamicShapesError, match=r"other size sets tried.*x_dim_1\*y_dim_1, 20") as info:
        onnxport.export(ProductBranch(), (torch.randn(2, 4), torch.randn(2, 5)),
                        dynamic_shapes=({1: DYN}, {1: DYN}))
    assert "in forward" in str(info.value)
