"""Image-audio-text-to-text models with per-layer embeddings (Gemma 4) as the graphs transformers.js
runs for them (``src/models/gemma4/modeling_gemma4.js``, ``Gemma4ForConditionalGeneration``, built
on ``Gemma3nForConditionalGeneration``; the ``ImageAudioTextToText`` sessions of
``src/models/session_config.js``, transformers.js 4.3.1):

- ``embed_tokens.onnx``: ``input_ids`` ``[batch_size, sequence_length]`` → ``inputs_embeds``
  ``[batch_size, sequence_length, hidden]`` and ``per_layer_inputs`` ``[batch_size,
  sequence_length, layers, per_layer_hidden]`` (the token-identity part of the per-layer
  embeddings, transformers' ``get_per_layer_inputs``), the image, video and audio tokens looked up
  as the padding token, as ``Gemma4Model.forward`` does;
- ``vision_encoder.onnx`` (with a vision config): ``pixel_values`` ``[num_images, num_patches,
  3 * patch²]`` (the processor's patches, row-major, zero-padded) and ``pixel_position_ids``
  ``[num_images, num_patches, 2]`` (int64 column and row of every patch, -1 at padding) →
  ``image_features`` ``[image_tokens, hidden]``: the tower's pooled tokens of every image without
  its padding, projected (``get_image_features`` without its per-image split);
- ``audio_encoder.onnx`` (with an audio config): ``input_features`` ``[num_audios, num_frames,
  mel_bins]`` (log-mel) and ``input_features_mask`` ``[num_audios, num_frames]`` (bool, true at
  real frames) → ``audio_features`` ``[audio_tokens, hidden]``: the valid rows of the projected
  conformer output (``get_audio_features`` and its mask);
- ``decoder_model_merged.onnx``: ``inputs_embeds``, ``per_layer_inputs``, ``attention_mask``,
  ``position_ids`` and the KV cache of the layers that keep one (Gemma 4 shares the last layers'
  key/values) → ``logits`` and the present (:func:`onnxport.hf.inputs.causal_lm_component`).

The caller writes the image features at the ``image_token_id`` positions and the audio features
at the ``audio_token_id`` positions of ``inputs_embeds`` (``per_layer_inputs`` keep the padding
token's), as transformers' ``masked_scatter`` does (:func:`onnxport.hf.vision_language.merge`).
Gemma 4 models whose image tokens attend to each other both ways
(``use_bidirectional_attention="vision"``) need ``mm_token_type_ids`` in the decoder, which
transformers.js does not feed; they are refused (their text-generation export is ``model.onnx``).
"""

from __future__ import annotations

from typing import Any, cast

import torch

from onnxport.errors import HFError
from onnxport.hf.audio_language import AUDIO_FEATURES
from onnxport.hf.dims import AUDIOS, BATCH, IMAGES, SEQUENCE
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, token_ids
from onnxport.hf.parts import generator as _generator
from onnxport.hf.vision_language import IMAGE_FEATURES

PER_LAYER_INPUTS = "per_layer_inputs"
PIXEL_POSITIONS = "pixel_position_ids"
AUDIO_MASK = "input_features_mask"
_FRAMES = "num_frames"
_SOFT_TOKENS = "num_soft_tokens"  # a vision input's patches are pooling_kernel_size² per soft token
# model_type -> the config's multimodal token ids that the embeddings look up as padding
_SPECIAL_TOKENS = {"gemma4": ("image_token_id", "video_token_id", "audio_token_id")}


def supports(model: torch.nn.Module) -> bool:
    """Whether ``model`` is a multimodal model whose language model takes per-layer embeddings
    beside ``inputs_embeds`` (Gemma 4: ``hidden_size_per_layer_input`` in its text config)."""
    config: Any = model.config
    text = config.get_text_config()
    return config.model_type in _SPECIAL_TOKENS and bool(getattr(text, "hidden_size_per_layer_input", 0))


def per_layer_shape(model: torch.nn.Module) -> tuple[int, int]:
    """(layers, per-layer hidden size) of ``per_layer_inputs``' last two axes."""
    text: Any = cast(Any, model.config).get_text_config()
    return int(text.num_hidden_layers), int(text.hidden_size_per_layer_input)


def _check(model: torch.nn.Module) -> None:
    text: Any = cast(Any, model.config).get_text_config()
    if getattr(text, "use_bidirectional_attention", None) == "vision":
        raise HFError(
            f"{type(model).__name__}'s image tokens attend to each other both ways "
            "(use_bidirectional_attention='vision'), which needs mm_token_type_ids in the decoder; transformers.js' "
            "Gemma4ForConditionalGeneration does not feed them. Export its text model with --task text-generation "
            "(model.onnx)."
        )


class PerLayerEmbeddings(torch.nn.Module):
    """``input_ids`` → ``(inputs_embeds, per_layer_inputs)`` (module doc): the multimodal token
    ids replaced by ``pad_token_id`` before both lookups, as transformers' ``Gemma4Model.forward``
    does (``llm_input_ids``)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        config: Any = model.config
        self.embeddings = cast(Any, model).get_input_embeddings()
        self.language_model = cast(Any, model).model.language_model
        self.special = [int(t) for name in _SPECIAL_TOKENS[config.model_type]
                        if (t := getattr(config, name, None)) is not None]
        self.pad = int(config.get_text_config().pad_token_id or 0)

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        special = torch.zeros_like(input_ids, dtype=torch.bool)
        for token in self.special:
            special = special | (input_ids == token)
        ids = torch.where(special, self.pad, input_ids)
        embeds = self.embeddings(ids)
        return embeds, self.language_model.get_per_layer_inputs(ids, embeds)


class PositionedPatchFeatures(torch.nn.Module):
    """``(pixel_values, pixel_position_ids)`` → ``image_features`` (module doc): the vision
    tower (which pools each image's patches and drops the padding) and the multimodal embedder."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        inner = cast(Any, model).model
        self.tower = inner.vision_tower
        self.embedder = inner.embed_vision

    def forward(self, pixel_values: torch.Tensor, pixel_position_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.tower(pixel_values=pixel_values, pixel_position_ids=pixel_position_ids).last_hidden_state
        return self.embedder(inputs_embeds=hidden)


class MaskedAudioFeatures(torch.nn.Module):
    """``(input_features, input_features_mask)`` → ``audio_features`` (module doc): the audio
    tower, the multimodal embedder, and the rows of the real (subsampled) frames.

    The frames are first padded (features 0, mask false) to whole attention blocks of the
    subsampled sequence (``4 * attention_chunk_size`` frames), plus one block. That changes no
    valid row: the tower zeroes masked frames before each convolution, its conformer convolutions
    are causal, masked frames take no part in the attention, and the padded rows are dropped.
    Whole blocks keep the capture's sizes multiples of one symbol: with the frame count itself,
    every layer's block arithmetic (two stride-2 subsamplings, then blocks rounded up) was nested
    floor divisions that sympy re-simplified, about 20 s of capture per layer. The extra block
    makes at least two: the tower's code guards on more than one block, which a dynamic frame
    count from 1 violates (one failed capture in each mode, then a relaxed one: 3.7x the capture
    time of the tiny tower)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        inner = cast(Any, model).model
        self.tower = inner.audio_tower
        self.embedder = inner.embed_audio
        self.block = 4 * int(inner.audio_tower.config.attention_chunk_size)

    def forward(self, input_features: torch.Tensor, input_features_mask: torch.Tensor) -> torch.Tensor:
        frames = input_features.shape[1]
        pad = (frames + self.block - 1) // self.block * self.block + self.block - frames
        input_features = torch.nn.functional.pad(input_features, (0, 0, 0, pad))
        input_features_mask = torch.nn.functional.pad(input_features_mask, (0, pad), value=False)
        out = self.tower(input_features, input_features_mask)
        return self.embedder(inputs_embeds=out.last_hidden_state)[out.attention_mask]


def patch_inputs(sizes: Sizes, patch_pixels: int, kernel: int) -> dict[str, torch.Tensor]:
    """One vision input set: 2 or 3 images (``sizes.seed``) of different patch grids, each side a
    multiple of ``kernel`` (``pooling_kernel_size``: the processor resizes to multiples of
    ``kernel * patch_size``), zero-padded with -1 positions to one soft token more than the
    largest image (a multiple of ``kernel²`` patches, as the processor's ``max_soft_tokens * k²``)."""
    count = 2 + sizes.seed % 2
    grids = [(kernel * (1 + (i + sizes.seed) % 3), kernel * (1 + (i + 1) % 2)) for i in range(count)]
    longest = max(h * w for h, w in grids) + kernel * kernel
    g = _generator(sizes)
    pixels = torch.zeros(count, longest, patch_pixels)
    positions = torch.full((count, longest, 2), -1, dtype=torch.int64)
    for i, (rows, columns) in enumerate(grids):
        pixels[i, : rows * columns] = torch.rand(rows * columns, patch_pixels, generator=g)
        row, column = torch.meshgrid(torch.arange(rows), torch.arange(columns), indexing="ij")
        positions[i, : rows * columns] = torch.stack([column.reshape(-1), row.reshape(-1)], dim=-1)
    return {"pixel_values": pixels, PIXEL_POSITIONS: positions}


def audio_inputs(sizes: Sizes, mel_bins: int, block: int) -> dict[str, torch.Tensor]:
    """One audio input set: 1 or 2 audios (``sizes.seed``) of 2 to 4 attention blocks of ``block``
    frames and a part of one (the tower attends in chunks of ``attention_chunk_size`` subsampled
    frames), the second audio's last third padding (mask false, features zero, as the feature
    extractor leaves them)."""
    count = 1 + (sizes.seed + 1) % 2
    frames = block * (2 + sizes.seed % 3) + 3 + 2 * sizes.seed
    features = torch.randn(count, frames, mel_bins, generator=_generator(sizes))
    mask = torch.ones(count, frames, dtype=torch.bool)
    mask[1:, frames - frames // 3:] = False
    return {"input_features": features * mask[..., None], AUDIO_MASK: mask}


def _mel_bins(model: torch.nn.Module) -> int:
    """The log-mel bins the audio tower reads: its input projection takes ``bins / 4`` (two
    stride-2 convolutions) times the last convolution's channels (transformers'
    ``Gemma4AudioSubSampleConvProjection``)."""
    projection = cast(Any, model).model.audio_tower.subsample_conv_projection
    return 4 * projection.input_proj_linear.in_features // projection.layer1.conv.out_channels


def components(loaded: LoadedModel) -> list[Component]:
    """The ``vision_encoder`` (with a vision config), ``audio_encoder`` (with an audio config) and
    ``embed_tokens`` components (module doc); the decoder is
    :func:`onnxport.hf.inputs.causal_lm_component` with ``embeds=True``.

    Raises:
        HFError: Image tokens that attend both ways (module doc).
    """
    model = loaded.model
    _check(model)
    config: Any = model.config
    text = config.get_text_config()

    def tokens(sizes: Sizes) -> dict[str, Any]:
        return {"input_ids": token_ids(text, sizes.batch, sizes.sequence, _generator(sizes))}

    result = []
    if config.vision_config is not None:
        vision = config.vision_config
        kernel = int(vision.pooling_kernel_size)
        patch_pixels = 3 * int(vision.patch_size) ** 2
        patches = kernel * kernel * torch.export.Dim(_SOFT_TOKENS, min=1)
        result.append(Component(
            "vision_encoder", PositionedPatchFeatures(model), lambda sizes: patch_inputs(sizes, patch_pixels, kernel),
            {"pixel_values": {0: IMAGES, 1: patches}, PIXEL_POSITIONS: {0: IMAGES, 1: patches}},
            ["pixel_values", PIXEL_POSITIONS], [IMAGE_FEATURES], resizable=False))
    if config.audio_config is not None:
        audio = MaskedAudioFeatures(model)
        bins = _mel_bins(model)
        frames = torch.export.Dim(_FRAMES, min=2)
        result.append(Component(
            "audio_encoder", audio, lambda sizes: audio_inputs(sizes, bins, audio.block),
            {"input_features": {0: AUDIOS, 1: frames}, AUDIO_MASK: {0: AUDIOS, 1: frames}},
            ["input_features", AUDIO_MASK], [AUDIO_FEATURES], resizable=False))
    result.append(Component("embed_tokens", PerLayerEmbeddings(model), tokens, {"input_ids": {0: BATCH, 1: SEQUENCE}}, ["input_ids"],
                            ["inputs_embeds", PER_LAYER_INPUTS]))
    return result


__all__ = ["AUDIO_MASK", "PER_LAYER_INPUTS", "PIXEL_POSITIONS",
           "MaskedAudioFeatures", "PerLayerEmbeddings", "PositionedPatchFeatures", "audio_inputs", "components",
           "patch_inputs", "per_layer_shape", "supports"]
