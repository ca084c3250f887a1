"""audio-text-to-text (onnxport.hf.audio_language): a Voxtral-style model as transformers.js' three
graphs (audio_encoder, embed_tokens, decoder_model_merged), each validated against eager, and
greedy generation through them equal to transformers' generate with the audio."""

from __future__ import annotations

import pathlib

import onnxruntime as ort
import pytest
import torch
import transformers

import onnxport.hf as ohf
from onnxport.errors import HFError
from onnxport.hf.generate import greedy_audio_text
from onnxport.hf.layout import usage_lines
from onnxport.testing import tiny_models

AUDIO = tiny_models.VOXTRAL_AUDIO_TOKEN


def test_voxtral_three_graphs_generate_like_transformers(tmp_path: pathlib.Path) -> None:
    model = tiny_models.build("voxtral")
    result = ohf.export(model, output_dir=tmp_path / "out")
    assert result.task == "audio-text-to-text" and result.passed
    assert {str(f) for f in result.files} >= {"onnx/audio_encoder.onnx", "onnx/embed_tokens.onnx",
                                               "onnx/decoder_model_merged.onnx", "config.json"}
    audio = result.programs["audio_encoder"].model.graph
    assert [(v.name, [str(d) for d in v.shape]) for v in audio.inputs] == [("audio_values", ["num_chunks", "16", "100"])]
    assert [v.name for v in audio.outputs] == ["audio_features"]
    folder = result.output_dir / "onnx"
    sessions = [ort.InferenceSession(str(folder / f"{name}.onnx"), providers=["CPUExecutionProvider"])
                for name in ("audio_encoder", "embed_tokens", "decoder_model_merged")]
    g = torch.Generator().manual_seed(3)
    features = torch.randn(3, 16, 100, generator=g)  # row 0: two chunks, row 1: one
    text = torch.randint(3, 280, (2, 4), generator=g)
    rows = [torch.cat([text[0, :2], torch.full((50,), AUDIO), text[0, 2:]]),
            torch.cat([torch.zeros(25, dtype=torch.int64), text[1, :2], torch.full((25,), AUDIO), text[1, 2:]])]
    input_ids = torch.stack(rows)
    attention_mask = (torch.arange(input_ids.shape[1]) >= torch.tensor([[0], [25]])).long()
    (out,) = sessions[0].run(None, {"audio_values": features.numpy()})
    assert out.shape == (75, 64)  # 25 tokens a chunk
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, input_features=features,
                          max_new_tokens=12, do_sample=False, pad_token_id=0)
    got = greedy_audio_text(sessions, input_ids, attention_mask, features, AUDIO, 12, eos_token_id=1, pad_token_id=0)
    assert got.tolist() == want.tolist()
    assert len(set(got[0, input_ids.shape[1]:].tolist())) >= 3  # not a degenerate repetition
    node = usage_lines(result.output_dir, result.task, "hub", False)[-1]  # transformers.js has no pipeline for it
    assert "AutoModelForAudioTextToText.from_pretrained('out'" in node and "pipeline(" not in node


def test_audio_language_model_without_audio_features_is_refused_by_name() -> None:
    # Qwen2-Audio: listed as a seq2seq LM but decoder-only; its audio merge is its own (no
    # get_audio_features), so it gets onnxport's error before any export, not a seq2seq probe's
    audio = {"d_model": 32, "encoder_layers": 1, "encoder_attention_heads": 4, "encoder_ffn_dim": 64, "num_mel_bins": 16,
             "max_source_positions": 50}
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 300, "model_type": "qwen2"}
    config = transformers.Qwen2AudioConfig(audio_config=audio, text_config=text, audio_token_index=290)
    model = transformers.Qwen2AudioForConditionalGeneration(config).eval()
    with pytest.raises(HFError, match="no get_audio_features"):
        ohf.export(model)
