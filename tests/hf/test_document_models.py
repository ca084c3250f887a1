"""Document models take each token's box (and LayoutLMv3 the page image), as Optimum's LayoutLM,
LayoutLMv3 and LiLT configs export them; the graphs left ``bbox`` out (the layout was read as all
zeros) before. Against eager on boxes and pages the export did not see."""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf

transformers = pytest.importorskip("transformers")

TEXT = {"vocab_size": 99, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37, "num_labels": 3}
MODELS = {
    "layoutlm": ("LayoutLMConfig", "LayoutLMForTokenClassification", {"hidden_size": 32}),
    "layoutlmv3": ("LayoutLMv3Config", "LayoutLMv3ForTokenClassification",
                   {"hidden_size": 36, "coordinate_size": 6, "shape_size": 6, "input_size": 32, "patch_size": 8}),
    "lilt": ("LiltConfig", "LiltForTokenClassification", {"hidden_size": 48, "channel_shrink_ratio": 4}),
    "bros": ("BrosConfig", "BrosForTokenClassification", {"hidden_size": 64}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(MODELS))
def test_document_token_classifier_reads_boxes(name: str, tmp_path: pathlib.Path) -> None:
    config_class, model_class, sizes = MODELS[name]
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**TEXT, **sizes)).eval()
    with torch.no_grad():  # weights large enough that the layout moves the logits (the default std is 0.02)
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.2)
    model.save_pretrained(tmp_path / "src")
    assert onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out").passed
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    inputs = {i.name: i for i in session.get_inputs()}
    assert inputs["bbox"].shape == ["batch_size", "sequence_length", 4]
    assert ("pixel_values" in inputs) == (name == "layoutlmv3")

    gen = torch.Generator().manual_seed(4)
    ids = torch.randint(3, 99, (2, 11), generator=gen)
    corner = torch.randint(0, 700, (2, 11, 2), generator=gen)
    boxes = torch.cat([corner, corner + torch.randint(1, 300, (2, 11, 2), generator=gen)], -1)
    feeds = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids),
             "bbox": boxes.float() / 1000 if name == "bros" else boxes,
             "pixel_values": torch.randn(2, 3, 32, 32, generator=gen)}  # fmt: skip
    feeds = {k: v for k, v in feeds.items() if k in inputs}
    with torch.no_grad():
        expected = model(**feeds).logits.numpy()
        zeros = model(**{**feeds, "bbox": torch.zeros_like(feeds["bbox"])}).logits.numpy()
    assert np.abs(expected - zeros).max() > 5e-5  # the boxes change the logits, past the tolerance below (LiLT: 1e-4)
    actual = session.run(None, {k: v.numpy() for k, v in feeds.items()})[0]
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)
