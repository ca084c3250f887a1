"""Video models: video-classification (VideoMAE, TimeSformer, ViViT, V-JEPA 2:
``*ForVideoClassification``, transformers' ``video-classification`` pipeline) and feature-extraction
of their base models.

``pixel_values`` ``[batch_size, num_frames, num_channels, height, width]`` float32 (V-JEPA 2:
``pixel_values_videos``; the clip as the video processor gives it: ``VideoMAEImageProcessor`` stacks
the frames on axis 1) → ``logits`` ``[batch_size, num_labels]`` (the base models:
``last_hidden_state``; V-JEPA 2's encoder alone, its predictor skipped). Only the batch is dynamic:
the frame count and the frame size are the config's (``num_frames`` / ``frames_per_clip``, the
processor's crop size or ``image_size`` / ``crop_size``), because VideoMAE's sinusoidal position
table has one row per tubelet of that clip, ViViT's learned one too, and TimeSformer's time and
space tables interpolate only in a data-dependent branch.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from onnxport.hf import cache as wrappers
from onnxport.hf.dims import BATCH
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, image_size
from onnxport.hf.parts import generator as _generator

_FRAMES = ("num_frames", "frames_per_clip")


def _frames(config: Any) -> int | None:
    for name in _FRAMES:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _input_name(model: torch.nn.Module) -> str | None:
    forward = inspect.signature(model.forward).parameters
    return next((name for name in ("pixel_values", "pixel_values_videos") if name in forward), None)


def reads_video(model: torch.nn.Module) -> bool:
    """Whether ``model`` takes a clip (its config has an int ``num_frames`` or
    ``frames_per_clip``, its forward a ``pixel_values`` or ``pixel_values_videos`` argument)."""
    if _frames(getattr(model, "config", None)) is None:
        return False
    return _input_name(model) is not None


class ClipModel(torch.nn.Module):
    """A clip → the task's outputs; V-JEPA 2's base model is called with ``skip_predictor=True``
    (its masked-prediction head needs masks the task does not have)."""

    def __init__(self, model: torch.nn.Module, outputs: Sequence[str], input_name: str) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)
        self.input_name = input_name
        takes = inspect.signature(model.forward).parameters
        self.extra = {"skip_predictor": True} if "skip_predictor" in takes else {}

    def forward(
        self, pixel_values: torch.Tensor | None = None, pixel_values_videos: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, ...]:
        clip = pixel_values if pixel_values is not None else pixel_values_videos
        out = self.model(**{self.input_name: clip}, **self.extra)
        missing = [name for name in self.outputs if name not in out]
        if missing:
            raise wrappers.MissingOutputError(
                f"{type(self.model).__name__} returns {', '.join(out.keys())}, not {', '.join(missing)}: export "
                "it for feature-extraction, or with onnxport.export and the outputs your pipeline reads."
            )
        return tuple(out[name] for name in self.outputs)


def video_component(loaded: LoadedModel, outputs: list[str]) -> Component:
    """The clip model's one graph (module docstring); ``outputs``: the graph's output names."""
    model = loaded.model
    config: Any = model.config
    frames, name = _frames(config), _input_name(model)
    assert frames is not None and name is not None  # reads_video(model)
    channels = int(getattr(config, "num_channels", getattr(config, "in_chans", 3)))
    crop = getattr(config, "crop_size", None)
    processor = loaded.folder is not None and (loaded.folder / "preprocessor_config.json").is_file()
    if isinstance(crop, int) and getattr(config, "image_size", None) is None and not processor:
        height = width = crop  # V-JEPA 2's config names its frame size so
    else:
        height, width = image_size(loaded, config)

    def make(sizes: Sizes) -> dict[str, Any]:
        clip = torch.randn(sizes.batch, frames, channels, height, width, generator=_generator(sizes))
        return {name: clip}

    return Component("model", ClipModel(model, outputs, name), make, {name: {0: BATCH}}, [name], outputs)


__all__ = ["ClipModel", "reads_video", "video_component"]
