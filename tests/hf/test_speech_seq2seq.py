"""Speech encoder-decoders over a spectrogram of any length with its mask (Speech2Text, Canary):
the encoder takes ``input_features`` and ``attention_mask`` with dynamic frames, as Optimum's
Speech2Text config; before, onnxport exported only Whisper's fixed 30 s spectrogram and refused
these ("its encoder takes a variable-length input with a mask")."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf

transformers = pytest.importorskip("transformers")


def _speech2text() -> Any:
    return transformers.Speech2TextForConditionalGeneration(transformers.Speech2TextConfig(
        vocab_size=99, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, conv_channels=16,
        input_feat_per_channel=12, max_source_positions=64, max_target_positions=64,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
    ))  # fmt: skip


def _canary() -> Any:
    encoder = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
               "subsampling_conv_channels": 8, "num_mel_bins": 16, "conv_kernel_size": 3}
    decoder = {"vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 4, "intermediate_size": 37, "head_dim": 8, "max_position_embeddings": 64}
    config = transformers.CanaryConfig(encoder_config=encoder, decoder_config=decoder, vocab_size=99)
    return transformers.CanaryForConditionalGeneration(config)


# model, features per frame, frames first
MODELS = {"speech2text": (_speech2text, 12), "canary": (_canary, 16)}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_spectrogram_of_any_length_with_its_mask(name: str, tmp_path: pathlib.Path) -> None:
    build, features = MODELS[name]
    torch.manual_seed(0)
    model = build().eval()
    model.save_pretrained(tmp_path / "ckpt")
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out")
    assert result.task == "automatic-speech-recognition" and result.passed
    assert all(c.max_abs_diff < 1e-4 and c.shape_ok for c in result.checks)
    encoder = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "encoder_model.onnx"))
    assert [(i.name, i.shape) for i in encoder.get_inputs()] == [
        ("input_features", ["batch_size", "encoder_sequence_length", features]),
        ("attention_mask", ["batch_size", "encoder_sequence_length"]),
    ]
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 121, features, generator=g)
    mask = torch.ones(2, 121, dtype=torch.int64)
    mask[1, 90:] = 0  # the second row padded at the end
    (hidden,) = encoder.run(None, {"input_features": x.numpy(), "attention_mask": mask.numpy()})
    with torch.no_grad():
        expected = model.get_encoder()(input_features=x, attention_mask=mask).last_hidden_state
    assert hidden.shape == tuple(expected.shape) and hidden.shape[1] < 121  # subsampled frames
    np.testing.assert_allclose(hidden, expected.numpy(), rtol=1e-4, atol=1e-5)
