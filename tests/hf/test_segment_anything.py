"""mask-generation: Segment Anything as Optimum's split export and transformers.js' ``SamModel``
sessions (``vision_encoder``, ``prompt_encoder_mask_decoder``), against eager ``SamModel``."""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf
from onnxport.errors import HFError
from onnxport.testing import tiny_models

transformers = pytest.importorskip("transformers")


def test_sam_exports_encoder_and_prompt_decoder_like_eager(tmp_path: pathlib.Path) -> None:
    model = tiny_models.build("sam")
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert result.task == "mask-generation" and result.passed
    onnx = tmp_path / "out" / "onnx"
    encoder = ort.InferenceSession(str(onnx / "vision_encoder.onnx"))
    decoder = ort.InferenceSession(str(onnx / "prompt_encoder_mask_decoder.onnx"))
    assert [(i.name, i.shape) for i in encoder.get_inputs()] == [("pixel_values", ["batch_size", 3, 64, 64])]
    assert [(o.name, o.shape) for o in encoder.get_outputs()] == [
        ("image_embeddings", ["batch_size", 16, 8, 8]), ("image_positional_embeddings", ["batch_size", 16, 8, 8])]  # fmt: skip
    assert [(i.name, i.shape, i.type) for i in decoder.get_inputs()][2:] == [
        ("input_points", ["batch_size", "point_batch_size", "nb_points_per_image", 2], "tensor(float)"),
        ("input_labels", ["batch_size", "point_batch_size", "nb_points_per_image"], "tensor(int64)"),
    ]  # fmt: skip

    # One image encoded once, then two prompt sets of other sizes than the export's (2 images,
    # 8 prompts of 3 points): 5 prompts of 2 points with a padding point, then 1 prompt of 1 point.
    gen = torch.Generator().manual_seed(7)
    pixels = torch.randn(1, 3, 64, 64, generator=gen)
    embeddings, positions = encoder.run(None, {"pixel_values": pixels.numpy()})
    for points, labels in (
        (torch.rand(1, 5, 2, 2, generator=gen) * 64, torch.tensor([[[1, 0], [1, -10], [0, 1], [1, 1], [-1, 1]]])),
        (torch.tensor([[[[20.0, 41.5]]]]), torch.tensor([[[1]]])),
    ):
        with torch.no_grad():
            expected = model(pixel_values=pixels, input_points=points, input_labels=labels)
        scores, masks = decoder.run(None, {"image_embeddings": embeddings, "image_positional_embeddings": positions,
                                           "input_points": points.numpy(), "input_labels": labels.numpy()})  # fmt: skip
        assert scores.shape == (1, points.shape[1], 3) and masks.shape == (1, points.shape[1], 3, 32, 32)
        assert np.abs(masks).max() > 0.01  # real mask logits, not SAM's near-zero initialization
        np.testing.assert_allclose(scores, expected.iou_scores.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(masks, expected.pred_masks.numpy(), rtol=1e-4, atol=1e-5)


def test_other_mask_generation_models_are_refused(tmp_path: pathlib.Path) -> None:
    vision = transformers.Sam2HieraDetConfig(hidden_size=8, num_attention_heads=1, blocks_per_stage=[1, 1, 1, 1],
                                             embed_dim_per_stage=[8, 16, 32, 64], num_attention_heads_per_stage=[1, 1, 1, 1])  # fmt: skip
    config = transformers.Sam2Config(vision_config=transformers.Sam2VisionConfig(backbone_config=vision))
    with pytest.raises(HFError, match="mask-generation exports Segment Anything.*Sam2Model.*onnxport.export"):
        onnxport.hf.export(transformers.Sam2Model(config).eval(), output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
