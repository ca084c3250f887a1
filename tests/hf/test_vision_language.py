"""image-text-to-text (onnxport.hf.vision_language): a LLaVA-style model as transformers.js'
three graphs (vision_encoder, embed_tokens, decoder_model_merged), each validated against eager,
and greedy generation through them equal to transformers' generate with the image."""

from __future__ import annotations

import onnxruntime as ort
import pytest
import torch
import transformers

import onnxport.hf as ohf
from onnxport.errors import HFError
from onnxport.hf.generate import greedy_image_text
from onnxport.testing import tiny_models

IMAGE_TOKEN = tiny_models.LLAVA_IMAGE_TOKEN


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[transformers.PreTrainedModel, ohf.HFExport]:
    model = tiny_models.build("llava")
    return model, ohf.export(model, output_dir=tmp_path_factory.mktemp("llava") / "out")


def test_three_graphs_in_the_transformers_js_layout(exported: tuple) -> None:
    model, result = exported
    assert result.task == "image-text-to-text" and result.passed
    assert {str(f) for f in result.files} >= {"onnx/vision_encoder.onnx", "onnx/embed_tokens.onnx",
                                               "onnx/decoder_model_merged.onnx", "config.json"}
    vision = result.programs["vision_encoder"].model.graph
    assert [v.name for v in vision.inputs] == ["pixel_values"] and [v.name for v in vision.outputs] == ["image_features"]
    assert [str(d) for d in vision.outputs[0].shape] == ["batch_size", "16", "64"]  # (32 / 8)² tokens per image
    decoder = result.programs["decoder_model"].model.graph
    assert [v.name for v in decoder.inputs][:3] == ["inputs_embeds", "attention_mask", "position_ids"]
    assert [str(d) for d in decoder.inputs[0].shape] == ["batch_size", "sequence_length", "64"]
    components = {c.component for c in result.checks}
    assert components == {"vision_encoder", "embed_tokens", "decoder_model"} and all(c.passed for c in result.checks)


def test_greedy_generation_with_an_image_equals_transformers(exported: tuple) -> None:
    model, result = exported
    folder = result.output_dir / "onnx"
    sessions = [ort.InferenceSession(str(folder / f"{name}.onnx"), providers=["CPUExecutionProvider"])
                for name in ("vision_encoder", "embed_tokens", "decoder_model_merged")]
    g = torch.Generator().manual_seed(3)
    pixel_values = torch.randn(2, 3, 32, 32, generator=g)
    text = torch.randint(0, 99, (2, 5), generator=g)
    input_ids = torch.cat([text[:, :2], torch.full((2, 16), IMAGE_TOKEN), text[:, 2:]], dim=1)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, :2] = 0  # the second row left-padded
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixel_values,
                          max_new_tokens=12, do_sample=False, pad_token_id=0)
    got = greedy_image_text(sessions, input_ids, attention_mask, pixel_values, IMAGE_TOKEN, 12, pad_token_id=0)
    assert got.tolist() == want.tolist()
    assert len(set(got[0, input_ids.shape[1]:].tolist())) >= 3  # not a degenerate repetition


def test_models_needing_more_than_pixel_values_are_refused() -> None:
    text = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=1, num_attention_heads=4,
                                    vocab_size=120)
    vision = transformers.CLIPVisionConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                                           num_attention_heads=4, image_size=32, patch_size=8)
    config = transformers.LlavaNextConfig(vision_config=vision, text_config=text, image_token_index=IMAGE_TOKEN,
                                          image_grid_pinpoints=[[32, 32]])
    model = transformers.LlavaNextForConditionalGeneration(config).eval()
    with pytest.raises(HFError, match="image_sizes"):
        ohf.export(model, "image-text-to-text")
