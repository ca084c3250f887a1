"""Greedy decoding through onnxruntime with the exported cache models equals ``model.generate``.

Decoder-only models: 20 new tokens, batch 2 with row 0 left-padded. Encoder-decoders: 10 tokens,
batch 2 (encoder input of row 0 left-padded for text models).
"""

from __future__ import annotations

from pathlib import Path

import onnxruntime as ort
import pytest
import torch
from typer.testing import CliRunner

import onnxport.hf
from onnxport.cli import app

from .zoo import BY_NAME, save

pytest.importorskip("transformers")

FAST_DECODERS = ["llama"]
SLOW_DECODERS = ["gpt2", "mistral", "qwen2", "qwen3", "opt"]
FAST_SEQ2SEQ = ["bart", "moonshine"]
SLOW_SEQ2SEQ = ["t5", "whisper"]


def _params(fast: list[str], slow: list[str]) -> list:
    return [*fast, *(pytest.param(n, marks=pytest.mark.slow) for n in slow)]


def _export(name: str, tmp_path: Path, cli: bool = False) -> tuple[torch.nn.Module, Path]:
    """In memory (``onnxport.hf.export``), or through ``onnxport export --hf`` (``cli``), which
    streams the saved safetensors weights from a meta-device model."""
    entry = BY_NAME[name]
    folder = save(entry, tmp_path)
    if cli:
        result = CliRunner().invoke(app, ["export", "--hf", str(folder), "-o", str(tmp_path / "onnx")])
        assert result.exit_code == 0, result.output
        assert "streamed from the checkpoint" in result.output
        return type(entry.build()).from_pretrained(folder).eval(), tmp_path / "onnx"
    exported = onnxport.hf.export(folder, output_dir=tmp_path / "onnx")
    assert exported.task == entry.task
    assert exported.passed
    return exported.model, tmp_path / "onnx"


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", _params(FAST_DECODERS, SLOW_DECODERS))
def test_decoder_greedy_20_tokens_batch2_left_padding(name: str, tmp_path: Path) -> None:
    model, out = _export(name, tmp_path)
    session = _session(out / "onnx" / "model.onnx")
    names = [i.name for i in session.get_inputs()]
    assert names[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert names[3:5] == ["past_key_values.0.key", "past_key_values.0.value"]
    assert [o.name for o in session.get_outputs()][:3] == [
        "logits",
        "present.0.key",
        "present.0.value",
    ]

    generator = torch.Generator().manual_seed(7)
    ids = torch.randint(3, 99, (2, 7), generator=generator)
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[0, :3] = 0
    ids[0, :3] = model.generation_config.pad_token_id
    config = model.generation_config
    with torch.no_grad():
        expected = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=20, do_sample=False, min_new_tokens=0
        )
    actual = onnxport.hf.greedy_causal_lm(
        session, ids, mask, 20, eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id
    )
    assert actual.shape[1] == 7 + 20 or (actual[:, -1] == config.pad_token_id).any()
    assert actual.tolist() == expected.tolist()
    assert len(set(actual[:, 7:].flatten().tolist())) > 3, "degenerate decoding proves little"
    assert len(set(actual[:, 1:].flatten().tolist())) > 2, "degenerate decoding proves little"


@pytest.mark.parametrize("cli", [False, pytest.param(True, id="cli-streamed")])
@pytest.mark.parametrize("name", _params(FAST_SEQ2SEQ, SLOW_SEQ2SEQ))
def test_seq2seq_greedy_10_tokens(name: str, cli: bool, tmp_path: Path) -> None:
    model, out = _export(name, tmp_path, cli)
    encoder = _session(out / "onnx" / "encoder_model.onnx")
    decoder = _session(out / "onnx" / "decoder_model_merged.onnx")
    inputs = [i.name for i in decoder.get_inputs()]
    assert "past_key_values.0.decoder.key" in inputs
    # Optimum's merged decoder: the cross-attention cache computed on the first step, fed back after
    assert inputs[-3:] == ["past_key_values.1.encoder.key", "past_key_values.1.encoder.value", "use_cache_branch"]
    assert "present.1.decoder.value" in [o.name for o in decoder.get_outputs()]
    assert "present.1.encoder.value" in [o.name for o in decoder.get_outputs()]

    generator = torch.Generator().manual_seed(7)
    config = model.generation_config
    if name == "whisper":
        inputs = {"input_features": torch.randn(2, 16, 32, generator=generator)}
    elif name == "moonshine":  # a waveform of a length the export did not see
        inputs = {"input_values": torch.randn(2, 9001, generator=generator)}
    else:
        ids = torch.randint(3, 99, (2, 9), generator=generator)
        mask = torch.ones(2, 9, dtype=torch.int64)
        mask[0, :3] = 0
        inputs = {"input_ids": ids, "attention_mask": mask}
    start = model.config.decoder_start_token_id
    if name in ("whisper", "moonshine"):
        # Whisper's generate adds its task/language prompt logic (Moonshine's caps the length by
        # the audio's); the reference is plain greedy decoding in eager PyTorch without cache
        # (the whole sequence recomputed at each step).
        expected = torch.full((2, 1), start)
        with torch.no_grad():
            for _ in range(10):
                logits = model(**inputs, decoder_input_ids=expected).logits
                expected = torch.cat([expected, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    else:
        with torch.no_grad():
            expected = model.generate(
                **inputs, max_new_tokens=10, do_sample=False, min_new_tokens=0
            )
    actual = onnxport.hf.greedy_seq2seq(
        encoder,
        decoder,
        inputs,
        start,
        10,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
    )
    assert actual.tolist() == expected.tolist()
    assert len(set(actual[:, 1:].flatten().tolist())) > 2, "degenerate decoding proves little"
