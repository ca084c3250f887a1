"""Export wrappers: small ``nn.Module``\\ s whose forward takes and returns flat tensors.

A language model's KV cache is a transformers ``DynamicCache`` object, which torch.export only
accepts when registered with pytree. The wrappers here take the cache as a list of ``(key, value)``
tensors, build a fresh ``DynamicCache`` inside ``forward``, call the model and return its logits
followed by the updated keys and values, so nothing needs registering and the graph inputs and
outputs are plain tensors named as onnxruntime-genai and Optimum name them (``docs/hf.md``).
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import torch

from onnxport.errors import HFError
from onnxport.hf.key_value import fused_key_value
from onnxport.hf.padded_states import states_over_real_tokens
from onnxport.hf.right_padding import (
    head_on_rows,
    last_real_positions,
    take_rows,
    windows_over_real_tokens,
)
from onnxport.hf.rope import positions_driven_dynamic_rope


def fill_cache(cache: Any, past_key_values: Sequence[Sequence[torch.Tensor]]) -> Any:
    """Put each layer's past into ``cache`` (a ``DynamicCache``) without a concat.

    A layer's entry is ``(key, value)`` for attention (``(key, value, indexer_key)`` for the
    ``DynamicIndexedLayer`` of sparse attention: GLM-MoE-DSA, DeepSeek-V3.2, HY-V4), ``(conv[, recurrent])`` for a linear-attention
    / state-space layer (transformers' ``LinearAttentionLayer``: Mamba2, short convolutions, gated
    delta rules) and ``(key, value, conv[, recurrent])`` for a layer with both
    (``LinearAttentionAndFullAttentionLayer``, Falcon-H1), in the order of :func:`flatten_cache`.

    ``DynamicLayer.update`` concatenates onto a 1-D empty tensor, which torch allows but ONNX's
    Concat does not (all inputs must have the same rank); so the layer is initialized and then
    given the tensors directly. The conv and recurrent states are copied (transformers updates
    them in place with ``copy_``) and marked as a previous state: every step, the first included,
    continues from the given states (zeros on the first step, which equal transformers' prefill:
    its causal convolution pads with zeros, its scan starts from zeros).
    """
    from transformers.cache_utils import (  # optional heavy dependency (the hf extra)
        DynamicLayer,
        LinearAttentionCacheLayerMixin,
    )

    for layer, past in zip(cache.layers, past_key_values, strict=True):
        tensors = list(past)
        if not tensors:  # a layer without a cache (NemotronH's MLP blocks: transformers' DummyLayer)
            continue
        linear = isinstance(layer, LinearAttentionCacheLayerMixin)
        if not linear or isinstance(layer, DynamicLayer):
            plain = linear or type(layer).lazy_initialization is DynamicLayer.lazy_initialization
            tensors = _fill_attention(layer, tensors, plain=plain)
        if linear:
            _fill_states(layer, tensors)
    return cache


def _fill_attention(layer: Any, tensors: list[torch.Tensor], *, plain: bool) -> list[torch.Tensor]:
    """Give an attention layer its keys and values (and an indexed layer its indexer keys);
    the tensors left for the layer's states."""
    key, value, *rest = tensors
    if plain:
        # What DynamicLayer.lazy_initialization sets, without its empty torch.tensor([]) on the
        # key's device: on the meta device torch.export records it as a lifted constant plus an
        # in-place detach_, which forces a full decomposition of the program.
        layer.dtype, layer.device, layer.is_initialized = key.dtype, key.device, True
    else:
        layer.lazy_initialization(key, value)
    layer.keys, layer.values = key, value
    if hasattr(layer, "cumulative_length"):
        layer.cumulative_length = key.shape[-2]
    if hasattr(layer, "indexer_keys"):  # DynamicIndexedLayer (sparse attention's indexer)
        layer.indexer_keys, *rest = rest
        layer.indexer_dtype, layer.indexer_device = key.dtype, key.device
        layer.is_indexer_initialized = True
    return rest


def _fill_states(layer: Any, tensors: list[torch.Tensor]) -> None:
    """Give a linear-attention layer its conv (and recurrent) state, as a previous state."""
    conv, *recurrent = tensors
    layer.dtype, layer.device = conv.dtype, conv.device
    layer.conv_states[0] = conv.clone()
    layer.conv_kernel_size[0] = conv.shape[-1]
    layer.is_conv_states_initialized[0] = layer.has_previous_state[0] = True
    if recurrent:
        layer.recurrent_states[0] = recurrent[0].clone()
        layer.is_recurrent_states_initialized[0] = True


def linear_states(layer: Any) -> list[torch.Tensor]:
    """A cache layer's linear-attention states: ``[conv]`` or ``[conv, recurrent]``; ``[]`` for
    attention layers.

    Raises:
        HFError: The layer keeps several states (``number_of_states > 1``).
    """
    conv_states = getattr(layer, "conv_states", None)
    if not isinstance(conv_states, dict):
        return []
    if getattr(layer, "number_of_states", 1) != 1:
        raise HFError(
            f"Exporting the cache is not supported: {type(layer).__name__} keeps {layer.number_of_states} "
            "states per layer."
        )
    states = [conv_states.get(0), layer.recurrent_states.get(0)]
    return [t for t in states if t is not None]


def empty_cross_cache(config: Any) -> Any:
    """An empty ``DynamicCache`` for cross-attention whose first update stores the tensors as they
    are (``DynamicLayer.update`` would concatenate them onto a 1-D empty tensor; see
    :func:`fill_cache`)."""
    from transformers import DynamicCache  # heavy optional dependency (onnxport[hf])
    from transformers.cache_utils import DynamicLayer  # heavy optional dependency (onnxport[hf])

    class _StoreFirstLayer(DynamicLayer):
        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> Any:
            if self.is_initialized:
                return super().update(key_states, value_states, *args, **kwargs)
            self.lazy_initialization(key_states, value_states)
            self.keys, self.values = key_states, value_states
            return self.keys, self.values

    cache = DynamicCache(config=config)
    cache.layers = [_StoreFirstLayer() for _ in cache.layers]
    return cache


def flatten_cache(cache: Any) -> list[torch.Tensor]:
    """``[key0, value0, key1, value1, ...]`` of a ``DynamicCache``; an indexed layer adds its
    indexer keys after its value, a linear-attention layer its conv (and recurrent) state after
    its key and value, if it has them (:func:`fill_cache`'s order)."""
    flat: list[torch.Tensor] = []
    for layer in cache.layers:
        if getattr(layer, "keys", None) is not None:
            flat += [layer.keys, layer.values]
            if getattr(layer, "indexer_keys", None) is not None:
                flat.append(layer.indexer_keys)
        flat += linear_states(layer)
    return flat


def new_cache(config: Any) -> Any:
    """An empty ``DynamicCache`` with one layer per decoder layer of ``config``, every layer
    keeping the whole past (``DynamicLayer``), sliding-window layers included.

    transformers gives a sliding-window layer a ``DynamicSlidingWindowLayer``, which returns only
    the last ``sliding_window - 1`` positions as the present and takes its mask offset from its
    count of tokens seen; in an exported graph that count is the past input's length, so once the
    past is truncated the graph's mask offset and the ``attention_mask`` (the whole history, as
    onnxruntime-genai and Optimum feed it) disagree (onnxruntime's GatherND index out of range).
    With a full layer the present is ``past + new`` and the window lives in the mask
    (``sliding_window_causal_mask_function`` on absolute positions): the logits are those of
    transformers' sliding cache, and the graph's cache is the one onnxruntime-genai's builder
    uses for Mistral (a full buffer, ``local_window_size`` in GroupQueryAttention).
    """
    from transformers import DynamicCache  # heavy optional dependency (onnxport[hf])
    from transformers.cache_utils import (  # heavy optional dependency (onnxport[hf])
        DynamicLayer,
        DynamicSlidingWindowLayer,
    )

    cache = DynamicCache(config=config)
    cache.layers = [
        DynamicLayer() if type(layer) is DynamicSlidingWindowLayer else layer
        for layer in cache.layers
    ]
    return cache


def sliding_windows(config: Any) -> dict[int, int]:
    """Cache layer index → ``sliding_window`` for the sliding-window layers of ``config``
    (transformers' own layer typing, ``get_layer_types_and_kwargs``; empty without any)."""
    from transformers.cache_utils import (  # heavy optional dependency (onnxport[hf])
        get_layer_types_and_kwargs,
    )

    text = config.get_text_config(decoder=True)
    try:
        types, kwargs = get_layer_types_and_kwargs(text)
    except (AttributeError, TypeError, ValueError):  # a config transformers' cache cannot type
        return {}
    return {
        i: int(kw["sliding_window"])
        for i, (kind, kw) in enumerate(zip(types, kwargs))
        if kind == "sliding_attention" and kw.get("sliding_window")
    }


class TextModel(torch.nn.Module):
    """Encoder-style text model: returns the task's outputs as a tuple. A document model also
    takes each token's ``bbox`` (LayoutLM, LayoutLMv3, LiLT, BROS) and LayoutLMv3 the page image
    (``pixel_values``).

    With ``pooling`` (sentence-transformers pooling), ``sentence_embedding`` follows
    ``last_hidden_state``: the mean of the token states weighted by the attention mask, the first
    token, the masked max or the last unpadded token (:func:`sentence_pooling`), L2-normalized when
    the folder's modules include ``Normalize``.
    """

    def __init__(
        self, model: torch.nn.Module, outputs: Sequence[str], pooling: dict[str, Any] | None,
        *, use_cache: bool | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)
        self.normalize = bool(pooling and pooling.get("normalize"))
        self.pooling = pooling["mode"] if pooling is not None else None
        # a decoder exported without its cache (``CacheFormatError``) is called with use_cache=False
        self.call_options = {} if use_cache is None else {"use_cache": use_cache}

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        bbox: torch.Tensor | None = None,
        pixel_values: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        given = {"token_type_ids": token_type_ids, "bbox": bbox, "pixel_values": pixel_values, "position_ids": position_ids}
        extra = {name: value for name, value in given.items() if value is not None}
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, **extra, **self.call_options)
        result = [out[name] for name in self.outputs]
        if self.pooling:
            result.append(sentence_pooling(out["last_hidden_state"], attention_mask, self.pooling, self.normalize))
        return tuple(result)


def sentence_pooling(hidden: torch.Tensor, attention_mask: torch.Tensor, mode: str, normalize: bool) -> torch.Tensor:
    """Sentence-transformers pooling (``sentence_transformers/models/Pooling.py``) of
    ``hidden`` ``(batch, tokens, width)`` → ``(batch, width)``: ``mean`` (masked mean), ``cls``
    (the first token), ``max`` (masked max: padding at the dtype's lowest value) or
    ``lasttoken`` (the last token whose mask is 1), then L2-normalized if asked."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    if mode == "cls":
        pooled = hidden[:, 0]
    elif mode == "max":
        pooled = hidden.masked_fill(mask == 0, torch.finfo(hidden.dtype).min).amax(dim=1)
    elif mode == "lasttoken":  # the highest position with mask 1, left or right padding alike
        positions = torch.arange(hidden.shape[1], device=hidden.device).unsqueeze(0)
        last = (positions * attention_mask.to(positions.dtype)).argmax(dim=1)
        pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    else:
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    if normalize:
        # torch.nn.functional.normalize(p=2, dim=1, eps=1e-12) spelt with Mul/ReduceSum/Sqrt and a
        # broadcasting Div: its expand_as (Shape -> Expand) and ReduceL2 are where onnxruntime's
        # symbolic shape inference, and so its transformer optimizer, gives up (issue 15).
        norm = (pooled * pooled).sum(dim=1, keepdim=True).sqrt()
        pooled = pooled / norm.clamp(min=1e-12)
    return pooled


# MGP-STR's three recognition heads (character, BPE, WordPiece), the names Optimum's
# MgpstrOnnxConfig and transformers.js' MgpstrForSceneTextRecognition give its ``logits`` tuple.
MGP_STR_OUTPUTS = ("char_logits", "bpe_logits", "wp_logits")


class VisionModel(torch.nn.Module):
    """Image model: ``pixel_values`` → the task's outputs (``interpolate``: called with
    ``interpolate_pos_encoding=True``, so a patch model takes any image size).

    A ``*ForImageClassification`` whose output has no ``logits`` but a ``last_hidden_state``
    (PP-LCNet's head returns its class scores under that name; its docstring takes
    ``outputs.last_hidden_state.argmax(-1)`` as the label) gives that as ``logits``, the name
    transformers.js' image-classification pipeline reads."""

    def __init__(self, model: torch.nn.Module, outputs: Sequence[str], *, interpolate: bool = False) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)
        self.extra = {"interpolate_pos_encoding": True} if interpolate else {}
        self.classifier = type(model).__name__.endswith("ForImageClassification")

    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(pixel_values=pixel_values, **self.extra)
        return tuple(self._output(out, name) for name in self.outputs)

    def _output(self, out: Any, name: str) -> torch.Tensor:
        if name in MGP_STR_OUTPUTS:
            return out["logits"][MGP_STR_OUTPUTS.index(name)]  # type: ignore[no-any-return]
        if name == "logits" and self.classifier and "logits" not in out and "last_hidden_state" in out:
            return out["last_hidden_state"]  # type: ignore[no-any-return]
        if hasattr(out, "keys") and name not in out:
            raise MissingOutputError(
                f"{type(self.model).__name__} returns {', '.join(out.keys())}, not {name}: the task's graph "
                f"outputs ({', '.join(self.outputs)}) are not this model's. Export it for feature-extraction "
                "(--task feature-extraction), or with onnxport.export and the outputs your pipeline reads."
            )
        return out[name]  # type: ignore[no-any-return]


class MissingOutputError(HFError):
    """The model's output lacks a graph output the task reads (PP-OCRv5's detector for
    object-detection: ``last_hidden_state`` only, no ``logits`` / ``pred_boxes``). Raised from
    the probes at once, not taken as a size the model cannot run at."""


class AudioModel(torch.nn.Module):
    """Audio model: ``input_values`` (raw waveform, or an AST's fixed-size spectrogram) → the
    task's outputs."""

    def __init__(self, model: torch.nn.Module, outputs: Sequence[str]) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)

    def forward(self, input_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(input_values=input_values)
        return tuple(out[name] for name in self.outputs)


class AudioFeaturesModel(torch.nn.Module):
    """Audio model on a spectrogram: ``input_features`` ``(batch, frames, features)`` (w2v-BERT 2.0,
    Parakeet and LASR CTC) → the task's outputs."""

    def __init__(self, model: torch.nn.Module, outputs: Sequence[str]) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)

    def forward(self, input_features: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(input_features=input_features)
        return tuple(out[name] for name in self.outputs)


class TextVisionModel(torch.nn.Module):
    """CLIP-style dual encoder: ``(input_ids, pixel_values, attention_mask)`` → the task's outputs
    (Optimum's input order for zero-shot-image-classification; ``interpolate``: images of any size)."""

    def __init__(self, model: torch.nn.Module, outputs: Sequence[str], *, interpolate: bool = False) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)
        self.extra = {"interpolate_pos_encoding": True} if interpolate else {}

    def forward(
        self, input_ids: torch.Tensor, pixel_values: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        out = self.model(input_ids=input_ids, pixel_values=pixel_values, attention_mask=attention_mask, **self.extra)
        return tuple(out[name] for name in self.outputs)


class CacheFormatError(HFError):
    """A decoder whose cache cannot be graph inputs and outputs (kept in a format of its own, or
    not returned); ``onnxport.hf`` then exports the decoder without its cache."""


def cache_argument(forward: Callable[..., Any]) -> str | None:
    """The name under which ``forward`` takes a transformers cache: ``past_key_values``,
    ``cache_params`` (transformers' pure state-space models), or ``None`` (no cache argument)."""
    parameters = inspect.signature(forward).parameters
    return next((name for name in ("past_key_values", "cache_params") if name in parameters), None)


def run_with_cache(model: torch.nn.Module, cache: Any, **inputs: Any) -> tuple[torch.Tensor, Any]:
    """``model(**inputs)`` with ``cache``: ``(logits, the updated cache)``.

    transformers' pure state-space models (Mamba, Mamba2, FalconMamba) name the cache argument and
    output ``cache_params`` and take no ``position_ids``; the others ``past_key_values``.
    """
    name = cache_argument(model.forward)
    if name is None:
        raise CacheFormatError(
            f"{type(model).__name__}.forward takes neither past_key_values nor cache_params: the model keeps "
            "its recurrent state in a format of its own (RWKV, xLSTM...), whose export as a cache is not supported."
        )
    if name == "cache_params":
        inputs.pop("position_ids", None)
    out = model(**inputs, **{name: cache}, use_cache=True)
    updated = getattr(out, name, None)
    if updated is None or not hasattr(updated, "layers"):
        raise CacheFormatError(
            f"{type(model).__name__} returned {type(updated).__name__} as its {name}, not the transformers Cache it "
            "was given: the model keeps its cache in a format of its own (MiniMax, RecurrentGemma...), whose "
            "export is not supported."
        )
    for layer in updated.layers:
        extra = _uncarried_state(layer)
        if extra:
            raise CacheFormatError(
                f"The cache layers of {type(model).__name__} ({type(layer).__name__}) keep state besides their keys and "
                f"values ({', '.join(extra)}: DeepSeek-V4's compressor buffers and compressed entries, for one), which "
                "past_key_values graph inputs would not carry: a graph with them would compute other logits once "
                "that state is used."
            )
    return out.logits, updated


def _uncarried_state(layer: Any) -> list[str]:
    """The attributes a model's own cache layer class (defined outside ``transformers.cache_utils``,
    e.g. ``DeepseekV4HCACache``) keeps besides those of transformers' ``DynamicLayer`` /
    ``DynamicSlidingWindowLayer``: state that :func:`flatten_cache` does not return."""
    from transformers.cache_utils import (  # heavy optional dependency (onnxport[hf])
        DynamicLayer,
        DynamicSlidingWindowLayer,
    )

    if type(layer).__module__ == DynamicLayer.__module__:
        return []
    known = {*vars(DynamicLayer()), *vars(DynamicSlidingWindowLayer(sliding_window=2))}
    return sorted(set(vars(layer)) - known)


class CausalLMWithCache(torch.nn.Module):
    """Decoder-only LM step: ``(input_ids, attention_mask, position_ids, past)`` →
    ``(logits, present.0.key, present.0.value, ...)``.

    ``attention_mask`` covers past and new tokens (``past_sequence + sequence``); the past may be
    empty (the first step). A model without positions (Mamba2) ignores ``position_ids``. With
    :func:`fused_key_value`, each layer's past is ``(key_value,)``: the key and the value of the
    one key/value head joined on the last axis, ``[B, past, 2 * head_dim]``, and so is its present.

    ``prune_lm_head``: ``logits`` are each row's last real token's only, ``[B, 1, vocab]`` (a
    static 1), which onnxruntime-genai reads as a pruned graph's (``Model::IsPruned``: logits dim
    1 == 1, "Trimmed Prefill Logits", ``src/models/logits.cpp``). The row is found from
    ``attention_mask`` (:func:`onnxport.hf.right_padding.last_real_positions`), so a batch genai pads
    on the right gets the logits of each prompt's end, not of a pad; the LM head runs on that one
    row (:func:`onnxport.hf.right_padding.head_on_rows`); a model whose head does not run through its
    output embeddings gets its full logits' rows taken.
    """

    def __init__(self, model: torch.nn.Module, *, prune_lm_head: bool = False) -> None:
        super().__init__()
        self.model = model
        self.fused = fused_key_value(model.config)
        self.prune_lm_head = prune_lm_head

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        past_key_values: list[tuple[torch.Tensor, ...]],
    ) -> tuple[torch.Tensor, ...]:
        return self.step(past_key_values, input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)

    def step(self, past_key_values: list[tuple[torch.Tensor, ...]], **inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """One step of the model on keyword ``inputs`` with the past filled into a fresh cache."""
        if self.fused:
            past_key_values = [tuple(kv.unsqueeze(1).chunk(2, dim=-1)) for (kv,) in past_key_values]
        cache = fill_cache(new_cache(self.model.config), past_key_values)
        mask = inputs["attention_mask"]
        tokens = inputs["input_ids"] if "input_ids" in inputs else inputs["inputs_embeds"]
        positions = last_real_positions(mask, tokens.shape[1]) if self.prune_lm_head else None
        with windows_over_real_tokens(mask), positions_driven_dynamic_rope(self.model), \
                states_over_real_tokens(cache, mask, tokens.shape[1]), head_on_rows(self.model, positions) as selected:
            logits, cache = run_with_cache(self.model, cache, **inputs)
        if positions is not None and not selected:
            logits = take_rows(logits, positions)
        present = flatten_cache(cache)
        if self.fused:
            present = [torch.cat([k, v], dim=-1).squeeze(1) for k, v in zip(present[::2], present[1::2], strict=True)]
        return (logits, *present)


class EmbedsLMWithCache(CausalLMWithCache):
    """The language model of a vision-language model, one step from embeddings:
    ``(inputs_embeds, [token_type_ids], attention_mask, position_ids, past)`` → ``(logits,
    present...)``, with ``inputs_embeds`` ``[batch, sequence, hidden]`` (text embeddings with the
    image features written at the image tokens), as transformers.js' ``decoder_model_merged`` of a
    VLM takes it. ``token_type_ids`` ``[batch, sequence]`` (1 at image tokens) for the models whose
    image tokens attend both ways on the first step (Gemma 3, PaliGemma); left out otherwise.
    ``per_layer_inputs`` ``[batch, sequence, layers, per_layer_hidden]`` for the models with
    per-layer embeddings (Gemma 4: :mod:`onnxport.hf.image_audio_text`); left out otherwise."""

    def forward(  # type: ignore[override]
        self,
        inputs_embeds: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        per_layer_inputs: torch.Tensor | None = None,
        *,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        past_key_values: list[tuple[torch.Tensor, ...]],
    ) -> tuple[torch.Tensor, ...]:
        extra = {name: value for name, value in (("token_type_ids", token_type_ids), ("per_layer_inputs", per_layer_inputs))
                 if value is not None}
        return self.step(past_key_values, inputs_embeds=inputs_embeds, **extra, attention_mask=attention_mask,
                         position_ids=position_ids)


class TokenEmbeddings(torch.nn.Module):
    """``input_ids`` → ``inputs_embeds`` through the model's input embeddings (scaled ones, as
    Gemma's, included): transformers.js' ``embed_tokens`` graph."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.embeddings = cast(Any, model).get_input_embeddings()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.embeddings(input_ids)


class ImageFeatures(torch.nn.Module):
    """``pixel_values`` ``[num_images, C, H, W]`` → ``image_features`` ``[num_images, tokens,
    hidden]``: the vision tower and projector (``get_image_features``) whose rows replace the image
    tokens' embeddings."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        out = cast(Any, self.model).get_image_features(pixel_values=pixel_values)
        features = getattr(out, "pooler_output", out)
        if isinstance(features, (list, tuple)):
            features = torch.stack(list(features))
        return features


class ImagePatchFeatures(torch.nn.Module):
    """``pixel_values`` ``[batch, images, C, H, W]`` + ``pixel_attention_mask`` ``[batch, images,
    H, W]`` (bool) → ``image_features`` ``[image_tokens, hidden]``: Idefics2/3 and SmolVLM's image
    path (``get_image_features``), which drops the padding images (all pixels zero) and returns
    the features of the others image after image, row after row.

    The images go in as one row of ``batch * images``: ``get_image_features`` splits its output
    per row by a count read from the data (``split(num_real_images_per_batch.tolist())``), which
    with one row is the whole output, so the graph keeps ``batch`` dynamic."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor, pixel_attention_mask: torch.Tensor) -> torch.Tensor:
        images = pixel_values.shape[0] * pixel_values.shape[1]
        out = cast(Any, self.model).get_image_features(
            pixel_values=pixel_values.reshape(1, images, *pixel_values.shape[2:]),
            pixel_attention_mask=pixel_attention_mask.reshape(1, images, *pixel_attention_mask.shape[2:]))
        features = getattr(out, "pooler_output", out)
        return torch.cat(list(features)) if isinstance(features, (list, tuple)) else features


class PixelSizedImageFeatures(torch.nn.Module):
    """``pixel_values`` ``[1, C, H, W]`` → ``image_features`` ``[1, image_tokens, hidden]``:
    Mistral3's and LightOn-OCR's Pixtral path, whose ``get_image_features`` takes ``image_sizes``,
    here the pixel shape ``(H, W)``. transformers.js' ``PixtralImageProcessor`` resizes each image
    to multiples of ``patch_size * spatial_merge_size`` and its ``LlavaForConditionalGeneration``
    feeds ``pixel_values`` alone, so the image is its whole tensor; ``image_tokens`` is
    ``(H / patch / merge) * (W / patch / merge)``. One image a run: Pixtral's tower and its patch
    merger loop over the images in Python, a count a capture would fix."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        sizes = [(pixel_values.shape[2], pixel_values.shape[3])]
        out = cast(Any, self.model).get_image_features(pixel_values=pixel_values, image_sizes=sizes)
        features = getattr(out, "pooler_output", out)
        return torch.stack(list(features)) if isinstance(features, (list, tuple)) else features


@contextlib.contextmanager
def image_batch_kept_whole(module: torch.nn.Module) -> Iterator[None]:
    """For an :class:`ImageFeatures` ``module``: within the block, ``list(tensor)`` in the modules
    defining ``get_image_features`` returns the tensor. transformers splits the projected batch
    into one tensor per image (``image_features = list(image_features)``, modeling_llava.py),
    which fixes the number of images of a capture; the graph returns the batch whole instead.
    ``list`` of anything else is the builtin; any other module: nothing changes. Used around the
    capture (:func:`onnxport.hf.component.export_component`), outside the traced code."""
    model = module.model if isinstance(module, ImageFeatures) else None
    modules = ({sys.modules[type(m).__module__] for m in model.modules() if "get_image_features" in vars(type(m))}
               if isinstance(model, torch.nn.Module) else set())

    def keep(value: Any = ()) -> Any:
        return value if isinstance(value, torch.Tensor) else builtins.list(value)

    saved = {source: vars(source).get("list") for source in modules}
    try:
        for source in modules:
            vars(source)["list"] = keep  # a module global shadows the builtin
        yield
    finally:
        for source, previous in saved.items():
            if previous is None:
                vars(source).pop("list", None)
            else:
                vars(source)["list"] = previous


class Seq2SeqEncoder(torch.nn.Module):
    """Encoder of a text encoder-decoder: ``(input_ids, attention_mask)`` → ``last_hidden_state``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = cast("Callable[[], torch.nn.Module]", model.get_encoder)()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class EmbedsSeq2SeqEncoder(torch.nn.Module):
    """Encoder of an encoder-decoder VLM (Florence-2): ``(inputs_embeds, attention_mask)`` →
    ``last_hidden_state``; the caller puts the image features before the prompt's embeddings
    (transformers.js' ``Florence2ForConditionalGeneration``)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = cast("Callable[[], torch.nn.Module]", model.get_encoder)()

    def forward(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.encoder(inputs_embeds=inputs_embeds, attention_mask=attention_mask).last_hidden_state


class SpeechEncoder(torch.nn.Module):
    """Encoder of a speech encoder-decoder on a spectrogram: ``input_features`` (Whisper's fixed
    30 s) or ``(input_features, attention_mask)`` (a spectrogram of any length with its mask:
    Speech2Text, Canary) → ``last_hidden_state``. The mask is passed only when given."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = cast("Callable[[], torch.nn.Module]", model.get_encoder)()

    def forward(self, input_features: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        mask = {} if attention_mask is None else {"attention_mask": attention_mask}
        return self.encoder(input_features=input_features, **mask).last_hidden_state


class WaveformEncoder(torch.nn.Module):
    """Encoder of a speech model on a raw waveform (Moonshine): ``input_values`` ``(batch,
    samples)`` → ``last_hidden_state``, its length following the samples."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = cast("Callable[[], torch.nn.Module]", model.get_encoder)()

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_values=input_values).last_hidden_state


class ImageEncoder(torch.nn.Module):
    """Encoder of a ``VisionEncoderDecoderModel`` (TrOCR, Donut): ``pixel_values`` →
    ``last_hidden_state``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = cast("Callable[[], torch.nn.Module]", model.get_encoder)()

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.encoder(pixel_values=pixel_values).last_hidden_state


class Seq2SeqDecoderWithCache(torch.nn.Module):
    """Decoder step of an encoder-decoder with its self-attention and cross-attention caches.

    ``(input_ids, encoder_hidden_states, [encoder_attention_mask,] past_key_values,
    [cross_key_values, use_cache_branch])`` → ``(logits, present.{i}.decoder.key/.value...,
    present.{i}.encoder.key/.value...)``.

    Without ``use_cache_branch`` or with it false (the first step), the cross-attention keys and
    values are computed from ``encoder_hidden_states`` and returned; with it true they are taken
    from ``cross_key_values`` (the first step's outputs) and returned as they are. The export
    captures the first step and branches on ``use_cache_branch`` in the graph
    (:mod:`onnxport.passes.cache_branch`), as Optimum's merged decoder does.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        input_ids: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
        cross_key_values: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
        use_cache_branch: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        cache = self.cache(past_key_values, cross_key_values, use_cache_branch)
        extra = {} if encoder_attention_mask is None else {"attention_mask": encoder_attention_mask}
        out = self.model(
            encoder_outputs=encoder_outputs(encoder_hidden_states, encoder_attention_mask),
            decoder_input_ids=input_ids,
            past_key_values=cache,
            use_cache=True,
            **extra,
        )
        return self.outputs(out.logits, out.past_key_values)

    def cache(self, past_key_values: Any, cross_key_values: Any, use_cache_branch: torch.Tensor | None) -> Any:
        """The ``EncoderDecoderCache`` of one step: the self-attention past, and the cross-attention
        cache given (``use_cache_branch`` true) or empty to compute."""
        from transformers import (  # heavy optional dependency (onnxport[hf])
            EncoderDecoderCache,
        )
        config: Any = self.model.config
        cached = use_cache_branch is not None and bool(use_cache_branch.all())
        if cached:
            cross = fill_cache(new_cache(config), cross_key_values or [])
        else:
            cross = empty_cross_cache(config)
        # sliding-window layers keep the whole past, as in the decoder-only graphs (new_cache)
        cache = EncoderDecoderCache(fill_cache(new_cache(config), past_key_values or []), cross)
        for i in range(len(cross_key_values or [])):
            cache.is_updated[i] = cached
        return cache

    @staticmethod
    def outputs(logits: torch.Tensor, caches: Any) -> tuple[torch.Tensor, ...]:
        """``(logits, present.{i}.decoder.*..., present.{i}.encoder.*...)``."""
        return (logits, *flatten_cache(caches.self_attention_cache), *flatten_cache(caches.cross_attention_cache))


class EmbedsSeq2SeqDecoderWithCache(Seq2SeqDecoderWithCache):
    """:class:`Seq2SeqDecoderWithCache` from ``inputs_embeds`` (the decoder tokens through
    ``embed_tokens``), as transformers.js' ``Florence2ForConditionalGeneration`` feeds its
    decoder: the model's decoder, then its output embeddings (``lm_head``) on the hidden states.
    :func:`onnxport.hf.inputs.seq2seq_components` checks on a probe that this equals the model's
    own logits from token ids."""

    def forward(  # type: ignore[override]
        self,
        inputs_embeds: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None = None,
        past_key_values: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
        cross_key_values: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
        use_cache_branch: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, ...]:
        model: Any = self.model
        decoder = model.get_decoder()
        while decoder.get_decoder() is not decoder:  # Florence-2's is its whole BART: its decoder inside
            decoder = decoder.get_decoder()
        out = decoder(
            inputs_embeds=inputs_embeds,
            encoder_hidden_states=encoder_hidden_states,
            encoder_attention_mask=encoder_attention_mask,
            past_key_values=self.cache(past_key_values, cross_key_values, use_cache_branch),
            use_cache=True,
        )
        return self.outputs(model.get_output_embeddings()(out.last_hidden_state), out.past_key_values)


def encoder_outputs(hidden: torch.Tensor, mask: torch.Tensor | None = None) -> Any:
    """The ``encoder_outputs`` given to an encoder-decoder: a ``BaseModelOutput``, not a tuple
    (NLLB-MoE reads ``encoder_outputs.last_hidden_state``), that also answers ``attention_mask``
    (Moonshine's decoder reads ``encoder_outputs.attention_mask``) and ``router_logits`` as
    ``None`` (NLLB-MoE's model copies ``encoder_outputs.router_logits`` into its output)."""
    from transformers.modeling_outputs import (  # heavy optional dependency (onnxport[hf])
        BaseModelOutput,
    )

    out = BaseModelOutput(last_hidden_state=hidden)
    out.attention_mask = mask
    out.router_logits = None
    return out


# transformers' sliding-window masks (masking_utils); a modeling module that uses none of them
# attends causally whatever its config's ``sliding_window`` says (Moshi).
_WINDOW_MASKS = ("create_sliding_window_causal_mask", "sliding_window_causal_mask_function", "sliding_window_overlay")


def past_key_windows(module: torch.nn.Module, config: Any) -> dict[str, int]:
    """Past-key graph input name (``past_key_values.{i}.key``) → sliding window, for the
    sliding-window layers of a :class:`CausalLMWithCache` (empty for any other module).

    transformers types a layer "sliding_attention" from the config alone
    (``get_layer_types_and_kwargs``), but only the model's mask applies the window: a model whose
    modeling module builds no sliding-window mask (Moshi, with ``sliding_window`` in its config)
    gets none here, or onnxruntime's ``local_window_size`` would narrow an attention eager keeps
    full.
    """
    if not isinstance(module, CausalLMWithCache):
        return {}
    try:
        source = inspect.getsource(sys.modules[type(module.model).__module__])
    except (KeyError, OSError, TypeError):  # no source to read: trust the config
        source = _WINDOW_MASKS[0]
    if not any(name in source for name in _WINDOW_MASKS):
        return {}
    return {f"past_key_values.{i}.key": w for i, w in sliding_windows(config).items()}



def max_positions(config: Any) -> int | None:
    """``max_position_embeddings`` (the rotary caches' length), ``None`` when the config has none."""
    value = getattr(config, "max_position_embeddings", None)
    return value if isinstance(value, int) and value > 0 else None
