"""Decoder sequence classifiers pool each row's last non-pad token, found from ``pad_token_id``;
transformers refuses batches of more than one row when the config has none. BART-style
classifiers pool each row's last ``<eos>``."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

VOCAB = 40


def _classifier(folder: pathlib.Path) -> torch.nn.Module:
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=37, num_labels=3, pad_token_id=None,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    return model


def _run(out: pathlib.Path, ids: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    session = ort.InferenceSession(str(out / "onnx" / "model.onnx"))
    return session.run(["logits"], {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]


def test_without_a_pad_token_the_last_position_is_pooled(tmp_path: pathlib.Path) -> None:
    model = _classifier(tmp_path / "ckpt")
    with pytest.warns(UserWarning, match="left-padded"):
        result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out")
    assert result.task == "text-classification" and result.passed
    ids = torch.randint(3, VOCAB, (3, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :2] = 0  # left padding
    got = _run(tmp_path / "out", ids, mask)
    with torch.no_grad():  # one row at a time, as transformers allows without a pad token
        want = torch.cat([model(ids[i : i + 1], attention_mask=mask[i : i + 1]).logits for i in range(3)])
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


def test_the_tokenizers_pad_token_is_used_for_right_padded_rows(tmp_path: pathlib.Path) -> None:
    model = _classifier(tmp_path / "ckpt")
    vocab = {f"w{i}": i for i in range(VOCAB)} | {"[PAD]": 1}
    del vocab["w1"]
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="w0"))
    tokenizer.save(str(tmp_path / "ckpt" / "tokenizer.json"))
    (tmp_path / "ckpt" / "tokenizer_config.json").write_text(json.dumps({"pad_token": "[PAD]"}))
    with pytest.warns(UserWarning, match=r"tokenizer's pad token \(id 1\)"):
        onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out", stream=True)
    ids = torch.randint(3, VOCAB, (2, 6), generator=torch.Generator().manual_seed(2))
    mask = torch.ones_like(ids)
    ids[0, 4:], mask[0, 4:] = 1, 0  # right padding with the pad token
    got = _run(tmp_path / "out", ids, mask)
    model.config.pad_token_id = 1
    with torch.no_grad():
        want = model(ids, attention_mask=mask).logits
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)
    model.config.pad_token_id = None
    with torch.no_grad():  # pooling the last position (the pad) would give other logits for row 0
        last = model(ids[:1], attention_mask=mask[:1]).logits[0]
    assert np.abs(got[0] - last.numpy()).max() > 1e-3


def test_bart_classifier_pools_the_last_eos(tmp_path: pathlib.Path) -> None:
    """BART's classifier selects ``hidden_states[input_ids == eos_token_id]``: example ids without
    an ``<eos>`` made the capture hold an empty selection, and onnxruntime refused the graph ("idx=-1
    must be within the inclusive range [0,-1]"), no file written. The example rows now end with
    one; the graph pools the last ``<eos>`` wherever the rows have them."""
    config = transformers.BartConfig(
        vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=64,
        num_labels=3, bos_token_id=0, pad_token_id=1, eos_token_id=2,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BartForSequenceClassification(config).eval()
    model.save_pretrained(tmp_path / "ckpt")
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out")
    assert result.task == "text-classification" and result.passed
    ids = torch.randint(3, VOCAB, (3, 9), generator=torch.Generator().manual_seed(1))
    ids[:, 8], ids[0, 3], ids[1, 0], ids[2, 6] = 2, 2, 2, 2  # two <eos> per row, the last not always last
    ids[2, 8] = 5
    ids[2, 7] = 2
    mask = torch.ones_like(ids)
    got = _run(tmp_path / "out", ids, mask)
    with torch.no_grad():
        want = model(ids, attention_mask=mask).logits
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)


def test_a_windowed_backbone_saved_without_a_processor_takes_whole_windows(tmp_path: pathlib.Path) -> None:
    """RF-DETR saved without preprocessor_config.json: its DINOv2 backbone is configured at 518 px
    (37 patches of 14), which its 4 x 4 windows do not divide, so no size ran ("shape '[s99, 4, 9,
    4, 9, -1]' is invalid"); the export takes the nearest side of whole windows (504 px, 36
    patches), keeps it, and matches eager."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model("rf_detr")
    backbone = config.backbone_config
    backbone.num_hidden_layers, backbone.hidden_size, backbone.num_attention_heads = 4, 64, 2
    backbone.out_indices, backbone.out_features = [1, 2, 3, 4], ["stage1", "stage2", "stage3", "stage4"]
    backbone.window_block_indexes = [0, 2]
    config.decoder_layers, config.d_model, config.decoder_ffn_dim, config.intermediate_size = 1, 64, 128, 128
    config.num_queries, config.group_detr = 30, 2
    config.decoder_self_attention_heads = config.decoder_cross_attention_heads = 2
    torch.manual_seed(0)
    model = transformers.AutoModelForObjectDetection.from_config(config).eval()
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert result.passed
    pixel_values = result.programs["model"].model.graph.inputs[0]
    assert [str(d) for d in pixel_values.shape] == ["batch_size", "3", "504", "504"]
    images = torch.randn(2, 3, 504, 504, generator=torch.Generator().manual_seed(1))
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    logits, boxes = session.run(["logits", "pred_boxes"], {"pixel_values": images.numpy()})
    with torch.no_grad():
        expected = model(pixel_values=images)
    np.testing.assert_allclose(logits, expected.logits.numpy(), atol=1e-5)
    np.testing.assert_allclose(boxes, expected.pred_boxes.numpy(), atol=1e-5)
