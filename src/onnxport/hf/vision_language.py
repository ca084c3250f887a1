"""Vision-language models (``image-text-to-text``: LLaVA and the models built like it) as the
three graphs transformers.js runs for them (``src/models.js``, ``LlavaForConditionalGeneration``:
``vision_encoder``, ``embed_tokens``, ``decoder_model_merged``):

- ``vision_encoder.onnx``: ``pixel_values`` ``[batch_size, C, H, W]`` (the processor's size) →
  ``image_features`` ``[batch_size, image_tokens, hidden]`` (vision tower + projector,
  transformers' ``get_image_features``);
- ``embed_tokens.onnx``: ``input_ids`` → ``inputs_embeds``;
- ``decoder_model_merged.onnx``: the language model from ``inputs_embeds`` with the KV cache
  (:func:`onnxport.hf.inputs.causal_lm_component` with ``embeds=True``), and ``token_type_ids``
  for models whose image tokens attend both ways on the first step (Gemma 3, PaliGemma).

The caller writes each image's feature rows at its image tokens (``image_token_id``) of the
embeddings, as transformers' ``get_placeholder_mask`` + ``masked_scatter`` do, then decodes.
Models with several images per row (Idefics2, Idefics3, SmolVLM: the processor's image splits)
give ``vision_encoder.onnx`` ``pixel_values`` ``[batch_size, num_images, C, H, W]`` and
``pixel_attention_mask`` ``[batch_size, num_images, H, W]`` (bool) → ``image_features``
``[image_tokens, hidden]``: the rows of the images that are not padding (all pixels zero), as
transformers.js' ``Idefics3ForConditionalGeneration`` feeds and reads them.

Qwen2-VL's and Qwen2.5-VL's patch grids and 3-row rotary positions: :mod:`onnxport.hf.multimodal_rope`.

Mistral3 and LightOn-OCR (Pixtral towers) take ``pixel_values`` ``[1, C, H, W]`` of one image at
any multiple of ``patch_size * spatial_merge_size``, its size being its ``image_sizes``
(:func:`sized_by_pixels`).

Models whose image path needs more than that (image sizes: LLaVA-NeXT; other grid towers:
Qwen3-VL, GLM-4V) or whose decoder needs more than embeddings, token types and those
positions are refused before any export.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

import torch

from onnxport.errors import HFError
from onnxport.hf import cache as wrappers
from onnxport.hf import multimodal_rope, naflex
from onnxport.hf.dims import BATCH, IMAGES, SEQUENCE, image_sides
from onnxport.hf.loading import LoadedModel
from onnxport.hf.naflex import PIXEL_MASK, SPATIAL_SHAPES
from onnxport.hf.parts import Component, Sizes, image_size, token_ids
from onnxport.hf.parts import generator as _generator

IMAGE_FEATURES = "image_features"
# Decoder inputs beyond embeddings, mask, positions and cache that change what eager computes.
_DECODER_EXTRAS = ("mm_token_type_ids", "image_grid_thw", "rope_deltas")
# The decoder input marking image tokens (1) among text (0) for models whose image tokens attend to
# each other both ways on the first step (Gemma 3's image blocks, PaliGemma's prefix).
TOKEN_TYPES = "token_type_ids"


def takes_token_types(model: torch.nn.Module) -> bool:
    """Whether the model's forward reads :data:`TOKEN_TYPES` (the decoder graph then takes them)."""
    return TOKEN_TYPES in inspect.signature(model.forward).parameters


def token_types(input_ids: torch.Tensor, image_token_id: int) -> torch.Tensor:
    """:data:`TOKEN_TYPES` of a prompt: 1 at the image tokens, else 0 (int64, the ids' shape), as
    Gemma 3's and PaliGemma's processors make them for the first step; later steps feed zeros."""
    return (input_ids == image_token_id).to(torch.int64)


# A required parameter of Pixtral's ``get_image_features``: the pixel shape (:func:`sized_by_pixels`).
IMAGE_SIZES = "image_sizes"
# Optional parameters of ``get_image_features`` that mean another image layout: Idefics2/3 and
# SmolVLM take ``pixel_values`` ``[batch, images, C, H, W]`` with a pixel mask (:data:`PIXEL_MASK`,
# supported: :class:`onnxport.hf.cache.ImagePatchFeatures`); LFM2-VL padded tiles with the mask and
# :data:`SPATIAL_SHAPES` (:mod:`onnxport.hf.naflex`); the others are refused.
_IMAGE_LAYOUTS = (PIXEL_MASK, "patch_attention_mask", SPATIAL_SHAPES)


def _extra_image_inputs(model: torch.nn.Module) -> list[str]:
    """Parameters of ``get_image_features`` besides ``pixel_values`` that the image path needs:
    the required ones and those of :data:`_IMAGE_LAYOUTS`."""
    params = inspect.signature(cast(Any, model).get_image_features).parameters.values()
    return [p.name for p in params if p.name != "pixel_values"
            and (p.name in _IMAGE_LAYOUTS or p.default is inspect.Parameter.empty)
            and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]


def check_model(model: torch.nn.Module) -> None:
    """Refuse a vision-language model these graphs cannot express.

    Raises:
        HFError: No ``get_image_features``/``image_token_id``, image inputs beyond
            ``pixel_values``, or decoder inputs beyond embeddings (named).
    """
    name = type(model).__name__
    config: Any = model.config
    if not hasattr(model, "get_image_features") or getattr(config, "image_token_id", None) is None:
        raise HFError(
            f"{name} has no get_image_features/image_token_id: image-text-to-text exports LLaVA-style models "
            "(image features written at image tokens). Export its parts with onnxport.export."
        )
    extra = [name for name in _extra_image_inputs(model) if not (name == PIXEL_MASK and takes_pixel_mask(model))
             and not (name == IMAGE_SIZES and sized_by_pixels(model))]
    forward = inspect.signature(model.forward).parameters
    extras = [p for p in _DECODER_EXTRAS if p in forward]
    if multimodal_rope.supports(model):  # Qwen2-VL: the grid and 3-row positions (onnxport.hf.multimodal_rope)
        extra, extras = [n for n in extra if n != "image_grid_thw"], []
    if naflex.supports(model):  # LFM2-VL: padded tiles (onnxport.hf.naflex)
        extra = [n for n in extra if n not in (PIXEL_MASK, SPATIAL_SHAPES)]
    if extra or extras:
        raise HFError(
            f"{name}'s image path needs more than pixel_values ({', '.join(extra + extras)}): image-text-to-text "
            "exports models whose images are pixel_values of one size and whose decoder reads only embeddings "
            "(LLaVA, Aya Vision, InternVL), Pixtral towers sized by their pixels (Mistral3, LightOn-OCR), image "
            "splits with a pixel mask (Idefics3, SmolVLM), NaFlex tiles (LFM2-VL) or Qwen2-VL / Qwen2.5-VL / "
            "Qwen3.5 / GLM-OCR patch grids. Export its parts with onnxport.export."
        )


def sized_by_pixels(model: torch.nn.Module) -> bool:
    """Whether the image path is a Pixtral tower whose ``image_sizes`` are each image's pixel shape
    (Mistral3, LightOn-OCR: the processor resizes to patch multiples without padding); the vision
    graph is then :class:`onnxport.hf.cache.PixelSizedImageFeatures`, one image of any patch-multiple
    size a run. LLaVA-NeXT's ``image_sizes`` (the original size, its patches unpadded by it) stay refused."""
    vision_config = getattr(model.config, "vision_config", None)
    return getattr(vision_config, "model_type", None) == "pixtral" and IMAGE_SIZES in _extra_image_inputs(model)


def _pixel_sized_vision(model: torch.nn.Module, channels: int) -> Component:
    """The ``vision_encoder`` of a :func:`sized_by_pixels` model: ``pixel_values`` ``[1, C,
    m * height, m * width]``, ``m = patch_size * spatial_merge_size``; the example and the
    validation sides vary with the input set (2m x 3m, then 3m x 2m, m x 4m, 4m x m), within the
    tower's ``image_size``."""
    vision_config: Any = cast(Any, model.config).vision_config
    multiple = vision_config.patch_size * getattr(model.config, "spatial_merge_size", 1)
    most = max(vision_config.image_size // multiple, 1)
    shapes = ((2, 3), (3, 2), (1, 4), (4, 1))

    def images(sizes: Sizes) -> dict[str, Any]:
        rows, cols = (min(n, most) * multiple for n in shapes[sizes.seed % len(shapes)])
        return {"pixel_values": torch.randn(1, channels, rows, cols, generator=_generator(sizes))}

    sides = image_sides(multiple)
    return Component("vision_encoder", wrappers.PixelSizedImageFeatures(model), images,
                     {"pixel_values": {2: sides[2], 3: sides[3]}}, ["pixel_values"], [IMAGE_FEATURES])


def encoder_decoder(model: torch.nn.Module) -> bool:
    """Whether the language model is an encoder-decoder (Florence-2): the graphs are then
    ``vision_encoder``, ``embed_tokens``, ``encoder_model`` and ``decoder_model_merged`` from
    ``inputs_embeds`` (:func:`onnxport.hf.inputs.seq2seq_components` with ``embeds=True``)."""
    config: Any = model.config
    return bool(getattr(config.get_text_config(), "is_encoder_decoder", False) or getattr(config, "is_encoder_decoder", False))


def takes_pixel_mask(model: torch.nn.Module) -> bool:
    """Whether the image path takes several images per row with an optional pixel mask
    (:data:`PIXEL_MASK` ``[batch, images, H, W]``: Idefics2/3, SmolVLM); the vision graph is then
    :class:`onnxport.hf.cache.ImagePatchFeatures`. A required mask means another layout
    (Granite-Docling's ``[batch, tiles]`` of real tiles) and is refused by :func:`check_model`."""
    defining = [m for m in model.modules() if "get_image_features" in vars(type(m))]  # the outer one delegates
    parameters = [inspect.signature(cast(Any, m).get_image_features).parameters.get(PIXEL_MASK) for m in defining]
    return bool(parameters) and all(p is not None and p.default is None for p in parameters)


def image_splits(sizes: Sizes, channels: int, height: int, width: int) -> dict[str, torch.Tensor]:
    """``pixel_values`` ``[batch, images, C, H, W]`` and :data:`PIXEL_MASK` ``[batch, images, H, W]``
    for one input set: 2 or 3 images per row (``sizes.seed``), the last image of every row after
    the first a padding image (zeros, mask false) as the processor pads rows with fewer images."""
    images = 2 + sizes.seed % 2
    pixels = torch.randn(sizes.batch, images, channels, height, width, generator=_generator(sizes))
    mask = torch.ones(sizes.batch, images, height, width, dtype=torch.bool)
    pixels[1:, -1] = 0.0
    mask[1:, -1] = False
    return {"pixel_values": pixels, PIXEL_MASK: mask}


def components(loaded: LoadedModel) -> list[Component]:
    """The ``vision_encoder`` and ``embed_tokens`` components (module doc); the decoder is
    :func:`onnxport.hf.inputs.causal_lm_component` with ``embeds=True``.

    Raises:
        HFError: See :func:`check_model`.
    """
    model = loaded.model
    check_model(model)
    # T5Gemma 2 keeps it in its encoder's config
    vision_config = getattr(model.config, "vision_config", None) or getattr(getattr(model.config, "encoder", None),
                                                                           "vision_config", None)
    height, width = image_size(loaded, vision_config)
    channels = getattr(vision_config, "num_channels", 3)
    text_config = model.config.get_text_config()

    def images(sizes: Sizes) -> dict[str, Any]:
        return {"pixel_values": torch.randn(sizes.batch, channels, height, width, generator=_generator(sizes))}

    def tokens(sizes: Sizes) -> dict[str, Any]:
        return {"input_ids": token_ids(text_config, sizes.batch, sizes.sequence, _generator(sizes))}

    if multimodal_rope.supports(model):
        vision = multimodal_rope.vision_component(loaded)
    elif naflex.supports(model):
        vision = naflex.vision_component(loaded)
    elif sized_by_pixels(model):
        vision = _pixel_sized_vision(model, channels)
    elif takes_pixel_mask(model):
        split = {0: BATCH, 1: IMAGES}
        vision = Component("vision_encoder", wrappers.ImagePatchFeatures(model),
                           lambda sizes: image_splits(sizes, channels, height, width),
                           {"pixel_values": split, PIXEL_MASK: split}, ["pixel_values", PIXEL_MASK], [IMAGE_FEATURES])
    else:
        vision = Component("vision_encoder", wrappers.ImageFeatures(model), images, {"pixel_values": {0: BATCH}},
                           ["pixel_values"], [IMAGE_FEATURES])
    return [
        vision,
        Component("embed_tokens", wrappers.TokenEmbeddings(model), tokens, {"input_ids": {0: BATCH, 1: SEQUENCE}},
                  ["input_ids"], ["inputs_embeds"]),
    ]


def merge(input_ids: torch.Tensor, inputs_embeds: torch.Tensor, image_features: torch.Tensor,
          image_token_id: int) -> torch.Tensor:
    """The decoder's ``inputs_embeds``: ``image_features`` rows (flattened, image after image)
    written at the ``image_token_id`` positions of ``inputs_embeds``, as transformers'
    ``masked_scatter`` does. Shapes: ids ``[B, S]``, embeds ``[B, S, H]``, features ``[..., H]``.

    Raises:
        HFError: The number of image tokens differs from the number of feature rows.
    """
    rows = image_features.reshape(-1, inputs_embeds.shape[-1])
    where = input_ids == image_token_id
    if int(where.sum()) != rows.shape[0]:
        raise HFError(f"{int(where.sum())} image tokens in input_ids for {rows.shape[0]} image feature rows.")
    merged = inputs_embeds.clone()
    merged[where] = rows.to(merged.dtype)
    return merged


__all__ = ["IMAGE_FEATURES", "PIXEL_MASK", "SPATIAL_SHAPES", "TOKEN_TYPES", "check_model", "components", "encoder_decoder", "image_splits", "merge",
           "sized_by_pixels", "takes_pixel_mask", "takes_token_types", "token_types"]
