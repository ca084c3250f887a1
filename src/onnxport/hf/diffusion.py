"""Diffusers pipelines: a folder with ``model_index.json`` → one ONNX model per model component,
laid out as Optimum's ``optimum-cli export onnx`` writes a Stable Diffusion pipeline
(``optimum/exporters/onnx/model_configs.py``: ``CLIPTextOnnxConfig``, ``UNetOnnxConfig``,
``VaeEncoderOnnxConfig``, ``VaeDecoderOnnxConfig``) and its ONNX Runtime pipelines read it:

- ``text_encoder/model.onnx`` (and ``text_encoder_2``): ``input_ids`` → ``last_hidden_state``,
  ``pooler_output`` (``text_embeds`` for a CLIP text model with projection);
- ``unet/model.onnx``: ``sample``, ``timestep``, ``encoder_hidden_states`` → ``out_sample``;
- ``vae_encoder/model.onnx``: ``sample`` → ``latent_parameters`` (the Gaussian's mean and log
  variance, concatenated on the channels);
- ``vae_decoder/model.onnx``: ``latent_sample`` → ``sample``;

each beside its component's ``config.json``, with ``model_index.json``, the scheduler, tokenizer
and feature-extractor folders copied. Every component is validated against eager PyTorch on fresh
sizes like the transformers tasks (:func:`onnxport.hf.export.validate_component`). UNets with
extra conditioning (SDXL's ``added_cond_kwargs``) and transformer denoisers (SD3, Flux) are
refused with an ``HFError`` naming them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from onnxport.errors import HFError
from onnxport.hf.dims import BATCH, HEIGHT, SEQUENCE, WIDTH
from onnxport.hf.eager import run as run_eager
from onnxport.hf.parts import Component, Sizes, token_ids
from onnxport.hf.parts import generator as _generator

# Folders copied as they are (no model weights): what a pipeline needs besides its graphs.
COPIED = ("scheduler", "tokenizer", "tokenizer_2", "feature_extractor")
TASK = "text-to-image"


class TextEncoder(torch.nn.Module):
    """``input_ids`` → the CLIP text model's outputs, by name."""

    def __init__(self, model: torch.nn.Module, outputs: tuple[str, ...]) -> None:
        super().__init__()
        self.model = model
        self.outputs = outputs

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(input_ids=input_ids)
        return tuple(out[name] for name in self.outputs)


class UNet(torch.nn.Module):
    """``(sample, timestep, encoder_hidden_states)`` → ``out_sample``."""

    def __init__(self, unet: torch.nn.Module) -> None:
        super().__init__()
        self.unet = unet

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor, encoder_hidden_states: torch.Tensor) -> torch.Tensor:
        return self.unet(sample, timestep, encoder_hidden_states, return_dict=False)[0]


class VaeEncoder(torch.nn.Module):
    """``sample`` (an image) → ``latent_parameters`` (mean and log variance on the channels)."""

    def __init__(self, vae: torch.nn.Module) -> None:
        super().__init__()
        self.vae = vae

    def forward(self, sample: torch.Tensor) -> torch.Tensor:
        encode: Any = self.vae.encode
        return encode(sample, return_dict=False)[0].parameters


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


def _text_encoder(name: str, model: Any) -> Component:
    outputs = ("text_embeds", "last_hidden_state") if hasattr(model, "text_projection") else ("last_hidden_state", "pooler_output")
    config = model.config

    def make(sizes: Sizes) -> dict[str, Any]:
        return {"input_ids": token_ids(config, sizes.batch, sizes.sequence, _generator(sizes))}

    return Component(name, TextEncoder(model, outputs), make, {"input_ids": {0: BATCH, 1: SEQUENCE}}, None, list(outputs))


def _unet(unet: Any) -> Component:
    config = unet.config
    if getattr(config, "addition_embed_type", None) or getattr(config, "class_embed_type", None):
        raise HFError(
            "The pipeline's UNet takes extra conditioning (addition_embed_type / class_embed_type: SDXL, "
            "unCLIP); onnxport exports Stable Diffusion 1.x/2.x-style UNets only. Export it with "
            "onnxport.export and its added_cond_kwargs as inputs."
        )
    scale = 2 ** (len(config.block_out_channels) - 1)
    width = config.cross_attention_dim

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        side = scale * (2 + sizes.seed)
        return {
            "sample": torch.randn(sizes.batch, config.in_channels, side, side + scale, generator=gen),
            "timestep": torch.randint(1, 1000, (sizes.batch,), generator=gen),
            "encoder_hidden_states": torch.randn(sizes.batch, sizes.sequence, width, generator=gen),
        }

    dynamic = {"sample": _multiples(scale), "timestep": {0: BATCH}, "encoder_hidden_states": {0: BATCH, 1: SEQUENCE}}
    return Component("unet", UNet(unet), make, dynamic, None, ["out_sample"])


def _multiples(scale: int) -> dict[int, Any]:
    """Batch, and height/width as multiples of ``scale`` (``scale * Dim("height")``): the UNet's
    and VAE's down/up-sampling stages need sides divisible by 2 per stage (diffusers'
    ``forward_upsample_size`` branch otherwise), so the graph dims read ``8*height``."""
    if scale == 1:
        return {0: BATCH, 2: HEIGHT, 3: WIDTH}
    side = {name: torch.export.Dim(name, min=1) for name in (str(HEIGHT), str(WIDTH))}
    return {0: BATCH, 2: scale * side[str(HEIGHT)], 3: scale * side[str(WIDTH)]}


def _vae(vae: Any) -> list[Component]:
    config = vae.config
    scale = 2 ** (len(config.block_out_channels) - 1)

    def make_image(sizes: Sizes) -> dict[str, Any]:
        side = scale * (2 + sizes.seed)
        return {"sample": torch.randn(sizes.batch, config.in_channels, side, side + scale, generator=_generator(sizes))}

    def make_latent(sizes: Sizes) -> dict[str, Any]:
        side = 2 + sizes.seed
        shape = (sizes.batch, config.latent_channels, side, side + 1)
        return {"latent_sample": torch.randn(*shape, generator=_generator(sizes))}

    return [
        Component("vae_encoder", VaeEncoder(vae), make_image, {"sample": _multiples(scale)}, None, ["latent_parameters"]),
        Component("vae_decoder", VaeDecoder(vae), make_latent, {"latent_sample": {0: BATCH, 2: HEIGHT, 3: WIDTH}}, None, ["sample"]),
    ]


def pipeline_components(folder: Path) -> list[Component]:
    """The components to export for the pipeline in ``folder`` (module docstring).

    Raises:
        HFError: ``model_index.json`` is unreadable, a component cannot be loaded, the pipeline has
            no UNet (a transformer denoiser: SD3, Flux, PixArt) or its UNet takes extra conditioning.
    """
    index = _index(folder)
    parts: list[Component] = []
    for name in ("text_encoder", "text_encoder_2"):
        entry = index.get(name)
        if isinstance(entry, list) and len(entry) == 2 and entry[1]:
            parts.append(_text_encoder(name, _load(folder, name, *entry)))
    entry = index.get("unet")
    if not (isinstance(entry, list) and len(entry) == 2 and entry[1]):
        denoiser = index.get("transformer")
        what = f" (its denoiser is {denoiser[0]}.{denoiser[1]})" if isinstance(denoiser, list) and len(denoiser) == 2 else ""
        raise HFError(
            f"{folder} is a diffusers pipeline without a UNet{what}: onnxport.hf exports Stable "
            "Diffusion-style pipelines (text encoder, UNet, VAE). Export the denoiser with onnxport.export."
        )
    parts.append(_unet(_load(folder, "unet", *entry)))
    entry = index.get("vae")
    if isinstance(entry, list) and len(entry) == 2 and entry[1]:
        parts += _vae(_load(folder, "vae", *entry))
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
