"""Capture-time replacements for diffusers' embeddings that fix sizes (applied by
:func:`onnxport.capture.patches.library_patches` through :data:`DIFFUSERS_PATCHES`).

- ``PatchEmbed.forward`` (DiT, PixArt) adds its registered sin-cos table at the configured
  sample size and recomputes it elsewhere, a branch torch.export records without a guard
  (:func:`always_interpolating`).
- Chroma's timestep embedding builds its zero guidance as ``torch.tensor([0] * batch_size)``,
  which fixes the batch (:func:`chroma_timestep_embedding`).
- CogVideoX's ``CogVideoXPatchEmbed`` adds its registered 3-D sin-cos table at the configured
  sample size (a comparison of the sizes with the configured ones: a guard that fixes them) and
  elsewhere recomputes it with an in-place ``.data`` copy into a zero tensor, which torch.export's
  decomposition refuses ("Constant ... is mutated in the forward method")
  (:func:`cogvideox_table`, :func:`always_recomputed`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch


def always_interpolating(forward: Callable[..., Any]) -> Callable[..., Any]:
    """diffusers' ``PatchEmbed.forward`` (DiT, PixArt) taking its general path at every size.

    It recomputes its sin-cos position table when the latent's patch grid differs from the
    configured one (``if self.height != height or self.width != width``) and otherwise adds the
    table it registered. An example at the configured size leaves that branch out of the graph
    without a guard torch.export reports, so the graph runs at that size only. With the configured
    grid hidden for the call, the table is always recomputed. That is exact at the configured size
    when the registered table is the same formula at the same grid: a square grid and a
    non-persistent buffer (``pos_embed_max_size`` unset: SD3's cropped, persistent table is
    left alone).
    """

    @functools.wraps(forward)
    def wrapper(self: Any, latent: torch.Tensor) -> Any:
        square = self.height == self.width
        formula = "pos_embed" in getattr(self, "_non_persistent_buffers_set", ())
        if self.pos_embed_max_size or getattr(self, "pos_embed", None) is None or not (square and formula):
            return forward(self, latent)
        configured = self.height, self.width
        self.height = self.width = -1
        try:
            return forward(self, latent)
        finally:
            self.height, self.width = configured

    return wrapper


def chroma_timestep_embedding(self: Any, timestep: torch.Tensor) -> torch.Tensor:
    """diffusers' ``ChromaCombinedTimestepTextProjEmbeddings.forward`` (Chroma) with its zero
    guidance built from the symbolic batch size.

    The original embeds ``torch.tensor([0] * batch_size)``: the Python list needs an ``int``, so
    the capture fixed the batch to the example's and the graph ran at that batch only. Here the
    zeros are ``torch.zeros(batch_size)`` (int64, as the list gives), the rest as in diffusers
    0.42: ``[time_proj(t), guidance_proj(0)]`` repeated over the ``mod_proj`` rows, concatenated
    with ``mod_proj``: ``[batch, rows, 4 * channels]``.
    """
    batch = timestep.shape[0]
    rows = self.mod_proj.shape[0]
    time = self.time_proj(timestep).to(dtype=timestep.dtype)
    zero = torch.zeros(batch, dtype=torch.int64, device=timestep.device)
    guidance = self.guidance_proj(zero).to(dtype=timestep.dtype)
    modulation = self.mod_proj.to(dtype=time.dtype, device=time.device).repeat(batch, 1, 1)
    steps = torch.cat([time, guidance], dim=1).unsqueeze(1).repeat(1, rows, 1)
    return torch.cat([steps, modulation], dim=-1).to(timestep.dtype)


def cogvideox_table(original: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``CogVideoXPatchEmbed._get_positional_embeddings`` without the in-place copy: the
    ``max_text_seq_length`` zero rows of the text tokens concatenated with the flattened 3-D
    sin-cos table of ``get_3d_sincos_pos_embed`` (the function the original calls, read from its
    module), ``[1, text + frames * height * width, embed_dim]`` float32, as diffusers 0.42 builds it
    with ``new_zeros`` and ``.data[:, text:].copy_(table)``."""
    sincos = original.__globals__["get_3d_sincos_pos_embed"]

    def table(self: Any, sample_height: Any, sample_width: Any, sample_frames: Any, device: Any = None) -> torch.Tensor:
        height, width = sample_height // self.patch_size, sample_width // self.patch_size
        frames = (sample_frames - 1) // self.temporal_compression_ratio + 1
        grid = sincos(self.embed_dim, (width, height), frames, self.spatial_interpolation_scale,
                      self.temporal_interpolation_scale, device=device, output_type="pt").flatten(0, 1)  # fmt: skip
        text = grid.new_zeros(self.max_text_seq_length, self.embed_dim)
        return torch.cat([text, grid]).unsqueeze(0)

    return table


def always_recomputed(forward: Callable[..., Any]) -> Callable[..., Any]:
    """``CogVideoXPatchEmbed.forward`` taking its recomputing path at every size: the configured
    sizes are hidden for the call, so the table is built from the input's (symbolic) sizes with
    :func:`cogvideox_table`, the formula its registered table was built with at those sizes. A
    learned table (``use_learned_positional_embeddings``: CogVideoX-5b-I2V, which refuses other
    sizes) is left alone."""

    @functools.wraps(forward)
    def wrapper(self: Any, text_embeds: torch.Tensor, image_embeds: torch.Tensor) -> Any:
        if self.use_learned_positional_embeddings or not self.use_positional_embeddings:
            return forward(self, text_embeds, image_embeds)
        configured = self.sample_height, self.sample_width, self.sample_frames
        self.sample_height = self.sample_width = self.sample_frames = -1
        try:
            return forward(self, text_embeds, image_embeds)
        finally:
            self.sample_height, self.sample_width, self.sample_frames = configured

    return wrapper


# (module, class, method, the replacement made from the original), as patches.METHOD_PATCHES
DIFFUSERS_PATCHES: tuple[tuple[str, str, str, Callable[[Any], Callable[..., Any]]], ...] = (
    ("diffusers.models.embeddings", "PatchEmbed", "forward", always_interpolating),
    ("diffusers.models.transformers.transformer_chroma", "ChromaCombinedTimestepTextProjEmbeddings", "forward",
     lambda _original: chroma_timestep_embedding),
    ("diffusers.models.embeddings", "CogVideoXPatchEmbed", "_get_positional_embeddings", cogvideox_table),
    ("diffusers.models.embeddings", "CogVideoXPatchEmbed", "forward", always_recomputed),
)
