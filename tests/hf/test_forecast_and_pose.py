"""Optimum's time-series-forecasting (PatchTST, PatchTSMixer: in no transformers auto class, loaded
by their architecture) and keypoint-detection (ViTPose: sized by its backbone's image size) tasks
through ``onnxport.hf.export``, streamed from the checkpoint, against eager."""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf
from onnxport.testing import tiny_models

pytest.importorskip("transformers")


@pytest.mark.parametrize("name", ["patchtst", "patchtsmixer"])
def test_forecaster_exports_past_values_to_prediction_outputs(name: str, tmp_path: pathlib.Path) -> None:
    model = tiny_models.build(name)
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")  # task from PatchTSTForPrediction
    assert result.task == "time-series-forecasting" and result.passed
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    assert [(i.name, i.shape) for i in session.get_inputs()] == [("past_values", ["batch_size", 32, 3])]
    assert [(o.name, o.shape) for o in session.get_outputs()] == [("prediction_outputs", ["batch_size", 12, 3])]
    past = torch.randn(5, 32, 3, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        expected = model(past_values=past).prediction_outputs.numpy()
    (actual,) = session.run(None, {"past_values": past.numpy()})
    assert actual.shape == (5, 12, 3)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


def test_vitpose_exports_heatmaps_at_its_backbone_size(tmp_path: pathlib.Path) -> None:
    model = tiny_models.build("vitpose")
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert result.task == "keypoint-detection" and result.passed
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    assert [(i.name, i.shape) for i in session.get_inputs()] == [("pixel_values", ["batch_size", 3, 64, 48])]
    assert [o.name for o in session.get_outputs()] == ["heatmaps"]
    pixels = torch.randn(3, 3, 64, 48, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        expected = model(pixel_values=pixels).heatmaps.numpy()
    (actual,) = session.run(None, {"pixel_values": pixels.numpy()})
    assert actual.shape == (3, 5, 32, 24)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)
