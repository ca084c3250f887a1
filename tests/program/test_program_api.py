"""Seed 003's ONNXProgram API: ``optimize()`` (in place, idempotent, never reading weights),
``initialize_inference_session(initializer=...)``, ``release()``, ``__call__`` after
``apply_weights``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "weights"))
from _weight_models import Tiny, randomized  # noqa: E402

IDS = torch.tensor([[1, 7, 3, 49, 0], [5, 5, 2, 8, 11]])


def test_optimize_in_place_and_idempotent_without_reading_weights() -> None:
    torch.manual_seed(5)
    real = randomized(Tiny())
    with onnxport.enable_fake_mode():
        fake = Tiny().eval()
    program = onnxport.export(fake, (IDS,), optimize=False)
    before = len(program.model.graph)
    assert program.optimize() is program  # weights still missing: optimize reads none
    after = len(program.model.graph)
    assert after < before
    first = str(program.model.graph)
    program.optimize()
    assert str(program.model.graph) == first
    assert "BatchNormalization" not in [n.op_type for n in program.model.graph]  # folded into the Conv
    assert "fc.weight.T" in program.model.graph.initializers  # transposed when written
    program.apply_weights(real.state_dict())
    with torch.no_grad():
        np.testing.assert_allclose(program(IDS)[0].numpy(), real(IDS).numpy(), rtol=1e-5, atol=1e-5)


def test_session_initializer_and_release() -> None:
    torch.manual_seed(6)
    model = randomized(Tiny())
    program = onnxport.export(model, (IDS,))
    seen: list[Any] = []

    def initializer(model_or_path: str | bytes) -> ort.InferenceSession:
        seen.append(type(model_or_path))
        return ort.InferenceSession(model_or_path, providers=["CPUExecutionProvider"])

    program.initialize_inference_session(initializer)
    assert seen == [bytes]
    with torch.no_grad():
        expected = model(IDS).numpy()
    np.testing.assert_allclose(program(IDS)[0].numpy(), expected, rtol=1e-5, atol=1e-5)
    assert seen == [bytes]  # __call__ used that session
    program.release()
    assert program._session is None
    np.testing.assert_allclose(program(IDS)[0].numpy(), expected, rtol=1e-5, atol=1e-5)  # a new default session


def test_session_needs_the_weights() -> None:
    torch.manual_seed(7)
    real = randomized(Tiny())
    with onnxport.enable_fake_mode():
        fake = Tiny().eval()
    program = onnxport.export(fake, (IDS,))
    with pytest.raises(onnxport.MissingWeightsError, match="Cannot run the model") as info:
        program.initialize_inference_session()
    assert "fc.weight" in info.value.names
    with pytest.raises(onnxport.MissingWeightsError):
        onnxport.verify(program, (IDS,), reference=real)
    program.apply_weights(real.state_dict())
    program.initialize_inference_session()
    with torch.no_grad():
        np.testing.assert_allclose(program(IDS)[0].numpy(), real(IDS).numpy(), rtol=1e-5, atol=1e-5)
    result = onnxport.verify(program, (IDS,), reference=real)
    assert result.passed


def test_apply_weights_after_a_session_releases_it() -> None:
    torch.manual_seed(8)
    model = randomized(Tiny())
    program = onnxport.export(model, (IDS,))
    first = program(IDS)[0]
    new_state = {k: v + 0.5 if v.is_floating_point() else v for k, v in model.state_dict().items()}
    program.apply_weights(new_state)
    model.load_state_dict(new_state)
    with torch.no_grad():
        expected = model(IDS).numpy()
    out = program(IDS)[0].numpy()
    # +0.5 on every weight makes outputs of ~800, whose float32 sums cancel to ~1 in places: the
    # absolute tolerance follows the output's scale (seen: 5e-5 off at 0.66 on another CPU)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6 * float(np.abs(expected).max()))
    assert not np.allclose(out, first.numpy())


def test_model_proto_without_weights_says_so() -> None:
    with onnxport.enable_fake_mode():
        fake = Tiny().eval()
    program = onnxport.export(fake, (IDS,))
    with pytest.raises(onnxport.MissingWeightsError, match="ModelProto"):
        _ = program.model_proto
