"""Components to export for a task, their example inputs, dynamic axes and graph names.

A task exports one component (``model``) or two (``encoder_model`` + ``decoder_model``). Each
:class:`Component` builds inputs for any :class:`Sizes`, so the export uses one set of sizes and
the validation fresh ones (another batch, sequence and past length, including an empty past).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import torch

from onnxport.errors import HFError
from onnxport.hf import (
    audio_language,
    codec,
    image_audio_text,
    multimodal_rope,
    naflex,
    segment_anything,
    speech,
    time_series,
    trajectory,
    video,
    vision_language,
)
from onnxport.hf import cache as wrappers
from onnxport.hf.dims import BATCH, ENCODER_SEQUENCE, SEQUENCE, TOTAL_SEQUENCE
from onnxport.hf.dims import PAST_SEQUENCE as PAST
from onnxport.hf.eager import run as run_eager
from onnxport.hf.encoders import (
    audio_component,
    masked_speech_encoder,
    text_component,
    text_vision_component,
    vision_component,
)
from onnxport.hf.key_value import fused_key_value
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import (  # the shared records, used through this module by the exporters
    CHECK_SIZES,
    EXPORT_SIZES,
    CacheBranch,
    Component,
    Sizes,
    image_size,
    left_padded_mask,
    position_ids_from_mask,
    probe_mode,
    token_ids,
)
from onnxport.hf.parts import generator as _generator

TOTAL = TOTAL_SEQUENCE
__all__ = [
    "CHECK_SIZES", "EXPORT_SIZES", "CacheBranch", "Component", "Sizes", "components", "folder_files",
    "image_size", "left_padded_mask", "position_ids_from_mask", "token_ids",
]  # fmt: skip

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
    """``(heads, head_dim)`` of a ``[B, heads, length, head_dim]`` cache tensor.

    Raises:
        HFError: The tensor has another rank (a layer caching something else than attention keys).
    """
    if tensor is None:
        return None
    if tensor.dim() != 4:
        raise HFError(
            f"A cache layer holds a tensor of shape {list(tensor.shape)} where keys/values of shape "
            "[batch, heads, length, head_dim] were expected: this cache cannot be exported."
        )
    return int(tensor.shape[1]), int(tensor.shape[3])


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


def _runs_without_cache(model: torch.nn.Module) -> bool:
    """Whether ``model`` runs eagerly on a 2-token probe with ``use_cache=False``."""
    try:
        with torch.no_grad():
            model(input_ids=torch.zeros(1, 2, dtype=torch.int64), use_cache=False)
    except Exception:  # any failure: the model does not run without a cache either
        return False
    return True


def _attends_ahead(model: torch.nn.Module) -> bool:
    """Whether ``model``'s first-position logits change with the second token (one probe of two
    2-token rows that differ in their second token, ``use_cache=False``): a model that attends both
    ways (BigBird, BERT-like ``*ForCausalLM`` whose config lacks ``is_decoder=True``; transformers
    then builds ``create_bidirectional_mask``) gives other logits with a KV cache than on the whole
    sequence, which is what its ``generate`` computes. ``False`` on a meta model (no values) or when
    the probe fails (nothing to tell)."""
    if any(p.is_meta for p in model.parameters()):
        return False
    ids = torch.tensor([[1, 1], [1, 2]], dtype=torch.int64, device=next(model.parameters()).device)
    try:
        with torch.no_grad():
            logits = getattr(model(input_ids=ids, use_cache=False), "logits", None)
    except Exception:  # a model the bare probe does not run: nothing to tell
        return False
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or tuple(logits.shape[:2]) != (2, 2):
        return False
    first = logits[:, 0].float()
    return not torch.allclose(first[0], first[1], rtol=1e-4, atol=1e-5)


def past_names(layers: int, prefix: str, part: str = "") -> list[str]:
    """``prefix.{i}[.part].key`` / ``.value`` for every layer."""
    middle = f".{part}" if part else ""
    return [f"{prefix}.{i}{middle}.{kind}" for i in range(layers) for kind in ("key", "value")]


def cache_entries(layers: list[LayerCache], model_type: str | None, fused: bool) -> list[list[CacheEntry]]:
    """Each layer's cache tensors, in :func:`onnxport.hf.cache.flatten_cache`'s order, named as
    transformers.js names them (``getCacheNames`` in ``src/configs.js``):

    - attention: ``past_key_values.{i}.key`` / ``.value`` (``present.{i}.key``...),
      ``(kv_heads, past, head_dim)``; ``fused`` (:func:`onnxport.hf.key_value.fused_key_value`):
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


def cache_layers_of(model: Any) -> list[LayerCache]:
    """What each layer of the decoder ``model`` caches, from one eager run on a 2-token probe.

    Raises:
        CacheFormatError: The model runs without a cache but not with a transformers Cache, or
            attends to later tokens (:func:`_attends_ahead`).
        HFError: The probe failed (:func:`cache_shapes`).
    """

    def probe() -> Any:
        # on the model's device: a meta model's probe runs all on meta, as its capture does (XGLM
        # indexes its sinusoidal table, on meta, with positions made on input_ids.device)
        device = next(model.parameters()).device
        ids = torch.zeros(1, 2, dtype=torch.int64, device=device)
        return wrappers.run_with_cache(model, wrappers.new_cache(model.config), input_ids=ids)[1]

    with probe_mode(model):
        if _attends_ahead(model):
            raise wrappers.CacheFormatError(
                f"{type(model).__name__} attends to later tokens (its first position's logits change with the "
                "second token): a KV cache would give other logits than the whole sequence, which transformers' "
                "generate recomputes at each step (a BERT-like *ForCausalLM needs is_decoder=True in its config "
                "to be causal)."
            )
        try:
            return cache_shapes(probe)
        except wrappers.CacheFormatError:
            raise
        except HFError as e:
            if not _runs_without_cache(model):
                raise
            raise wrappers.CacheFormatError(
                f"{type(model).__name__} runs without a cache but not with a transformers Cache "
                f"({str(e).splitlines()[0]}): the model keeps its cache in a format of its own."
            ) from e


def causal_lm_component(
    loaded: LoadedModel, embeds: bool = False, cache_layers: Sequence[LayerCache] | None = None
) -> Component:
    """The decoder step ``model`` (``model.onnx``): ``input_ids``, ``attention_mask``,
    ``position_ids`` and the past → ``logits`` and the present. ``embeds``: a vision-language
    model's language model, fed ``inputs_embeds`` ``[batch_size, sequence_length, hidden]``
    instead of ``input_ids`` (``decoder_model_merged.onnx``, :mod:`onnxport.hf.vision_language`).
    ``cache_layers``: what each layer caches when the caller knows it (a streamed export of a
    decoder whose layers repeat probes a two-layer copy, :mod:`onnxport.hf.streamed`); else
    :func:`cache_layers_of` runs the model once."""
    model = loaded.model
    config = model.config
    layers = list(cache_layers) if cache_layers is not None else cache_layers_of(model)
    restarting = sorted({
        type(m).__name__ for m in model.modules()
        if type(m).__module__ in _ZERO_STATE_SCANS and type(m).__name__.endswith("Mixer")
    })  # fmt: skip
    if restarting and any(layer.states for layer in layers):
        raise wrappers.CacheFormatError(
            f"The cache of {type(model).__name__} cannot be exported yet: its Mamba (v1) layers "
            f"({', '.join(restarting)}) restart the selective scan from a zero state for every input "
            "of several tokens (transformers' torch path continues the cached state only one token at a "
            "time), so one graph cannot serve the prompt and the decode steps."
        )
    dtype = next(model.parameters()).dtype
    # a VLM's states are named by its language model's type, as transformers.js' getCacheNames
    # delegates to text_config for qwen3_5 and lfm2_vl
    text_type = getattr(config.get_text_config(), "model_type", None)
    entries = cache_entries(layers, text_type, fused_key_value(config))

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
        first = (
            torch.randn(sizes.batch, sizes.sequence, hidden, generator=gen, dtype=dtype) if embeds
            else token_ids(config, sizes.batch, sizes.sequence, gen)
        )
        extra = {}  # decoder inputs beside the embeddings, [batch_size, sequence_length, ...]
        if layered:  # Gemma 4's per-layer embeddings
            extra[image_audio_text.PER_LAYER_INPUTS] = torch.randn(sizes.batch, sizes.sequence, *layered, generator=gen,
                                                                   dtype=dtype)
        if typed:  # an image block inside each prompt of several tokens; decode steps are text
            kinds = torch.zeros(sizes.batch, sizes.sequence, dtype=torch.int64)
            if sizes.sequence > 2:
                kinds[:, 1 : sizes.sequence - 1] = 1
            extra[vision_language.TOKEN_TYPES] = kinds
        positions = position_ids_from_mask(mask, sizes.sequence)
        if rows:  # temporal/height/width rows: equal for text, as transformers' get_rope_index gives them
            positions = positions[None].expand(rows, -1, -1).contiguous()
        return {
            first_name: first,
            **extra,
            "attention_mask": mask,
            "position_ids": positions,
            "past_key_values": past,
        }

    first_name = "inputs_embeds" if embeds else "input_ids"
    hidden = config.get_text_config().hidden_size if embeds else 0
    typed = embeds and vision_language.takes_token_types(model)
    rows = 3 if embeds and multimodal_rope.supports(model) else 0  # Qwen2-VL's [3, batch_size, sequence_length]
    layered = image_audio_text.per_layer_shape(model) if embeds and image_audio_text.supports(model) else None
    tokens = [first_name, *([vision_language.TOKEN_TYPES] if typed else []),
              *([image_audio_text.PER_LAYER_INPUTS] if layered else [])]  # [batch_size, sequence_length, ...]
    dynamic = {
        **{name: {0: BATCH, 1: SEQUENCE} for name in tokens},
        "attention_mask": {0: BATCH, 1: TOTAL},
        "position_ids": {1: BATCH, 2: SEQUENCE} if rows else {0: BATCH, 1: SEQUENCE},
        "past_key_values": [tuple(e.axes() for e in layer) for layer in entries],
    }
    flat = [e for layer in entries for e in layer]
    names = [*tokens, "attention_mask", "position_ids", *(e.past for e in flat)]
    outputs = ["logits", *(e.present for e in flat)]
    step = wrappers.EmbedsLMWithCache if embeds else wrappers.CausalLMWithCache
    module = step(model, prune_lm_head=loaded.prune_lm_head)
    return Component("decoder_model" if embeds else "model", module, make, dynamic, names, outputs)


# -- encoder-decoder ---------------------------------------------------------------------------
def seq2seq_components(loaded: LoadedModel, embeds: bool = False) -> list[Component]:
    """``encoder_model`` and ``decoder_model`` (self-attention cache; the cross-attention cache
    computed on the first step and fed back after it: :class:`CacheBranch`). With ``embeds``
    (an encoder-decoder VLM: Florence-2) both take ``inputs_embeds`` instead of token ids.

    Raises:
        HFError: With ``embeds``, the decoder from embeddings does not give the model's logits.
    """
    from transformers import (  # heavy optional dependency (onnxport[hf])
        DynamicCache,
        EncoderDecoderCache,
    )
    model = loaded.model
    config = model.config
    speech = loaded.task.kind == "speech-seq2seq"
    vision = loaded.task.kind == "vision-seq2seq"
    # Moonshine: a raw waveform of any length, no mask; its encoder's output length follows it
    waveform = speech and getattr(model, "main_input_name", None) == "input_values"
    # Whisper: input_features of num_mel_bins x 2 * max_source_positions frames (30 s); any other
    # spectrogram model takes frames of any length with their mask (Speech2Text, Canary)
    whisper = all(isinstance(getattr(config, k, None), int) for k in ("num_mel_bins", "max_source_positions"))
    spectrogram = speech and not waveform and not whisper
    fixed = (speech or vision) and not (waveform or spectrogram)  # the encoder's output length is fixed
    masked = not (speech or vision)  # the encoder (and the decoder's cross-attention) take a mask
    dtype = next(model.parameters()).dtype
    width_in = model.get_input_embeddings().embedding_dim if embeds else 0  # the inputs_embeds' width

    if vision:  # VisionEncoderDecoderModel (TrOCR, Donut): pixel_values of the encoder's size
        encoder_config = getattr(config, "encoder", config)
        height, width = image_size(loaded, encoder_config)
        channels = getattr(encoder_config, "num_channels", 3)
        encoder: torch.nn.Module = wrappers.ImageEncoder(model)

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            gen = _generator(sizes)
            return {"pixel_values": torch.randn(sizes.batch, channels, height, width, generator=gen, dtype=dtype)}

        encoder_dynamic: dict[str, Any] = {"pixel_values": {0: BATCH}}
    elif waveform:
        encoder = wrappers.WaveformEncoder(model)

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            gen = _generator(sizes)  # ~0.1-0.6 s at 16 kHz, past Moonshine's 127-sample stem kernel
            samples = 2000 * sizes.encoder_sequence + 127 + sizes.seed
            return {"input_values": torch.randn(sizes.batch, samples, generator=gen, dtype=dtype)}

        encoder_dynamic = {"input_values": {0: BATCH, 1: SEQUENCE}}
    elif spectrogram:
        part = masked_speech_encoder(loaded)
        encoder, encoder_dynamic = part.module, part.dynamic_shapes

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            return part.make_inputs(sizes)
    elif speech:
        mels, frames = config.num_mel_bins, 2 * config.max_source_positions
        encoder = wrappers.SpeechEncoder(model)

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            gen = _generator(sizes)
            return {
                "input_features": torch.randn(sizes.batch, mels, frames, generator=gen, dtype=dtype)
            }

        encoder_dynamic = {"input_features": {0: BATCH}}
    elif embeds:
        encoder = wrappers.EmbedsSeq2SeqEncoder(model)

        def make_encoder(sizes: Sizes) -> dict[str, Any]:
            gen = _generator(sizes)
            return {
                "inputs_embeds": torch.randn(sizes.batch, sizes.encoder_sequence, width_in, generator=gen,
                                             dtype=dtype),
                "attention_mask": left_padded_mask(sizes.batch, sizes.encoder_sequence),
            }

        axes = {0: BATCH, 1: ENCODER_SEQUENCE}
        encoder_dynamic = {"inputs_embeds": axes, "attention_mask": dict(axes)}
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
        out = model(encoder_outputs=wrappers.encoder_outputs(hidden), decoder_input_ids=start.to(device),
                    past_key_values=cache, use_cache=True)  # fmt: skip
        return out.past_key_values

    with probe_mode(model):
        hidden = run_eager("on a probe input (the encoder's output shape)", lambda: encoder(**unmasked))
        caches = run_eager("on a probe input (finding the KV cache's shapes)", probe)
        shapes = [layer.key for layer in cache_shapes(lambda: caches.self_attention_cache) if layer.key is not None]
        cross_shapes = [layer.key for layer in cache_shapes(lambda: caches.cross_attention_cache) if layer.key is not None]
    encoder_length, width = int(hidden.shape[1]), int(hidden.shape[-1])
    layers = len(shapes)
    first = "inputs_embeds" if embeds else "input_ids"
    decoder = wrappers.EmbedsSeq2SeqDecoderWithCache(model) if embeds else wrappers.Seq2SeqDecoderWithCache(model)
    if embeds:
        _check_embeds_decoder(model, decoder, hidden, shapes)

    def make_decoder(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        length = encoder_length if fixed else sizes.encoder_sequence
        inputs: dict[str, Any] = {
            first: torch.randn(sizes.batch, sizes.sequence, width_in, generator=gen, dtype=dtype)
            if embeds else token_ids(config, sizes.batch, sizes.sequence, gen),
            "encoder_hidden_states": torch.randn(
                sizes.batch, length, width, generator=gen, dtype=dtype
            ),
            "encoder_attention_mask": left_padded_mask(sizes.batch, length) if masked else None,
        }
        inputs["past_key_values"] = [
            tuple(
                torch.randn(sizes.batch, heads, sizes.past, dim, generator=gen, dtype=dtype)
                for _ in range(2)
            )
            for heads, dim in shapes
        ]
        if not masked:
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
        first: {0: BATCH, 1: SEQUENCE},
        "encoder_hidden_states": {0: BATCH} if fixed else {0: BATCH, 1: ENCODER_SEQUENCE},
    }
    names = [first, "encoder_hidden_states"]
    if masked:
        decoder_dynamic["encoder_attention_mask"] = {0: BATCH, 1: ENCODER_SEQUENCE}
        names.append("encoder_attention_mask")
    decoder_dynamic["past_key_values"] = [(dict(kv_axes), dict(kv_axes)) for _ in range(layers)]
    names += past_names(layers, "past_key_values", "decoder")
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


def _check_embeds_decoder(model: torch.nn.Module, decoder: torch.nn.Module, hidden: torch.Tensor,
                          shapes: list[tuple[int, int]]) -> None:
    """Refuse an encoder-decoder VLM whose decoder from embeddings
    (:class:`onnxport.hf.cache.EmbedsSeq2SeqDecoderWithCache`) does not give the model's own
    logits from token ids (an output bias, a scaled head) on a two-token probe.

    Raises:
        HFError: The logits differ (the largest difference named).
    """
    device = hidden.device
    if device.type == "meta":  # a streamed export's probe: no values to compare
        return
    ids = torch.zeros(hidden.shape[0], 2, dtype=torch.int64, device=device)
    with torch.no_grad():
        want = cast(Any, model)(encoder_outputs=wrappers.encoder_outputs(hidden), decoder_input_ids=ids).logits
        empty = [tuple(hidden.new_zeros(hidden.shape[0], heads, 0, dim) for _ in range(2)) for heads, dim in shapes]
        got = decoder(cast(Any, model).get_input_embeddings()(ids), hidden, past_key_values=empty)[0]
    difference = float((want - got).abs().max())
    if not difference <= 1e-4 * max(1.0, float(want.abs().max())):
        raise HFError(
            f"{type(model).__name__}: its decoder from inputs_embeds followed by its output embeddings differs from "
            f"its logits by {difference:.3g}: the three-graph encoder-decoder layout (Florence-2) cannot express it. "
            "Export its parts with onnxport.export."
        )


def modality(loaded: LoadedModel) -> str:
    """The task's kind, except for a task of text models (feature-extraction, text-classification)
    on a model whose ``main_input_name`` is ``pixel_values`` (ViT, DINOv2: ``"vision"``),
    ``input_values`` (wav2vec2: ``"audio"``), ``input_features`` (w2v-BERT 2.0: ``"audio"``) or
    ``past_values`` (PatchTST's base model: ``"time-series"``), a clip model's (VideoMAE's base
    model: ``"video"``, :func:`onnxport.hf.video.reads_video`), and an image task of a model that reads token ids (ImageGPT's color clusters: ``"text"``)."""
    kind = loaded.task.kind
    if kind == "vision" and getattr(loaded.model, "main_input_name", None) == "input_ids":
        return "text"  # ImageGPT: images as color-cluster token ids
    if kind != "text":
        return kind
    main = getattr(loaded.model, "main_input_name", "input_ids")
    if isinstance(main, (list, tuple)):  # OneFormer: ["pixel_values", "task_inputs"]
        main = main[0] if main else "input_ids"
    kinds = {"pixel_values": "vision", "pixel_values_videos": "vision", "input_values": "audio", "input_features": "audio",
             "past_values": "time-series"}
    kind = kinds.get(main, kind)
    return "video" if kind == "vision" and video.reads_video(loaded.model) else kind


def components(loaded: LoadedModel, cache_layers: Sequence[LayerCache] | None = None) -> list[Component]:
    """The components to export for ``loaded.task``; ``cache_layers``: a text-generation
    decoder's per-layer cache, when known (:func:`causal_lm_component`).

    Raises:
        HFError: ``loaded.prune_lm_head`` and no component is a decoder step with a KV cache to
            give last-position logits (an encoder, a seq2seq model, a decoder exported without its
            cache).
    """
    parts = _components(loaded, cache_layers)
    if loaded.prune_lm_head and not any(isinstance(p.module, wrappers.CausalLMWithCache) for p in parts):
        raise HFError(
            f"prune_lm_head (--prune-lm-head) keeps the last position's logits of a decoder with a KV cache; "
            f"the {loaded.task.name} export of {type(loaded.model).__name__} has none "
            f"({', '.join(p.name for p in parts)}). Leave the option out."
        )
    return parts


def _components(loaded: LoadedModel, cache_layers: Sequence[LayerCache] | None) -> list[Component]:
    kind = modality(loaded)
    if kind in ("text", "multiple-choice"):
        return [text_component(loaded)]
    if kind == "vision" and naflex.reads_patches(loaded.model):  # SigLIP2: patch sequences
        return [naflex.image_component(loaded)]
    if kind == "video":
        return [video.video_component(loaded, list(loaded.task.outputs))]
    if kind == "vision":
        return [vision_component(loaded)]
    if kind == "audio" and codec.supports(loaded.model):
        return codec.components(loaded)
    if kind == "audio":
        return [audio_component(loaded)]
    if kind == "text-vision" and naflex.reads_patches(loaded.model):  # SigLIP2's dual encoder
        return [naflex.text_image_component(loaded)]
    if kind == "text-vision":
        return [text_vision_component(loaded)]
    if kind == "causal-lm" and not loaded.with_past:
        return [text_component(loaded, use_cache=False)]
    if kind == "causal-lm":
        try:
            return [causal_lm_component(loaded, cache_layers=cache_layers)]
        except wrappers.CacheFormatError as e:
            warnings.warn(
                f"{e} onnxport exports it without its cache: model.onnx takes the whole sequence (input_ids, "
                "attention_mask, position_ids when the model takes them) and returns logits, and the folder "
                "has no genai_config.json.",
                UserWarning,
                stacklevel=2,
            )
            return [text_component(loaded, use_cache=False)]
    if kind == "vision-language" and image_audio_text.supports(loaded.model):
        return [*image_audio_text.components(loaded), causal_lm_component(loaded, embeds=True)]
    if kind == "vision-language":
        seq2seq = vision_language.encoder_decoder(loaded.model)
        language = seq2seq_components(loaded, embeds=True) if seq2seq else [causal_lm_component(loaded, embeds=True)]
        return [*vision_language.components(loaded), *language]
    if kind == "audio-language":
        return [*audio_language.components(loaded), causal_lm_component(loaded, embeds=True)]
    if kind == "text-to-waveform":
        return [speech.waveform_component(loaded)]
    if kind == "mask-generation":
        return segment_anything.components(loaded)
    if kind == "time-series":
        return [time_series.forecast_component(loaded)]
    if kind == "trajectory":
        return [trajectory.trajectory_component(loaded)]
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
