"""``genai_config.json``: what onnxruntime-genai needs to run an exported decoder-only model.

``onnxruntime_genai.Model(folder)`` reads ``genai_config.json`` from the folder it is given; the
decoder file name in it is relative to that folder (a subpath such as ``onnx/model.onnx`` works,
checked with onnxruntime-genai 0.18.0). The schema follows what onnxruntime-genai's model builder
writes (``src/python/py/models/builders/base.py``, ``make_genai_config``): the model type, the
special token ids, the context length, the vocabulary size, the decoder's file, head size, hidden
size, head counts and layer count, the graph's input names and ``%d`` name patterns of the cache
inputs/outputs, and the search defaults from ``generation_config.json``.

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


def genai_runs(decoder: ir.Model) -> bool:
    """Whether onnxruntime-genai's decoder-only pipeline can feed ``decoder``: its inputs are
    ``input_ids``, ``attention_mask``, ``position_ids`` and ``past_key_values.{i}.key/value`` of one
    shape (the pipeline allocates one ``(batch, kv_heads, length, head_size)`` cache per layer from
    ``head_size`` and ``num_key_value_heads``, ``src/models/kv_cache.cpp``): not the conv /
    recurrent states of state-space layers, a sparse-attention indexer's keys, nor values narrower
    than keys. Each ``past_key_values.{i}.key/value`` needs its ``present.{i}.key/value`` output,
    the names the config declares (``present_key_names``)."""
    shapes = set()
    outputs = {str(v.name) for v in decoder.graph.outputs}
    for value in decoder.graph.inputs:
        name = str(value.name)
        if not _GENAI_INPUTS.fullmatch(name):
            return False
        if name.startswith("past_key_values."):
            if value.shape is None or len(value.shape) != 4:
                return False
            if name.replace("past_key_values.", "present.", 1) not in outputs:
                return False
            shapes.add((value.shape[1], value.shape[3]))
    return len(shapes) == 1


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
            head_size)``); outputs ``logits``, ``present.{i}.key/value``.
        config: ``config.json`` as a dict (``PretrainedConfig.to_dict()``).
        generation: ``generation_config.json`` as a dict, or ``None``; its token ids and sampling
            settings take precedence over ``config``'s (as in the builder).
        filename: The decoder file relative to the folder holding ``genai_config.json``.
        past_present_share_buffer: ``True`` only for a graph that updates a fixed-size cache
            buffer in place (``kv_cache="shared"``); onnxport's standard graph needs ``False``.

    Returns:
        The JSON-ready dict (``{"model": {...}, "search": {...}}``).

    Raises:
        HFError: The graph has no ``past_key_values.0.key`` input with a static head count and
            head size, or the config lacks ``vocab_size``/``hidden_size``/``num_attention_heads``.
    """
    inputs = {str(v.name): v for v in decoder.graph.inputs}
    outputs = {str(v.name) for v in decoder.graph.outputs}
    past = inputs.get("past_key_values.0.key")
    if past is None or past.shape is None or len(past.shape) != 4:
        raise HFError("genai_config.json needs a decoder graph with past_key_values.0.key inputs.")
    kv_heads, head_size = past.shape[1], past.shape[3]
    if not isinstance(kv_heads, int) or not isinstance(head_size, int):
        raise HFError(
            f"past_key_values.0.key has shape {past.shape}; heads and head size must be fixed."
        )
    layers = sum(
        1 for name in inputs if name.startswith("past_key_values.") and name.endswith(".key")
    )
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
    decoder_inputs |= {"past_key_names": _PAST_KEY, "past_value_names": _PAST_VALUE}
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
                },
                "num_attention_heads": _get(config, "num_attention_heads"),
                "num_hidden_layers": layers,
                "num_key_value_heads": kv_heads,
            },
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
