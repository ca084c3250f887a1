"""Vision-language models with a SigLIP2 NaFlex tower (LFM2-VL): images of any aspect ratio as
padded patch sequences, as transformers.js' ``Lfm2VlForConditionalGeneration`` feeds them
(``src/models/lfm2_vl``: ``Lfm2VlImageProcessor`` tiles, then ``vision_encoder`` picks its inputs by
name):

- ``vision_encoder.onnx``: ``pixel_values`` ``[num_tiles, num_patches, C * patch²]`` (each tile's
  patches, row-major, zero-padded to ``num_patches``), ``pixel_attention_mask`` ``[num_tiles,
  num_patches]`` (int64, 1 at real patches) and ``spatial_shapes`` ``[num_tiles, 2]`` (int64: patch
  rows, patch columns) → ``image_features`` ``[image_tokens, hidden]``: each tile's tokens after the
  ``downsample_factor²`` pixel unshuffle and the projector, tile after tile, row-major.

transformers loops over the tiles with each tile's size read from the data: SigLIP2 resizes its
learned ``position_size²`` position table to every tile (``F.interpolate(bilinear,
antialias=True)``, ``Siglip2VisionEmbeddings.resize_positional_embeddings``) and LFM2-VL unpads
and unshuffles every tile (``Lfm2VlModel.get_image_features``). A capture would fix the number of
tiles and their sizes. The graph computes both for all tiles at once:

- the resize as separable weights (:func:`antialiased_weights`, PyTorch's antialiased bilinear
  filter, ``aten/src/ATen/native/cpu/UpSampleKernel.cpp``, ``HelperInterpLinear::aa_filter``), one
  weight vector per output row and column, applied as one matmul with the table;
- the unshuffle as a gather of each token's ``factor x factor`` block of patches, run through the
  projector's own ``pixel_unshuffle`` and layers, then the tokens of every tile selected by value
  (a tile of ``h x w`` patches has ``(h / factor) * (w / factor)``).

SigLIP2's own vision model and image classifier (``Siglip2VisionModel``,
``Siglip2ForImageClassification``) read the same three inputs per image: :func:`image_component`;
its dual encoder (``Siglip2Model``) with the texts: :func:`text_image_component`.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any, cast

import torch

from onnxport.hf.dims import BATCH, IMAGE_BATCH, IMAGES, SEQUENCE, TEXT_BATCH
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, token_ids
from onnxport.hf.parts import generator as _generator

PIXEL_MASK = "pixel_attention_mask"
SPATIAL_SHAPES = "spatial_shapes"
_PATCHES = "num_patches"


def supports(model: torch.nn.Module) -> bool:
    """Whether the model's images go through a SigLIP2 NaFlex tower whose outputs the model unpads
    and unshuffles per tile (LFM2-VL: ``get_image_features(pixel_values, spatial_shapes,
    pixel_attention_mask)``, a ``multi_modal_projector`` with ``pixel_unshuffle``)."""
    inner = getattr(model, "model", model)
    tower = getattr(inner, "vision_tower", None)
    embeddings = getattr(tower, "embeddings", None)
    projector = getattr(inner, "multi_modal_projector", None)
    return (hasattr(embeddings, "resize_positional_embeddings") and hasattr(projector, "pixel_unshuffle")
            and isinstance(getattr(projector, "factor", None), int))


def antialiased_weights(index: torch.Tensor, out_size: torch.Tensor, in_size: int) -> torch.Tensor:
    """The weights ``[n, in_size]`` (float32) that ``F.interpolate(mode="bilinear",
    align_corners=False, antialias=True)`` gives output position ``index`` of an axis resized from
    ``in_size`` to ``out_size`` (both ``[n]``, int64): the triangle filter widened by the scale when
    shrinking, over the input positions whose centres it covers, normalized to sum 1 (PyTorch's
    ``_upsample_bilinear2d_aa``; equal to it within float32 rounding for outputs of at least 2
    positions, checked in tests)."""
    scale = in_size / out_size.to(torch.float32)
    shrinking = scale >= 1
    support = torch.where(shrinking, scale, torch.ones_like(scale))
    inverse = torch.where(shrinking, 1 / scale, torch.ones_like(scale))
    center = scale * (index.to(torch.float32) + 0.5)
    low = torch.clamp(torch.trunc(center - support + 0.5), min=0)
    high = torch.clamp(torch.trunc(center + support + 0.5), max=in_size)
    source = torch.arange(in_size, dtype=torch.float32, device=index.device)
    x = (source[None] - center[:, None] + 0.5) * inverse[:, None]
    inside = (source[None] >= low[:, None]) & (source[None] < high[:, None])
    weights = torch.clamp(1 - x.abs(), min=0) * inside
    return weights / weights.sum(-1, keepdim=True)


def resized_positions(table: torch.Tensor, spatial_shapes: torch.Tensor, max_length: int) -> torch.Tensor:
    """SigLIP2's position table ``[side, side, dim]`` resized to every tile's ``spatial_shapes``
    (``[tiles, 2]``) and laid out row-major, ``[tiles, max_length, dim]``; positions past a tile's
    patches hold its first embedding, as ``resize_positional_embeddings`` fills them."""
    side, dim = table.shape[0], table.shape[-1]
    rows, columns = spatial_shapes[:, 0:1], spatial_shapes[:, 1:2]
    k = torch.arange(max_length, device=table.device)[None]
    k = torch.where(k < rows * columns, k, 0)
    row, column = k // columns, k % columns
    tiles = spatial_shapes.shape[0]
    along_rows = antialiased_weights(row.reshape(-1), rows.expand_as(row).reshape(-1), side)
    along_columns = antialiased_weights(column.reshape(-1), columns.expand_as(column).reshape(-1), side)
    weights = (along_rows[:, :, None] * along_columns[:, None, :]).reshape(tiles, max_length, side * side)
    return weights @ table.to(torch.float32).reshape(side * side, dim)


@contextlib.contextmanager
def _positions_resized_at_once(embeddings: torch.nn.Module) -> Iterator[None]:
    """Within the block the embeddings module resizes its table with :func:`resized_positions`
    (an instance attribute over the static method it calls as ``self.resize_positional_embeddings``)."""

    def resize(table: torch.Tensor, spatial_shapes: torch.Tensor, max_length: int) -> torch.Tensor:
        return resized_positions(table, spatial_shapes, max_length).to(table.dtype)

    vars(embeddings)["resize_positional_embeddings"] = resize
    try:
        yield
    finally:
        vars(embeddings).pop("resize_positional_embeddings", None)


class NaFlexImageFeatures(torch.nn.Module):
    """``(pixel_values, pixel_attention_mask, spatial_shapes)`` → ``image_features`` (module doc)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        inner = getattr(model, "model", model)
        self.tower = cast(Any, inner).vision_tower
        self.projector = cast(Any, inner).multi_modal_projector

    def forward(self, pixel_values: torch.Tensor, pixel_attention_mask: torch.Tensor,
                spatial_shapes: torch.Tensor) -> torch.Tensor:
        with _positions_resized_at_once(self.tower.embeddings):
            hidden = self.tower(pixel_values=pixel_values, spatial_shapes=spatial_shapes,
                                pixel_attention_mask=pixel_attention_mask).last_hidden_state
        tiles, patches, width = hidden.shape
        factor = int(self.projector.factor)
        rows, columns = spatial_shapes[:, 0:1] // factor, spatial_shapes[:, 1:2] // factor
        slot = torch.arange(patches // (factor * factor), device=hidden.device)[None]
        valid = slot < rows * columns  # [tiles, slots]
        slot = torch.where(valid, slot, 0)
        block = torch.arange(factor, device=hidden.device)
        row = (slot // columns)[:, :, None, None] * factor + block[:, None]  # [tiles, slots, factor, factor]
        column = (slot % columns)[:, :, None, None] * factor + block[None, :]
        source = row * spatial_shapes[:, 1, None, None, None] + column
        gathered = torch.gather(hidden, 1, source.reshape(tiles, -1, 1).expand(-1, -1, width))
        blocks = gathered.reshape(-1, factor, factor, width)  # one token's patches, as the map holds them
        tokens = self.projector(blocks)  # pixel_unshuffle of a block is its one token
        return tokens.reshape(tiles, -1, tokens.shape[-1])[valid]


def tile_inputs(sizes: Sizes, channels: int, patch: int, factor: int) -> dict[str, torch.Tensor]:
    """One input set: 2 or 3 tiles (``sizes.seed``) of different patch grids, each side a multiple
    of ``factor`` (the processor's rule), zero-padded to the longest tile's patch count plus one
    block (as the processor pads to ``max_num_patches``)."""
    count = 2 + sizes.seed % 2
    shapes = [[factor * (1 + (i + sizes.seed) % 3), factor * (2 + i % 2)] for i in range(count)]
    longest = max(h * w for h, w in shapes) + factor * factor
    g = _generator(sizes)
    pixels = torch.zeros(count, longest, channels * patch * patch)
    mask = torch.zeros(count, longest, dtype=torch.int64)
    for i, (h, w) in enumerate(shapes):
        pixels[i, : h * w] = torch.randn(h * w, channels * patch * patch, generator=g)
        mask[i, : h * w] = 1
    return {"pixel_values": pixels, PIXEL_MASK: mask, SPATIAL_SHAPES: torch.tensor(shapes, dtype=torch.int64)}


def vision_component(loaded: LoadedModel) -> Component:
    """The ``vision_encoder`` component (module doc)."""
    model = loaded.model
    config: Any = model.config
    vision = config.vision_config
    channels, patch, factor = int(getattr(vision, "num_channels", 3)), int(vision.patch_size), int(config.downsample_factor)

    def make(sizes: Sizes) -> dict[str, Any]:
        return tile_inputs(sizes, channels, patch, factor)

    # the tiles are the batch: transformers.js stacks every image's tiles
    patches = torch.export.Dim(_PATCHES, min=1)
    dynamic = {"pixel_values": {0: IMAGES, 1: patches}, PIXEL_MASK: {0: IMAGES, 1: patches}, SPATIAL_SHAPES: {0: IMAGES}}
    return Component("vision_encoder", NaFlexImageFeatures(model), make, dynamic,
                     ["pixel_values", PIXEL_MASK, SPATIAL_SHAPES], ["image_features"], resizable=False)


def reads_patches(model: torch.nn.Module) -> bool:
    """Whether an image model reads NaFlex patch sequences itself (SigLIP2's vision model and
    image classifier: ``forward(pixel_values, pixel_attention_mask, spatial_shapes)``)."""
    forward = inspect.signature(type(model).forward).parameters
    return SPATIAL_SHAPES in forward and PIXEL_MASK in forward and any(
        hasattr(m, "resize_positional_embeddings") for m in model.modules())


class NaFlexImageModel(torch.nn.Module):
    """``(pixel_values, pixel_attention_mask, spatial_shapes)`` → the task's outputs of a model that
    reads patch sequences (:func:`reads_patches`), its position table resized for all images at once
    (:func:`resized_positions`)."""

    def __init__(self, model: torch.nn.Module, outputs: list[str]) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)
        self.embeddings = next(m for m in model.modules() if hasattr(m, "resize_positional_embeddings"))

    def forward(self, pixel_values: torch.Tensor, pixel_attention_mask: torch.Tensor,
                spatial_shapes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self._run(pixel_values=pixel_values, pixel_attention_mask=pixel_attention_mask,
                         spatial_shapes=spatial_shapes)

    def _run(self, **inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        with _positions_resized_at_once(self.embeddings):
            out = self.model(**inputs)
        return tuple(out[name] for name in self.outputs)


def image_component(loaded: LoadedModel) -> Component:
    """A SigLIP2 NaFlex image model's one graph (``model``): ``pixel_values`` ``[batch_size,
    num_patches, C * patch²]``, ``pixel_attention_mask`` ``[batch_size, num_patches]`` and
    ``spatial_shapes`` ``[batch_size, 2]`` (as ``Siglip2ImageProcessor`` returns them, each image
    at its own aspect ratio) → ``outputs`` (image-classification: ``logits``; feature-extraction:
    ``last_hidden_state``, and ``pooler_output`` with the attention-pooling head), validated on
    batches of images of other grids."""
    config: Any = loaded.model.config
    vision = getattr(config, "vision_config", None) or config
    outputs = list(loaded.task.outputs)
    if loaded.task.name == "feature-extraction" and getattr(vision, "vision_use_head", True):
        outputs.append("pooler_output")
    channels, patch = int(getattr(vision, "num_channels", 3)), int(vision.patch_size)

    def make(sizes: Sizes) -> dict[str, Any]:
        return tile_inputs(sizes, channels, patch, 1)

    patches = torch.export.Dim(_PATCHES, min=1)
    dynamic = {"pixel_values": {0: BATCH, 1: patches}, PIXEL_MASK: {0: BATCH, 1: patches}, SPATIAL_SHAPES: {0: BATCH}}
    return Component("model", NaFlexImageModel(loaded.model, outputs), make, dynamic,
                     ["pixel_values", PIXEL_MASK, SPATIAL_SHAPES], outputs, resizable=False)


class NaFlexTextImageModel(NaFlexImageModel):
    """SigLIP2's dual encoder: ``(input_ids, attention_mask, pixel_values, pixel_attention_mask,
    spatial_shapes)`` → the task's outputs (``logits_per_image``...)."""

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,  # type: ignore[override]
                pixel_values: torch.Tensor, pixel_attention_mask: torch.Tensor,
                spatial_shapes: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self._run(input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixel_values,
                         pixel_attention_mask=pixel_attention_mask, spatial_shapes=spatial_shapes)


def text_image_component(loaded: LoadedModel) -> Component:
    """SigLIP2's dual encoder (``Siglip2Model``: zero-shot-image-classification, feature-extraction)
    as CLIP's graph with NaFlex images: ``input_ids`` / ``attention_mask`` ``[text_batch_size,
    sequence_length]`` and the three image inputs of :func:`image_component` over
    ``image_batch_size`` → ``logits_per_image``, ``logits_per_text``, ``text_embeds``, ``image_embeds``."""
    config: Any = loaded.model.config
    vision, text = config.vision_config, config.text_config
    channels, patch = int(getattr(vision, "num_channels", 3)), int(vision.patch_size)

    def make(sizes: Sizes) -> dict[str, Any]:
        ids = token_ids(text, sizes.batch, sizes.sequence, _generator(sizes))
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), **tile_inputs(sizes, channels, patch, 1)}

    patches = torch.export.Dim(_PATCHES, min=1)
    text_axes = {0: TEXT_BATCH, 1: SEQUENCE}
    dynamic = {"input_ids": text_axes, "attention_mask": dict(text_axes), "pixel_values": {0: IMAGE_BATCH, 1: patches},
               PIXEL_MASK: {0: IMAGE_BATCH, 1: patches}, SPATIAL_SHAPES: {0: IMAGE_BATCH}}
    outputs = list(loaded.task.outputs)
    return Component("model", NaFlexTextImageModel(loaded.model, outputs), make, dynamic, None, outputs,
                     resizable=False)


__all__ = ["NaFlexImageFeatures", "NaFlexImageModel", "NaFlexTextImageModel", "antialiased_weights", "image_component",
           "reads_patches", "resized_positions", "supports", "text_image_component", "tile_inputs", "vision_component"]
