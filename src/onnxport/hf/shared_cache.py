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

from typing import Any

import torch

from onnxport.hf import inputs as hf_inputs
from onnxport.hf.validate import OutputCheck, compare_outputs, describe, eager

KV_CACHE_MODES = ("concat", "shared")
# Buffer rows beyond past + sequence in validation: shows that the unused tail is not read.
SPARE_ROWS = 5


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


def buffered(feeds: dict[str, Any], max_length: int) -> dict[str, Any]:
    """``feeds`` with every past tensor ``[B, H, past, D]`` copied into zeros ``[B, H, max_length, D]``.

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

    past = [tuple(grow(t) for t in layer) for layer in feeds["past_key_values"]]
    return {**feeds, "past_key_values": past}


def validate_shared(
    part: hf_inputs.Component, program: Any, atol: float | None
) -> list[OutputCheck]:
    """Every output of the shared-buffer ``program`` vs eager on
    :data:`onnxport.hf.inputs.CHECK_SIZES` made unpadded (see the module docstring)."""
    checks = []
    for sizes in hf_inputs.CHECK_SIZES:
        feeds = unpadded(part.make_inputs(sizes))
        total = feeds["attention_mask"].shape[1]
        actual = program(**buffered(feeds, total + SPARE_ROWS))
        actual = [
            a[:, :, :total] if name.startswith("present") else a
            for name, a in zip(part.output_names, actual)
        ]
        expected = eager(part.module, feeds)
        where = (part.name, describe(feeds) + f", buffer {total + SPARE_ROWS}")
        checks += compare_outputs(where, part.output_names, actual, expected, atol)
    return checks
