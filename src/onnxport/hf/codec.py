"""Neural audio codecs (DAC, EnCodec, Mimi, X-Codec, PocketTTS's audio tokenizer): the two graphs
transformers.js's ``DacModel`` / ``MimiModel`` run, ``encoder_model`` (``input_values``
``(batch_size, channels, sequence_length)`` waveform → ``audio_codes``) and ``decoder_model``
(component ``codes_decoder``: ``audio_codes`` → ``audio_values``, ``(batch_size, channels,
samples)``; DAC squeezes its one channel). Source: transformers.js
``src/models/classes/DacPreTrainedModel.js`` and ``MimiPreTrainedModel.js`` (sessions
``encoder_model`` / ``decoder_model``, ``input_values`` → ``audio_codes`` → ``audio_values``).

A codec whose encoder gives continuous ``latents`` instead of codes (PocketTTS's audio tokenizer,
VibeVoice's acoustic tokenizer) exports the same pair with ``latents`` between them. The code
tensor's batch and frame axes are found by probing ``encode`` at two sizes (EnCodec's codes are
``(chunks, batch_size, num_quantizers, codes_length)``, PocketTTS's latents
``(batch_size, codes_length, channels)``).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch

from onnxport.capture.dynamic_shapes import DimName
from onnxport.errors import HFError
from onnxport.hf.dims import BATCH, SEQUENCE
from onnxport.hf.eager import run as run_eager
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, probe_mode
from onnxport.hf.parts import generator as _generator

CODE_FIELDS = ("audio_codes", "latents")  # what encode() returns, in order of preference
CODES_LENGTH = DimName("codes_length", min=1)  # transformers.js' name for the codes' frame axis
_PROBES = (Sizes(batch=2, sequence=3, seed=1), Sizes(batch=3, sequence=5, seed=2))


def supports(model: torch.nn.Module) -> bool:
    """Whether ``model`` is an audio codec: a waveform model (``main_input_name`` ``input_values``)
    with ``encode`` and ``decode`` methods (``DacModel``, ``EncodecModel``, ``MimiModel``...)."""
    return (
        getattr(model, "main_input_name", None) == "input_values"
        and callable(getattr(model, "encode", None))
        and callable(getattr(model, "decode", None))
    )


def hop_length(config: Any) -> int:
    """Waveform samples per code frame: the config's ``hop_length`` (DAC, X-Codec) or
    ``frame_size``, else ``sampling_rate / frame_rate`` (EnCodec 24 kHz: 320, Mimi: 1920), else
    the product of ``downsampling_ratios`` / ``upsampling_ratios``."""
    for name in ("hop_length", "frame_size"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    rate, frames = getattr(config, "sampling_rate", None), getattr(config, "frame_rate", None)
    if isinstance(rate, (int, float)) and isinstance(frames, (int, float)) and frames > 0:
        return round(rate / frames)
    ratios = getattr(config, "downsampling_ratios", None) or getattr(config, "upsampling_ratios", None) or [320]
    hop = 1
    for ratio in ratios:
        hop *= int(ratio)
    return hop


def waveform_samples(config: Any, sizes: Sizes) -> int:
    """Samples of one input set's waveform: ``sizes.sequence`` frames of :func:`hop_length`, plus a
    part frame on odd seeds (codecs pad the last frame; validation covers both)."""
    hop = hop_length(config)
    return hop * sizes.sequence + (hop // 3 if sizes.seed % 2 else 0)


class CodecEncoder(torch.nn.Module):
    """``input_values`` ``(batch, channels, samples)`` → ``model.encode(...)[field]``.

    EnCodec without chunks (``chunk_length_s`` ``None``, the 24 kHz model) encodes the whole
    waveform as one chunk, but its ``encode`` loops ``for offset in range(0, length, stride)``, a
    Python ``range`` of the symbolic length that fixes it to the example's; its one chunk is
    ``_encode_frame(input_values, bandwidth)`` (the first of ``target_bandwidths``, as
    ``encode``'s default), stacked as ``encode`` does into ``(1, batch, num_quantizers, frames)``."""

    def __init__(self, model: torch.nn.Module, field: str) -> None:
        super().__init__()
        self.model = model
        self.field = field
        config = model.config
        self.one_chunk = hasattr(model, "_encode_frame") and getattr(config, "chunk_length", 0) is None

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        model: Any = self.model
        if self.one_chunk:
            codes, _ = model._encode_frame(input_values, model.config.target_bandwidths[0])
            return codes[None]  # type: ignore[no-any-return]
        return model.encode(input_values)[self.field]  # type: ignore[no-any-return]


class CodecDecoder(torch.nn.Module):
    """The encoder's ``audio_codes`` → ``output``, a tensor ``model.decode`` returns
    (``audio_values``)."""

    field = "audio_codes"

    def __init__(self, model: torch.nn.Module, output: str) -> None:
        super().__init__()
        self.model = model
        self.output = output

    def forward(self, audio_codes: torch.Tensor) -> torch.Tensor:
        return decode(self.model, self.field, audio_codes)[self.output]  # type: ignore[no-any-return]


class LatentsDecoder(CodecDecoder):
    """The encoder's continuous ``latents`` (PocketTTS, VibeVoice) → ``output``."""

    field = "latents"

    def forward(self, latents: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return decode(self.model, self.field, latents)[self.output]  # type: ignore[no-any-return]


def decode(model: torch.nn.Module, field: str, codes: torch.Tensor) -> Any:
    """``model.decode`` of ``codes`` passed as ``field``; EnCodec's ``decode`` also takes the
    per-chunk ``audio_scales``: ``None`` for each chunk (a model without ``normalize``)."""
    extra: dict[str, Any] = {}
    if "audio_scales" in inspect.signature(model.decode).parameters:  # type: ignore[arg-type]
        extra["audio_scales"] = [None] * codes.shape[0]
    return model.decode(**{field: codes}, **extra)  # type: ignore[operator]


def components(loaded: LoadedModel) -> list[Component]:
    """``encoder_model`` and ``decoder_model`` of an audio codec (:func:`supports`), the waveform
    dynamic in batch and length (``hop_length`` samples per frame, plus a part frame on odd seeds:
    codecs pad the last frame), the codes in batch and ``codes_length``.

    Raises:
        HFError: ``encode`` returns none of :data:`CODE_FIELDS`, or an EnCodec model normalizes
            its chunks (``normalize``: the decoder would need the per-chunk scales).
    """
    model = loaded.model
    config = model.config
    if getattr(config, "normalize", False):
        raise HFError(
            f"{type(model).__name__} normalizes its audio (config.normalize=True): its decoder needs the "
            "per-chunk audio_scales of the encoder (and 48 kHz EnCodec cuts the audio into overlapping chunks "
            "in a Python loop), which onnxport's codec export does not carry. Export its encoder and decoder "
            "with onnxport.export and the inputs your pipeline feeds them."
        )
    channels = int(getattr(config, "audio_channels", None) or 1)

    def make_encoder(sizes: Sizes) -> dict[str, Any]:
        samples = waveform_samples(config, sizes)
        return {"input_values": torch.randn(sizes.batch, channels, samples, generator=_generator(sizes))}

    device = next(model.parameters()).device

    def encode(sizes: Sizes) -> Any:
        return model.encode(make_encoder(sizes)["input_values"].to(device))

    with probe_mode(model):
        probes = [run_eager("encoding a probe waveform", functools.partial(encode, s)) for s in _PROBES]
    field = next((name for name in CODE_FIELDS if isinstance(probes[0].get(name), torch.Tensor)), None)
    if field is None:
        raise HFError(
            f"{type(model).__name__}.encode returned {', '.join(probes[0].keys())}: onnxport's codec export "
            f"needs one of {', '.join(CODE_FIELDS)}. Export its parts with onnxport.export."
        )
    codes = [p[field] for p in probes]
    axes = _code_axes(codes[0].shape, codes[1].shape)
    with probe_mode(model):
        decoded = run_eager("decoding the probe codes", lambda: decode(model, field, codes[0]))
    output = next(name for name, value in decoded.items() if isinstance(value, torch.Tensor))
    code_dtype = codes[0].dtype
    code_shape = list(codes[0].shape)

    def make_decoder(sizes: Sizes) -> dict[str, Any]:
        shape = list(code_shape)
        for axis, dim in axes.items():
            shape[axis] = sizes.batch if dim is BATCH else sizes.sequence
        gen = _generator(sizes)
        if code_dtype.is_floating_point:
            return {field: torch.randn(*shape, generator=gen)}
        size = int(getattr(config, "codebook_size", None) or 2)
        return {field: torch.randint(0, size, shape, generator=gen, dtype=code_dtype)}

    encoder = Component(
        "encoder_model",
        CodecEncoder(model, field),
        make_encoder,
        {"input_values": {0: BATCH, 2: SEQUENCE}},
        None,
        [field],
    )
    module = (CodecDecoder if field == "audio_codes" else LatentsDecoder)(model, output)
    decoder = Component("codes_decoder", module, make_decoder, {field: axes}, None, [output])
    return [encoder, decoder]


def _code_axes(first: torch.Size, second: torch.Size) -> dict[int, Any]:
    """The dynamic axes of the codes from two probes (batch 2 → 3; frames grow with the samples):
    the axis that took the batch size is ``batch_size``, the other axis that changed ``codes_length``."""
    changed = [axis for axis, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
    batch = next((axis for axis in changed if (first[axis], second[axis]) == (_PROBES[0].batch, _PROBES[1].batch)), None)
    return {axis: (BATCH if axis == batch else CODES_LENGTH) for axis in changed}
