"""``genai_config.json``: what onnxruntime-genai needs to run an exported decoder-only model.

``onnxruntime_genai.Model(folder)`` reads ``genai_config.json`` from the folder it is given; the
decoder file name in it is relative to that folder (a subpath such as ``onnx/model.onnx`` works,
checked with onnxruntime-genai 0.18.0). The schema follows what onnxruntime-genai's model builder
writes (``src/python/py/models/builders/base.py``, ``make_genai_config``): the model type, the
special token ids, the context length, the vocabulary size, the decoder's file, head size, hidden
size, head counts and layer count, the graph's input names and ``%d`` name patterns of the cache
inputs/outputs, and the search defaults from ``generation_config.json``.

Hybrid decoders (LFM2's short convolutions, Qwen3.5's and Qwen3-Next's gated delta rules, Mamba
layers) keep fixed-size states in some layers instead of keys and values: onnxruntime-genai 0.18
feeds them back from the names in ``past_conv_names`` / ``past_recurrent_names`` (and the
``present_*`` ones) for the layers ``layer_types`` does not mark as attention, allocating each
state as the graph's input declares it (the builder's ``make_genai_config`` writes ``past.%d.conv``
and ``past.%d.recurrent``; onnxport keeps transformers.js' names, ``past_conv.%d`` and
``past_recurrent.%d`` or ``past_ssm.%d``, which the config names; checked with
``bench/clients/genai_families.py``: LFM2's convolution layers with a state of ``L_cache`` columns,
transformers' layout, and Qwen3.5's gated delta rule layers).

``past_present_share_buffer`` must be ``False`` for onnxport's standard cache graph, whose
``present.*`` is ``Concat(past, new)`` and so grows each step; ``True`` tells onnxruntime-genai
that the graph updates a fixed-size buffer of ``search.max_length`` rows in place, the graph of
``onnxport.hf.export(..., target="onnxruntime", kv_cache="shared")``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import onnx_ir as ir

from onnxport.errors import HFError

FILE_NAME = "genai_config.json"
_PAST_KEY = "past_key_values.%d.key"
_PAST_VALUE = "past_key_values.%d.value"
_PRESENT_KEY = "present.%d.key"
_PRESENT_VALUE = "present.%d.value"
# Model types onnxruntime-genai 0.18 runs as a plain decoder (separate key/value cache tensors named
# as onnxport names them); checked with bench/clients/genai.py. Others get genai's generic type
# "decoder": "gpt2" there means a combined "past_%d" cache, "opt" is unknown to it.
GENAI_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "gemma"})
GENERIC_TYPE = "decoder"
# generation_config.json keys → genai "search" keys with transformers' defaults (GenerationConfig).
_SEARCH_DEFAULTS: dict[str, Any] = {
    "diversity_penalty": 0.0,
    "do_sample": False,
    "length_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "num_beams": 1,
    "num_return_sequences": 1,
    "repetition_penalty": 1.0,
    "temperature": 1.0,
    "top_k": 50,
    "top_p": 1.0,
}


_GENAI_INPUTS = re.compile(r"input_ids|attention_mask|position_ids|past_key_values\.\d+\.(key|value)")
_KV_INPUT = re.compile(r"past_key_values\.(\d+)\.(key|value)")
_STATE_INPUT = re.compile(r"past_(conv|recurrent|ssm)\.(\d+)")
_ATTENTION_LAYER = "full_attention"


def _layers(decoder: ir.Model) -> tuple[set[int], dict[int, set[str]]]:
    """The layers with ``past_key_values.{i}.*`` inputs and each state layer's state kinds."""
    attention: set[int] = set()
    states: dict[int, set[str]] = {}
    for value in decoder.graph.inputs:
        kv, state = _KV_INPUT.fullmatch(str(value.name)), _STATE_INPUT.fullmatch(str(value.name))
        if kv is not None:
            attention.add(int(kv.group(1)))
        elif state is not None:
            states.setdefault(int(state.group(2)), set()).add(state.group(1))
    return attention, states


def genai_runs(decoder: ir.Model) -> bool:
    """Whether onnxruntime-genai's decoder-only pipeline can feed ``decoder``: its inputs are
    ``input_ids``, ``attention_mask``, ``position_ids`` and ``past_key_values.{i}.key/value`` of one
    shape (the pipeline allocates one ``(batch, kv_heads, length, head_size)`` cache per layer from
    ``head_size`` and ``num_key_value_heads``, ``src/models/kv_cache.cpp``): not a sparse-attention
    indexer's keys, nor values narrower than keys. Each ``past_key_values.{i}.key/value`` needs its
    ``present.{i}.key/value`` output, the names the config declares (``present_key_names``). A
    hybrid decoder's other layers may each hold a ``past_conv.{i}`` and one ``past_recurrent.{i}``
    or ``past_ssm.{i}`` state of fixed size (module docstring), with its ``present_*`` output; a
    layer with both keys and a state (Falcon-H1's parallel attention and Mamba) does not run."""
    shapes = set()
    outputs = {str(v.name) for v in decoder.graph.outputs}
    for value in decoder.graph.inputs:
        name = str(value.name)
        if _STATE_INPUT.fullmatch(name):
            dims = [] if value.shape is None else list(value.shape)[1:]
            if not dims or not all(isinstance(d, int) for d in dims) or name.replace("past_", "present_", 1) not in outputs:
                return False
            continue
        if not _GENAI_INPUTS.fullmatch(name):
            return False
        if name.startswith("past_key_values."):
            if value.shape is None or len(value.shape) != 4:
                return False
            if name.replace("past_key_values.", "present.", 1) not in outputs:
                return False
            shapes.add((value.shape[1], value.shape[3]))
    attention, states = _layers(decoder)
    if attention & states.keys() or any(len(kinds - {"conv"}) > 1 for kinds in states.values()):
        return False
    recurrent = {kind for kinds in states.values() for kind in kinds - {"conv"}}
    if len(recurrent) > 1 or attention | states.keys() != set(range(len(attention) + len(states))):
        return False
    return len(shapes) == 1


def _state_names(
    attention: set[int], states: dict[int, set[str]]
) -> tuple[dict[str, str], dict[str, str], list[str] | None]:
    """The ``inputs`` / ``outputs`` name patterns of a hybrid decoder's states and its
    ``layer_types`` (``None`` for a decoder with keys and values only), from :func:`_layers`."""
    if not states:
        return {}, {}, None
    inputs: dict[str, str] = {}
    outputs: dict[str, str] = {}
    for kinds in states.values():
        for kind in kinds:
            role = "conv" if kind == "conv" else "recurrent"
            inputs[f"past_{role}_names"] = f"past_{kind}.%d"
            outputs[f"present_{role}_names"] = f"present_{kind}.%d"
    types = [
        _ATTENTION_LAYER if i in attention else "conv" if states[i] == {"conv"} else "linear_attention"
        for i in range(len(attention) + len(states))
    ]
    return inputs, outputs, types


def genai_config(
    decoder: ir.Model,
    config: Mapping[str, Any],
    generation: Mapping[str, Any] | None,
    filename: str,
    *,
    past_present_share_buffer: bool = False,
) -> dict[str, Any]:
    """The ``genai_config.json`` content for a decoder-only cache graph.

    Args:
        decoder: The exported graph: inputs ``input_ids``, ``attention_mask``, [``position_ids``],
            ``past_key_values.{i}.key/value`` (``(batch_size, kv_heads, past_sequence_length,
            head_size)``), a hybrid's ``past_conv.{i}`` / ``past_recurrent.{i}`` /
            ``past_ssm.{i}`` in its other layers (written with ``layer_types``); outputs
            ``logits``, ``present.{i}.key/value``, ``present_conv.{i}``...
        config: ``config.json`` as a dict (``PretrainedConfig.to_dict()``).
        generation: ``generation_config.json`` as a dict, or ``None``; its token ids and sampling
            settings take precedence over ``config``'s (as in the builder).
        filename: The decoder file relative to the folder holding ``genai_config.json``.
        past_present_share_buffer: ``True`` only for a graph that updates a fixed-size cache
            buffer in place (``kv_cache="shared"``); onnxport's standard graph needs ``False``.

    Returns:
        The JSON-ready dict (``{"model": {...}, "search": {...}}``).

    Raises:
        HFError: The graph has no ``past_key_values.{i}.key`` input with a static head count and
            head size, or the config lacks ``vocab_size``/``hidden_size``/``num_attention_heads``.
    """
    inputs = {str(v.name): v for v in decoder.graph.inputs}
    outputs = {str(v.name) for v in decoder.graph.outputs}
    attention, states = _layers(decoder)
    first = f"past_key_values.{min(attention, default=0)}.key"
    past = inputs.get(first)
    if past is None or past.shape is None or len(past.shape) != 4:
        raise HFError("genai_config.json needs a decoder graph with past_key_values.{i}.key inputs.")
    kv_heads, head_size = past.shape[1], past.shape[3]
    if not isinstance(kv_heads, int) or not isinstance(head_size, int):
        raise HFError(f"{first} has shape {past.shape}; heads and head size must be fixed.")
    state_inputs, state_outputs, layer_types = _state_names(attention, states)
    layers = len(attention) if layer_types is None else len(layer_types)
    merged = {**config, **{k: v for k, v in (generation or {}).items() if v is not None}}
    missing = [
        k for k in ("vocab_size", "hidden_size", "num_attention_heads") if _get(config, k) is None
    ]
    if missing:
        raise HFError(f"config.json lacks {', '.join(missing)}; cannot write {FILE_NAME}.")
    context = _get(config, "max_position_embeddings") or _get(config, "n_ctx") or 2048
    decoder_inputs: dict[str, str] = {
        name: name for name in ("input_ids", "attention_mask", "position_ids") if name in inputs
    }
    decoder_inputs |= {"past_key_names": _PAST_KEY, "past_value_names": _PAST_VALUE} | state_inputs
    search = {key: merged.get(key, default) for key, default in _SEARCH_DEFAULTS.items()}
    search = {
        k: (default if search[k] is None else search[k]) for k, default in _SEARCH_DEFAULTS.items()
    }
    search |= {
        "early_stopping": True,
        "max_length": int(context),
        "min_length": 0,
        "past_present_share_buffer": past_present_share_buffer,
    }
    return {
        "model": {
            "bos_token_id": merged.get("bos_token_id"),
            "context_length": int(context),
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": filename,
                "head_size": head_size,
                "hidden_size": _get(config, "hidden_size"),
                "inputs": decoder_inputs,
                "outputs": {
                    "logits": "logits" if "logits" in outputs else next(iter(outputs)),
                    "present_key_names": _PRESENT_KEY,
                    "present_value_names": _PRESENT_VALUE,
                }
                | state_outputs,
                "num_attention_heads": _get(config, "num_attention_heads"),
                "num_hidden_layers": layers,
                "num_key_value_heads": kv_heads,
            }
            | ({} if layer_types is None else {"layer_types": layer_types}),
            "eos_token_id": merged.get("eos_token_id"),
            "pad_token_id": _pad_token(merged),
            "type": genai_type(str(config.get("model_type", ""))),
            "vocab_size": _get(config, "vocab_size"),
        },
        "search": dict(sorted(search.items())),
    }


def genai_type(model_type: str) -> str:
    """The ``model.type`` of ``genai_config.json``: the transformers ``model_type`` when
    onnxruntime-genai runs it as a plain decoder (:data:`GENAI_TYPES`), else ``"decoder"``."""
    return model_type if model_type in GENAI_TYPES else GENERIC_TYPE


def write_genai_config(folder: Path, content: Mapping[str, Any]) -> Path:
    """Write ``content`` as ``folder/genai_config.json``; returns the path."""
    path = folder / FILE_NAME
    path.write_text(json.dumps(content, indent=4) + "\n", encoding="utf-8")
    return path


# The attribute_map aliases of configs that spell the usual names their own way (GPT-2, OPT, MPT ...).
_ALIASES = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    # decoder_attention_heads: the decoder-only heads of encoder-decoder families (BartForCausalLM,
    # Blenderbot, BigBird-Pegasus, ...), whose configs keep the encoder-decoder names
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "max_seq_len"),
    "vocab_size": ("vocab_size",),
    "n_ctx": ("n_ctx",),
}


def config_dict(config: Any) -> dict[str, Any]:
    """``config.to_dict()`` with the text config's fields on top (a vision-language checkpoint
    exported for ``text-generation`` keeps the decoder's sizes in ``text_config``:
    ``PretrainedConfig.get_text_config``) and the standard names a config maps to its own
    (``PretrainedConfig.attribute_map``: XGLM's ``num_attention_heads`` is ``attention_heads``),
    for the names none of whose :data:`_ALIASES` is set: Bart maps ``num_attention_heads`` to the
    encoder's heads, while its CLM's alias ``decoder_attention_heads`` is the decoder's."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    out = config.to_dict()
    if text is not config:
        out |= {k: v for k, v in text.to_dict().items() if v is not None and k != "model_type"}
    for standard, own in getattr(text, "attribute_map", {}).items():
        if _get(out, standard) is None and out.get(own) is not None:
            out[standard] = out[own]
    return out


def _get(config: Mapping[str, Any], key: str) -> Any:
    for name in _ALIASES.get(key, (key,)):
        if config.get(name) is not None:
            return config[name]
    return None


def _pad_token(merged: Mapping[str, Any]) -> Any:
    """The pad id, else the (first) eos id, as the builder falls back."""
    pad = merged.get("pad_token_id")
    if pad is not None:
        return pad
    eos = merged.get("eos_token_id")
    return eos[0] if isinstance(eos, list) and eos else eos
