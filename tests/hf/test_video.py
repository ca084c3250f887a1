"""Video models (hf/video.py): a clip ``[batch_size, num_frames, num_channels, height, width]`` →
``logits`` (video-classification) or ``last_hidden_state`` (a base model's feature-extraction);
onnxruntime's outputs on a new clip equal eager's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf

transformers = pytest.importorskip("transformers")

SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128,
         "image_size": 32, "patch_size": 8, "num_frames": 4}
MODELS: dict[str, Any] = {
    "videomae": lambda: transformers.VideoMAEForVideoClassification(
        transformers.VideoMAEConfig(**SMALL, tubelet_size=2, num_labels=5)),
    "timesformer": lambda: transformers.TimesformerForVideoClassification(
        transformers.TimesformerConfig(**SMALL, num_labels=5)),
    "vivit": lambda: transformers.VivitForVideoClassification(
        transformers.VivitConfig(**SMALL, tubelet_size=[2, 8, 8], num_labels=5)),
    "videomae-base": lambda: transformers.VideoMAEModel(transformers.VideoMAEConfig(**SMALL, tubelet_size=2)),
    "vjepa2": lambda: transformers.VJEPA2ForVideoClassification(transformers.VJEPA2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, crop_size=32, patch_size=8, frames_per_clip=4,
        tubelet_size=2, pred_hidden_size=32, pred_num_hidden_layers=1, pred_num_attention_heads=2, num_labels=5)),
    "vjepa2-base": lambda: transformers.VJEPA2Model(transformers.VJEPA2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, crop_size=32, patch_size=8, frames_per_clip=4,
        tubelet_size=2, pred_hidden_size=32, pred_num_hidden_layers=1, pred_num_attention_heads=2)),
}  # fmt: skip
BASE_MODELS = ("videomae-base", "vjepa2-base")


@pytest.mark.parametrize("name", list(MODELS))
def test_clip_model_matches_eager(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    model.save_pretrained(tmp_path / "ckpt")
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out")
    assert result.passed
    base = name in BASE_MODELS
    output = "last_hidden_state" if base else "logits"
    assert result.task == ("feature-extraction" if base else "video-classification")
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    input_name = "pixel_values_videos" if name.startswith("vjepa2") else "pixel_values"
    assert [(i.name, i.shape) for i in session.get_inputs()] == [(input_name, ["batch_size", 4, 3, 32, 32])]
    assert [o.name for o in session.get_outputs()] == [output]
    clip = torch.randn(3, 4, 3, 32, 32, generator=torch.Generator().manual_seed(5))
    (got,) = session.run(None, {input_name: clip.numpy()})
    extra = {"skip_predictor": True} if name == "vjepa2-base" else {}
    with torch.no_grad():
        want = model(**{input_name: clip}, **extra)[output].numpy()
    assert got.shape == want.shape == ((3, 32, 64) if base else (3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert float(np.abs(want).max()) > 1e-3  # not a vanishing output
