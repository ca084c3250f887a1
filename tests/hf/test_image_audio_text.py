"""image-text-to-text for models with per-layer embeddings (onnxport.hf.image_audio_text: Gemma 4)
as transformers.js' four ImageAudioTextToText graphs, each validated against eager, and greedy
generation through them from images, audio and text alone equal to transformers' generate."""

from __future__ import annotations

import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch
import transformers

import onnxport.hf as ohf
from onnxport.errors import HFError
from onnxport.hf.generate import greedy_image_audio_text
from onnxport.hf.image_audio_text import audio_inputs, patch_inputs
from onnxport.hf.parts import Sizes
from onnxport.testing import tiny_models

GRAPHS = ("vision_encoder", "audio_encoder", "embed_tokens", "decoder_model_merged")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[transformers.PreTrainedModel, ohf.HFExport]:
    model = tiny_models.build("gemma4")
    return model, ohf.export(model, output_dir=tmp_path_factory.mktemp("gemma4") / "out")


def _sessions(out: pathlib.Path) -> dict[str, ort.InferenceSession]:
    return {name: ort.InferenceSession(str(out / "onnx" / f"{name}.onnx"), providers=["CPUExecutionProvider"])
            for name in GRAPHS}


def _signature(graph: object) -> list[tuple[str, str, list[str]]]:
    values = [*graph.inputs, *graph.outputs]  # type: ignore[attr-defined]
    return [(v.name, str(v.dtype), [str(d) for d in v.shape]) for v in values]


def test_four_graphs_in_the_transformers_js_layout(exported: tuple) -> None:
    _, result = exported
    assert result.task == "image-text-to-text" and result.passed
    assert {str(f) for f in result.files} >= {f"onnx/{name}.onnx" for name in GRAPHS} | {"config.json"}
    assert {c.component for c in result.checks} == {"vision_encoder", "audio_encoder", "embed_tokens", "decoder_model"}
    assert _signature(result.programs["vision_encoder"].model.graph) == [
        ("pixel_values", "FLOAT", ["num_images", "4*num_soft_tokens", "48"]),
        ("pixel_position_ids", "INT64", ["num_images", "4*num_soft_tokens", "2"]),
        ("image_features", "FLOAT", [str(result.programs["vision_encoder"].model.graph.outputs[0].shape[0]), "64"]),
    ]
    audio = _signature(result.programs["audio_encoder"].model.graph)
    assert audio[:2] == [("input_features", "FLOAT", ["num_audios", "num_frames", "8"]),
                         ("input_features_mask", "BOOL", ["num_audios", "num_frames"])]
    assert audio[2][0] == "audio_features" and audio[2][2][1] == "64"
    assert _signature(result.programs["embed_tokens"].model.graph) == [
        ("input_ids", "INT64", ["batch_size", "sequence_length"]),
        ("inputs_embeds", "FLOAT", ["batch_size", "sequence_length", "64"]),
        ("per_layer_inputs", "FLOAT", ["batch_size", "sequence_length", "4", "8"]),
    ]
    decoder = {name: (dtype, dims) for name, dtype, dims in _signature(result.programs["decoder_model"].model.graph)}
    assert decoder["per_layer_inputs"] == ("FLOAT", ["batch_size", "sequence_length", "4", "8"])
    # the last 2 of 4 layers reuse earlier layers' key/values: a cache for 2, heads of 16 (sliding) and 32 (full)
    assert sorted(n for n in decoder if n.startswith("past_key_values.")) == [
        "past_key_values.0.key", "past_key_values.0.value", "past_key_values.1.key", "past_key_values.1.value"]
    assert decoder["past_key_values.0.key"][1] == ["batch_size", "2", "past_sequence_length", "16"]
    assert decoder["present.1.value"][1] == ["batch_size", "2", "total_sequence_length", "32"]


@pytest.mark.parametrize("frames", [1, 5, 16, 17, 50])
def test_audio_of_any_length_equals_eager(exported: tuple, frames: int) -> None:
    """The audio graph pads to whole attention blocks plus one (16 frames here); audios shorter than
    one block, exactly one, and longer give eager's features (the tower's own masked rows dropped)."""
    model, result = exported
    session = ort.InferenceSession(str(result.output_dir / "onnx" / "audio_encoder.onnx"), providers=["CPUExecutionProvider"])
    features = torch.randn(1, frames, 8, generator=torch.Generator().manual_seed(frames))
    mask = torch.ones(1, frames, dtype=torch.bool)
    (actual,) = session.run(None, {"input_features": features.numpy(), "input_features_mask": mask.numpy()})
    with torch.no_grad():
        out = model.model.audio_tower(features, mask)
        expected = model.model.embed_audio(inputs_embeds=out.last_hidden_state)[out.attention_mask]
    assert actual.shape == tuple(expected.shape) and actual.shape[0] >= 1
    np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-4, atol=1e-5)


def test_generation_from_images_and_audio_equals_transformers(exported: tuple) -> None:
    model, result = exported
    sessions = _sessions(result.output_dir)
    images = patch_inputs(Sizes(seed=5), 48, 2)  # 3 images of 2x2, 4x4 and 6x2 patches: 11 tokens
    audio = audio_inputs(Sizes(seed=2), 8, 16)  # 2 audios, the second one's end padding: 30 tokens
    g = torch.Generator().manual_seed(3)
    text = torch.randint(3, 280, (2, 5), generator=g)
    rows = [torch.cat([text[0, :2], torch.full((11,), tiny_models.GEMMA4_IMAGE_TOKEN), text[0, 2:]]),
            torch.cat([text[1, :2], torch.full((30,), tiny_models.GEMMA4_AUDIO_TOKEN), text[1, 2:]])]
    length = max(len(r) for r in rows)
    input_ids = torch.zeros(2, length, dtype=torch.int64)
    attention_mask = torch.zeros(2, length, dtype=torch.int64)
    for i, row in enumerate(rows):  # left-padded
        input_ids[i, length - len(row):] = row
        attention_mask[i, length - len(row):] = 1
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, pixel_values=images["pixel_values"],
                          image_position_ids=images["pixel_position_ids"], input_features=audio["input_features"],
                          input_features_mask=audio["input_features_mask"], max_new_tokens=12, do_sample=False,
                          pad_token_id=0)
    got = greedy_image_audio_text(sessions, input_ids, attention_mask, 12, images=images, audio=audio,
                                  image_token_id=tiny_models.GEMMA4_IMAGE_TOKEN,
                                  audio_token_id=tiny_models.GEMMA4_AUDIO_TOKEN, pad_token_id=0,
                                  eos_token_id=model.generation_config.eos_token_id)
    assert got.tolist() == want.tolist()
    assert all(len(set(row[length:].tolist())) >= 3 for row in got)  # not a degenerate repetition


def test_text_only_generation_equals_transformers(exported: tuple) -> None:
    # transformers.js' text-generation of a Gemma 4 folder runs embed_tokens + decoder_model_merged
    model, result = exported
    sessions = _sessions(result.output_dir)
    input_ids = torch.randint(3, 280, (2, 6), generator=torch.Generator().manual_seed(4))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, :2] = 0
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=12, do_sample=False,
                          pad_token_id=0)
    got = greedy_image_audio_text(sessions, input_ids, attention_mask, 12, pad_token_id=0,
                                  eos_token_id=model.generation_config.eos_token_id)
    assert got.tolist() == want.tolist()


def test_image_tokens_attending_both_ways_are_refused() -> None:
    model = tiny_models.build("gemma4")
    model.config.text_config.use_bidirectional_attention = "vision"
    with pytest.raises(HFError, match="mm_token_type_ids"):
        ohf.export(model)


@pytest.mark.slow  # a 6-layer Gemma 4 exported streamed, then its slice exported and validated (~60 s)
def test_a_checkpoint_too_large_for_memory_is_validated_on_a_slice(tmp_path: pathlib.Path) -> None:
    """Above ``memory_fraction`` the four graphs are checked on a 2-layer slice of each stack: the
    per-layer embedding tables cut to the slice's layers (``hf/checkpoint.sliced``), the KV-shared
    layers (the last 2 of 6) outside it."""
    config = tiny_models.BY_NAME["gemma4"].build().config.to_dict()
    config["text_config"].pop("per_layer_config", None)  # rebuilt for 6 layers
    config["text_config"].update(num_hidden_layers=6, layer_types=["sliding_attention", "full_attention"] * 3)
    config["vision_config"]["num_hidden_layers"] = config["audio_config"]["num_hidden_layers"] = 3
    torch.manual_seed(0)
    transformers.Gemma4ForConditionalGeneration(transformers.Gemma4Config.from_dict(config)).eval().save_pretrained(tmp_path / "ckpt")
    result = ohf.export(tmp_path / "ckpt", output_dir=tmp_path / "out", stream=True, memory_fraction=0.0)
    assert result.passed and result.streamed is not None
    assert result.streamed.validation == (
        "slice (2 of 6 text_config layers, 2 of 3 vision_config layers, 2 of 3 audio_config layers)")
    graphs = ("vision_encoder", "audio_encoder", "embed_tokens", "decoder_model")
    assert {c.component for c in result.checks} == {f"{g} (slice)" for g in graphs}
