"""The rounding referees (onnxport.verify.referee): a float output beyond tolerance passes
only when a float64 run or one-ulp input moves show the difference is rounding, and a real
difference stays a mismatch with the figures in its notes."""

from __future__ import annotations

import pytest
import torch

import onnxport
from onnxport.hf import validate as hf_validate
from onnxport.verify import referee
from onnxport.verify.compare import compare_tensors


class Cancelling(torch.nn.Module):
    """``x @ w1 @ w2 - x @ (w1 @ w2)``: zero in exact arithmetic, float32 rounding of ~1e-4 here."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w1 = torch.nn.Parameter(torch.randn(256, 256, generator=g))
        self.w2 = torch.nn.Parameter(torch.randn(256, 64, generator=g))
        self.register_buffer("w12", (self.w1.double() @ self.w2.double()).float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w1 @ self.w2 - x @ self.w12


def _run(module, args, kwargs):
    return [module(*args, **kwargs)]


def _inputs() -> torch.Tensor:
    return torch.randn(8, 256, generator=torch.Generator().manual_seed(1))


def test_float64_referee_passes_a_more_accurate_result() -> None:
    model, x = Cancelling().eval(), _inputs()
    with torch.no_grad():
        expected = model(x)
        exact = model.double()(x.double())
    model.float()
    actual = exact.float()  # what a runtime summing more accurately than eager returns
    c = compare_tensors("out", expected, actual)
    assert not c.passed and c.max_abs_diff > 1e-4  # eager's own rounding is beyond the tolerance
    referee.settle([c], [expected], [actual], referee.Rerun(model, (x,), {}, _run))
    assert c.passed
    assert any("float64 referee" in n for n in c.notes)
    assert model.w1.dtype == torch.float32  # the model itself was not converted


def test_referees_keep_a_real_difference() -> None:
    model, x = Cancelling().eval(), _inputs()
    with torch.no_grad():
        expected = model(x)
    actual = expected + 0.05
    c = compare_tensors("out", expected, actual)
    referee.settle([c], [expected], [actual], referee.Rerun(model, (x,), {}, _run))
    assert not c.passed
    assert any("beyond" in n and "float64" in n for n in c.notes)
    assert any("one-ulp" in n and "beyond" in n for n in c.notes)


def test_ulp_referee_scales_with_the_output_sensitivity() -> None:
    g = torch.Generator().manual_seed(2)
    expected = torch.rand(1000, generator=g)
    sigma = torch.full((1000,), 1e-6)
    sigma[:5] = 1e-3  # a few sensitive positions, as a box head's unsaturated sigmoids
    moved = [expected + sigma * torch.randn(1000, generator=g) for _ in range(referee.PERTURBATIONS)]
    near = expected + 1.4 * sigma * torch.randn(1000, generator=g)
    c = compare_tensors("out", expected, near)
    assert not c.passed
    assert referee.judge_ulps(c, expected, near, moved)
    far = near.clone()
    far[500] += 0.02  # an insensitive position off by 20x the largest rounding scale
    c = compare_tensors("out", expected, far)
    assert not referee.judge_ulps(c, expected, far, moved)
    assert "beyond 8x" in c.notes[-1]


def test_no_referee_for_integers_or_passing_outputs() -> None:
    model, x = Cancelling().eval(), _inputs()
    calls = []

    def rerun() -> referee.Rerun:
        calls.append(1)
        return referee.Rerun(model, (x,), {}, _run)

    ints = compare_tensors("i", torch.tensor([1, 2]), torch.tensor([1, 3]))
    same = compare_tensors("f", torch.ones(3), torch.ones(3))
    referee.settle([ints, same], [torch.tensor([1, 2]), torch.ones(3)], [torch.tensor([1, 3]), torch.ones(3)], rerun)
    assert not ints.passed and same.passed and not calls


def test_verify_referees_onnxruntime_against_eager() -> None:
    model, x = Cancelling().eval(), _inputs()
    program = onnxport.export(model, (x,))
    result = onnxport.verify(program, (x,))
    assert result.passed, result.summary()
    out = result.outputs[0]
    assert out.max_abs_diff <= out.atol or any("referee" in n for n in out.notes)


def test_hf_validation_referees_with_the_components_inputs() -> None:
    class Named(Cancelling):
        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            return super().forward(pixel_values)

    model, x = Named().eval(), _inputs()
    with torch.no_grad():
        expected = model(x)
        actual = model.double()(x.double()).float()
    model.float()
    checks = hf_validate.compare_outputs(("model", "pixel_values 8x256"), ["out"], [actual], [expected], None,
                                         hf_validate.eager_rerun(model, {"pixel_values": x}))
    assert checks[0].passed and checks[0].max_abs_diff > 1e-4


class DeepHalf(torch.nn.Module):
    """Eight bfloat16 ``tanh(x @ w)`` layers then a wide head: eager rounds every op to bfloat16."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.layers = torch.nn.ParameterList(torch.randn(64, 64, generator=g) / 8 for _ in range(8))
        self.head = torch.nn.Parameter(4 * torch.randn(64, 512, generator=g))  # logits up to ~35
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for w in self.layers:
            x = torch.tanh(x @ w)
        return x @ self.head


def test_float64_referee_judges_half_precision_outputs() -> None:
    model = DeepHalf().eval()
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(4)).to(torch.bfloat16)
    with torch.no_grad():
        expected = model(x)
        exact = DeepHalf().double()(x.double())  # what a runtime computing in float32 approaches
    actual = exact.to(torch.bfloat16)
    tolerance = hf_validate.HALF_TOLERANCE
    c = compare_tensors("out", expected, actual, tolerance.rtol, tolerance.atol)
    assert not c.passed and c.max_abs_diff > tolerance.atol  # eager bfloat16's own rounding
    referee.settle([c], [expected], [actual], referee.Rerun(model, (x,), {}, _run))
    assert c.passed, c.notes
    assert any("bfloat16 rounding by the float64 referee" in n for n in c.notes)
    assert model.head.dtype == torch.bfloat16  # the model itself was not converted

    wrong = actual.clone()
    wrong[3, 7] += 2.0  # one real error among rounding
    c = compare_tensors("out", expected, wrong, tolerance.rtol, tolerance.atol)
    referee.settle([c], [expected], [wrong], referee.Rerun(model, (x,), {}, _run))
    assert not c.passed
    assert any("beyond" in n and "eager bfloat16" in n for n in c.notes)


def test_half_outputs_fall_back_to_a_float32_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    model = DeepHalf().eval()
    x = torch.randn(16, 64, generator=torch.Generator().manual_seed(4)).to(torch.bfloat16)
    with torch.no_grad():
        expected = model(x)
        actual = DeepHalf().float()(x.float()).to(torch.bfloat16)
    weights = sum(p.numel() for p in model.parameters())
    monkeypatch.setattr(referee, "available_memory", lambda: 2 * 6 * weights)  # float32 copies fit, float64 do not
    assert referee.upcast_outputs(referee.Rerun(model, (x,), {}, _run)) is None
    tolerance = hf_validate.HALF_TOLERANCE
    c = compare_tensors("out", expected, actual, tolerance.rtol, tolerance.atol)
    assert not c.passed
    referee.settle([c], [expected], [actual], referee.Rerun(model, (x,), {}, _run))
    assert c.passed, c.notes
    assert any("against eager in float32" in n for n in c.notes)
