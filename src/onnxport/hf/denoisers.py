"""The denoiser of a diffusers pipeline as one ONNX model, with the input and output names of
Optimum's ONNX configs (``optimum/exporters/onnx/model_configs.py`` in optimum-onnx:
``UNetOnnxConfig``, ``SD3TransformerOnnxConfig``, ``FluxTransformerOnnxConfig``) so that its ONNX
Runtime pipelines (``optimum/onnxruntime/modeling_diffusion.py``: ``ORTUnet``, ``ORTTransformer``)
feed them by name:

- ``unet/model.onnx`` (``UNet2DConditionModel``): ``sample`` ``[batch_size, C, height, width]``
  float32, any latent size (the up-sampling stages resize to their skip connections:
  :mod:`onnxport.capture.upsampling`), ``timestep`` a float32 scalar (0-d, as Optimum's
  current config; diffusers broadcasts it to the batch), ``encoder_hidden_states``
  ``[batch_size, sequence_length, cross_attention_dim]``; SDXL's UNets
  (``addition_embed_type="text_time"``) also ``text_embeds`` ``[batch_size, D]`` and ``time_ids``
  ``[batch_size, 6]`` (5 for a refiner with ``requires_aesthetics_score``), the pipeline's
  ``added_cond_kwargs``; latent-consistency UNets (``time_cond_proj_dim``) ``timestep_cond``
  ``[batch_size, time_cond_proj_dim]``. Output ``out_sample``, the shape of ``sample``.
- ``transformer/model.onnx``, Stable Diffusion 3 (``SD3Transformer2DModel``): ``hidden_states``
  ``[batch_size, C, p*height, p*width]`` (``p`` = ``patch_size``), ``encoder_hidden_states``
  ``[batch_size, sequence_length, joint_attention_dim]``, ``pooled_projections``
  ``[batch_size, pooled_projection_dim]``, ``timestep`` ``[batch_size]`` float32. Output
  ``out_hidden_states``, the shape of ``hidden_states``.
- ``transformer/model.onnx``, Flux (``FluxTransformer2DModel``): ``hidden_states``
  ``[batch_size, packed_height_width, C]`` (2x2-packed latents), ``encoder_hidden_states``,
  ``pooled_projections``, ``timestep`` ``[batch_size]`` (the pipeline's ``t / 1000``), ``img_ids``
  ``[packed_height_width, 3]`` and ``txt_ids`` ``[sequence_length, 3]`` float32 (diffusers >= 0.31:
  no batch axis), ``guidance`` ``[batch_size]`` when ``guidance_embeds`` (FLUX.1-dev). Output
  ``out_hidden_states`` ``[batch_size, packed_height_width, out_channels]``.

- ``transformer/model.onnx``, Sana and PixArt-α/Σ (``SanaTransformer2DModel``,
  ``PixArtTransformer2DModel``; optimum-onnx ``SanaTransformerOnnxConfig``): ``hidden_states``
  ``[batch_size, C, p*height, p*width]``, ``encoder_hidden_states`` ``[batch_size,
  sequence_length, caption_channels]``, ``encoder_attention_mask`` ``[batch_size,
  sequence_length]`` int64 (1 for the prompt's tokens, 0 for padding: the text encoder's mask, as
  the pipelines pass it), ``timestep`` ``[batch_size]`` float32; a Sana transformer with
  ``guidance_embeds`` (Sana-Sprint) also ``guidance`` ``[batch_size]``, a PixArt-α transformer with
  ``use_additional_conditions`` (the 1024 px models) ``resolution`` ``[batch_size, 2]`` and
  ``aspect_ratio`` ``[batch_size, 1]`` float32 (``PixArtAlphaPipeline``'s ``added_cond_kwargs``).
  Output ``out_hidden_states`` ``[batch_size, out_channels, p*height, p*width]``.

Other conditionings (``class_embed_type``, ``addition_embed_type`` other than ``text_time``) and
other transformer denoisers (HunyuanDiT, Lumina, ...) are refused with an ``HFError`` naming them.
"""

from __future__ import annotations

from typing import Any

import torch

from onnxport.capture.dynamic_shapes import DimName
from onnxport.errors import HFError
from onnxport.hf.dims import BATCH, SEQUENCE, image_sides
from onnxport.hf.parts import Component, Sizes
from onnxport.hf.parts import generator as _generator

# Optimum's name of the packed latent sequence of Flux (``FluxTransformerOnnxConfig``).
PACKED = DimName("packed_height_width", min=1)
TRANSFORMERS = ("SD3Transformer2DModel", "FluxTransformer2DModel", "SanaTransformer2DModel", "PixArtTransformer2DModel")
# The transformers conditioned on a padded caption and its mask (no pooled projection).
MASKED = ("SanaTransformer2DModel", "PixArtTransformer2DModel")


class UNet(torch.nn.Module):
    """``(sample, timestep, encoder_hidden_states[, text_embeds, time_ids][, timestep_cond])`` →
    ``out_sample``; the inputs a UNet's config does not use are left out of the capture."""

    def __init__(self, unet: torch.nn.Module) -> None:
        super().__init__()
        self.unet = unet

    def forward(
        self,
        sample: torch.Tensor,
        timestep: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        text_embeds: torch.Tensor | None = None,
        time_ids: torch.Tensor | None = None,
        timestep_cond: torch.Tensor | None = None,
    ) -> torch.Tensor:
        added = None if text_embeds is None else {"text_embeds": text_embeds, "time_ids": time_ids}
        return self.unet(
            sample, timestep, encoder_hidden_states, timestep_cond=timestep_cond, added_cond_kwargs=added, return_dict=False
        )[0]


class Transformer(torch.nn.Module):
    """A transformer denoiser: the keyword inputs above → ``out_hidden_states``. SD3 and Flux take
    ``pooled_projections`` (Flux also its ids and ``guidance``), Sana and PixArt
    ``encoder_attention_mask`` (Sana-Sprint ``guidance``, PixArt-α ``resolution`` and
    ``aspect_ratio``); the inputs a model does not take are left out of the capture, so the graph's
    inputs keep Optimum's order."""

    def __init__(self, transformer: torch.nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(
        self,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        pooled_projections: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        timestep: torch.Tensor | None = None,
        *,
        img_ids: torch.Tensor | None = None,
        txt_ids: torch.Tensor | None = None,
        guidance: torch.Tensor | None = None,
        resolution: torch.Tensor | None = None,
        aspect_ratio: torch.Tensor | None = None,
    ) -> torch.Tensor:
        # Every input's batch is the latents' (one batch_size dim). torch.export keeps one symbol per
        # input until its guards join them, and diffusers' prepare_attention_mask (Sana's and
        # PixArt's mask) and PixArt's size embedding (resolution) reshape by the latents' batch
        # before anything joins them.
        batched = (encoder_hidden_states, pooled_projections, encoder_attention_mask, timestep, guidance, resolution,
                   aspect_ratio)  # fmt: skip
        for tensor in batched:
            if tensor is not None:
                torch._check(tensor.shape[0] == hidden_states.shape[0])
        given = {"pooled_projections": pooled_projections, "encoder_attention_mask": encoder_attention_mask,
                 "img_ids": img_ids, "txt_ids": txt_ids, "guidance": guidance}  # fmt: skip
        extra: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
        if resolution is not None:
            extra["added_cond_kwargs"] = {"resolution": resolution, "aspect_ratio": aspect_ratio}
        return self.transformer(
            hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states, timestep=timestep,
            return_dict=False, **extra,
        )[0]  # fmt: skip


def _time_ids(config: Any, aesthetics: bool) -> tuple[int, int]:
    """SDXL's ``(text_embeds width, time_ids count)``: the UNet's ``add_embedding`` reads
    ``text_embeds`` beside ``addition_time_embed_dim`` sinusoids per time id (diffusers
    ``UNet2DConditionModel``, ``addition_embed_type="text_time"``); a refiner that
    ``requires_aesthetics_score`` (``model_index.json``) passes 5 ids, a base model 6
    (diffusers' ``StableDiffusionXLImg2ImgPipeline._get_add_time_ids``)."""
    count = 5 if aesthetics else 6
    width = int(config.projection_class_embeddings_input_dim or 0) - count * int(config.addition_time_embed_dim or 0)
    if width <= 0:
        raise HFError(
            "The pipeline's UNet has addition_embed_type='text_time' but projection_class_embeddings_input_dim "
            f"({config.projection_class_embeddings_input_dim}) leaves no room for text_embeds beside {count} time ids "
            f"of addition_time_embed_dim {config.addition_time_embed_dim}: check unet/config.json."
        )
    return width, count


def unet_component(unet: Any, index: dict[str, Any]) -> Component:
    """The UNet of a Stable Diffusion 1.x/2.x, SDXL or latent-consistency pipeline (module docstring).

    Raises:
        HFError: The UNet takes a conditioning Optimum's layout has no input for
            (``class_embed_type``, an ``addition_embed_type`` other than ``text_time``).
    """
    config = unet.config
    addition = getattr(config, "addition_embed_type", None)
    if getattr(config, "class_embed_type", None) or addition not in (None, "text_time"):
        raise HFError(
            f"The pipeline's UNet takes extra conditioning (class_embed_type={config.class_embed_type!r}, "
            f"addition_embed_type={addition!r}: unCLIP, Kandinsky, ControlNet-XS...); onnxport exports UNets of "
            "Stable Diffusion 1.x/2.x, SDXL (addition_embed_type='text_time') and latent-consistency models. Export it "
            "with onnxport.export and its conditioning as inputs."
        )
    # the checked latents (seed > 0) are off the multiples of the down-sampling factor
    scale = 2 ** (len(config.block_out_channels) - 1)
    xl = _time_ids(config, bool(index.get("requires_aesthetics_score"))) if addition == "text_time" else None
    cond = getattr(config, "time_cond_proj_dim", None)

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        side = scale * (2 + sizes.seed) + sizes.seed
        feeds = {
            "sample": torch.randn(sizes.batch, config.in_channels, side, side + scale, generator=gen),
            "timestep": torch.rand((), generator=gen) * 999 + 1,
            "encoder_hidden_states": torch.randn(sizes.batch, sizes.sequence, config.cross_attention_dim, generator=gen),
        }
        if xl is not None:
            feeds["text_embeds"] = torch.randn(sizes.batch, xl[0], generator=gen)
            feeds["time_ids"] = torch.randint(0, 1025, (sizes.batch, xl[1]), generator=gen).float()
        if cond:
            feeds["timestep_cond"] = torch.randn(sizes.batch, cond, generator=gen)
        return feeds

    dynamic: dict[str, Any] = {"sample": image_sides(1), "timestep": None, "encoder_hidden_states": {0: BATCH, 1: SEQUENCE}}
    if xl is not None:
        dynamic |= {"text_embeds": {0: BATCH}, "time_ids": {0: BATCH}}
    if cond:
        dynamic["timestep_cond"] = {0: BATCH}
    return Component("unet", UNet(unet), make, dynamic, None, ["out_sample"])


def check_transformer(cls: str) -> None:
    """Raise ``HFError`` unless ``cls`` (a ``model_index.json`` class name) is a transformer
    denoiser exported here; called before its weights load."""
    if cls not in TRANSFORMERS:
        raise HFError(
            f"The pipeline's denoiser is {cls}: onnxport.hf exports the UNets of Stable Diffusion 1.x/2.x/XL and the "
            f"transformers of Stable Diffusion 3, Flux, Sana and PixArt ({', '.join(TRANSFORMERS)}). Export it with "
            "onnxport.export."
        )


def masked_transformer_component(transformer: Any) -> Component:
    """The transformer denoiser of a Sana or PixArt pipeline (module docstring)."""
    config = transformer.config
    patch = int(config.patch_size)
    guided = bool(getattr(config, "guidance_embeds", False))
    conditioned = bool(getattr(transformer, "use_additional_conditions", False))

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        rows, cols = 2 + sizes.seed, 3 + sizes.seed
        mask = torch.ones(sizes.batch, sizes.sequence, dtype=torch.int64)
        mask[0, sizes.sequence // 2 + 1 :] = 0  # a padded caption
        feeds: dict[str, Any] = {
            "hidden_states": torch.randn(sizes.batch, config.in_channels, patch * rows, patch * cols, generator=gen),
            "encoder_hidden_states": torch.randn(sizes.batch, sizes.sequence, config.caption_channels, generator=gen),
            "encoder_attention_mask": mask,
            "timestep": torch.rand(sizes.batch, generator=gen) * 1000.0,
        }
        if guided:
            feeds["guidance"] = torch.full((sizes.batch,), 4.5) + torch.rand(sizes.batch, generator=gen)
        if conditioned:
            feeds["resolution"] = torch.tensor([[1024.0, 768.0]]).repeat(sizes.batch, 1)
            feeds["aspect_ratio"] = torch.full((sizes.batch, 1), 0.75)
        return feeds

    dynamic: dict[str, Any] = {
        "hidden_states": image_sides(patch),
        "encoder_hidden_states": {0: BATCH, 1: SEQUENCE},
        "encoder_attention_mask": {0: BATCH, 1: SEQUENCE},
        "timestep": {0: BATCH},
    }
    if guided:
        dynamic["guidance"] = {0: BATCH}
    if conditioned:
        dynamic |= {"resolution": {0: BATCH}, "aspect_ratio": {0: BATCH}}
    return Component("transformer", Transformer(transformer), make, dynamic, None, ["out_hidden_states"])


def transformer_component(transformer: Any, cls: str) -> Component:
    """The transformer denoiser of a Stable Diffusion 3, Flux, Sana or PixArt pipeline (module
    docstring); ``cls`` is one of :data:`TRANSFORMERS` (:func:`check_transformer`, before the
    weights load)."""
    if cls in MASKED:
        return masked_transformer_component(transformer)
    config = transformer.config
    flux = cls == "FluxTransformer2DModel"
    patch = int(config.patch_size)

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        rows, cols = 2 + sizes.seed, 3 + sizes.seed
        feeds: dict[str, Any] = {}
        if flux:
            feeds["hidden_states"] = torch.randn(sizes.batch, rows * cols, config.in_channels, generator=gen)
        else:
            feeds["hidden_states"] = torch.randn(sizes.batch, config.in_channels, patch * rows, patch * cols, generator=gen)
        feeds["encoder_hidden_states"] = torch.randn(sizes.batch, sizes.sequence, config.joint_attention_dim, generator=gen)
        feeds["pooled_projections"] = torch.randn(sizes.batch, config.pooled_projection_dim, generator=gen)
        feeds["timestep"] = torch.rand(sizes.batch, generator=gen) * (1.0 if flux else 1000.0)
        if flux:
            # The pipeline's ids: (0, row, column) per packed latent, zeros per text token
            # (FluxPipeline._prepare_latent_image_ids).
            grid = torch.stack(torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij"), -1).reshape(-1, 2)
            feeds["img_ids"] = torch.cat([torch.zeros(rows * cols, 1), grid.float()], 1)
            feeds["txt_ids"] = torch.zeros(sizes.sequence, 3)
            if config.guidance_embeds:
                feeds["guidance"] = torch.full((sizes.batch,), 3.5) + torch.rand(sizes.batch, generator=gen)
        return feeds

    dynamic: dict[str, Any] = {
        "hidden_states": {0: BATCH, 1: PACKED} if flux else image_sides(patch),
        "encoder_hidden_states": {0: BATCH, 1: SEQUENCE},
        "pooled_projections": {0: BATCH},
        "timestep": {0: BATCH},
    }
    if flux:
        dynamic |= {"img_ids": {0: PACKED}, "txt_ids": {0: SEQUENCE}}
        if config.guidance_embeds:
            dynamic["guidance"] = {0: BATCH}
    return Component("transformer", Transformer(transformer), make, dynamic, None, ["out_hidden_states"])
