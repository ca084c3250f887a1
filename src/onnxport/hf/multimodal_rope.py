"""Vision-language models with a patch-grid vision tower and multimodal rotary positions (Qwen2-VL,
Qwen2.5-VL, Qwen3.5, Qwen3.5-MoE, GLM-OCR): the vision graph and the decoder's 3-row positions,
as transformers.js' ``Qwen2VLForConditionalGeneration`` runs them
(``src/models/qwen2_vl/modeling_qwen2_vl.js``; Qwen2.5-VL and its subclasses Qwen3.5 and GLM-OCR
name the grid input ``image_grid_thw``, ``src/models/qwen2_5_vl``, ``src/models/qwen3_5``,
``src/models/glm_ocr``):

- ``vision_encoder.onnx``: ``pixel_values`` ``[num_patches, C * temporal_patch * patch * patch]``
  (the processor's flattened patches of every image, image after image) and ``grid_thw``
  ``[num_images, 3]`` (int64: frames, patch rows, patch columns of each image) →
  ``image_features`` ``[num_patches / merge², hidden]`` (the rows written at the image tokens);
- ``decoder_model_merged.onnx`` takes ``position_ids`` ``[3, batch_size, sequence_length]``
  (temporal, height and width positions: transformers' ``get_rope_index``, which the caller runs,
  as transformers.js does, and which gives decode steps ``past_length + rope_deltas``).

transformers computes the tower's per-image rotary positions and attention segments with Python
loops over ``grid_thw.tolist()`` and splits the attention per image by data-dependent lengths,
which fixes the number and sizes of the images in a capture. The graph instead computes the
positions with tensor ops (:func:`grid_positions`, handed to the tower as its precomputed
``position_ids``) and runs one attention over all patches with a block-diagonal mask built from
the segment boundaries (:func:`varlen_attention`, registered as a transformers attention function
whose name marks it as a varlen kernel, so the tower hands it ``cu_seq_lens_q``). Qwen2.5-VL's
window attention reorders the merged tokens window by window and attends within each window on
most blocks; :func:`window_order` computes that order and the window boundaries with tensor ops,
handed to the tower as its precomputed ``window_index`` / ``cu_window_seqlens``. Qwen3.5's tower
resamples a learned position table to each grid with transformers'
``get_vision_interpolation_indices_and_weights``, already tensor ops (``repeat_interleave`` over
the grid), which the capture keeps as it is.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

import torch

from onnxport.errors import HFError
from onnxport.hf.dims import IMAGES
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes
from onnxport.hf.parts import generator as _generator

GRID = "grid_thw"  # transformers.js' name for the vision graph's grid input (image_grid_thw_name)
# transformers.js' Qwen2_5_VLForConditionalGeneration and its subclasses (Qwen3.5, GLM-OCR)
_GRID_NAMES = {"qwen2_5_vl": "image_grid_thw", "qwen3_5": "image_grid_thw", "qwen3_5_moe": "image_grid_thw",
               "glm_ocr": "image_grid_thw"}
_FRAME_KEY = 1 << 24  # window_order: frame start x this + window number (< 2^24 windows a frame)
# A transformers attention implementation name: "flash" in it makes the tower pass cu_seq_lens_q
# (transformers.utils.generic.is_flash_attention_requested); the function is plain SDPA.
VARLEN = "onnxport_flash_varlen_sdpa"


def varlen_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *,
                     attention_mask: Any = None, scaling: float | None = None, dropout: float = 0.0,
                     cu_seq_lens_q: torch.Tensor | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """Attention of packed sequences: ``query``/``key``/``value`` ``[1, heads, tokens, dim]``, each
    token attending to the tokens of its own segment (``cu_seq_lens_q``: ``[segments + 1]``
    cumulative boundaries), as flash attention's varlen kernel; returns ``[1, tokens, heads, dim]``."""
    if cu_seq_lens_q is None:
        raise HFError(f"{VARLEN} attention needs cu_seq_lens_q (the segment boundaries of the packed patches).")
    tokens = torch.arange(query.shape[2], device=query.device)
    segment = (tokens[:, None] >= cu_seq_lens_q[1:][None, :].to(tokens.dtype)).sum(-1)
    mask = segment[:, None] == segment[None, :]
    out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scaling)
    return out.transpose(1, 2), None


def _located(grid: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For each of ``count`` tokens laid out image after image (``grid`` ``[images, 3]``: frames,
    rows, columns): its image, its index within the image and the image's first token."""
    sizes = grid.prod(-1)
    starts = sizes.cumsum(0) - sizes
    index = torch.arange(count, device=grid.device)
    image = (index[:, None] >= (starts + sizes)[None, :]).sum(-1)
    return image, index - starts[image], starts[image]


def grid_positions(grid_thw: torch.Tensor, tokens: int, merge: int) -> torch.Tensor:
    """The (row, column) of every patch ``[tokens, 2]`` (int64), laid out as transformers'
    ``get_vision_position_ids`` (``transformers/vision_utils.py``): per image, per frame, block-major
    over ``merge x merge`` blocks; with tensor ops instead of its loop over ``grid_thw.tolist()``."""
    image, local, _ = _located(grid_thw, tokens)
    height, width = grid_thw[image, 1], grid_thw[image, 2]
    k = local % (height * width)
    blocks_per_row = width // merge
    row = (k // (merge * merge * blocks_per_row)) * merge + (k // merge) % merge
    column = ((k // (merge * merge)) % blocks_per_row) * merge + k % merge
    return torch.stack([row, column], -1)


def window_order(grid_thw: torch.Tensor, merged: int, merge: int, window_size: int,
                 patch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Qwen2.5-VL's window order, as transformers' ``get_vision_window_index``
    (``transformers/vision_utils.py``) with tensor ops instead of its loop over ``grid_thw.tolist()``.

    Args:
        grid_thw: ``[images, 3]`` frames, patch rows, patch columns.
        merged: The number of merged tokens (patches / merge²).
        merge: The spatial merge size; window_size: in pixels; patch_size: in pixels.

    Returns:
        ``window_index`` ``[merged]`` (int64: the merged tokens window by window, each window
        row-major, windows row-major in each frame) and ``cu_window_seqlens`` ``[windows + 1]``
        (int32 patch boundaries of the non-empty windows).
    """
    side = window_size // merge // patch_size  # merged tokens per window side
    grid = torch.stack([grid_thw[:, 0], grid_thw[:, 1] // merge, grid_thw[:, 2] // merge], -1)
    image, local, start = _located(grid, merged)
    rows, columns = grid[image, 1], grid[image, 2]
    frame_start = start + local // (rows * columns) * rows * columns
    k = local % (rows * columns)
    y, x = k // columns, k % columns
    window = frame_start * _FRAME_KEY + (y // side) * (columns // side + 1) + x // side
    order = torch.argsort(window * side * side + (y % side) * side + x % side)
    ordered = window[order]
    starts = torch.nonzero(ordered[1:] != ordered[:-1]).flatten() + 1
    bounds = torch.cat([starts.new_zeros(1), starts, starts.new_full((1,), merged)])
    return order, (bounds * merge * merge).to(torch.int32)


def grid_name(model: torch.nn.Module) -> str:
    """The vision graph's grid input name transformers.js feeds for this model type."""
    return _GRID_NAMES.get(str(getattr(model.config, "model_type", "")), GRID)


def _tower(model: torch.nn.Module) -> Any:
    return getattr(getattr(model, "model", model), "visual", None)


def supports(model: torch.nn.Module) -> bool:
    """Whether the model's vision tower is Qwen2-VL's, Qwen2.5-VL's, Qwen3.5's or GLM-OCR's: a ``visual`` module
    whose forward takes ``(hidden_states, grid_thw)`` and reads only the per-image positions,
    attention segments, (Qwen2.5-VL) window order and (Qwen3.5) interpolated position table: no
    deepstack features (Qwen3-VL: its decoder adds them at the image tokens, an input transformers.js'
    graphs do not have) and no per-image position table (GLM-4V)."""
    tower = _tower(model)
    if tower is None or not hasattr(tower, "spatial_merge_size"):
        return False
    try:
        source = inspect.getsource(type(tower).forward)
    except (OSError, TypeError):
        return False
    needed = ("get_vision_position_ids", "get_vision_attention_seqlens")
    others = ("deepstack", "interpolate", "self.embeddings")  # GLM-4V's per-image position table
    windowed = "window" not in source or "get_vision_window_index" in source and hasattr(tower, "window_size")
    return all(n in source for n in needed) and not any(n in source for n in others) and windowed


class GridImageFeatures(torch.nn.Module):
    """``(pixel_values, grid_thw)`` → ``image_features``: the vision tower and its patch merger
    (module doc), with the positions of :func:`grid_positions` and :func:`varlen_attention`."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        from transformers.modeling_utils import (  # heavy optional dependency (onnxport[hf])
            ALL_ATTENTION_FUNCTIONS,
        )

        ALL_ATTENTION_FUNCTIONS[VARLEN] = varlen_attention
        self.tower = _tower(model)

    def forward(self, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        config = self.tower.config
        tokens = pixel_values.shape[0]
        merge = int(self.tower.spatial_merge_size)
        precomputed: dict[str, Any] = {"position_ids": grid_positions(grid_thw, tokens, merge), "max_seqlen": tokens}
        if hasattr(self.tower, "window_size"):  # Qwen2.5-VL
            order, bounds = window_order(grid_thw, tokens // (merge * merge), merge, int(self.tower.window_size),
                                         int(self.tower.patch_size))
            precomputed.update(window_index=order, cu_window_seqlens=bounds, max_window_seqlen=tokens)
        saved = config._attn_implementation
        config._attn_implementation = VARLEN  # the tower's own check reads it at call time
        try:
            out = self.tower(pixel_values.to(self.tower.dtype), grid_thw=grid_thw, **precomputed)
        finally:
            config._attn_implementation = saved
        return cast(torch.Tensor, out.pooler_output)


def image_grids(sizes: Sizes, merge: int) -> torch.Tensor:
    """``grid_thw`` of one input set: 2 or 3 images (``sizes.seed``) of different patch grids,
    every side a multiple of ``merge``, one of two frames (a video-like entry)."""
    count = 2 + sizes.seed % 2
    grids = [[1 + (i == 1), merge * (1 + (i + sizes.seed) % 3), merge * (1 + i % 2)] for i in range(count)]
    return torch.tensor(grids, dtype=torch.int64)


def vision_component(loaded: LoadedModel) -> Component:
    """The ``vision_encoder`` component (module doc)."""
    tower = _tower(loaded.model)
    config = tower.config
    merge = int(tower.spatial_merge_size)
    width = int(config.in_channels) * int(config.temporal_patch_size) * int(config.patch_size) ** 2

    def make(sizes: Sizes) -> dict[str, Any]:
        grid = image_grids(sizes, merge)
        patches = int(grid.prod(-1).sum())
        return {"pixel_values": torch.randn(patches, width, generator=_generator(sizes)), GRID: grid}

    # the patch merger groups merge² patches: the patch count is a multiple of it
    patches = merge * merge * torch.export.Dim("num_merged_patches", min=1)
    dynamic = {"pixel_values": {0: patches}, GRID: {0: IMAGES}}
    return Component("vision_encoder", GridImageFeatures(loaded.model), make, dynamic,
                     ["pixel_values", grid_name(loaded.model)], ["image_features"], resizable=False)


__all__ = ["GRID", "VARLEN", "GridImageFeatures", "grid_name", "grid_positions", "image_grids", "supports",
           "varlen_attention", "vision_component", "window_order"]
