"""Diffusers pipelines: a folder with ``model_index.json`` → one ONNX model per model component,
laid out as Optimum's ``optimum-cli export onnx`` writes a diffusion pipeline (optimum
``exporters/utils.py`` ``_get_submodels_for_export_diffusion``; optimum-onnx
``exporters/onnx/model_configs.py``: ``CLIPTextOnnxConfig``, ``CLIPTextWithProjectionOnnxConfig``,
``T5EncoderOnnxConfig``, ``VaeEncoderOnnxConfig``, ``VaeDecoderOnnxConfig``) and its ONNX Runtime
pipelines read it:

- ``text_encoder/model.onnx`` (and ``text_encoder_2``, ``text_encoder_3``): ``input_ids``
  ``[batch_size, sequence_length]`` int64 → ``last_hidden_state`` and ``pooler_output`` (CLIP),
  ``text_embeds`` and ``last_hidden_state`` (CLIP with projection), ``last_hidden_state`` (T5
  encoder, a decoder-only model such as Sana's Gemma 2); for SDXL and SD3 pipelines the CLIP
  encoders also return ``hidden_states.0`` ... ``hidden_states.{num_hidden_layers}`` (the
  pipelines read the penultimate layer); Sana and PixArt pipelines, which encode a padded
  caption, also feed ``attention_mask`` ``[batch_size, sequence_length]`` int64 (optimum-onnx
  ``Gemma2TextEncoderOnnxConfig``; ``ORTTextEncoder`` feeds it by name);
- ``unet/model.onnx`` or ``transformer/model.onnx``: the denoiser (:mod:`onnxport.hf.denoisers`);
- ``vae_encoder/model.onnx``: ``sample`` → ``latent_parameters`` (``AutoencoderKL``: the
  Gaussian's mean and log variance, concatenated on the channels) or ``latent_sample``
  (``AutoencoderDC``, Sana's deep-compression autoencoder: the latent itself; optimum-onnx
  ``DcaeEncoderOnnxConfig``);
- ``vae_decoder/model.onnx``: ``latent_sample`` → ``sample``;

each beside its component's ``config.json``, with ``model_index.json``, the scheduler, tokenizer
and feature-extractor folders copied. Every component is validated against eager PyTorch on fresh
sizes like the transformers tasks (:func:`onnxport.hf.export.validate_component`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from onnxport.errors import HFError
from onnxport.hf import denoisers
from onnxport.hf.dims import BATCH, HEIGHT, SEQUENCE, WIDTH, image_sides
from onnxport.hf.eager import run as run_eager
from onnxport.hf.parts import Component, Sizes, token_ids
from onnxport.hf.parts import generator as _generator

# Folders copied as they are (no model weights): what a pipeline needs besides its graphs.
COPIED = ("scheduler", "tokenizer", "tokenizer_2", "tokenizer_3", "feature_extractor")
# Pipelines whose CLIP text encoders also export every layer's hidden states (Optimum: is_sdxl, is_sd3).
HIDDEN_STATES_PIPELINES = ("StableDiffusionXL", "StableDiffusion3")
# Pipelines that pass the caption's attention mask to the text encoder (diffusers'
# SanaPipeline._get_gemma_prompt_embeds, PixArtAlphaPipeline.encode_prompt).
MASKED_TEXT_PIPELINES = ("Sana", "PixArt")
TASK = "text-to-image"


class TextEncoder(torch.nn.Module):
    """``input_ids`` (and ``attention_mask``) → the text model's outputs, by name, then every
    layer's hidden states when ``hidden_states`` is set."""

    def __init__(self, model: torch.nn.Module, outputs: tuple[str, ...], hidden_states: bool) -> None:
        super().__init__()
        self.model = model
        self.outputs = outputs
        self.hidden_states = hidden_states

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        extra: dict[str, Any] = {} if attention_mask is None else {"attention_mask": attention_mask}
        if getattr(self.model.config, "use_cache", None) is not None:
            extra["use_cache"] = False  # a decoder-only encoder (Gemma 2): no cache to build
        out = self.model(input_ids=input_ids, output_hidden_states=self.hidden_states, **extra)
        return tuple(out[name] for name in self.outputs) + (tuple(out["hidden_states"]) if self.hidden_states else ())


class VaeEncoder(torch.nn.Module):
    """``sample`` (an image) → ``latent_parameters`` (mean and log variance on the channels), or
    the latent of a deterministic autoencoder (``AutoencoderDC``)."""

    def __init__(self, vae: torch.nn.Module) -> None:
        super().__init__()
        self.vae = vae

    def forward(self, sample: torch.Tensor) -> torch.Tensor:
        encode: Any = self.vae.encode
        latent = encode(sample, return_dict=False)[0]
        return latent if isinstance(latent, torch.Tensor) else latent.parameters  # AutoencoderDC: the latent


class VaeDecoder(torch.nn.Module):
    """``latent_sample`` → ``sample`` (the image)."""

    def __init__(self, vae: torch.nn.Module) -> None:
        super().__init__()
        self.vae = vae

    def forward(self, latent_sample: torch.Tensor) -> torch.Tensor:
        decode: Any = self.vae.decode
        return decode(latent_sample, return_dict=False)[0]


def is_pipeline(folder: Any) -> bool:
    """Whether ``folder`` is a diffusers pipeline folder (has ``model_index.json``)."""
    return isinstance(folder, (str, Path)) and (Path(folder) / "model_index.json").is_file()


def _index(folder: Path) -> dict[str, Any]:
    try:
        index = json.loads((folder / "model_index.json").read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HFError(f"{folder / 'model_index.json'} is not valid JSON ({e}).") from e
    if not isinstance(index, dict):
        raise HFError(f"{folder / 'model_index.json'} is not a JSON object.")
    return index


def _load(folder: Path, name: str, library: str, cls: str) -> Any:
    """Component ``name`` of the pipeline, loaded by its class from ``library``."""
    import diffusers  # heavy optional dependency: imported for pipelines only
    import transformers  # heavy optional dependency: imported for pipelines only

    module = {"diffusers": diffusers, "transformers": transformers}.get(library)
    loader = getattr(module, cls, None) if module is not None else None
    if loader is None:
        raise HFError(f"{folder / 'model_index.json'}: component {name!r} is {library}.{cls}, which onnxport cannot load.")
    try:
        return run_eager(f"loading {name}", lambda: loader.from_pretrained(folder / name)).eval()
    except HFError as e:
        raise HFError(f"Could not load the pipeline's {name} ({library}.{cls}): {e}") from e


def _text_encoder(name: str, model: Any, pipeline: str) -> Component:
    config = model.config
    clip = str(getattr(config, "model_type", "")).startswith("clip")
    if hasattr(model, "text_projection"):
        outputs: tuple[str, ...] = ("text_embeds", "last_hidden_state")
    elif clip:
        outputs = ("last_hidden_state", "pooler_output")
    else:
        outputs = ("last_hidden_state",)  # T5EncoderModel, a decoder-only model: no pooled output
    hidden = clip and pipeline.startswith(HIDDEN_STATES_PIPELINES)  # Optimum: CLIP encoders of SDXL, SD3
    names = list(outputs) + ([f"hidden_states.{i}" for i in range(config.num_hidden_layers + 1)] if hidden else [])
    masked = pipeline.startswith(MASKED_TEXT_PIPELINES)

    def make(sizes: Sizes) -> dict[str, Any]:
        feeds = {"input_ids": token_ids(config, sizes.batch, sizes.sequence, _generator(sizes))}
        if masked:  # right-padded captions, as the pipelines' tokenizers pad them
            feeds["attention_mask"] = torch.ones(sizes.batch, sizes.sequence, dtype=torch.int64)
            feeds["attention_mask"][0, sizes.sequence // 2 + 1 :] = 0
        return feeds

    dynamic = {"input_ids": {0: BATCH, 1: SEQUENCE}} | ({"attention_mask": {0: BATCH, 1: SEQUENCE}} if masked else {})
    return Component(name, TextEncoder(model, outputs, hidden), make, dynamic, None, names)


def _vae(vae: Any) -> list[Component]:
    config = vae.config
    dc = hasattr(config, "encoder_block_out_channels")  # AutoencoderDC: one down-sampling per stage but the last
    scale = 2 ** (len(config.encoder_block_out_channels if dc else config.block_out_channels) - 1)

    def make_image(sizes: Sizes) -> dict[str, Any]:
        side = scale * (2 + sizes.seed)
        return {"sample": torch.randn(sizes.batch, config.in_channels, side, side + scale, generator=_generator(sizes))}

    def make_latent(sizes: Sizes) -> dict[str, Any]:
        side = 2 + sizes.seed
        shape = (sizes.batch, config.latent_channels, side, side + 1)
        return {"latent_sample": torch.randn(*shape, generator=_generator(sizes))}

    return [
        Component("vae_encoder", VaeEncoder(vae), make_image, {"sample": image_sides(scale)}, None,
                  ["latent_sample" if dc else "latent_parameters"]),
        Component("vae_decoder", VaeDecoder(vae), make_latent, {"latent_sample": {0: BATCH, 2: HEIGHT, 3: WIDTH}}, None, ["sample"]),
    ]


def pipeline_components(folder: Path) -> list[Component]:
    """The components to export for the pipeline in ``folder`` (module docstring).

    Raises:
        HFError: ``model_index.json`` is unreadable, a component cannot be loaded, the pipeline has
            no denoiser, or its denoiser is not one :mod:`onnxport.hf.denoisers` exports.
    """
    index = _index(folder)
    pipeline = str(index.get("_class_name", ""))
    entries = {name: e for name, e in index.items() if isinstance(e, list) and len(e) == 2 and e[1]}
    if "unet" not in entries and "transformer" not in entries:
        raise HFError(
            f"{folder}/model_index.json names no denoiser (a 'unet' or 'transformer' entry): onnxport.hf exports "
            "diffusion pipelines of text encoders, a UNet or transformer, and a VAE."
        )
    if "unet" not in entries:
        denoisers.check_transformer(str(entries["transformer"][1]))  # before any weights load
    parts = [
        _text_encoder(name, _load(folder, name, *entries[name]), pipeline)
        for name in ("text_encoder", "text_encoder_2", "text_encoder_3")
        if name in entries
    ]
    if "unet" in entries:
        parts.append(denoisers.unet_component(_load(folder, "unet", *entries["unet"]), index))
    else:
        cls = str(entries["transformer"][1])
        parts.append(denoisers.transformer_component(_load(folder, "transformer", *entries["transformer"]), cls))
    if "vae" in entries:
        parts += _vae(_load(folder, "vae", *entries["vae"]))
    return parts


def pipeline_files(folder: Path, parts: list[Component]) -> list[tuple[Path, Path]]:
    """``(source, destination)`` paths, relative to the pipeline and to the export, of the files
    copied: ``model_index.json``, the :data:`COPIED` folders, and each exported component's
    ``config.json`` (the VAE's beside both halves, as Optimum writes it)."""
    files = [(Path("model_index.json"), Path("model_index.json"))]
    for name in COPIED:
        if (folder / name).is_dir():
            files += [(p.relative_to(folder), p.relative_to(folder)) for p in sorted((folder / name).rglob("*")) if p.is_file()]
    for part in parts:
        source = Path("vae" if part.name.startswith("vae_") else part.name) / "config.json"
        if (folder / source).is_file():
            files.append((source, Path(part.name) / "config.json"))
    return files
