"""Video models: video-classification (VideoMAE, TimeSformer, ViViT: ``*ForVideoClassification``,
transformers' ``video-classification`` pipeline) and feature-extraction of their base models.

``pixel_values`` ``[batch_size, num_frames, num_channels, height, width]`` float32 (the clip as the
video processor gives it: ``VideoMAEImageProcessor`` stacks the frames on axis 1) → ``logits``
``[batch_size, num_labels]`` (the base models: ``last_hidden_state``). Only the batch is dynamic:
the frame count and the frame size are the config's (``num_frames``, the processor's crop size or
``image_size``), because VideoMAE's sinusoidal position table has one row per tubelet of that
clip, ViViT's learned one too, and TimeSformer's time and space tables interpolate only in a
data-dependent branch.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from onnxport.hf import cache as wrappers
from onnxport.hf.dims import BATCH
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, image_size
from onnxport.hf.parts import generator as _generator


def reads_video(model: torch.nn.Module) -> bool:
    """Whether ``model`` takes a clip as ``pixel_values`` (its config has an int ``num_frames``
    and its forward a ``pixel_values`` argument)."""
    frames = getattr(getattr(model, "config", None), "num_frames", None)
    if not isinstance(frames, int) or frames <= 0:
        return False
    return "pixel_values" in inspect.signature(model.forward).parameters


def video_component(loaded: LoadedModel, outputs: list[str]) -> Component:
    """The clip model's one graph (module docstring); ``outputs``: the graph's output names."""
    config: Any = loaded.model.config
    frames, channels = int(config.num_frames), int(getattr(config, "num_channels", 3))
    height, width = image_size(loaded, config)

    def make(sizes: Sizes) -> dict[str, Any]:
        clip = torch.randn(sizes.batch, frames, channels, height, width, generator=_generator(sizes))
        return {"pixel_values": clip}

    module = wrappers.VisionModel(loaded.model, outputs)
    return Component("model", module, make, {"pixel_values": {0: BATCH}}, ["pixel_values"], outputs)


__all__ = ["reads_video", "video_component"]
