"""image-text-to-text (onnxport.hf.vision_language): a LLaVA-style model as transformers.js'
three graphs (vision_encoder, embed_tokens, decoder_model_merged), each validated against eager,
and greedy generation through them equal to transformers' generate with the image."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import onnxruntime as ort
import pytest
import torch
import transformers
from transformers.vision_utils import get_vision_position_ids, get_vision_window_index

import onnxport.hf as ohf
from onnxport.errors import HFError
from onnxport.hf.generate import greedy_image_text, greedy_image_text_seq2seq, greedy_seq2seq
from onnxport.hf.multimodal_rope import grid_positions, window_order
from onnxport.hf.naflex import resized_positions
from onnxport.hf.vision_language import merge
from onnxport.testing import tiny_models

IMAGE_TOKEN = tiny_models.LLAVA_IMAGE_TOKEN


def _sessions(out: pathlib.Path, *names: str) -> list[ort.InferenceSession]:
    """onnxruntime sessions of the export folder ``out``'s graphs ``names``, in that order."""
    return [ort.InferenceSession(str(out / "onnx" / f"{name}.onnx"), providers=["CPUExecutionProvider"]) for name in names]


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
    _check_generation(model, result.output_dir, IMAGE_TOKEN, 16)


def test_gemma3_image_blocks_attend_both_ways(tmp_path: pathlib.Path) -> None:
    # Gemma 3: token_type_ids (1 at image tokens) make the image block bidirectional on the first step
    model = tiny_models.build("gemma3-vlm")
    result = ohf.export(model, output_dir=tmp_path / "out")
    decoder = result.programs["decoder_model"].model.graph
    assert [v.name for v in decoder.inputs][:3] == ["inputs_embeds", "token_type_ids", "attention_mask"]
    _check_generation(model, result.output_dir, tiny_models.GEMMA3_IMAGE_TOKEN, 4, types=True)


def test_image_splits_with_padding_images(tmp_path: pathlib.Path) -> None:
    # SmolVLM (Idefics3): several images per row with a pixel mask; the vision graph drops the
    # padding images (all zeros) by value, so rows with fewer images generate as in transformers
    model = tiny_models.build("smolvlm")
    result = ohf.export(model, output_dir=tmp_path / "out")
    assert result.passed
    vision = result.programs["vision_encoder"].model.graph
    assert [(v.name, str(v.dtype), [str(d) for d in v.shape]) for v in vision.inputs] == [
        ("pixel_values", "FLOAT", ["batch_size", "num_images", "3", "32", "32"]),
        ("pixel_attention_mask", "BOOL", ["batch_size", "num_images", "32", "32"]),
    ]
    sessions = _sessions(result.output_dir, "vision_encoder", "embed_tokens", "decoder_model_merged")
    g = torch.Generator().manual_seed(3)
    pixel_values = torch.randn(2, 3, 3, 32, 32, generator=g)
    pixel_attention_mask = torch.ones(2, 3, 32, 32, dtype=torch.bool)
    pixel_values[1, 1:] = 0.0  # the second row has one image, padded with two
    pixel_attention_mask[1, 1:] = False
    image = tiny_models.SMOLVLM_IMAGE_TOKEN
    text = torch.randint(0, 99, (2, 5), generator=g)
    rows = [torch.cat([text[0, :2], torch.full((12,), image), text[0, 2:]]),  # 3 images of 4 tokens
            torch.cat([torch.zeros(8, dtype=torch.int64), text[1, :2], torch.full((4,), image), text[1, 2:]])]
    input_ids = torch.stack(rows)
    attention_mask = (torch.arange(input_ids.shape[1]) >= torch.tensor([[0], [8]])).long()
    (features,) = sessions[0].run(None, {"pixel_values": pixel_values.numpy(),
                                         "pixel_attention_mask": pixel_attention_mask.numpy()})
    assert features.shape == (16, 64)  # 4 real images of 4 tokens
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixel_values,
                          pixel_attention_mask=pixel_attention_mask, max_new_tokens=12, do_sample=False, pad_token_id=0)
    got = greedy_image_text(sessions, input_ids, attention_mask, pixel_values, image, 12, pad_token_id=0,
                            pixel_attention_mask=pixel_attention_mask)
    assert got.tolist() == want.tolist()
    assert len(set(got[0, input_ids.shape[1]:].tolist())) >= 3  # not a degenerate repetition


def test_florence2_encoder_decoder_in_four_graphs(tmp_path: pathlib.Path) -> None:
    # Florence-2: the image features before the prompt's embeddings, through a BART encoder, then its
    # decoder from embedded tokens (transformers.js' four graphs); transformers' processor puts the
    # image tokens first, which writes the same features at the same places
    model = tiny_models.build("florence2")
    result = ohf.export(model, output_dir=tmp_path / "out")
    assert result.passed
    assert {str(f) for f in result.files} >= {f"onnx/{n}.onnx" for n in ("vision_encoder", "embed_tokens", "encoder_model",
                                                                          "decoder_model_merged")}
    encoder = result.programs["encoder_model"].model.graph
    assert [v.name for v in encoder.inputs] == ["inputs_embeds", "attention_mask"]
    decoder = result.programs["decoder_model"].model.graph
    assert [v.name for v in decoder.inputs][:3] == ["inputs_embeds", "encoder_hidden_states", "encoder_attention_mask"]
    assert [v.name for v in decoder.inputs][-1] == "use_cache_branch"
    sessions = _sessions(result.output_dir, "vision_encoder", "embed_tokens", "encoder_model", "decoder_model_merged")
    g = torch.Generator().manual_seed(3)
    pixel_values = torch.randn(2, 3, 64, 64, generator=g)
    prompt = torch.randint(3, 99, (2, 6), generator=g)
    mask = torch.ones_like(prompt)
    prompt[1, -2:], mask[1, -2:] = 1, 0  # the second row right-padded (BART's pad token)
    (features,) = sessions[0].run(None, {"pixel_values": pixel_values.numpy()})
    assert features.shape == (2, 65, 48)  # 8x8 patches and a pooled feature
    image = torch.full((2, features.shape[1]), tiny_models.FLORENCE2_IMAGE_TOKEN)
    plain = {"forced_eos_token_id": None, "forced_bos_token_id": None, "no_repeat_ngram_size": 0, "num_beams": 1}
    want = model.generate(input_ids=torch.cat([image, prompt], 1), attention_mask=torch.cat([torch.ones_like(image), mask], 1),
                          pixel_values=pixel_values, max_new_tokens=12, do_sample=False, **plain)
    got = greedy_image_text_seq2seq(sessions, prompt, mask, pixel_values, model.config.text_config.decoder_start_token_id,
                                    12, eos_token_id=2, pad_token_id=1)
    assert got.tolist() == want.tolist()
    assert len(set(got[0].tolist())) >= 4  # not a degenerate repetition


@pytest.mark.parametrize(("name", "grid_input"), [
    ("qwen2-vl", "grid_thw"), ("qwen2.5-vl", "image_grid_thw"), ("glm-ocr", "image_grid_thw"),
    # 23 s, the slowest of the four: its streamed export stays in tests/hf/test_zoo.py (-m slow too)
    pytest.param("qwen3.5-vl", "image_grid_thw", marks=pytest.mark.slow),
])  # fmt: skip
def test_qwen2_vl_patch_grids_and_multimodal_positions(name: str, grid_input: str, tmp_path: pathlib.Path) -> None:
    # Qwen2-VL: flattened patches + grid_thw through the tower with its per-image positions and
    # attention segments computed in the graph (Qwen2.5-VL: and its window order; Qwen3.5: its
    # interpolated position table); the decoder takes transformers' 3-row positions (Qwen3.5: with
    # its gated-delta-rule states)
    model = tiny_models.build(name)
    result = ohf.export(model, output_dir=tmp_path / "out")
    assert result.passed
    vision = result.programs["vision_encoder"].model.graph
    assert [(v.name, [str(d) for d in v.shape]) for v in vision.inputs] == [
        ("pixel_values", ["4*num_merged_patches", "96"]), (grid_input, ["num_images", "3"])]
    decoder = result.programs["decoder_model"].model.graph
    assert [str(d) for d in decoder.inputs[2].shape] == ["3", "batch_size", "sequence_length"]
    if name == "qwen3.5-vl":  # transformers.js names a gated delta rule's state past_recurrent
        assert [v.name for v in decoder.inputs][3:5] == ["past_conv.0", "past_recurrent.0"]
    sessions = _sessions(result.output_dir, "vision_encoder", "embed_tokens", "decoder_model_merged")
    g = torch.Generator().manual_seed(3)
    grid = torch.tensor([[1, 4, 6], [1, 6, 4]])  # a wide and a tall image, 6 tokens each
    pixel_values = torch.randn(48, 96, generator=g)
    text = torch.randint(3, 280, (2, 5), generator=g)
    image = torch.tensor([tiny_models.QWEN2_VL_VISION_START, *[tiny_models.QWEN2_VL_IMAGE_TOKEN] * 6, 293])
    input_ids = torch.cat([text[:, :2], image.expand(2, -1), text[:, 2:]], 1)
    attention_mask = torch.ones_like(input_ids)
    types = (input_ids == tiny_models.QWEN2_VL_IMAGE_TOKEN).int()
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixel_values,
                          image_grid_thw=grid, mm_token_type_ids=types, max_new_tokens=12, do_sample=False)
    rope = model.model.get_rope_index(input_ids, types, image_grid_thw=grid, attention_mask=attention_mask)
    assert not torch.equal(rope[0][1], rope[0][2])  # height and width rows differ at the image tokens
    got = greedy_image_text(sessions, input_ids, attention_mask, pixel_values, tiny_models.QWEN2_VL_IMAGE_TOKEN, 12,
                            eos_token_id=1, grid_thw=grid, rope=rope)
    assert got.tolist() == want.tolist()
    assert len(set(got[0, input_ids.shape[1]:].tolist())) >= 3  # not a degenerate repetition
    config = json.loads((result.output_dir / "config.json").read_text())
    if name == "qwen2-vl":  # transformers.js reads a qwen2_vl config flat (qwen2_5_vl: its text_config)
        assert (config["num_hidden_layers"], config["num_key_value_heads"], config["text_config"]["num_hidden_layers"]) == (2, 2, 2)
    elif name == "qwen3.5-vl":  # and a qwen3_5 config flat too (its default normalized config)
        assert (config["num_hidden_layers"], config["text_config"]["num_hidden_layers"]) == (4, 4)
    elif name == "glm-ocr":  # GLM-OCR's image-start token
        assert config["image_start_token_id"] == tiny_models.QWEN2_VL_VISION_START
    else:
        assert "num_hidden_layers" not in config and config["text_config"]["num_hidden_layers"] == 2


@pytest.mark.parametrize("grids", [[[1, 4, 6]], [[1, 2, 2], [2, 4, 4], [1, 6, 2]], [[3, 2, 8], [1, 8, 2]],
                                   [[1, 8, 12]], [[1, 4, 4], [2, 12, 8], [1, 20, 6]], [[1, 16, 16], [1, 34, 50]]])
def test_grid_positions_and_window_order_equal_transformers_loops(grids: list[list[int]]) -> None:
    grid = torch.tensor(grids)
    tokens = int(grid.prod(-1).sum())
    assert torch.equal(grid_positions(grid, tokens, 2), get_vision_position_ids(grid, 2))
    order, bounds = window_order(grid, tokens // 4, 2, 112, 14)  # Qwen2.5-VL's windows of 4x4 merged tokens
    want_order, want_bounds = get_vision_window_index(grid, 2, 112, 14)
    assert torch.equal(order, want_order) and torch.equal(bounds, want_bounds)


def test_t5gemma2_sliding_window_decoder_past_its_window(tmp_path: pathlib.Path) -> None:
    # T5Gemma 2: image features written at the image tokens (merge) before the encoder; its decoder
    # attends over self and cross keys at once, with a sliding-window layer whose past keeps growing
    # (as the decoder-only graphs keep it) so 10 tokens run past the window of 4
    text = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 256,
            "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"], "pad_token_id": 0,
            "bos_token_id": 2, "eos_token_id": 1}
    vision = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
              "image_size": 32, "patch_size": 8}
    encoder = transformers.T5Gemma2EncoderConfig(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                                                 boi_token_index=296, eoi_token_index=297, image_token_index=298)
    config = transformers.T5Gemma2Config(encoder=encoder, decoder=transformers.T5Gemma2DecoderConfig(**text),
                                         image_token_index=298, eoi_token_index=297, vocab_size=300)
    torch.manual_seed(0)
    model = transformers.T5Gemma2ForConditionalGeneration(config).eval()
    result = ohf.export(model, "image-text-to-text", output_dir=tmp_path / "out")
    assert result.passed
    vision_s, embed, encoder_s, decoder = _sessions(result.output_dir, "vision_encoder", "embed_tokens", "encoder_model",
                                                    "decoder_model_merged")
    g = torch.Generator().manual_seed(3)
    pixel_values = torch.randn(2, 3, 32, 32, generator=g)
    text_ids = torch.randint(3, 200, (2, 6), generator=g)
    input_ids = torch.cat([text_ids[:, :2], torch.full((2, 1), 296), torch.full((2, 4), 298), torch.full((2, 1), 297),
                           text_ids[:, 2:]], 1)
    mask = torch.ones_like(input_ids)
    want = model.generate(input_ids=input_ids, attention_mask=mask, pixel_values=pixel_values, max_new_tokens=10,
                          do_sample=False)
    features = torch.from_numpy(vision_s.run(None, {"pixel_values": pixel_values.numpy()})[0])
    embeds = torch.from_numpy(embed.run(None, {"input_ids": input_ids.numpy()})[0])
    merged = merge(input_ids, embeds, features, 298)
    got = greedy_seq2seq(encoder_s, decoder, {"inputs_embeds": merged, "attention_mask": mask},
                         config.decoder.bos_token_id, 10, eos_token_id=1, embed=embed)  # generate's start
    assert got.tolist() == want.tolist() and got.shape[1] == 11
    assert len(set(got[0].tolist())) >= 3


@pytest.mark.slow  # 10 s; the streamed path itself is tested in test_streamed.py, this is the VLM layouts on it
@pytest.mark.parametrize("name", ["smolvlm", "florence2"])
def test_streamed_from_a_folder(name: str, tmp_path: pathlib.Path) -> None:
    # the large-model path: the model built on the meta device, its weights streamed from the
    # checkpoint; the probes and example inputs need no values (SmolVLM's padding-image drop,
    # Florence-2's decoder inputs_embeds)
    tiny_models.build(name).save_pretrained(tmp_path / "src")
    result = ohf.export(tmp_path / "src", output_dir=tmp_path / "out", stream=True)
    assert result.passed and (tmp_path / "out" / "onnx" / "vision_encoder.onnx.data").is_file()
    assert all(c.passed for c in result.checks) and {c.component for c in result.checks} >= {"vision_encoder", "decoder_model"}


def _check_generation(model: Any, out: pathlib.Path, image_token: int, tokens: int, types: bool = False) -> None:
    sessions = _sessions(out, "vision_encoder", "embed_tokens", "decoder_model_merged")
    g = torch.Generator().manual_seed(3)
    pixel_values = torch.randn(2, 3, 32, 32, generator=g)
    text = torch.randint(0, 99, (2, 5), generator=g)
    input_ids = torch.cat([text[:, :2], torch.full((2, tokens), image_token), text[:, 2:]], dim=1)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, :2] = 0  # the second row left-padded
    extra = {"token_type_ids": (input_ids == image_token).long()} if types else {}
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixel_values,
                          max_new_tokens=12, do_sample=False, pad_token_id=0, **extra)
    got = greedy_image_text(sessions, input_ids, attention_mask, pixel_values, image_token, 12, pad_token_id=0)
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


def test_a_required_pixel_mask_of_another_layout_is_refused() -> None:
    # Granite-Docling's pixel_attention_mask is required and marks real tiles ([batch, tiles]), not
    # Idefics3's pixels: refused by name before any export
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 4,
            "vocab_size": 120, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "model_type": "llama"}
    vision = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1, "num_attention_heads": 4,
              "image_size": 32, "patch_size": 8, "out_hidden_size": 64}
    config = transformers.GraniteDoclingConfig(vision_config=vision, text_config=text, image_token_id=100)
    model = transformers.GraniteDoclingForConditionalGeneration(config).eval()
    with pytest.raises(HFError, match="pixel_attention_mask"):
        ohf.export(model, "image-text-to-text")


@pytest.mark.parametrize(("name", "fused"), [("llava", 2), ("gemma3-vlm", 0), ("qwen2-vl", 2)])
def test_onnxruntime_target_fuses_only_causal_attention(name: str, fused: int) -> None:
    # LLaVA's decoder is causal: GroupQueryAttention (causal=1), int4 MatMulNBits (Qwen2-VL's too, its
    # 3-row rotary kept before the kernel); Gemma 3's image
    # blocks attend both ways (a mask from token_type_ids), which the kernel cannot express: its
    # attention stays standard, and both validate against eager
    result = ohf.export(tiny_models.build(name), target="onnxruntime", quantize="int4")
    assert result.passed
    ops = [n.op_type for n in result.programs["decoder_model"].model.graph]
    assert ops.count("GroupQueryAttention") == fused and ops.count("MatMulNBits") > 0


def test_pixtral_images_sized_by_their_pixels(tmp_path: pathlib.Path) -> None:
    # Mistral3 (Pixtral tower): image_sizes are the pixel shape, any multiple of patch * merge (8);
    # one image a run, as transformers.js' LlavaForConditionalGeneration feeds PixtralImageProcessor's
    model = tiny_models.build("mistral3")
    result = ohf.export(model, output_dir=tmp_path / "out")
    assert result.passed
    vision = result.programs["vision_encoder"].model.graph
    assert [(v.name, [str(d) for d in v.shape]) for v in [*vision.inputs, *vision.outputs]] == [
        ("pixel_values", ["1", "3", "8*height", "8*width"]), ("image_features", ["1", "height*width", "64"])]
    assert {c.inputs for c in result.checks if c.component == "vision_encoder"} == {
        "pixel_values 1x3x24x16", "pixel_values 1x3x8x32", "pixel_values 1x3x32x8"}  # the sizes after the example 16x24
    sessions = _sessions(result.output_dir, "vision_encoder", "embed_tokens", "decoder_model_merged")
    g = torch.Generator().manual_seed(3)
    pixel_values = torch.randn(2, 3, 24, 40, generator=g)  # a size the export never saw: 3 x 5 tokens
    text = torch.randint(0, 99, (2, 5), generator=g)
    input_ids = torch.cat([text[:, :2], torch.full((2, 15), tiny_models.MISTRAL3_IMAGE_TOKEN), text[:, 2:]], dim=1)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, :2] = 0
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixel_values,
                          image_sizes=torch.tensor([[24, 40], [24, 40]]), max_new_tokens=12, do_sample=False,
                          pad_token_id=0)
    got = greedy_image_text(sessions, input_ids, attention_mask, pixel_values, tiny_models.MISTRAL3_IMAGE_TOKEN, 12,
                            pad_token_id=0)
    assert got.tolist() == want.tolist()
    assert len(set(got[0, input_ids.shape[1]:].tolist())) >= 3


def test_naflex_tiles_of_several_shapes(tmp_path: pathlib.Path) -> None:
    # LFM2-VL: padded patch sequences of tiles of any aspect ratio; the graph resizes SigLIP2's
    # position table and unshuffles every tile at once (transformers loops over the tiles)
    model = tiny_models.build("lfm2-vl")
    result = ohf.export(model, output_dir=tmp_path / "out")
    assert result.passed
    vision = result.programs["vision_encoder"].model.graph
    assert [(v.name, str(v.dtype), [str(d) for d in v.shape]) for v in vision.inputs] == [
        ("pixel_values", "FLOAT", ["num_images", "num_patches", "48"]),
        ("pixel_attention_mask", "INT64", ["num_images", "num_patches"]), ("spatial_shapes", "INT64", ["num_images", "2"])]
    sessions = _sessions(result.output_dir, "vision_encoder", "embed_tokens", "decoder_model_merged")
    g = torch.Generator().manual_seed(3)
    shapes = torch.tensor([[6, 10], [8, 2], [4, 4]])  # wider, taller and smaller than the 4x4 table: 22 tokens
    pixel_values = torch.zeros(3, 64, 48)
    pixel_attention_mask = torch.zeros(3, 64, dtype=torch.int64)
    for i, (h, w) in enumerate(shapes.tolist()):
        pixel_values[i, : h * w] = torch.randn(h * w, 48, generator=g)
        pixel_attention_mask[i, : h * w] = 1
    text = torch.randint(3, 280, (2, 5), generator=g)
    # the first row holds the first two tiles (19 tokens), the second the last (4 tokens), left-padded
    first = torch.cat([text[0, :2], torch.full((19,), tiny_models.LFM2_VL_IMAGE_TOKEN), text[0, 2:]])
    second = torch.cat([torch.zeros(15, dtype=torch.int64), text[1, :2], torch.full((4,), tiny_models.LFM2_VL_IMAGE_TOKEN), text[1, 2:]])
    input_ids = torch.stack([first, second])
    attention_mask = (torch.arange(input_ids.shape[1]) >= torch.tensor([[0], [15]])).long()
    inputs = {"pixel_values": pixel_values, "pixel_attention_mask": pixel_attention_mask, "spatial_shapes": shapes}
    want = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=12, do_sample=False,
                          pad_token_id=0, **inputs)
    got = greedy_image_text(sessions, input_ids, attention_mask, pixel_values, tiny_models.LFM2_VL_IMAGE_TOKEN, 12,
                            pad_token_id=0, pixel_attention_mask=pixel_attention_mask, spatial_shapes=shapes)
    assert got.tolist() == want.tolist()
    assert len(set(got[0, input_ids.shape[1]:].tolist())) >= 3


@pytest.mark.parametrize("side", [4, 16])
def test_antialiased_weights_equal_torch_interpolate(side: int) -> None:
    # PyTorch's bilinear antialias filter, shrinking and growing each axis (outputs of >= 2 positions)
    table = torch.randn(side, side, 8, generator=torch.Generator().manual_seed(side))
    for rows, columns in [(2, 2), (side, side), (3, 2 * side + 1), (2 * side, 2), (5, side - 1), (side + 3, 7)]:
        want = torch.nn.functional.interpolate(table.permute(2, 0, 1)[None], size=(rows, columns), mode="bilinear",
                                               align_corners=False, antialias=True)[0].reshape(8, -1).T
        got = resized_positions(table, torch.tensor([[rows, columns]]), rows * columns + 3)[0]
        torch.testing.assert_close(got[: rows * columns], want, rtol=1e-5, atol=1e-6)
        assert torch.equal(got[rows * columns:], got[:1].expand(3, -1))  # padding: the first embedding
