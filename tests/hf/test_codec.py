"""Neural audio codecs (onnxport.hf.codec): DAC, EnCodec, Mimi and PocketTTS's audio tokenizer
export ``encoder_model`` (``input_values`` → ``audio_codes`` / ``latents``) and ``decoder_model``
(codes → ``audio_values``), the sessions transformers.js's DacModel / MimiModel run, dynamic in batch
and length; both graphs match eager ``encode`` / ``decode`` at a batch and a length (not a multiple of
the hop length) other than the export's."""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.errors
import onnxport.hf
from onnxport.hf.codec import hop_length
from onnxport.hf.layout import usage_lines
from onnxport.testing import tiny_models

transformers = pytest.importorskip("transformers")

FIELDS = {"dac": "audio_codes", "encodec": "audio_codes", "mimi": "audio_codes", "pocket-tts-tokenizer": "latents"}


@pytest.mark.parametrize("name", [e.name for e in tiny_models.CODECS])
def test_codec_exports_encoder_and_decoder_models(name: str, tmp_path: pathlib.Path) -> None:
    model = tiny_models.build(name)
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert result.passed
    field = FIELDS[name]
    encoder = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "encoder_model.onnx"))
    decoder = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "decoder_model.onnx"))
    assert [(i.name, i.shape) for i in encoder.get_inputs()] == [("input_values", ["batch_size", 1, "sequence_length"])]
    assert [o.name for o in encoder.get_outputs()] == [field]
    assert [i.name for i in decoder.get_inputs()] == [field] and "codes_length" in decoder.get_inputs()[0].shape
    assert [o.name for o in decoder.get_outputs()] == ["audio_values"]
    usage = "\n".join(usage_lines(tmp_path / "out", "feature-extraction", "hub", genai=False))
    assert "encoder_model.onnx" in usage and "decoder_model.onnx" in usage
    assert "AutoModel.from_pretrained('out'" in usage and "model.decode(codes)" in usage and "pipeline(" not in usage

    samples = 7 * hop_length(model.config) + 3  # a part frame: the codecs pad it
    waveform = torch.randn(3, 1, samples, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        encoded = model.encode(waveform)
        codes = encoded[field]
        decoded = model.decode(codes, [None]) if name == "encodec" else model.decode(**{field: codes})
    (actual_codes,) = encoder.run(None, {"input_values": waveform.numpy()})
    assert actual_codes.dtype == codes.numpy().dtype and actual_codes.shape == tuple(codes.shape)
    if codes.dtype.is_floating_point:
        np.testing.assert_allclose(actual_codes, codes.numpy(), rtol=1e-4, atol=1e-4)
    else:  # code indices: the nearest codebook entry, equal unless two are within rounding
        assert (actual_codes == codes.numpy()).mean() > 0.99
    (audio,) = decoder.run(None, {field: codes.numpy()})
    assert audio.shape == tuple(decoded.audio_values.shape) and audio.shape[0] == 3  # DAC: (batch, samples)
    assert audio.shape[-1] >= 7 * hop_length(model.config)
    np.testing.assert_allclose(audio, decoded.audio_values.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["encodec", "mimi"])
def test_codec_streamed_from_the_checkpoint(name: str, tmp_path: pathlib.Path) -> None:
    """The streamed path (meta-device model, the probes on fake tensors: the codecs' pads from
    tensor buffers and EnCodec's LSTM on meta parameters) writes the same two graphs, validated."""
    model = tiny_models.build(name)
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out", stream=True)
    assert result.passed and result.streamed is not None
    assert {c.component for c in result.checks} == {"encoder_model", "codes_decoder"}
    assert sorted(p.name for p in (tmp_path / "out" / "onnx").glob("*.onnx")) == ["decoder_model.onnx", "encoder_model.onnx"]


def test_codec_encoder_saved_alone_gives_its_latents(tmp_path: pathlib.Path) -> None:
    """A codec's encoder as its own model (``MimiEncoderModel``: no encode/decode, its output has no
    last_hidden_state): feature-extraction reads the ``(batch_size, channels, sequence_length)``
    waveform and gives ``latents``, dynamic in batch and length."""
    mimi = tiny_models.build("mimi").config
    fields = transformers.MimiEncoderConfig().to_dict()
    config = transformers.MimiEncoderConfig(**{k: v for k, v in mimi.to_dict().items() if k in fields and k != "model_type"})
    torch.manual_seed(0)
    model = transformers.MimiEncoderModel(config).eval()
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert result.task == "feature-extraction" and result.passed
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    assert [(i.name, i.shape) for i in session.get_inputs()] == [("input_values", ["batch_size", 1, "sequence_length"])]
    waveform = torch.randn(2, 1, 5 * hop_length(config) + 7, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = model(input_values=waveform).latents.numpy()
    (actual,) = session.run(None, {"input_values": waveform.numpy()})
    assert [o.name for o in session.get_outputs()] == ["latents"] and actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def test_normalizing_encodec_is_an_hf_error_and_writes_nothing(tmp_path: pathlib.Path) -> None:
    """EnCodec with ``normalize`` (the 48 kHz model) decodes with the encoder's per-chunk scales,
    which the two graphs do not carry: an HFError naming it, no output folder."""
    tiny_models.build("encodec", normalize=True).save_pretrained(tmp_path / "src")
    with pytest.raises(onnxport.errors.HFError, match="normalizes its audio"):
        onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
