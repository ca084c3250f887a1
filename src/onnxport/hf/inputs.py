"""Components to export for a task, their example inputs, dynamic axes and graph names.

A task exports one component (``model``) or two (``encoder_model`` + ``decoder_model``). Each
:class:`Component` builds inputs for any :class:`Sizes`, so the export uses one set of sizes and
the validation fresh ones (another batch, sequence and past length, including an empty past).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from onnxport.errors import HFError
from onnxport.hf import cache as wrappers
from onnxport.hf import meta
from onnxport.hf.dims import (
    BATCH,
    ENCODER_SEQUENCE,
    ENCODER_SEQUENCE_OUT,
    HEIGHT,
    IMAGE_BATCH,
    NUM_CHOICES,
    SEQUENCE,
    TEXT_BATCH,
    TOTAL_SEQUENCE,
    WIDTH,
)
from onnxport.hf.dims import PAST_SEQUENCE as PAST
from onnxport.hf.eager import run as run_eager
from onnxport.hf.loading import LoadedModel

TOTAL = TOTAL_SEQUENCE
DEFAULT_IMAGE = 64


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The sizes of one input set. ``past`` is the cached length (0 on the first step)."""

    batch: int = 2
    sequence: int = 8
    past: int = 3
    encoder_sequence: int = 6
    seed: int = 0


EXPORT_SIZES = Sizes()
# Fresh shapes for validation: an empty past (first step), a longer one with other batch/sequence,
# and a one-token decode step (the size generation runs most; models may branch on it, as
# transformers' state-space mixers do on ``seq_len == 1``).
CHECK_SIZES = (Sizes(3, 5, 0, 7, seed=1), Sizes(1, 4, 6, 9, seed=2), Sizes(2, 1, 5, 4, seed=3))


@dataclasses.dataclass(frozen=True)
class CacheBranch:
    """Outputs of the first step that the later ones feed back instead of recomputing
    (:func:`onnxport.passes.cache_branch.branch_on_flag`: an encoder-decoder's cross-attention
    cache, as in Optimum's merged decoder).

    Attributes:
        outputs: The graph outputs computed on the first step (``present.{i}.encoder.key``...).
        inputs: The graph inputs that replace them later (``past_key_values.{i}.encoder.key``...).
        keywords: The keyword inputs of ``make_inputs`` that exist only after the rewrite, left
            out of the capture (``cross_key_values``, ``use_cache_branch``).
        flag: The boolean input choosing the cached values.
        dims: Axis → symbolic dim name of the cached tensors.
    """

    outputs: tuple[str, ...]
    inputs: tuple[str, ...]
    keywords: tuple[str, ...] = ("cross_key_values", "use_cache_branch")
    flag: str = "use_cache_branch"
    dims: tuple[tuple[int, str], ...] = ((2, ENCODER_SEQUENCE_OUT),)


@dataclasses.dataclass
class Component:
    """One ONNX model to write.

    Attributes:
        name: File stem (``model``, ``encoder_model``, ``decoder_model``).
        module: The ``nn.Module`` exported (a wrapper from :mod:`onnxport.hf.cache`).
        make_inputs: Sizes → keyword inputs of ``module.forward``.
        dynamic_shapes: torch.export dynamic shapes, dims named as in the ONNX graph.
        input_names: Graph input names of the capture (``None``: onnxport's defaults).
        output_names: Graph output names.
        branch: Outputs cached after the first step (the graph gains the branch's inputs).
    """

    name: str
    module: torch.nn.Module
    make_inputs: Callable[[Sizes], dict[str, Any]]
    dynamic_shapes: dict[str, Any]
    input_names: list[str] | None
    output_names: list[str]
    branch: CacheBranch | None = None

    def capture_inputs(self, sizes: Sizes) -> dict[str, Any]:
        """``make_inputs(sizes)`` without the inputs the graph gains after the capture."""
        inputs = self.make_inputs(sizes)
        skipped = self.branch.keywords if self.branch is not None else ()
        return {k: v for k, v in inputs.items() if k not in skipped}


def _generator(sizes: Sizes) -> torch.Generator:
    return torch.Generator().manual_seed(1000 + sizes.seed)


def token_ids(config: Any, batch: int, sequence: int, generator: torch.Generator) -> torch.Tensor:
    """Random ids below ``vocab_size`` (at least 3, past the usual special ids); a composite
    config (``EncoderDecoderConfig``: bert2bert) gives the smaller of its encoder's and decoder's."""
    vocab = getattr(config, "vocab_size", None)
    if not vocab:
        parts = [getattr(getattr(config, part, None), "vocab_size", None) for part in ("encoder", "decoder")]
        vocab = min((v for v in parts if v), default=None)
    if not vocab:
        raise HFError(
            f"Config of {config.model_type!r} has no vocab_size; cannot build token inputs."
        )
    low = 3 if vocab > 6 else 0
    return torch.randint(low, vocab, (batch, sequence), generator=generator, dtype=torch.int64)


def left_padded_mask(batch: int, length: int, pad: int = 2) -> torch.Tensor:
    """Ones, except the first ``pad`` positions of row 0 when the batch has several rows."""
    mask = torch.ones(batch, length, dtype=torch.int64)
    if batch > 1 and length > pad:
        mask[0, :pad] = 0
    return mask


def position_ids_from_mask(mask: torch.Tensor, sequence: int) -> torch.Tensor:
    """Positions as transformers' ``generate`` derives them: cumsum of the mask − 1, 1 at padding;
    the last ``sequence`` columns."""
    positions = mask.long().cumsum(-1) - 1
    positions = positions.masked_fill(mask == 0, 1)
    return positions[:, -sequence:]


# -- encoder-style text and vision ------------------------------------------------------------
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


def image_size(loaded: LoadedModel, config: Any = None) -> tuple[int, int]:
    """(height, width): the image processor's size, else the ``image_size`` of ``config`` (default:
    the model's), else 64."""
    config = config if config is not None else loaded.model.config
    if loaded.folder is not None and (loaded.folder / "preprocessor_config.json").is_file():
        processor = json.loads((loaded.folder / "preprocessor_config.json").read_text())
        size = processor.get("crop_size") or processor.get("size")
        if isinstance(size, dict) and "height" in size and "width" in size:
            return int(size["height"]), int(size["width"])
        if isinstance(size, dict) and "shortest_edge" in size:
            return int(size["shortest_edge"]), int(size["shortest_edge"])
        if isinstance(size, int):
            return size, size
    value = getattr(config, "image_size", None)
    if isinstance(value, int):
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    return DEFAULT_IMAGE, DEFAULT_IMAGE


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
    with _probe_mode(model):
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


# -- decoder-only language models --------------------------------------------------------------
# transformers.js' names for the recurrent state of a linear-attention layer (``getCacheNames`` in
# ``src/configs.js``): ``past_recurrent.{i}`` for gated delta rules, ``past_ssm.{i}`` for Mamba2
# state-space layers (the default); the convolution state is ``past_conv.{i}`` in both.
_RECURRENT_NAME = {"qwen3_next": "recurrent", "qwen3_5_text": "recurrent", "qwen3_5_moe_text": "recurrent",
                   "olmo_hybrid": "recurrent", "kimi_linear": "recurrent"}  # fmt: skip


# Modules whose Mamba (v1) mixers scan several tokens from a zero state, ignoring the cached one
# (``mamba_selective_scan`` has no initial state; modeling_jamba.py, modeling_zamba.py,
# modeling_mamba.py, modeling_falcon_mamba.py).
_ZERO_STATE_SCANS = tuple(
    f"transformers.models.{name}.modeling_{name}" for name in ("jamba", "zamba", "mamba", "falcon_mamba")
)


@dataclasses.dataclass(frozen=True)
class LayerCache:
    """What one decoder layer caches: attention keys/values and/or linear-attention states.

    Attributes:
        key: ``(kv_heads, head_dim)`` of the attention keys (``[B, kv_heads, past, head_dim]``),
            or ``None`` for a layer without attention.
        value: The same for the values (multi-head latent attention caches values narrower than
            keys: HY-V4's are 64 wide, its keys 512).
        indexer: The head size of a sparse-attention indexer's key cache (``[B, past,
            indexer_head_dim]``), or ``None``.
        states: The shapes without the batch dim of the layer's conv state (``[B, channels,
            kernel]``) and, if any, recurrent state, in :func:`onnxport.hf.cache.flatten_cache`'s
            order; empty for an attention layer.
    """

    key: tuple[int, int] | None
    value: tuple[int, int] | None
    indexer: int | None = None
    states: tuple[tuple[int, ...], ...] = ()


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """One cache tensor of a decoder step: its input and output names and its shape after the
    batch dim, ``None`` standing for the past length (``past_sequence_length``)."""

    past: str
    present: str
    dims: tuple[int | None, ...]

    def axes(self) -> dict[int, Any]:
        """Its dynamic axes: the batch, and the past length if it has one."""
        return {0: BATCH, **{1 + i: PAST for i, d in enumerate(self.dims) if d is None}}


def _heads_dim(tensor: torch.Tensor | None) -> tuple[int, int] | None:
    """``(heads, head_dim)`` of a ``[B, heads, length, head_dim]`` cache tensor."""
    return None if tensor is None else (int(tensor.shape[1]), int(tensor.shape[3]))


def cache_shapes(run: Callable[[], Any]) -> list[LayerCache]:
    """Run ``run()`` (returns a DynamicCache) eagerly; what each layer caches.

    Raises:
        HFError: The model raised (:func:`onnxport.hf.eager.run`), or a layer keeps several
            linear-attention states.
    """
    cache = run_eager("on a probe input (finding the KV cache's shapes)", run)
    layers: list[LayerCache] = []
    for layer in cache.layers:
        states = wrappers.linear_states(layer)
        keys, indexer = getattr(layer, "keys", None), getattr(layer, "indexer_keys", None)
        if keys is None and not states and type(layer).__name__ != "DummyLayer":
            raise HFError(
                f"Cache layer {len(layers)} ({type(layer).__name__}) holds neither keys/values nor "
                "conv/recurrent states after a forward: its cache cannot be exported."
            )
        layers.append(LayerCache(
            _heads_dim(keys), _heads_dim(getattr(layer, "values", None)),
            None if indexer is None or indexer.dim() != 3 else int(indexer.shape[-1]),
            tuple(tuple(int(d) for d in t.shape[1:]) for t in states),
        ))  # fmt: skip
    return layers


def past_names(layers: int, prefix: str, part: str = "") -> list[str]:
    """``prefix.{i}[.part].key`` / ``.value`` for every layer."""
    middle = f".{part}" if part else ""
    return [f"{prefix}.{i}{middle}.{kind}" for i in range(layers) for kind in ("key", "value")]


def cache_entries(layers: list[LayerCache], model_type: str | None, fused: bool) -> list[list[CacheEntry]]:
    """Each layer's cache tensors, in :func:`onnxport.hf.cache.flatten_cache`'s order, named as
    transformers.js names them (``getCacheNames`` in ``src/configs.js``):

    - attention: ``past_key_values.{i}.key`` / ``.value`` (``present.{i}.key``...),
      ``(kv_heads, past, head_dim)``; ``fused`` (:func:`onnxport.hf.cache.fused_key_value`):
      one ``past_key_values.{i}.key_value``, ``(past, 2 * head_dim)``;
    - a sparse attention's indexer: ``past_key_values.{i}.indexer_key``, ``(past, head_dim)``;
    - linear attention: ``past_conv.{i}`` and ``past_ssm.{i}`` / ``past_recurrent.{i}``
      (``present_conv.{i}``...), fixed shapes.
    """
    recurrent = _RECURRENT_NAME.get(model_type or "", "ssm")
    result = []
    for i, layer in enumerate(layers):
        entries = []
        if layer.key is not None and layer.value is not None:
            if fused:  # the key and the value of the one key/value head, joined
                entries.append(CacheEntry(f"past_key_values.{i}.key_value", f"present.{i}.key_value",
                                          (None, layer.key[1] + layer.value[1])))  # fmt: skip
            else:
                entries += [
                    CacheEntry(f"past_key_values.{i}.{kind}", f"present.{i}.{kind}", (heads, None, dim))
                    for kind, (heads, dim) in (("key", layer.key), ("value", layer.value))
                ]
        if layer.indexer is not None:
            entries.append(
                CacheEntry(f"past_key_values.{i}.indexer_key", f"present.{i}.indexer_key", (None, layer.indexer))
            )
        entries += [
            CacheEntry(f"past_{kind}.{i}", f"present_{kind}.{i}", shape)
            for kind, shape in zip(("conv", recurrent), layer.states)
        ]
        result.append(entries)
    return result


def causal_lm_component(loaded: LoadedModel) -> Component:
    model = loaded.model
    config = model.config

    def probe() -> Any:
        ids = torch.zeros(1, 2, dtype=torch.int64)
        return wrappers.run_with_cache(model, wrappers.new_cache(config), input_ids=ids)[1]

    layers = cache_shapes(probe)
    restarting = sorted({
        type(m).__name__ for m in model.modules()
        if type(m).__module__ in _ZERO_STATE_SCANS and type(m).__name__.endswith("Mixer")
    })  # fmt: skip
    if restarting and any(layer.states for layer in layers):
        raise HFError(
            f"The cache of {type(model).__name__} cannot be exported yet: its Mamba (v1) layers "
            f"({', '.join(restarting)}) restart the selective scan from a zero state for every input "
            "of several tokens (transformers' torch path continues the cached state only one token at a "
            "time), so one graph cannot serve the prompt and the decode steps."
        )
    dtype = next(model.parameters()).dtype
    entries = cache_entries(layers, getattr(config, "model_type", None), wrappers.fused_key_value(config))

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        mask = left_padded_mask(sizes.batch, sizes.past + sizes.sequence)
        past = [
            tuple(
                torch.randn(sizes.batch, *(sizes.past if d is None else d for d in e.dims), generator=gen, dtype=dtype)
                for e in layer
            )
            for layer in entries
        ]
        return {
            "input_ids": token_ids(config, sizes.batch, sizes.sequence, gen),
            "attention_mask": mask,
            "position_ids": position_ids_from_mask(mask, sizes.sequence),
            "past_key_values": past,
        }

    dynamic = {
        "input_ids": {0: BATCH, 1: SEQUENCE},
        "attention_mask": {0: BATCH, 1: TOTAL},
        "position_ids": {0: BATCH, 1: SEQUENCE},
        "past_key_values": [tuple(e.axes() for e in layer) for layer in entries],
    }
    flat = [e for layer in entries for e in layer]
    names = ["input_ids", "attention_mask", "position_ids", *(e.past for e in flat)]
    outputs = ["logits", *(e.present for e in flat)]
    return Component("model", wrappers.CausalLMWithCache(model), make, dynamic, names, outputs)


# -- encoder-decoder ---------------------------------------------------------------------------
@contextlib.contextmanager
def _probe_mode(model: torch.nn.Module) -> Iterator[None]:
    """Where the shape probes of ``model`` run: in plain eager, or for a meta-device model (the
    streamed path) on fake tensors, all its tensors on ``meta`` (:func:`onnxport.hf.meta.all_on_meta`),
    so that transformers skips its data-dependent shortcuts (``padding_mask.all()`` in
    ``masking_utils``) as under torch.export."""
    if not any(p.device.type == "meta" for p in model.parameters()):
        yield
        return
    with meta.all_on_meta(model), FakeTensorMode(allow_non_fake_inputs=True):
        yield


def seq2seq_components(loaded: LoadedModel) -> list[Component]:
    """``encoder_model`` and ``decoder_model`` (self-attention cache; the cross-attention cache
    computed on the first step and fed back after it: :class:`CacheBranch`)."""
    from transformers import (  # heavy optional dependency (onnxport[hf])
        DynamicCache,
        EncoderDecoderCache,
    )

    model = loaded.model
    config = model.config
    speech = loaded.task.kind == "speech-seq2seq"
    vision = loaded.task.kind == "vision-seq2seq"
    fixed = speech or vision  # the encoder's output length is fixed and it takes no mask
    dtype = next(model.parameters()).dtype

    if vision:  # VisionEncoderDecoderModel (TrOCR, Donut): pixel_values of the encoder's size
        encoder_config = getattr(config, "encoder", config)
        height, width = image_size(loaded, encoder_config)
        channels = getattr(encoder_config, "num_channels", 3)
        encoder: torch.nn.Module = wrappers.ImageEncoder(model)

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            gen = _generator(sizes)
            return {"pixel_values": torch.randn(sizes.batch, channels, height, width, generator=gen, dtype=dtype)}

        encoder_dynamic: dict[str, Any] = {"pixel_values": {0: BATCH}}
    elif speech:
        mels = config.num_mel_bins
        frames = 2 * config.max_source_positions
        encoder = wrappers.SpeechEncoder(model)

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            gen = _generator(sizes)
            return {
                "input_features": torch.randn(sizes.batch, mels, frames, generator=gen, dtype=dtype)
            }

        encoder_dynamic = {"input_features": {0: BATCH}}
    else:
        encoder = wrappers.Seq2SeqEncoder(model)

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            gen = _generator(sizes)
            return {
                "input_ids": token_ids(config, sizes.batch, sizes.encoder_sequence, gen),
                "attention_mask": left_padded_mask(sizes.batch, sizes.encoder_sequence),
            }

        axes = {0: BATCH, 1: ENCODER_SEQUENCE}
        encoder_dynamic = {"input_ids": axes, "attention_mask": dict(axes)}

    device = next(model.parameters()).device
    unmasked = {k: v.to(device) for k, v in make_encoder(Sizes(batch=1)).items() if k != "attention_mask"}

    def probe() -> Any:
        cache = EncoderDecoderCache(DynamicCache(config=config), DynamicCache(config=config))
        start = torch.zeros(1, 2, dtype=torch.int64)
        out = model(encoder_outputs=(hidden,), decoder_input_ids=start.to(device), past_key_values=cache, use_cache=True)
        return out.past_key_values

    with _probe_mode(model):
        hidden = run_eager("on a probe input (the encoder's output shape)", lambda: encoder(**unmasked))
        caches = run_eager("on a probe input (finding the KV cache's shapes)", probe)
        shapes = [layer.key for layer in cache_shapes(lambda: caches.self_attention_cache) if layer.key is not None]
        cross_shapes = [layer.key for layer in cache_shapes(lambda: caches.cross_attention_cache) if layer.key is not None]
    encoder_length, width = int(hidden.shape[1]), int(hidden.shape[-1])
    layers = len(shapes)

    def make_decoder(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        length = encoder_length if fixed else sizes.encoder_sequence
        inputs: dict[str, Any] = {
            "input_ids": token_ids(config, sizes.batch, sizes.sequence, gen),
            "encoder_hidden_states": torch.randn(
                sizes.batch, length, width, generator=gen, dtype=dtype
            ),
            "encoder_attention_mask": None if fixed else left_padded_mask(sizes.batch, length),
        }
        inputs["past_key_values"] = [
            tuple(
                torch.randn(sizes.batch, heads, sizes.past, dim, generator=gen, dtype=dtype)
                for _ in range(2)
            )
            for heads, dim in shapes
        ]
        if fixed:
            del inputs["encoder_attention_mask"]
        if not cross_shapes:  # no cross-attention cache to feed back (no CacheBranch)
            return inputs
        # The first step (empty past) computes the cross-attention cache; the later ones read it.
        inputs["cross_key_values"] = [
            tuple(
                torch.randn(sizes.batch, heads, length, dim, generator=gen, dtype=dtype)
                for _ in range(2)
            )
            for heads, dim in cross_shapes
        ]
        inputs["use_cache_branch"] = torch.tensor([sizes.past > 0])
        return inputs

    kv_axes = {0: BATCH, 2: PAST}
    decoder_dynamic: dict[str, Any] = {
        "input_ids": {0: BATCH, 1: SEQUENCE},
        "encoder_hidden_states": {0: BATCH} if fixed else {0: BATCH, 1: ENCODER_SEQUENCE},
    }
    names = ["input_ids", "encoder_hidden_states"]
    if not fixed:
        decoder_dynamic["encoder_attention_mask"] = {0: BATCH, 1: ENCODER_SEQUENCE}
        names.append("encoder_attention_mask")
    decoder_dynamic["past_key_values"] = [(dict(kv_axes), dict(kv_axes)) for _ in range(layers)]
    names += past_names(layers, "past_key_values", "decoder")
    decoder = wrappers.Seq2SeqDecoderWithCache(model, with_encoder_mask=not fixed)
    cross = past_names(len(cross_shapes), "present", "encoder")
    return [
        Component(
            "encoder_model", encoder, make_encoder, encoder_dynamic, None, ["last_hidden_state"]
        ),
        Component(
            "decoder_model",
            decoder,
            make_decoder,
            decoder_dynamic,
            names,
            ["logits", *past_names(layers, "present", "decoder"), *cross],
            CacheBranch(tuple(cross), tuple(past_names(len(cross_shapes), "past_key_values", "encoder"))) if cross else None,
        ),
    ]


def modality(loaded: LoadedModel) -> str:
    """The task's kind, except for a task of text models (feature-extraction, text-classification)
    on a model whose ``main_input_name`` is ``pixel_values`` (ViT, DINOv2: ``"vision"``) or
    ``input_values`` (wav2vec2: ``"audio"``)."""
    kind = loaded.task.kind
    if kind != "text":
        return kind
    main = getattr(loaded.model, "main_input_name", "input_ids")
    return {"pixel_values": "vision", "input_values": "audio"}.get(main, kind)


def components(loaded: LoadedModel) -> list[Component]:
    """The components to export for ``loaded.task``."""
    kind = modality(loaded)
    if kind in ("text", "multiple-choice"):
        return [text_component(loaded)]
    if kind == "vision":
        return [vision_component(loaded)]
    if kind == "audio":
        return [audio_component(loaded)]
    if kind == "text-vision":
        return [text_vision_component(loaded)]
    if kind == "causal-lm":
        return [causal_lm_component(loaded)]
    return seq2seq_components(loaded)


def folder_files(folder: Path) -> list[Path]:
    """Files copied beside the ONNX models: config, generation config, tokenizer, processor,
    sentence-transformers module configs (paths relative to ``folder``)."""
    names = [
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "spiece.model",
        "sentencepiece.bpe.model",
        "tokenizer.model",
        "preprocessor_config.json",
        "processor_config.json",
        "chat_template.jinja",
        "modules.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
        "1_Pooling/config.json",
    ]
    return [Path(n) for n in names if (folder / n).is_file()]
