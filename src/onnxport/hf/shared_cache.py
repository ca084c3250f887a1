"""Inputs and validation for the in-place KV cache graph (``kv_cache="shared"``).

That graph (:mod:`onnxport.passes.ort.group_query_attention`, ``shared_buffer``) takes
``past_key_values.*`` as fixed ``(batch_size, kv_heads, max_length, head_size)`` buffers whose
first ``past`` rows hold the cache, and takes positions and lengths from ``attention_mask``
(``seqlens_k = sum(mask) - 1``) as onnxruntime-genai feeds it with
``past_present_share_buffer: true``. Its contract is unpadded rows: ``attention_mask`` all ones and
``position_ids = past .. past + S - 1`` (``position_ids`` is then not read). Validation runs eager
on those inputs with the ordinary grown cache, and the graph on the same cache placed in a buffer
with spare rows; ``present.*`` is compared over its first ``past + S`` rows, the rest of the buffer
being the kernel's scratch.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from onnxport.errors import HFError
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.validate import (
    OutputCheck,
    Tolerance,
    compare_outputs,
    describe,
    eager,
    eager_rerun,
)

KV_CACHE_MODES = ("concat", "shared")
# Config fields that limit attention beyond causality; the shared-buffer graph drops the mask
_MASK_LIMITS = ("attention_chunk_size",)
# Buffer rows beyond past + sequence in validation: shows that the unused tail is not read.
SPARE_ROWS = 5
# The cache entries the shared-buffer graph takes as buffers (a hybrid's ``past_conv.{i}`` /
# ``past_ssm.{i}`` states keep their fixed shapes; names of :func:`onnxport.hf.inputs.cache_entries`).
_BUFFERED = re.compile(r"(past_key_values|present)\.\d+\.(key|value)")


def unpadded(feeds: dict[str, Any]) -> dict[str, Any]:
    """``feeds`` with an all-ones ``attention_mask`` and ``position_ids = past .. past + S - 1``.

    Args:
        feeds: A causal-LM input set of :func:`onnxport.hf.inputs.causal_lm_component`
            (``input_ids`` ``[B, S]``, ``attention_mask`` ``[B, past + S]``, ``position_ids``,
            ``past_key_values``).
    """
    mask = torch.ones_like(feeds["attention_mask"])
    batch, sequence = feeds["input_ids"].shape
    total = mask.shape[1]
    positions = torch.arange(total - sequence, total).expand(batch, sequence).contiguous()
    return {**feeds, "attention_mask": mask, "position_ids": positions}


def buffered(feeds: dict[str, Any], max_length: int, names: list[str]) -> dict[str, Any]:
    """``feeds`` with every attention past ``[B, H, past, D]`` copied into zeros ``[B, H, max_length, D]``.

    Args:
        feeds: Inputs whose ``past_key_values`` holds each layer's cache tensors.
        max_length: Rows of each buffer.
        names: Graph input names of the capture; those of the past, in order, tell the attention
            keys and values (``past_key_values.{i}.key`` / ``.value``, grown) from a hybrid's
            recurrent states (``past_conv.{i}``..., passed as they are).

    Raises:
        ValueError: ``max_length`` is shorter than the past plus the new tokens.
    """
    total = feeds["attention_mask"].shape[1]
    if max_length < total:
        raise ValueError(f"max_length {max_length} < past + sequence length {total}")

    def grow(t: torch.Tensor) -> torch.Tensor:
        buffer = t.new_zeros(t.shape[0], t.shape[1], max_length, t.shape[3])
        buffer[:, :, : t.shape[2]] = t
        return buffer

    past_names = iter(n for n in names if n.startswith("past_"))
    past = [
        tuple(grow(t) if _BUFFERED.fullmatch(next(past_names)) else t for t in layer)
        for layer in feeds["past_key_values"]
    ]
    return {**feeds, "past_key_values": past}


def graph_feeds(feeds: dict[str, Any], names: list[str]) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The validation inputs of a shared-buffer graph for one input set (``names``: the graph's
    input names, :func:`buffered`).

    Returns:
        ``(eager_feeds, graph_feeds, total)``: ``feeds`` made :func:`unpadded` for eager, the
        same with the past in buffers of ``total + SPARE_ROWS`` rows for the graph, and
        ``total = past + S``, the rows of ``present.*`` to compare (:func:`trim_presents`).
    """
    plain = unpadded(feeds)
    total = plain["attention_mask"].shape[1]
    return plain, buffered(plain, total + SPARE_ROWS, names), total


def trim_presents(names: list[str], outputs: list[Any], total: int) -> list[Any]:
    """``outputs`` with every ``present.{i}.key`` / ``.value`` cut to its first ``total`` buffer rows
    (axis 2); a hybrid's recurrent states (``present_conv.{i}``...) are returned whole."""
    return [a[:, :, :total] if _BUFFERED.fullmatch(name) else a for name, a in zip(names, outputs, strict=True)]


def check_full_attention(config: Any) -> None:
    """Refuse a config whose attention is limited in a way the kernel cannot take over: the
    shared-buffer graph replaces the mask by the kernel's causal one. Sliding windows are kept
    (GroupQueryAttention's ``local_window_size``, set per sliding layer by
    :mod:`onnxport.passes.ort.local_window`; validation's lengths pass a window of 4 in the
    tests); chunked attention (Llama 4's ``attention_chunk_size``) has no kernel counterpart.

    Raises:
        HFError: The (text) config sets ``attention_chunk_size``.
    """
    text = getattr(config, "get_text_config", lambda: config)()
    limited = [k for k in _MASK_LIMITS if getattr(text, k, None) not in (None, 0)]
    if limited:
        raise HFError(
            f"kv_cache='shared' drops the graph's mask for the kernel's causal one; this model "
            f"sets {', '.join(limited)}. Export with kv_cache='concat' (its mask is kept)."
        )


def validate_shared(
    part: hf_inputs.Component, program: Any, atol: float | Tolerance | None
) -> list[OutputCheck]:
    """Every output of the shared-buffer ``program`` vs eager on
    :data:`onnxport.hf.inputs.CHECK_SIZES` made unpadded (see the module docstring), in a
    transient session released afterwards (``ONNXProgram.initialize_inference_session``)."""
    checks = []
    program.initialize_inference_session(transient=True)
    try:
        for sizes in hf_inputs.CHECK_SIZES:
            plain, buffers, total = graph_feeds(part.make_inputs(sizes), _input_names(part))
            actual = trim_presents(part.output_names, program(**buffers), total)
            expected = eager(part.module, plain)
            where = (part.name, describe(plain) + f", buffer {total + SPARE_ROWS}")
            checks += compare_outputs(where, part.output_names, actual, expected, atol, eager_rerun(part.module, plain))
    finally:
        program.release()  # a kept session would hold a copy of the weights until the export returns
    return checks


def _input_names(part: hf_inputs.Component) -> list[str]:
    """The component's graph input names (a causal LM's are always set, :func:`onnxport.hf.inputs.causal_lm_component`).

    Raises:
        HFError: The component has none (not a decoder with a KV cache).
    """
    if part.input_names is None:
        raise HFError(f"kv_cache='shared' needs the input names of {part.name}; it is not a decoder with a KV cache")
    return part.input_names
