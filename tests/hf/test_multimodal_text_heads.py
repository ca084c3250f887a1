"""A text head over a multimodal config whose vocabulary is its ``text_config``'s (UltraVBERT's
token classifier: no top-level ``vocab_size``) exports; it was refused with "has no vocab_size"."""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf

transformers = pytest.importorskip("transformers")


def test_token_classifier_reads_the_text_configs_vocabulary(tmp_path: pathlib.Path) -> None:
    config = transformers.AutoConfig.for_model("ultravbert")
    text = {"vocab_size": 99, "hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "sliding_window": 4, "prediction_head_size": 16}  # fmt: skip
    for key, value in text.items():
        setattr(config.text_config, key, value)
    config.text_config.layer_types = config.text_config.layer_types[:2]
    config.num_labels = 3
    assert getattr(config, "vocab_size", None) is None
    torch.manual_seed(0)
    model = transformers.UltraVBertForTokenClassification(config).eval()
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert result.task == "token-classification" and result.passed
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    ids = torch.randint(3, 99, (2, 9), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).logits.numpy()
    feeds = {i.name: {"input_ids": ids, "attention_mask": mask}[i.name].numpy() for i in session.get_inputs()}
    actual = session.run(None, feeds)[0]
    assert actual.shape == (2, 9, 3)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)
