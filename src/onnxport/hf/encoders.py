"""Components of encoder-style models: text (with sentence-transformers pooling, multiple
choice), images (at any size for patch models that interpolate their position embeddings),
audio, and CLIP-style text + image models."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import logging
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import DataDependentOutputException, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from onnxport.capture import windows
from onnxport.errors import HFError

try:  # optional dependency (extra hf): the pad token of a folder's tokenizer.json
    import tokenizers
except ImportError:  # pragma: no cover - installed with the hf extra
    tokenizers = None  # type: ignore[assignment]
from onnxport.hf import cache as wrappers
from onnxport.hf.codec import waveform_samples
from onnxport.hf.dims import (
    BATCH,
    ENCODER_SEQUENCE,
    HEIGHT,
    IMAGE_BATCH,
    NUM_CHOICES,
    SEQUENCE,
    TEXT_BATCH,
    WIDTH,
    image_sides,
)
from onnxport.hf.eager import run as run_eager
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import (
    Component,
    Sizes,
    image_size,
    left_padded_mask,
    position_ids_from_mask,
    probe_mode,
    token_ids,
)
from onnxport.hf.parts import generator as _generator
from onnxport.hf.tasks import forward_reads


def _choices(sizes: Sizes) -> int:
    """The answers per question of a multiple-choice input set (2 to 4)."""
    return 2 + sizes.seed % 3


def text_component(loaded: LoadedModel, use_cache: bool | None = None) -> Component:
    """``input_ids``/``attention_mask`` (``[token_type_ids]``) → the task's outputs; for
    multiple-choice each of them is ``(batch_size, num_choices, sequence_length)``. ``use_cache``:
    passed to the model when not ``None`` (``False`` for a decoder exported without its cache, which
    then also takes ``position_ids`` ``[batch_size, sequence_length]`` when its forward does: the
    positions transformers' ``generate`` computes from the attention mask).

    Raises:
        HFError: The model's forward takes no ``input_ids`` (a vision-language model's vision tower
            saved alone: Qwen2-VL-style patches and ``grid_thw``).
    """
    config = loaded.model.config
    _check_reads_token_ids(loaded)
    if loaded.task.name == "text-classification" and getattr(config, "pad_token_id", 0) is None and _pools_last_token(loaded.model):
        config.pad_token_id = _pad_token_id(loaded)
    outputs = list(loaded.task.outputs)
    if loaded.task.name == "feature-extraction" and loaded.pooling is None:
        outputs = _embedding_outputs(loaded.model, outputs)
    module = wrappers.TextModel(loaded.model, outputs, loaded.pooling, use_cache=use_cache)
    forward = inspect.signature(loaded.model.forward).parameters
    with_types = "token_type_ids" in forward and bool(getattr(config, "type_vocab_size", 0))
    choice = loaded.task.kind == "multiple-choice"
    # document models: a box per token (Optimum's LayoutLM/LayoutLMv3/LiLT configs), and
    # LayoutLMv3's page image at its input_size (its patch position table is that grid's)
    boxes = "bbox" in forward and not choice
    page = getattr(config, "input_size", None) if boxes and "pixel_values" in forward and getattr(config, "visual_embed", False) else None
    eos = getattr(config, "eos_token_id", None) if _pools_eos(loaded.model) else None
    # a decoder without its cache reads positions as generate() makes them (left-padded rows)
    positions = use_cache is False and "position_ids" in forward

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        rows = sizes.batch * _choices(sizes) if choice else sizes.batch
        ids = token_ids(config, rows, sizes.sequence, gen)
        if isinstance(eos, int):  # every row ends with one <eos>, as a tokenizer writes it
            ids[:, -1] = eos
        inputs = {"input_ids": ids, "attention_mask": left_padded_mask(rows, sizes.sequence)}
        if with_types:
            inputs["token_type_ids"] = torch.zeros(rows, sizes.sequence, dtype=torch.int64)
        if boxes:
            inputs["bbox"] = token_boxes(rows, sizes.sequence, gen)
            if getattr(config, "model_type", None) == "bros":  # BROS reads float boxes on a 0-1 page scale
                inputs["bbox"] = inputs["bbox"].float() / 1000
        if isinstance(page, int):
            inputs["pixel_values"] = torch.randn(rows, 3, page, page, generator=gen)
        if positions:
            inputs["position_ids"] = position_ids_from_mask(inputs["attention_mask"], sizes.sequence)
        if choice:
            inputs = {k: v.reshape(sizes.batch, _choices(sizes), sizes.sequence) for k, v in inputs.items()}
        return inputs

    axes: dict[int, Any] = {0: BATCH, 1: NUM_CHOICES, 2: SEQUENCE} if choice else {0: BATCH, 1: SEQUENCE}
    dynamic = {"input_ids": axes, "attention_mask": axes}
    if with_types:
        dynamic["token_type_ids"] = axes
    if boxes:
        dynamic["bbox"] = axes
    if isinstance(page, int):
        dynamic["pixel_values"] = {0: BATCH}
    if positions:
        dynamic["position_ids"] = axes
    if loaded.pooling is not None:
        outputs.append("sentence_embedding")
    return Component("model", module, make, dynamic, None, outputs)


def _check_reads_token_ids(loaded: LoadedModel) -> None:
    """Raise the HFError of :func:`text_component` for a forward without ``input_ids``."""
    forward = inspect.signature(loaded.model.forward).parameters
    if "input_ids" in forward or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in forward.values()):
        return
    names = [name for name, p in forward.items() if p.kind is not inspect.Parameter.VAR_KEYWORD][:4]
    tower = "grid_thw" in forward or "pixel_values" in forward or "hidden_states" in forward
    hint = (
        "It looks like the vision tower of a vision-language model: export the whole model's folder "
        "(image-text-to-text writes this tower as vision_encoder.onnx), or export the tower with "
        "onnxport.export and the inputs its model feeds it."
        if tower
        else "Export it with onnxport.export and its inputs."
    )
    raise HFError(
        f"{type(loaded.model).__name__}.forward takes {', '.join(names)}, not input_ids: onnxport.hf's "
        f"{loaded.task.name} export of this model would feed token ids. {hint}"
    )


def token_boxes(rows: int, sequence: int, generator: torch.Generator) -> torch.Tensor:
    """``bbox`` ``[rows, sequence, 4]`` int64: a box ``(x0, y0, x1, y1)`` per token on LayoutLM's
    0-1000 page scale, ``x0 <= x1`` and ``y0 <= y1`` (the processors normalize OCR boxes so; BROS'
    processor to 0-1 floats, which the caller divides these into)."""
    corner = torch.randint(0, 600, (rows, sequence, 2), generator=generator)
    size = torch.randint(0, 400, (rows, sequence, 2), generator=generator)
    return torch.cat([corner, corner + size], dim=-1)


_NO_PAD_TOKEN = "no padding token is defined"  # transformers' *ForSequenceClassification of decoders


def _output_fields(model: torch.nn.Module) -> list[str]:
    """The fields of the ``ModelOutput`` dataclass(es) ``model.forward`` is annotated to return
    (``DPRQuestionEncoderOutput | tuple[...]``), in their order; empty when the annotation names
    none."""
    annotation = inspect.signature(type(model).forward).return_annotation
    fields: list[str] = []
    for kind in (annotation, *typing.get_args(annotation)):
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            fields += [f.name for f in dataclasses.fields(kind) if f.name not in fields]
    return fields


def _embedding_outputs(model: torch.nn.Module, outputs: list[str]) -> list[str]:
    """feature-extraction's outputs for ``model`` whose output has no ``last_hidden_state``: its
    fields that end in ``last_hidden_state`` (MaskFormer and Mask2Former: the backbone's, the
    pixel decoder's and the transformer decoder's), else ``pooler_output`` (DPR's question and
    context encoders return their embedding so: ``DPRQuestionEncoderOutput``), else its first field
    (a codec's encoder alone: ``MimiEncoderModel``'s ``latents``); ``outputs`` when it has
    ``last_hidden_state`` or names no output class."""
    fields = _output_fields(model)
    if not fields or "last_hidden_state" in fields:
        return outputs
    last = [name for name in fields if name.endswith("last_hidden_state")]
    return last or (["pooler_output"] if "pooler_output" in fields else fields[:1])


def _pools_eos(model: torch.nn.Module) -> bool:
    """Whether the classifier pools each row's last ``<eos>`` token (BART-style
    ``*ForSequenceClassification``: BART, mBART, PLBart, MVP, BigBird-Pegasus, LED select
    ``hidden_states[input_ids == eos_token_id]``): on ids without one, eager fails ("Each example
    must contain at least one <eos> token") and a capture on them holds an empty selection."""
    return forward_reads(type(model), "eos_mask")


def _pools_last_token(model: torch.nn.Module) -> bool:
    """Whether the classifier pools each row's last non-pad token, found from ``pad_token_id``
    (``GenericForSequenceClassification``, GPT-2, ...): without one, transformers refuses a batch
    of more than one row ("Cannot handle batch sizes > 1 if no padding token is defined")."""
    return forward_reads(type(model), _NO_PAD_TOKEN)


def _pad_token_id(loaded: LoadedModel) -> int:
    """The pad token id for a last-token classifier whose config has none: the tokenizer's
    (``tokenizer_config.json`` ``pad_token``, looked up in ``tokenizer.json``), as Optimum infers
    it; else -1, an id no input has, so the last position is pooled (transformers' choice for one
    row): rows must then be left-padded or unpadded. Warns with the choice."""
    pad = _tokenizer_pad_id(loaded.folder) if loaded.folder is not None and tokenizers is not None else None
    if pad is not None:
        warnings.warn(
            f"{type(loaded.model).__name__} pools each row's last non-pad token and its config has no "
            f"pad_token_id: the export uses the tokenizer's pad token (id {pad}).", UserWarning, stacklevel=3)
        return pad
    warnings.warn(
        f"{type(loaded.model).__name__} pools each row's last non-pad token, and neither its config nor a "
        "tokenizer names a pad token: the exported model pools the last position of every row, so "
        "batches must be left-padded (or unpadded). Set pad_token_id in config.json to pool the last "
        "non-pad token of right-padded rows.", UserWarning, stacklevel=3)
    return -1


def _tokenizer_pad_id(folder: Path) -> int | None:
    """The id of ``tokenizer_config.json``'s ``pad_token`` in ``tokenizer.json``, or ``None``."""
    try:
        settings = json.loads((folder / "tokenizer_config.json").read_text())
        pad = settings.get("pad_token")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        if not isinstance(pad, str):
            return None
        tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    except Exception:  # a missing or unreadable file (OSError, JSON, tokenizers' own errors): no pad token known
        return None
    return tokenizer.token_to_id(pad)


def interpolates(model: torch.nn.Module) -> bool:
    """Whether a patch model resamples its position embeddings to the input's size: on request
    (its forward takes ``interpolate_pos_encoding``: ViT, DeiT, BEiT, CLIP and SigLIP towers) or
    always (an embeddings module with an ``interpolate_pos_encoding`` method its forward calls
    without such a flag: DINOv2; DPT's ``_resize_pos_embed``).

    Swin-style models (a ``maybe_pad`` method) are left out: they branch on ``H % patch`` and the
    window size; those whose branches the capture takes at every size are resizable by
    :func:`onnxport.capture.windows.any_size` instead.
    """
    if any(hasattr(m, "maybe_pad") for m in model.modules()):
        return False
    return _takes(model, "interpolate_pos_encoding") or any(
        any(callable(getattr(m, name, None)) for name in ("interpolate_pos_encoding", "_resize_pos_embed"))
        and not _takes(m, "interpolate_pos_encoding")
        for m in model.modules()
    )


def _takes(module: torch.nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


# DETR's panoptic head (DetrForSegmentation, ConditionalDetrForSegmentation): the outputs of the
# image-segmentation task for *ForSegmentation classes (Optimum's DETR config, transformers.js's
# image-segmentation pipeline)
PANOPTIC_OUTPUTS = ("logits", "pred_boxes", "pred_masks")
# image sides tried, in order, when a vision model does not run at its configured (or default) size
_LARGER_IMAGES = (128, 256, 512, 640, 1024, 1536)
# The side multiples a convolutional image model is probed at (encoders._size_multiple), up to the
# output stride of ResNet-style backbones.
_MULTIPLES = (1, 2, 4, 8, 16, 32)
# Patch counts per side tried when a patch model does not run at its configured size (_patch_multiples).
_PATCH_GROUPS = (2, 4, 8)
# Sides of a convolutional model's dynamic height/width start above one output stride of 32 (or at
# the example's): at 32 pixels or less the last feature map is 1x1, where broadcasting takes other
# paths than at larger sizes (torch's size-1 specialization; Mask2Former's pixel decoder at 32x32).
_SMALLEST_SIDE = 33


def vision_component(loaded: LoadedModel) -> Component:
    """``pixel_values`` dynamic in batch, and in height/width for patch models that interpolate
    their position embeddings (:func:`interpolates`; called with ``interpolate_pos_encoding=True``,
    which at the configured size gives the table unchanged), for those that pad to their windows
    (:func:`onnxport.capture.windows.any_size`: Swin; Donut-Swin, whose window branches the capture
    cannot take at every size, keeps its size), and for other models (convolutional ones,
    convolutional stems with a ``patch_size``: ConvNeXt) that run at other sizes: any size, or
    multiples of some ``m`` (:func:`_size_multiple`), as ``m*height``, ``m*width``. A model that
    fails at other sizes (a fake-tensor probe, else eager: ViT without interpolation checks the
    size, PVT reshapes its position table to the configured grid) keeps its height and width.

    The size is the image processor's or the config's (its ``vision_config``'s for a classifier
    over a CLIP-style tower), else 64; a model that does not run there takes the first of
    :data:`_LARGER_IMAGES` it runs at (RT-DETR, D-FINE: ``topk`` of 300 queries over the
    encoder's anchors, 84 at 64x64)."""
    config = loaded.model.config
    vision = getattr(config, "vision_config", None) or config
    backbone = getattr(config, "backbone_config", None)
    # ViTPose: the configured size is its backbone's (absolute position embeddings of that grid)
    sized = vision if getattr(vision, "image_size", None) is not None or backbone is None else backbone
    height, width = image_size(loaded, sized)
    channels = getattr(vision, "num_channels", 3)
    patch = getattr(vision, "patch_size", None)
    patch = None if patch == 1 else patch  # 1-pixel patches (Swin2SR) are a convolution
    # masked-im keeps the configured size: ViT's and Swin's reconstruction heads fold the patches
    # into a square grid of math.floor(sqrt(length)) sides
    fixed = loaded.task.name == "masked-im"
    interpolate = not fixed and patch is not None and interpolates(loaded.model)
    windowed = not fixed and windows.any_size(loaded.model)
    # Swin-style padding the capture cannot take at every size (Donut-Swin: its layers drop the
    # shift and shrink the window where the grid is no larger than the window, inline): eager runs
    # at other sizes, the graph holds the example's branch, so the configured size is kept
    padded = any(callable(getattr(m, "maybe_pad", None)) for m in loaded.model.modules())
    probed = not fixed and (patch is None or not (interpolate or windowed or padded or _resamples_to_patches(loaded.model)))
    step = patch if isinstance(patch, int) else 8
    multiple: int | None = 1  # of the sides (a probed model's, searched below)

    def sides(seed: int) -> tuple[int, int]:
        if windowed:  # captured at twice the configured size, validated at it and above twice
            # (at the configured size Swin's last stage is often one window, and torch.export
            # specializes a count of 1: the graph would hold only that), off the patch multiples
            # unless the sides are multiples (Swin2SR: of its window)
            grow = (step + int(multiple == 1)) * max(seed - 1, 0)
            return (height, width) if seed == 1 else (2 * height + grow, 2 * width + grow)
        # an interpolating model is captured a patch below the configured size, validated at it and above
        grow = step * (seed - int(interpolate))
        return height + grow, width + grow

    resizable = True

    def make(sizes: Sizes, resized: bool | None = None) -> dict[str, Any]:
        gen = _generator(sizes)
        side_h, side_w = sides(sizes.seed) if (resizable if resized is None else resized) else (height, width)
        return {"pixel_values": torch.randn(sizes.batch, channels, side_h, side_w, generator=gen)}

    interpolating = interpolate and _takes(loaded.model, "interpolate_pos_encoding")
    panoptic = loaded.task.name == "image-segmentation" and type(loaded.model).__name__.endswith("ForSegmentation")
    outputs = list(PANOPTIC_OUTPUTS if panoptic else loaded.task.outputs)
    if type(loaded.model).__name__ == "MgpstrForSceneTextRecognition":
        outputs = list(wrappers.MGP_STR_OUTPUTS)  # its three heads, whatever the task
    elif loaded.task.name == "feature-extraction":
        outputs = _embedding_outputs(loaded.model, outputs)
    probe = wrappers.VisionModel(loaded.model, outputs, interpolate=interpolating)
    smallest = min(height, width, _SMALLEST_SIDE)
    if not _runs(probe, make(Sizes(batch=1), resized=False)):
        grouped = _patch_multiples(height, width, getattr(sized, "patch_size", None))  # a backbone's patches
        larger = (side for side in _LARGER_IMAGES if side > max(height, width))
        fits = (side for side in (*grouped, *larger)
                if _runs(probe, {"pixel_values": torch.randn(1, channels, side, side)}))  # fmt: skip
        height = width = smallest = next(fits, height)  # smaller sides do not run: the least side
        # a grid of whole windows (RF-DETR) keeps its size: eager's guards at other sizes do not
        # describe the windowing the capture records
        resizable = height not in grouped
        probed = probed and resizable
    axes: dict[int, Any] = {0: BATCH, 2: HEIGHT, 3: WIDTH}
    if probed:  # any size, or multiples of what it divides by, or none
        multiple = _size_multiple(probe, channels, height, width)
        if multiple is None:
            resizable = False
        else:  # make() grows by the new step (a patch stem's validation sizes off its multiples)
            step, axes = max(step if patch is None else 1, multiple), image_sides(multiple, smallest)
    elif not (interpolate or windowed) or not _runs(probe, make(Sizes(batch=1, seed=2), resized=True)):
        resizable = False
    if loaded.task.name == "feature-extraction" and _pooled(loaded.model, make):
        outputs.append("pooler_output")  # transformers.js image-feature-extraction with pool: true
    module = wrappers.VisionModel(loaded.model, outputs, interpolate=interpolating)
    return Component("model", module, make, {"pixel_values": axes if resizable else {0: BATCH}}, None, outputs)


def _patch_multiples(height: int, width: int, patch: int | None) -> tuple[int, ...]:
    """Square sides below the configured size that are multiples of 2, 4 and 8 patches, for
    a patch model that does not run at that size: RF-DETR's windowed DINOv2 backbone is configured
    at 518 px (37 patches of 14) and cuts the patch grid into 4 x 4 windows, so it runs at 504
    (36 patches), as its processor's sizes are."""
    if not isinstance(patch, int) or patch < 2:
        return ()
    side = min(height, width)  # sides below it only: the configured size itself did not run
    return tuple(dict.fromkeys(side - side % (patch * k) for k in _PATCH_GROUPS if side >= patch * k and side % (patch * k)))


def _resamples_to_patches(model: torch.nn.Module) -> bool:
    """Whether a module cuts its map into patches in an ``unfolding`` method: MobileViT resamples
    the map to patch multiples (``nn.functional.interpolate`` under a branch on the map's size,
    whose side the graph would hold); MobileViT V2 ``unfold``s it and ``fold``s it back, which
    eager runs at any multiple of 16 while torch.export cannot solve the parity guard of the
    stride-16 map it records (``Eq(x/16 - 2*((x/16)//2), 0)``: sympy's
    ``solve_univariate_inequality`` raises NotImplementedError). Such models keep their size."""
    return any(callable(getattr(m, "unfolding", None)) for m in model.modules())


def _size_multiple(module: torch.nn.Module, channels: int, height: int, width: int) -> int | None:
    """The smallest of :data:`_MULTIPLES`, ``m``, such that the image model runs at ``m``, ``3 m``
    and 64 pixels above its size on both sides (and divides it), else ``None`` (a fixed size: PVT
    runs at 65x65, whose stride-4 patch grid is 64x64's, and fails at 128x128).
    Convolutional classifiers take any size (1); a feature pyramid that adds a map upsampled 2x to
    the next takes multiples of its output stride (RT-DETR, D-FINE: 32 — at 144x144 a 5x5 map
    upsampled to 10x10 meets a 9x9 one); Swin2SR multiples of its window."""
    for multiple in _MULTIPLES:
        if height % multiple or width % multiple:
            return None
        offsets = (multiple, 3 * multiple, 2 * _MULTIPLES[-1])  # the last changes a stride-32 grid
        grown = ({"pixel_values": torch.randn(1, channels, height + k, width + k)} for k in offsets)
        if all(_runs(module, inputs) for inputs in grown):
            return multiple
    return None


# torch logs each failing meta kernel with its traceback (``log.exception``) before raising
_FAKE_TENSOR_LOG = "torch._subclasses.fake_tensor"


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """The logger ``name`` silenced: a probe that fails is an answer, not an error to print."""
    log = logging.getLogger(name)
    level = log.level
    log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        log.setLevel(level)


def _runs(model: torch.nn.Module, inputs: dict[str, Any]) -> bool:
    """Whether ``model`` runs on ``inputs`` (an image of another size than the configured one, a
    spectrogram of a candidate feature size): first on fake tensors, where nothing is computed, and
    when that fails (a data-dependent op fails there too) in eager for a model in memory; a meta
    model that reaches a data-dependent op on fake tensors is taken to run (its sizes fit up to
    there; the capture decides the rest). A model
    that fails there at another image size (PVT's ``interpolate_pos_encoding`` reshapes the
    position table to the configured patch grid) keeps its height and width fixed in the graph."""
    in_memory = not any(p.device.type == "meta" for p in model.parameters())
    device = next(model.parameters()).device
    inputs = {k: v.to(device) for k, v in inputs.items()}
    for fake in (True, False) if in_memory else (True,):
        mode = FakeTensorMode(allow_non_fake_inputs=True) if fake and in_memory else contextlib.nullcontext()
        try:
            with _quiet(_FAKE_TENSOR_LOG), probe_mode(model), mode, torch.no_grad():
                model(**inputs)
        except (DataDependentOutputException, GuardOnDataDependentSymNode):
            if not in_memory:  # values fake tensors do not have (D-FINE's .item()): the sizes fit so far
                return True
            continue
        except wrappers.MissingOutputError:  # no size gives the output: say so, not minutes of probing
            raise
        except Exception:  # any failure of the model's own code at this size
            continue
        return True
    return False


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


def _frames(sizes: Sizes) -> int:
    """Feature-encoder frames of an input set: odd for the export's (seed 0), even and odd among the
    validation's. A model may branch on their parity: SEW and SEW-D pad the upsampled frames by one
    when the count is odd, and that branch is the general one (its pad is zero at an even count);
    captured at an even count, the graph lacked the pad and gave one frame too few at odd counts."""
    return 2 * sizes.sequence + (sizes.seed + 1) % 2


def audio_component(loaded: LoadedModel) -> Component:
    """``input_values`` → the task's outputs: a raw waveform dynamic in batch and length
    (``sequence_length``, Optimum's name), ``(batch_size, audio_channels, sequence_length)`` for a
    codec's encoder alone (``MimiEncoderModel``: :func:`onnxport.hf.codec.waveform_samples`), or the fixed ``(max_length, num_mel_bins)`` spectrogram of an Audio Spectrogram
    Transformer (dynamic in batch only)."""
    config = loaded.model.config
    spectrogram = getattr(config, "num_mel_bins", None), getattr(config, "max_length", None)
    fixed = all(isinstance(v, int) for v in spectrogram)
    channels = getattr(config, "audio_channels", None)  # a codec's half: (batch, channels, samples)
    outputs = list(loaded.task.outputs)
    if loaded.task.name == "feature-extraction":
        outputs = _embedding_outputs(loaded.model, outputs)

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        if isinstance(channels, int):
            shape: tuple[int, ...] = (sizes.batch, channels, waveform_samples(config, sizes))
        else:
            shape = (sizes.batch, *spectrogram[::-1]) if fixed else (sizes.batch, _waveform_samples(config, _frames(sizes)))  # type: ignore[assignment]
        return {"input_values": torch.randn(*shape, generator=gen)}

    if getattr(loaded.model, "main_input_name", None) == "input_features":
        return _features_component(loaded)
    axes = {0: BATCH} if fixed else {0: BATCH, 2 if isinstance(channels, int) else 1: SEQUENCE}
    module = wrappers.AudioModel(loaded.model, outputs)
    return Component("model", module, make, {"input_values": axes}, None, outputs)


def _feature_sizes(config: Any) -> list[int]:
    """Candidate features per frame of a spectrogram model: Speech2Text's
    ``input_feat_per_channel * input_channels``, w2v-BERT's ``feature_projection_input_dim``, else
    ``num_mel_bins`` of the config or of its ``encoder_config`` (Parakeet, LASR, Canary) times 1, 2
    or 4 (Granite Speech 5 stacks delta-expanded mel frames in pairs: ``4 * num_mel_bins``)."""
    per_channel, channels = getattr(config, "input_feat_per_channel", None), getattr(config, "input_channels", 1)
    sizes = [per_channel * channels] if isinstance(per_channel, int) and isinstance(channels, int) else []
    for owner in (config, getattr(config, "encoder_config", None)):
        value = getattr(owner, "feature_projection_input_dim", None)
        if isinstance(value, int):
            sizes.append(value)
        mel = getattr(owner, "num_mel_bins", None)
        if isinstance(mel, int):
            sizes += [mel, 2 * mel, 4 * mel]
    return list(dict.fromkeys(sizes))


def _features_component(loaded: LoadedModel) -> Component:
    """``input_features`` → the task's outputs, in the first layout the model runs on (probed in
    turn for each candidate of :func:`_feature_sizes`):

    - ``(batch_size, sequence_length, features)``: w2v-BERT 2.0, Parakeet, LASR; their encoders
      subsample the frames (by up to 8 in Parakeet), so the frame counts are 8 per :func:`_frames`
      plus 7 (odd, and past the subsampling convolutions' kernels);
    - ``(batch_size, features, frames)``: Whisper's encoder (``WhisperForAudioClassification``),
      whose frames are fixed at ``2 * max_source_positions`` (3000: 30 s), so only the batch is
      dynamic (as Optimum exports it); without ``max_source_positions`` the frames are dynamic.

    Raises:
        HFError: The model runs on none of them.
    """
    module = wrappers.AudioFeaturesModel(loaded.model, loaded.task.outputs)
    config = loaded.model.config
    fixed = getattr(config, "max_source_positions", None)
    fixed_frames = 2 * fixed if isinstance(fixed, int) else None

    def shape(sizes: Sizes, features: int, transposed: bool) -> tuple[int, ...]:
        frames = 8 * _frames(sizes) + 7
        if transposed:
            return (sizes.batch, features, fixed_frames or frames)
        return (sizes.batch, frames, features)

    features, transposed = _feature_layout(loaded.model, module, lambda layout: {
        "input_features": torch.zeros(shape(Sizes(batch=1), *layout))})

    def make(sizes: Sizes) -> dict[str, Any]:
        return {"input_features": torch.randn(*shape(sizes, features, transposed), generator=_generator(sizes))}

    if not transposed:
        axes = {0: BATCH, 1: SEQUENCE}
    else:
        axes = {0: BATCH} if fixed_frames else {0: BATCH, 2: SEQUENCE}
    return Component("model", module, make, {"input_features": axes}, None, list(loaded.task.outputs))


def _feature_layout(
    model: torch.nn.Module, module: torch.nn.Module, inputs: Callable[[tuple[int, bool]], dict[str, Any]]
) -> tuple[int, bool]:
    """``(features, transposed)``: the first candidate of :func:`_feature_sizes`, frames first
    then features first (``transposed``), on which ``module`` runs ``inputs(layout)``.

    Raises:
        HFError: ``module`` runs on none of them.
    """
    layouts = [(n, transposed) for transposed in (False, True) for n in _feature_sizes(model.config)]
    fitting = next((layout for layout in layouts if _runs(module, inputs(layout))), None)
    if fitting is None:
        suggested = ", ".join(str(n) for n, t in layouts if not t) or "none: no feature_projection_input_dim or num_mel_bins"
        raise HFError(
            f"{type(model).__name__} takes input_features, and it runs on an example spectrogram "
            f"with none of the feature sizes its config suggests ({suggested}), frames first or features first: "
            "onnxport cannot build its example inputs. Check that the model runs in eager PyTorch on "
            "input_features of shape (batch, frames, features) or (batch, features, frames)."
        )
    return fitting


def masked_speech_encoder(loaded: LoadedModel) -> Component:
    """``encoder_model`` of a speech encoder-decoder whose encoder takes a spectrogram of any length
    with its mask (Speech2Text, Canary, Cohere ASR: not Whisper's fixed 30 s): ``input_features``
    in the first layout of :func:`_feature_sizes` the encoder runs on, ``(batch_size,
    encoder_sequence_length, features)`` or ``(batch_size, features, encoder_sequence_length)``
    float32, and ``attention_mask`` ``(batch_size, encoder_sequence_length)`` INT64 (1 for a frame,
    0 for padding at the end, as feature extractors pad) → ``last_hidden_state`` ``(batch_size,
    frames after subsampling, hidden)``. Optimum's ``Speech2TextOnnxConfig`` has the same encoder
    inputs; its decoder takes the encoder's output without a mask, as onnxport's does.

    Raises:
        HFError: The encoder runs on none of the candidate layouts.
    """
    module = wrappers.SpeechEncoder(loaded.model)
    dtype = next(loaded.model.parameters()).dtype

    def spectrogram(batch: int, frames: int, features: int, transposed: bool, gen: Any = None) -> dict[str, Any]:
        shape = (batch, features, frames) if transposed else (batch, frames, features)
        mask = torch.ones(batch, frames, dtype=torch.int64)
        if batch > 1:
            mask[0, frames - frames // 4:] = 0  # the first row padded at the end
        return {"input_features": torch.randn(*shape, generator=gen, dtype=dtype), "attention_mask": mask}

    features, transposed = _feature_layout(
        loaded.model, module, lambda layout: spectrogram(1, 8 * _frames(Sizes(batch=1)) + 7, *layout))

    def make(sizes: Sizes) -> dict[str, Any]:
        # frames past the subsampling convolutions' kernels (8x in Canary), odd and even
        return spectrogram(sizes.batch, 8 * _frames(sizes) + 7, features, transposed, _generator(sizes))

    frames_axis = 2 if transposed else 1
    dynamic = {"input_features": {0: BATCH, frames_axis: ENCODER_SEQUENCE}, "attention_mask": {0: BATCH, 1: ENCODER_SEQUENCE}}
    return Component("encoder_model", module, make, dynamic, None, ["last_hidden_state"])


def text_vision_component(loaded: LoadedModel) -> Component:
    """CLIP-style zero-shot image classification: texts and images in batches of their own
    (``text_batch_size``, ``image_batch_size``: Optimum's names); images of any size when the
    model interpolates its position embeddings (``interpolate_pos_encoding``, as
    :func:`vision_component`).

    Zero-shot object detection (OWL-ViT, OWLv2) takes the ``text_batch_size`` queries of one image
    at its configured size: the model splits ``input_ids`` into ``len(input_ids) // len(images)``
    queries per image, and transformers.js's pipeline runs one image at a time (Optimum's
    ``OwlViTOnnxConfig`` fixes the batch too)."""
    if loaded.task.name == "zero-shot-object-detection":
        return _queries_component(loaded)
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


def _queries_component(loaded: LoadedModel) -> Component:
    """Text queries ``[text_batch_size, sequence_length]`` of one image ``[1, C, H, W]`` →
    ``logits`` ``[1, boxes, text_batch_size]``, ``pred_boxes``, ``text_embeds``, ``image_embeds``.

    Raises:
        HFError: The model has no ``text_config`` and ``vision_config`` (Grounding DINO).
    """
    model = loaded.model
    text_config, vision_config = (getattr(model.config, name, None) for name in ("text_config", "vision_config"))
    if text_config is None or vision_config is None:
        raise HFError(
            f"zero-shot-object-detection exports OWL-ViT-style models (a text and a vision tower: text_config and "
            f"vision_config); {type(model).__name__} is another kind (Grounding DINO, OmDet-Turbo). Export it with "
            "onnxport.export and its inputs."
        )
    height, width = image_size(loaded, vision_config)
    channels = getattr(vision_config, "num_channels", 3)

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        return {
            "input_ids": token_ids(text_config, sizes.batch, sizes.sequence, gen),
            "pixel_values": torch.randn(1, channels, height, width, generator=gen),
            "attention_mask": torch.ones(sizes.batch, sizes.sequence, dtype=torch.int64),
        }

    text_axes = {0: TEXT_BATCH, 1: SEQUENCE}
    dynamic = {"input_ids": text_axes, "pixel_values": None, "attention_mask": dict(text_axes)}
    module = wrappers.TextVisionModel(model, loaded.task.outputs)
    return Component("model", module, make, dynamic, None, list(loaded.task.outputs))
