"""Components of encoder-style models: text (with sentence-transformers pooling, multiple
choice), images (at any size for patch models that interpolate their position embeddings),
audio, and CLIP-style text + image models."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from onnxport.hf import cache as wrappers
from onnxport.hf.dims import BATCH, HEIGHT, IMAGE_BATCH, NUM_CHOICES, SEQUENCE, TEXT_BATCH, WIDTH
from onnxport.hf.eager import run as run_eager
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, image_size, left_padded_mask, probe_mode, token_ids
from onnxport.hf.parts import generator as _generator


def _choices(sizes: Sizes) -> int:
    """The answers per question of a multiple-choice input set (2 to 4)."""
    return 2 + sizes.seed % 3


def text_component(loaded: LoadedModel) -> Component:
    """``input_ids``/``attention_mask`` (``[token_type_ids]``) → the task's outputs; for
    multiple-choice each of them is ``(batch_size, num_choices, sequence_length)``."""
    config = loaded.model.config
    outputs = list(loaded.task.outputs)
    module = wrappers.TextModel(loaded.model, outputs, loaded.pooling)
    forward = inspect.signature(loaded.model.forward).parameters
    with_types = "token_type_ids" in forward and bool(getattr(config, "type_vocab_size", 0))
    choice = loaded.task.kind == "multiple-choice"

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        rows = sizes.batch * _choices(sizes) if choice else sizes.batch
        inputs = {
            "input_ids": token_ids(config, rows, sizes.sequence, gen),
            "attention_mask": left_padded_mask(rows, sizes.sequence),
        }
        if with_types:
            inputs["token_type_ids"] = torch.zeros(rows, sizes.sequence, dtype=torch.int64)
        if choice:
            inputs = {k: v.reshape(sizes.batch, _choices(sizes), sizes.sequence) for k, v in inputs.items()}
        return inputs

    axes: dict[int, Any] = {0: BATCH, 1: NUM_CHOICES, 2: SEQUENCE} if choice else {0: BATCH, 1: SEQUENCE}
    dynamic = {"input_ids": axes, "attention_mask": axes}
    if with_types:
        dynamic["token_type_ids"] = axes
    if loaded.pooling is not None:
        outputs.append("sentence_embedding")
    return Component("model", module, make, dynamic, None, outputs)


def interpolates(model: torch.nn.Module) -> bool:
    """Whether a patch model resamples its position embeddings to the input's size: on request
    (its forward takes ``interpolate_pos_encoding``: ViT, DeiT, BEiT, CLIP and SigLIP towers) or
    always (an embeddings module with an ``interpolate_pos_encoding`` method its forward calls
    without such a flag: DINOv2).

    Swin-style models (a ``maybe_pad`` method) are left out: they branch on ``H % patch`` and the
    window size, so a dynamic H/W captured at a multiple holds only that path (a
    DynamicShapesError); they keep the configured size.
    """
    if any(hasattr(m, "maybe_pad") for m in model.modules()):
        return False
    return _takes(model, "interpolate_pos_encoding") or any(
        callable(getattr(m, "interpolate_pos_encoding", None)) and not _takes(m, "interpolate_pos_encoding")
        for m in model.modules()
    )


def _takes(module: torch.nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


def vision_component(loaded: LoadedModel) -> Component:
    """``pixel_values`` dynamic in batch, and in height/width for convolutional models (no
    ``patch_size``) and for patch models that interpolate their position embeddings
    (:func:`interpolates`; called with ``interpolate_pos_encoding=True``, which at the configured
    size gives the table unchanged). Other patch models check the image size, so only the batch
    is dynamic."""
    config = loaded.model.config
    height, width = image_size(loaded)
    channels = getattr(config, "num_channels", 3)
    patch = getattr(config, "patch_size", None)
    interpolate = patch is not None and interpolates(loaded.model)
    resizable = patch is None or interpolate
    step = patch if isinstance(patch, int) and interpolate else 8

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        grow = step * sizes.seed if resizable else 0
        if interpolate:  # captured a patch below the configured size; validated at it and above
            grow = step * (sizes.seed - 1)
        return {
            "pixel_values": torch.randn(
                sizes.batch, channels, height + grow, width + grow, generator=gen
            )
        }

    axes = {0: BATCH, 2: HEIGHT, 3: WIDTH} if resizable else {0: BATCH}
    outputs = list(loaded.task.outputs)
    if loaded.task.name == "feature-extraction" and _pooled(loaded.model, make):
        outputs.append("pooler_output")  # transformers.js image-feature-extraction with pool: true
    module = wrappers.VisionModel(loaded.model, outputs, interpolate=interpolate and _takes(loaded.model, "interpolate_pos_encoding"))
    return Component("model", module, make, {"pixel_values": axes}, None, outputs)


def _pooled(model: torch.nn.Module, make: Callable[[Sizes], dict[str, Any]]) -> bool:
    """Whether the image model returns a ``pooler_output`` (ViT's pooler, CLIP's and DINOv2's
    class token), from one probe forward (on fake tensors for a meta-device model)."""
    inputs = {k: v.to(next(model.parameters()).device) for k, v in make(Sizes(batch=1, seed=1)).items()}
    with probe_mode(model):
        out = run_eager("on a probe input (its outputs)", lambda: model(**inputs))
    return isinstance(out.get("pooler_output") if hasattr(out, "get") else None, torch.Tensor)


def _waveform_samples(config: Any, frames: int) -> int:
    """Samples of a raw waveform whose convolutional feature encoder (``conv_kernel``,
    ``conv_stride``: wav2vec2, HuBERT, WavLM) yields ``frames`` frames."""
    kernels = list(getattr(config, "conv_kernel", None) or [400])
    strides = list(getattr(config, "conv_stride", None) or [320])
    samples = frames
    for kernel, stride in zip(reversed(kernels), reversed(strides), strict=True):
        samples = (samples - 1) * stride + kernel
    return samples


def audio_component(loaded: LoadedModel) -> Component:
    """``input_values`` → the task's outputs: a raw waveform dynamic in batch and length
    (``sequence_length``, Optimum's name), or the fixed ``(max_length, num_mel_bins)``
    spectrogram of an Audio Spectrogram Transformer (dynamic in batch only)."""
    config = loaded.model.config
    spectrogram = getattr(config, "num_mel_bins", None), getattr(config, "max_length", None)
    fixed = all(isinstance(v, int) for v in spectrogram)

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        shape = (sizes.batch, *spectrogram[::-1]) if fixed else (sizes.batch, _waveform_samples(config, 2 * sizes.sequence))
        return {"input_values": torch.randn(*shape, generator=gen)}

    axes = {0: BATCH} if fixed else {0: BATCH, 1: SEQUENCE}
    module = wrappers.AudioModel(loaded.model, loaded.task.outputs)
    return Component("model", module, make, {"input_values": axes}, None, list(loaded.task.outputs))


def text_vision_component(loaded: LoadedModel) -> Component:
    """CLIP-style zero-shot image classification: texts and images in batches of their own
    (``text_batch_size``, ``image_batch_size``: Optimum's names); images of any size when the
    model interpolates its position embeddings (``interpolate_pos_encoding``, as
    :func:`vision_component`)."""
    model = loaded.model
    text_config = getattr(model.config, "text_config", model.config)
    vision_config = getattr(model.config, "vision_config", model.config)
    height, width = image_size(loaded, vision_config)
    channels = getattr(vision_config, "num_channels", 3)
    patch = getattr(vision_config, "patch_size", None)
    step = patch if isinstance(patch, int) else 0
    interpolate = bool(step) and _takes(model, "interpolate_pos_encoding")

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        images = sizes.batch + 1
        grow = step * (sizes.seed - 1) if interpolate else 0  # as vision_component
        return {
            "input_ids": token_ids(text_config, sizes.batch, sizes.sequence, gen),
            "pixel_values": torch.randn(images, channels, height + grow, width + grow, generator=gen),
            "attention_mask": torch.ones(sizes.batch, sizes.sequence, dtype=torch.int64),
        }

    text_axes = {0: TEXT_BATCH, 1: SEQUENCE}
    image_axes = {0: IMAGE_BATCH, 2: HEIGHT, 3: WIDTH} if interpolate else {0: IMAGE_BATCH}
    dynamic = {"input_ids": text_axes, "pixel_values": image_axes, "attention_mask": dict(text_axes)}
    module = wrappers.TextVisionModel(model, loaded.task.outputs, interpolate=interpolate)
    return Component("model", module, make, dynamic, None, list(loaded.task.outputs))
