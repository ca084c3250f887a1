"""Capture-time replacements for diffusers code that fixes sizes (applied by
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
- Mochi's attention (``MochiAttnProcessor2_0``) loops over the batch and keeps each prompt's valid
  tokens with ``nonzero``: the loop fixes the batch, the ``nonzero`` makes the lengths data
  dependent (:func:`mochi_attention`).
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


def _mochi_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Mochi's rotation of interleaved (even, odd) pairs, computed in float32 (diffusers 0.42)."""
    even, odd = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2).to(x.dtype)


def mochi_attention(
    self: Any, attn: Any, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor,
    attention_mask: torch.Tensor, image_rotary_emb: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``MochiAttnProcessor2_0.__call__`` for the whole batch at once, same values.

    The original attends, per sample, over the video tokens and the prompt tokens whose
    ``attention_mask`` is set, gathered in order with ``nonzero``; its output has the video rows,
    then one row per valid prompt token, then zero rows up to the prompt length. Here each prompt's
    valid tokens are moved first (a stable ``argsort`` of the mask, the order ``nonzero`` gives),
    the keys past each prompt's count are masked out of one ``scaled_dot_product_attention`` (the
    softmax over the kept keys is the original's), and the rows past the count are zeroed.
    """
    heads = attn.heads
    query, key, value = (proj(hidden_states).unflatten(2, (heads, -1)) for proj in (attn.to_q, attn.to_k, attn.to_v))
    if attn.norm_q is not None:
        query = attn.norm_q(query)
    if attn.norm_k is not None:
        key = attn.norm_k(key)
    projections = (attn.add_q_proj, attn.add_k_proj, attn.add_v_proj)
    text_query, text_key, text_value = (proj(encoder_hidden_states).unflatten(2, (heads, -1)) for proj in projections)
    if attn.norm_added_q is not None:
        text_query = attn.norm_added_q(text_query)
    if attn.norm_added_k is not None:
        text_key = attn.norm_added_k(text_key)
    if image_rotary_emb is not None:
        query, key = _mochi_rotary(query, *image_rotary_emb), _mochi_rotary(key, *image_rotary_emb)
    valid = attention_mask.bool()  # [batch, text]
    count = valid.sum(dim=1, keepdim=True)
    order = torch.argsort((~valid).to(torch.int8), dim=1, stable=True)  # valid tokens first, in order
    index = order[:, :, None, None].expand(-1, -1, text_query.shape[2], text_query.shape[3])
    text_query, text_key, text_value = (t.gather(1, index) for t in (text_query, text_key, text_value))
    kept = torch.arange(valid.shape[1], device=valid.device)[None, :] < count  # [batch, text]
    rows = torch.cat([torch.ones_like(kept[:, :1]).expand(-1, query.shape[1]), kept], dim=1)  # [batch, total]
    q, k, v = (torch.cat([a, b], dim=1).transpose(1, 2) for a, b in ((query, text_query), (key, text_key), (value, text_value)))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=rows[:, None, None, :], dropout_p=0.0)
    out = out * rows[:, None, :, None].to(out.dtype)  # the original pads the rows past the count with 0
    out = out.transpose(1, 2).flatten(2, 3)
    hidden_states, encoder_hidden_states = out.split_with_sizes((query.shape[1], text_query.shape[1]), dim=1)
    hidden_states = attn.to_out[1](attn.to_out[0](hidden_states))
    if hasattr(attn, "to_add_out"):
        encoder_hidden_states = attn.to_add_out(encoder_hidden_states)
    return hidden_states, encoder_hidden_states


# (module, class, method, the replacement made from the original), as patches.METHOD_PATCHES
DIFFUSERS_PATCHES: tuple[tuple[str, str, str, Callable[[Any], Callable[..., Any]]], ...] = (
    ("diffusers.models.embeddings", "PatchEmbed", "forward", always_interpolating),
    ("diffusers.models.transformers.transformer_chroma", "ChromaCombinedTimestepTextProjEmbeddings", "forward",
     lambda _original: chroma_timestep_embedding),
    ("diffusers.models.embeddings", "CogVideoXPatchEmbed", "_get_positional_embeddings", cogvideox_table),
    ("diffusers.models.embeddings", "CogVideoXPatchEmbed", "forward", always_recomputed),
    ("diffusers.models.attention_processor", "MochiAttnProcessor2_0", "__call__", lambda _original: mochi_attention),
)
