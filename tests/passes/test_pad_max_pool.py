"""A zero ``Pad`` before ``MaxPool`` keeps its zeros in onnxruntime's optimized sessions
(``passes/pad_max_pool.py``): eager PyTorch against sessions at every optimization level."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport
import onnxport._export as export_module

F = torch.nn.functional
LEVELS = [ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
          ort.GraphOptimizationLevel.ORT_ENABLE_ALL]


class PadThenPool(torch.nn.Module):
    """BiT's stem: ``ConstantPad2d(1, 0.0)`` then a 3x3 max pool of stride 2."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(F.pad(x, (1, 1, 1, 1), value=0.0), kernel_size=3, stride=2)


def _run(program: onnxport.ONNXProgram, x: torch.Tensor, level: ort.GraphOptimizationLevel) -> list[np.ndarray]:
    """Every output of ``program`` on ``x`` in a fresh session at optimization ``level``."""
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    session = ort.InferenceSession(program.model_proto.SerializeToString(), options)
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})


@pytest.mark.parametrize("level", LEVELS)
def test_zero_pad_before_max_pool_keeps_its_zeros(level: ort.GraphOptimizationLevel) -> None:
    x = -torch.rand(2, 3, 6, 6) - 0.1  # every border window's own values are negative
    program = onnxport.export(PadThenPool(), (x,), dynamic_shapes={"x": {0: "batch"}})
    expected = PadThenPool()(x)
    assert float(expected[..., 0, 0].max()) == 0.0  # the padding's zero wins at the corner
    out = _run(program, x, level)[0]
    assert out.shape == (2, 3, 3, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected.numpy(), rtol=0, atol=0)
    pad = next(n for n in program.model.graph if n.op_type == "Pad")
    assert len(pad.inputs) == 4 and pad.inputs[3] is not None  # the axes input PadFusion skips


def test_the_guard_runs_without_optimize_and_leaves_conv_pads_alone() -> None:
    class PadThenConv(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            padded = F.pad(x, (1, 1, 1, 1))
            return self.conv(padded), F.max_pool2d(F.pad(x, (1, 1, 1, 1)), 3, 2)

    x = -torch.rand(1, 3, 5, 5)
    model = PadThenConv().eval()
    program = onnxport.export(model, (x,), optimize=False)
    pads = [n for n in program.model.graph if n.op_type == "Pad"]
    assert sorted(len(n.inputs) for n in pads) == [3, 4]  # only the Pad feeding MaxPool gets axes
    conv_out, pool_out = model(x)
    convolved, pooled = _run(program, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    np.testing.assert_allclose(convolved, conv_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pooled, pool_out.numpy(), rtol=0, atol=0)


def test_half_precision_pad_through_cast() -> None:
    """float16 pads in float and casts back, and pools in float: Casts between the Pad and the
    MaxPool (PadFusion looks through one); the guard follows them and the zeros stay."""
    x = (-torch.rand(1, 2, 6, 6) - 0.1).half()
    program = onnxport.export(PadThenPool(), (x,))
    assert len(next(n for n in program.model.graph if n.op_type == "Pad").inputs) == 4
    out = _run(program, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)[0]
    assert out.dtype == np.float16 and out.shape == (1, 2, 3, 3)
    np.testing.assert_allclose(out, PadThenPool()(x).numpy(), rtol=0, atol=0)


def test_a_divergence_from_onnxruntime_rewrites_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the guard, PadFusion changes the result in the plain session only; localization
    (every value an output, so nothing fuses) finds no diverging node, and the error says that
    onnxruntime's rewrites are the cause and how to confirm it."""
    class NoGuard:  # the pass switched off: changes nothing
        def __call__(self, model: object) -> None:
            return None

    monkeypatch.setattr(export_module, "PadMaxPoolPass", NoGuard)
    x = -torch.rand(1, 2, 6, 6) - 0.1
    with pytest.raises(onnxport.VerificationError) as raised:
        onnxport.export(PadThenPool(), (x,), verify=True)
    message = str(raised.value)
    assert "found none diverging" in message and "ORT_DISABLE_ALL" in message
    assert raised.value.result.localization.first is None and raised.value.result.localization.outputs_match
