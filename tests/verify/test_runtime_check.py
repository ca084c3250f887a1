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
from onnxport.verify import runtime_check
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


class Clipped(torch.nn.Module):
    """Two branches on ``t % 4 == 2`` computing the same values: torch.export records the example's
    guard, but the graph is right at every length."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] % 4 == 2:
            return x * 2
        return x + x


class ProductBranch(torch.nn.Module):
    """A branch on ``x.shape[1] * y.shape[1] == 20``: the guard holds at the example (4, 5) and at
    no size the search reaches from there."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.shape[1] * y.shape[1] == 20:
            return x.sum(1) * 2 + y.sum(1)
        return x.sum(1) + y.sum(1)


def test_guard_rejecting_the_first_size_is_retried_at_an_allowed_size() -> None:
    """The first choice (seq 6 → 9) is odd and the model itself refuses odd lengths: the search
    takes an even length, runs it, and warns with the guard."""
    x = torch.randn(2, 6, 3)
    with pytest.warns(UserWarning, match=r"rejected batch=3, seq=9 \(the model itself rejects.*seq=10"):
        program = onnxport.export(EvenLength(), (x,), dynamic_shapes=({0: "batch", 1: "seq"},))
    detail = program.status.steps[-1].detail
    assert detail is not None and "generated inputs (batch=3, seq=10)" in detail
    x2 = torch.randn(3, 10, 3)
    (actual,) = program(x2)
    torch.testing.assert_close(actual, EvenLength()(x2))


def test_search_without_the_model_keeps_an_allowed_size_with_a_warning() -> None:
    """check_runtime without the eager model cannot judge the guard: it runs the searched size (an
    even width for TF "same" padding's H % 2 branch) and warns."""
    c = TF_SAME_PAD
    program = onnxport.export(c.build(), c.inputs(0), dynamic_shapes=c.dynamic_shapes, check_runtime=False)
    with pytest.warns(UserWarning, match=r"Mod\(x_dim_3, 2\)"):
        result = check_runtime(program, c.inputs(0), {})
    assert result.sizes["x_dim_3"] % 2 == 0 and result.sizes["x_dim_2"] % 2 == 0
    assert result.guards and len(result.ran) == 2


def test_guard_from_a_size_branch_is_an_export_error() -> None:
    """TF "same" padding branches on H % 2: at the odd first-choice width the ONNX model differs
    from the model, so the guard is a specialization; the error names it and an example to use."""
    c = TF_SAME_PAD
    with pytest.raises(DynamicShapesError, match=r"Mod\(x_dim_3, 2\).*differs from the model") as info:
        onnxport.export(c.build(), c.inputs(0), dynamic_shapes=c.dynamic_shapes)
    assert "export with an example where these conditions are false, such as" in str(info.value)


def test_benign_guard_keeps_the_first_size() -> None:
    """A guard the graph does not depend on (``t % 4 == 2``) is false at the first choice, but the ONNX
    model matches the model there: that size is used, without a warning."""
    x = torch.randn(2, 6)
    program = onnxport.export(Clipped(), (x,), dynamic_shapes=({0: "batch", 1: "seq"},))
    detail = program.status.steps[-1].detail or ""
    assert "outputs match the model in eager mode" in detail, detail


def test_no_size_satisfying_the_guards_is_an_export_error() -> None:
    with pytest.raises(DynamicShapesError, match=r"x_dim_1\*y_dim_1, 20.*differs from the model") as info:
        onnxport.export(ProductBranch(), (torch.randn(2, 4), torch.randn(2, 5)),
                        dynamic_shapes=({1: DYN}, {1: DYN}))
    assert "none of the" in str(info.value)


class TimestepNet(torch.nn.Module):
    """diffusers' UNet2DModel pattern: a per-sample timestep broadcast against the batch of an
    image whose sides are declared as multiples (``4 * Dim("h")``)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        steps = timestep * torch.ones(sample.shape[0], dtype=timestep.dtype)
        return self.conv(sample) * steps[:, None, None, None].float()


def test_derived_dims_resize_every_input_consistently() -> None:
    """The generated input set resizes the derived dims (``4*h``) and the batch together: before,
    a tensor with a derived dim kept its example size, and the batch disagreed between inputs."""
    h, w = torch.export.Dim("h", min=1), torch.export.Dim("w", min=1)
    args = (torch.randn(2, 3, 8, 12), torch.tensor([5, 7]))
    model = TimestepNet().eval()
    program = onnxport.export(model, args,
                              dynamic_shapes=({0: "batch", 2: 4 * h, 3: 4 * w}, {0: "batch"}))
    result = check_runtime(program, args, {})
    assert len(result.ran) == 2 and set(result.sizes) == {"batch", "h", "w"}
    dims = [[getattr(d, "value", d) for d in i.shape] for i in program.model.graph.inputs]
    assert dims == [["batch", 3, "4*h", "4*w"], ["batch"]]
    x, t = torch.randn(3, 3, 12, 20), torch.tensor([1, 2, 3])
    with torch.no_grad():
        expected = model(x, t)
    torch.testing.assert_close(torch.as_tensor(program(x, t)[0]), expected, rtol=1e-5, atol=1e-5)


def test_refusal_that_runs_without_optimizations_names_onnxruntime() -> None:
    """A graph the session refuses but that runs with onnxruntime's graph optimizations off (a
    rewrite of onnxruntime's broke it: ConvBERT's unfold, seen in session 10) gets a message saying
    so, not "onnxport bug"; a graph refused either way keeps the onnxport-bug message."""
    x = torch.randn(2, 4)
    program = onnxport.export(ReluNet().eval(), (x,), dynamic_shapes=({0: DYN},),
                              custom_translations={torch.ops.aten.relu.default: baked_relu}, check_runtime=False)
    inputs = {program.model.graph.inputs[0].name: x.numpy()}
    assert runtime_check._runs_unoptimized(program, inputs)  # the example's size runs
    wrong = {program.model.graph.inputs[0].name: torch.randn(3, 4).numpy()}
    assert not runtime_check._runs_unoptimized(program, wrong)  # the baked Reshape fails anyway
    error = runtime_check.runtime_error(program, RuntimeError("Status Message: boom"), "example inputs", True)
    assert "graph optimizations off" in str(error) and "onnxport bug" not in str(error)
    error = runtime_check.runtime_error(program, RuntimeError("Status Message: boom"), "example inputs", False)
    assert "onnxport bug" in str(error)


def test_a_guard_dividing_by_zero_at_a_size_does_not_hold_there() -> None:
    """``Mod(w, h // 16)`` at ``h = 8`` divides by zero: a size the model cannot take, not a crash
    of the runtime check (sympy's ZeroDivisionError escaped it for DINOv2-with-registers)."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv, Mod

    from onnxport.verify.guards import Guard

    h, w = sympy.symbols("s0 s1", integer=True, positive=True)
    guard = Guard(sympy.Eq(Mod(w, FloorDiv(h, 16)), 0), {h: "height", w: "width"}, "here")
    assert guard.holds({h: 32, w: 4}) is True
    assert guard.holds({h: 32, w: 5}) is False
    assert guard.holds({h: 8, w: 4}) is False


class ParityPad(torch.nn.Module):
    """SEW-D's upsampling pattern: frames come in pairs and an odd count is padded by one. The pad
    branch is general (its pad is zero at an even count); the other holds only even counts."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        y = x[:, : 2 * (t // 2)] * 2
        if y.shape[1] < t:
            y = torch.nn.functional.pad(y, (0, t - y.shape[1]))
        return y


def test_branch_the_first_size_shares_with_the_example_is_probed() -> None:
    """Example length 8 and first choice 12 are both even, so every guard holds at both; the probe
    (a length near 12 where the parity guard is false) finds the graph one frame short there."""
    with pytest.raises(DynamicShapesError, match=r"seq=\d*[13579]\b.*differs from the model \(output \w+: shape") as info:
        onnxport.export(ParityPad(), (torch.randn(2, 8),), dynamic_shapes=({0: "batch", 1: "seq"},))
    assert "ParityPad" in str(info.value) or "test_runtime_check.py" in str(info.value)


def test_probe_of_the_general_branch_runs_and_keeps_the_model() -> None:
    """Exported at an odd length the graph holds the pad (zero at even lengths): the probe at an
    even length matches eager, is listed among the runs, and the model is right at both parities."""
    program = onnxport.export(ParityPad(), (torch.randn(2, 9),), dynamic_shapes=({0: "batch", 1: "seq"},))
    detail = program.status.steps[-1].detail or ""
    assert "probe inputs" in detail and "outputs match the model in eager mode" in detail, detail
    for t in (10, 11):
        x = torch.randn(3, t)
        (actual,) = program(x)
        assert actual.shape == (3, t)
        torch.testing.assert_close(actual, ParityPad()(x))


def test_an_id_outside_the_embedding_is_named_as_the_inputs_fault() -> None:
    """Example ids at or above the embedding's size (a config token id outside a shrunk vocabulary:
    ShieldGemma 2's yes_token_index) capture on fake tensors and fail in onnxruntime's Gather; eager
    would raise IndexError. The error says so, not "onnxport bug"."""
    model = torch.nn.Embedding(10, 4).eval()
    with pytest.raises(RuntimeCheckError) as caught:
        onnxport.export(model, (torch.tensor([[1, 15]]),))
    message = str(caught.value)
    assert "outside the table" in message and "vocab_size" in message and "onnxport bug" not in message
