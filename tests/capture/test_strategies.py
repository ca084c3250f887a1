"""Acceptance 3: capture fallbacks (non-strict → strict → draft export), every attempt recorded and
shown in the report; the error when all fail names the first real cause and the source line."""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch._dynamo.config as dynamo_config

import onnxport
from onnxport.capture import strategies


class NeedsStrict(torch.nn.Module):
    """Non-strict traces FakeTensors, so the exact-type check fails; Dynamo sees a torch.Tensor."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if type(x) is not torch.Tensor:
            raise TypeError("expected a plain torch.Tensor")
        return x * 2


class NeedsNonStrict(torch.nn.Module):
    """Dynamo cannot trace ``sys._getframe``; non-strict runs it as plain Python."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sys._getframe()
        return x + 1


class DataDependent(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # branch on data
            return x + 1
        return x - 1


def test_nonstrict_fails_strict_captures(tmp_path: Path) -> None:
    report = tmp_path / "r.md"
    x = torch.randn(3)
    program = onnxport.export(NeedsStrict(), (x,), report=report)
    torch.testing.assert_close(program(x)[0], x * 2)
    attempts = program.status.capture_attempts
    assert [a.strategy for a in attempts] == ["torch.export.export(strict=False)", "torch.export.export(strict=True)"]
    assert isinstance(attempts[0].error, TypeError) and attempts[0].cause == "exception raised in forward"
    assert attempts[1].success
    md = report.read_text(encoding="utf-8")
    assert "  - [ ] `torch.export.export(strict=False)` failed: TypeError: expected a plain torch.Tensor" in md
    assert "  - [x] `torch.export.export(strict=True)` succeeded" in md
    assert "## Capture tracebacks" in md and "<summary>torch.export.export(strict=False)</summary>" in md


def test_strict_fails_nonstrict_captures(tmp_path: Path) -> None:
    x = torch.randn(3)
    with pytest.raises(Exception) as info:  # strict alone cannot capture it
        strategies._strict(NeedsNonStrict(), (x,), {}, None)
    assert strategies.classify(info.value) == strategies.UNSUPPORTED_CONSTRUCT
    assert "sys._getframe()" in (strategies.source_line(info.value) or "")

    report = tmp_path / "r.md"
    program = onnxport.export(NeedsNonStrict(), (x,), report=report)
    torch.testing.assert_close(program(x)[0], x + 1)
    assert [a.success for a in program.status.capture_attempts] == [True]
    md = report.read_text(encoding="utf-8")
    assert "  - [x] `torch.export.export(strict=False)` succeeded" in md
    assert "| `torch.export.export(strict=False)` | success |" in md


def test_draft_export_specializes_with_a_warning(tmp_path: Path) -> None:
    x = torch.ones(3)
    # Draft export leaves torch.sym_ite(item, 1, 0) in the graph; translate it for this export.
    registry = onnxport.default_registry().copy()
    registry.register_translation(
        torch.sym_ite, lambda ctx, c, a, b: ctx.op.Where(c, ctx.const(a), ctx.const(b))
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = onnxport.export(DataDependent(), (x,), report=tmp_path / "r.md", registry=registry)
    attempts = program.status.capture_attempts
    assert [a.cause for a in attempts] == ["data-dependent guard", "data-dependent guard", None]
    assert attempts[2].strategy == "torch.export._draft_export.draft_export" and attempts[2].success
    assert len(attempts[2].warnings) == 1
    assert "if x.sum() > 0:" in attempts[2].warnings[0] and "DATA_DEPENDENT_ERROR" in attempts[2].warnings[0]
    assert any("specialized on the example inputs" in str(w.message) for w in caught)
    torch.testing.assert_close(program(x)[0], x + 1)  # the branch taken by the example
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "Draft export specialized on the example inputs" in md
    assert "(data-dependent guard)" in md


def test_all_fail_names_first_real_cause_and_source_line(tmp_path: Path) -> None:
    class Uncapturable(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            sys._getframe()  # the construct strict export rejects
            if type(x) is not torch.Tensor:
                raise TypeError("expected a plain torch.Tensor")
            return x

    report = tmp_path / "r.md"
    with pytest.raises(onnxport.CaptureError) as info:
        onnxport.export(Uncapturable(), (torch.randn(3),), report=report)
    err = info.value
    assert err.cause == "unsupported Python construct"
    assert err.source_line is not None and "sys._getframe()  # the construct strict export rejects" in err.source_line
    # every strategy but the rewrites, which apply only where they find their construct
    assert [a.strategy for a in err.attempts] == [s for s, _ in strategies.STRATEGIES if "loop as" not in s]
    text = str(err)
    assert "could not capture the model: unsupported Python construct; first cause (torch.export.export(strict=True))" in text
    assert "torch.export._draft_export.draft_export: TypeError: expected a plain torch.Tensor" in text
    md = report.read_text(encoding="utf-8")
    assert "**Result: failure**" in md and "- [ ] capture" in md
    assert md.count("  - [ ] `torch.export") == 3


def test_constraint_violation_is_classified() -> None:
    class Slices(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.ones(8)  # forces dim 1 == 8

    dim = torch.export.Dim("seq")
    with pytest.raises(Exception) as info:
        strategies._nonstrict(Slices(), (torch.randn(2, 8),), {}, {"x": {1: dim}})
    assert strategies.classify(info.value) == strategies.CONSTRAINT_VIOLATION


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("guard on a value", lambda x, n: torch.tensor_split(x, n, dim=1)),  # sections from a tensor
        ("fake tensor cannot tell", lambda x, n: torch.cov(x)),  # aten.cov checks norm_factor <= 0
    ],
)
def test_data_dependent_failures_are_capture_errors_not_dynamic_shape_errors(name: str, fn: object) -> None:
    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, n: torch.Tensor) -> object:
            return fn(x, n)  # type: ignore[operator]

    with pytest.raises(onnxport.CaptureError) as info:  # no dynamic_shapes were given: nothing to "honour"
        onnxport.export(Model(), (torch.randn(3, 6), torch.tensor(2)))
    assert not isinstance(info.value, onnxport.DynamicShapesError)
    assert info.value.cause == "data-dependent guard", name


class ExpertHitLoop(torch.nn.Module):
    """A Python loop over ``nonzero()`` rows with a branch on each (transformers' eager MoE loop):
    no strategy captures it (draft export stops at the per-row branch)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.clone()
        for i in (x[:, 0] > 0).nonzero():
            i = i[0]
            if i == 3:  # the guard torch cannot decide
                continue
            out = out + x[i]
        return out


def test_data_dependent_guard_names_the_expression_and_source_line() -> None:
    with pytest.raises(onnxport.CaptureError) as info:
        onnxport.export(ExpertHitLoop(), (torch.randn(5, 3),), dynamic_shapes={"x": {0: "n"}})
    err = info.value
    assert err.cause == "data-dependent guard"
    assert err.expression is not None and err.expression.startswith("Eq(u")
    assert f"Data-dependent expression: {err.expression}" in str(err)
    assert err.source_line is not None and "test_strategies.py" in err.source_line


def test_guard_expression_from_torch_messages() -> None:
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    e = GuardOnDataDependentSymNode(None, "Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).")
    assert strategies.guard_expression(e) == "Eq(u0, 1)"
    wrapped = RuntimeError("outer")
    wrapped.__cause__ = ValueError("Could not extract specialized integer from data-dependent expression u2 (unhinted: u2).")
    assert strategies.guard_expression(wrapped) == "u2"
    assert strategies.guard_expression(RuntimeError("no guard here")) is None


def test_uncached_fake_tensors_is_scoped_and_captures_the_same_program() -> None:
    """onnxport.hf captures without the FakeTensor dispatch cache; the flag is restored after the
    block (also on an error), and the program is the one the cached trace gives."""
    class Block(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(x @ x.transpose(-1, -2) / 4.0, dim=-1) @ x

    model, x = Block().eval(), torch.randn(2, 5, 4)
    before = dynamo_config.fake_tensor_cache_enabled
    cached = onnxport.export(model, (x,), dynamic_shapes=({0: "batch", 1: "length"},))
    with strategies.uncached_fake_tensors():
        assert dynamo_config.fake_tensor_cache_enabled is False
        uncached = onnxport.export(model, (x,), dynamic_shapes=({0: "batch", 1: "length"},))
    assert dynamo_config.fake_tensor_cache_enabled == before
    with pytest.raises(RuntimeError), strategies.uncached_fake_tensors():
        raise RuntimeError("inside")
    assert dynamo_config.fake_tensor_cache_enabled == before
    assert [n.op_type for n in uncached.model.graph] == [n.op_type for n in cached.model.graph]
    probe = torch.randn(3, 7, 4)
    torch.testing.assert_close(uncached(probe)[0], model(probe))


class LenBatch(torch.nn.Module):
    """RT-DETR's ``batch_size = len(source_flatten)``: non-strict mode turns ``len`` of a tensor into
    the example's int (a constraint violation on a dynamic batch); Dynamo keeps it symbolic."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = len(x)
        return x.reshape(batch, -1).sum(1) * 2


def test_constraint_violation_of_non_strict_mode_is_retried_in_strict_mode_only() -> None:
    program = onnxport.export(LenBatch(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
    assert [a.strategy for a in program.status.capture_attempts] == [
        "torch.export.export(strict=False)", "torch.export.export(strict=True)"]
    x = torch.randn(5, 3, 4)
    (actual,) = program(x)
    assert actual.shape == (5,)
    torch.testing.assert_close(actual, LenBatch()(x))


class FixedBatch(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(2, 3)  # (reshape(2, -1) only needs an even batch: a guard, not a pin)


def test_constraint_violation_in_both_modes_is_not_drafted() -> None:
    """A model that really fixes the dim fails in strict mode too; draft export (which would
    specialize silently) is not tried."""
    with pytest.raises(onnxport.DynamicShapesError):
        onnxport.export(FixedBatch(), (torch.randn(2, 3),), dynamic_shapes=({0: "batch"},))


class SingleChunkBranch(torch.nn.Module):
    """Gemma 4's audio tower in small: a branch on whether ``n`` frames fill more than one chunk
    of 4, which a ``Dim`` over [1, 64] violates in both modes (the capture then relaxes it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (x.shape[1] - 1) // 4 + 1 != 1:
            return x * 2
        return x + 1


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_strict_mode_constraint_violation_is_not_logged_by_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """TorchDynamo logs the guard it cannot create at error level with a traceback; onnxport reports
    the violation itself (here in the warning of the relaxed capture), so torch's log stays quiet."""
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    logger, seen = logging.getLogger(strategies._GUARD_LOGGER), _Records()
    logger.addHandler(seen)
    try:
        with pytest.warns(UserWarning, match="whose ranges the code narrows"):
            program = onnxport.export(SingleChunkBranch(), (torch.randn(2, 9),),
                                      dynamic_shapes={"x": {1: torch.export.Dim("n", min=1, max=64)}})
    finally:
        logger.removeHandler(seen)
    assert "torch.export.export(strict=True)" in [a.strategy for a in program.status.capture_attempts]
    assert [r.getMessage() for r in seen.records] == []
    x = torch.randn(2, 13)
    torch.testing.assert_close(program(x)[0], x * 2)


def test_torch_logs_asked_for_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``TORCH_LOGS`` set the user asked for torch's logs: the guard logger is left as it is."""
    logger = logging.getLogger(strategies._GUARD_LOGGER)
    monkeypatch.setenv("TORCH_LOGS", "+dynamic")
    with strategies._quiet_guard_errors():
        assert not logger.disabled
    monkeypatch.delenv("TORCH_LOGS")
    with strategies._quiet_guard_errors():
        assert logger.disabled
    assert not logger.disabled


def test_a_guard_against_size_one_is_captured_as_torch_export_does() -> None:
    """A tiny AuraFlow transformer (diffusers 0.42) with dynamic batch, height and width: the
    size-oblivious capture records ``batch != 1`` in its attention and fails the declared range
    (``torch.export.export`` alone captures it); the capture that assumes dynamic dims above 1
    does (the ranges cannot be relaxed to Dim.DYNAMIC hints: 2 * half_height is a derived dim), and
    the graph matches eager at other sizes, a batch of 1 included."""
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.AuraFlowTransformer2DModel(
        sample_size=16, patch_size=2, in_channels=4, num_mmdit_layers=1, num_single_dit_layers=1,
        attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=32,
        out_channels=4, pos_embed_max_size=64,
    ).eval()  # fmt: skip

    def inputs(batch: int, height: int, width: int) -> dict[str, torch.Tensor]:
        return {"hidden_states": torch.randn(batch, 4, height, width), "encoder_hidden_states": torch.randn(batch, 7, 32),
                "timestep": torch.rand(batch) * 1000}  # fmt: skip

    batch = torch.export.Dim("batch_size", max=16)
    half_h, half_w = torch.export.Dim("half_height", min=1, max=32), torch.export.Dim("half_width", min=1, max=32)
    dynamic = {"hidden_states": {0: batch, 2: 2 * half_h, 3: 2 * half_w}, "encoder_hidden_states": {0: batch},
               "timestep": {0: batch}}  # fmt: skip
    with pytest.warns(UserWarning, match=r"dynamic dims assumed above 1 .*generated guard .*!= 1"):
        program = onnxport.export(model, (), kwargs=inputs(2, 8, 12), dynamic_shapes=dynamic)
    attempts = program.status.capture_attempts
    assert attempts[0].cause == "constraint violation" and "!= 1" in str(attempts[0].error)
    assert attempts[-1].strategy == strategies.SIZES_ABOVE_ONE
    assert attempts[-1].success and "at size 1 the graph runs the path of larger sizes" in attempts[-1].warnings[0]
    for size in [(3, 10, 6), (1, 8, 8)]:
        feeds = inputs(*size)
        with torch.no_grad():
            expected = model(**feeds, return_dict=False)[0]
        torch.testing.assert_close(torch.as_tensor(program(**feeds)[0]), expected, rtol=1e-4, atol=1e-5)


def test_an_op_raising_on_the_inputs_is_not_called_an_unsupported_construct() -> None:
    """Strict mode reports an op that raised on fake tensors as Dynamo's "RuntimeError when making
    fake tensor call"; that is the op's error (a pooling kernel of 0, as Gemma 3's projector pools
    when the image is smaller than its config says; split sizes that do not add up, as a rotary
    section list that does not fit the head size), not a Python construct to rewrite."""

    class ZeroKernel(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.avg_pool2d(x, 0)

    class BadSplit(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.split([8, 12, 12], dim=-1)[0] + 1

    x = torch.randn(1, 2, 4, 4)
    with pytest.raises(Exception) as raised:
        strategies._strict(ZeroKernel(), (x,), {}, None)
    assert strategies.classify(raised.value) == strategies.RAISED
    with pytest.raises(onnxport.CaptureError) as info:
        onnxport.export(ZeroKernel(), (x,))
    assert info.value.cause == "exception raised in forward"
    assert "unsupported Python construct" not in str(info.value) and "stride should not be zero" in str(info.value)
    with pytest.raises(onnxport.CaptureError) as split:
        onnxport.export(BadSplit(), (torch.randn(2, 8),))
    assert split.value.cause == "shape mismatch" and "Split sizes add up to 32" in str(split.value)


def test_strict_modes_unsupported_construct_in_onnxport_code_ranks_after_the_models_exception() -> None:
    """ProphetNet: strict mode stopped at a class defined in onnxport's own cache wrapper
    ("Invalid call to __build_class__"), non-strict mode at the model's assertion. The error names
    the model's exception and its source line; an unsupported construct in the user's code still
    comes first."""
    package = str(Path(strategies.__file__).resolve().parents[1])
    model_line = 'File "/site-packages/transformers/models/prophetnet/modeling_prophetnet.py", line 1166, in forward'
    ours = f'File "{package}/hf/cache.py", line 117, in empty_cross_cache'
    raised = strategies.Attempt("torch.export.export(strict=False)", 0.1, AssertionError("use_cache is only supported"),
                                None, strategies.RAISED, model_line)
    unsupported = strategies.Attempt("torch.export.export(strict=True)", 0.1, RuntimeError("Invalid call to __build_class__"),
                                     None, strategies.UNSUPPORTED_CONSTRUCT, ours)
    error = strategies.capture_error([raised, unsupported])
    assert error.cause == strategies.RAISED and "use_cache is only supported" in str(error)
    assert model_line in str(error)
    users = strategies.Attempt("torch.export.export(strict=True)", 0.1, RuntimeError("unsupported"), None,
                               strategies.UNSUPPORTED_CONSTRUCT, 'File "/home/me/model.py", line 3, in forward')
    assert strategies.capture_error([raised, users]).cause == strategies.UNSUPPORTED_CONSTRUCT


class _ViewByOtherBatch(torch.nn.Module):
    """LTX-Video's ``temb.view(batch_size, -1, D)`` (diffusers 0.42): one input viewed by another's
    batch size, then broadcast against it."""

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return x + t.view(x.shape[0], -1, 8)


def test_a_mismatch_of_symbolic_sizes_is_retried_with_torch_exports_size_rule() -> None:
    # size-oblivious capture cannot reduce s1//s0 to 1 and reports "tensor a (5) must match tensor
    # b ((s1//s0))": not the user's inputs (they run in eager), so the capture torch.export does
    # alone (dims above 1) is tried, and warns
    x, t = torch.randn(2, 5, 8), torch.randn(2, 8)
    with pytest.warns(UserWarning, match=r"dynamic dims assumed above 1 .*met RuntimeError: The size of tensor a"):
        program = onnxport.export(_ViewByOtherBatch(), (x, t),
                                  dynamic_shapes={"x": {0: "batch_size"}, "t": {0: "batch_size"}})
    attempts = program.status.capture_attempts
    assert attempts[0].cause == strategies.SYMBOLIC_MISMATCH
    assert attempts[-1].strategy == strategies.SIZES_ABOVE_ONE and attempts[-1].success
    x, t = torch.randn(3, 5, 8), torch.randn(3, 8)
    torch.testing.assert_close(torch.as_tensor(program(x, t)[0]), x + t.view(3, 1, 8))


def test_shape_mismatches_are_symbolic_only_when_a_size_is_an_expression() -> None:
    assert strategies.classify(RuntimeError(
        "The size of tensor a (32) must match the size of tensor b ((s53//s47)) at non-singleton dimension 1"
    )) == strategies.SYMBOLIC_MISMATCH
    assert strategies.classify(RuntimeError(
        "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1"
    )) == strategies.SHAPE_MISMATCH


def test_an_error_raised_inside_sympy_is_not_the_users_exception() -> None:
    # torch's guard solving under backed_size_oblivious raised sympy's NotImplementedError
    # ("cannot be solved using solve_univariate_inequality", MobileViTV2); it was reported as
    # "forward() raised this exception" with a sympy source line
    assert strategies._is_library_frame("/usr/lib/python3.11/site-packages/sympy/solvers/inequalities.py")
    assert not strategies._is_library_frame("/home/user/model.py")


def test_inputs_that_do_not_fit_are_a_plain_shape_mismatch_even_with_symbolic_sizes() -> None:
    # "a and b must have same reduction dim, but got [s0, s1] X [8, 4]": the sizes are symbolic, but
    # forward fails in eager too, so the error says the inputs are wrong (after the one retry)
    with pytest.raises(onnxport.CaptureError) as info:
        onnxport.export(torch.nn.Linear(8, 4), (torch.randn(2, 7),), dynamic_shapes={"input": {0: "b", 1: "f"}})
    assert info.value.cause == strategies.SHAPE_MISMATCH
    assert "pass inputs of the shapes forward() expects" in str(info.value)
    assert [a.strategy for a in info.value.attempts][-1] == strategies.SIZES_ABOVE_ONE
