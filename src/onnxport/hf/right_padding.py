"""Right-padded batches in a decoder step: the last real token of each row (what a pruned LM head,
``prune_lm_head``, computes logits for) and sliding windows counted in real tokens.

A decoder step's ``attention_mask`` is ``[batch_size, past_sequence_length + sequence_length]``
(int64, 1 = a real token). Its last ``sequence_length`` columns mark the step's tokens. A batch
of prompts of different lengths is padded one of two ways:

- on the left (transformers' ``generate``, transformers.js): the step's last position is real in
  every row;
- on the right (onnxruntime-genai: ``PadInputs`` with ``pad_right_``, ``src/models/model.cpp``):
  a shorter row's last real token sits before its pads, and its logits are the ones generation
  needs (genai takes the row as is from a graph whose logits have a static 1 on axis 1:
  ``Model::IsPruned``, ``src/models/logits.cpp``).

Taking the last position (the model builder's ``prune_lm_head=true``: ``Gather(axis=1, -1)``,
``builders/base.py``) is right for the first case only; :func:`last_real_positions` is right
for both. After a right-padded prompt, genai appends each new token after the pads, so a shorter
row's cache has a hole of pad slots; a sliding window counted in cache slots (transformers'
``sliding_window_overlay``: ``kv_idx > q_idx - sliding_window``) then covers fewer real tokens
than the same prompt sees unpadded. :func:`windows_over_real_tokens` counts it in real tokens, which
is the same window for unpadded and left-padded rows.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, cast

import torch


def last_real_positions(attention_mask: torch.Tensor, sequence_length: int | torch.SymInt) -> torch.Tensor:
    """Per row, the position within the step (``0 .. sequence_length - 1``) of the last real token.

    Args:
        attention_mask: ``[batch_size, total_sequence_length]``, any integer or bool dtype; the
            step's tokens are its last ``sequence_length`` columns.
        sequence_length: the step's token count.

    Returns:
        ``[batch_size]`` int64: the largest ``j`` with ``attention_mask[b, total - sequence_length
        + j] != 0``, or 0 for a row with no real token in the step.
    """
    window = attention_mask[:, attention_mask.shape[1] - sequence_length :]
    order = torch.arange(1, window.shape[1] + 1, dtype=torch.int64, device=window.device)
    return ((window != 0).to(torch.int64) * order).amax(dim=-1).sub(1).clamp_min(0)


def take_rows(states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """``states[b, positions[b]]`` for each row, kept 3-D: ``[batch_size, sequence, d]`` →
    ``[batch_size, 1, d]`` (the same dtype)."""
    index = positions.view(-1, 1, 1).expand(-1, 1, states.shape[-1])
    return states.gather(1, index)


@contextlib.contextmanager
def windows_over_real_tokens(attention_mask: torch.Tensor) -> Iterator[None]:
    """Within the block, transformers' sliding-window masks (``masking_utils.sliding_window_overlay``,
    which ``create_sliding_window_causal_mask`` builds its window from, and the same name imported
    into a loaded modeling module: Gemma 3's vision-language mask) keep the key at cache slot
    ``kv`` for the query at slot ``q`` when fewer than ``sliding_window`` real tokens separate them:
    ``real[b, kv] > real[b, q] - sliding_window``, ``real`` the running count of ``attention_mask``
    (``[batch_size, past_sequence_length + sequence_length]``, the decoder step's full mask, so
    slot and column agree). Unpadded and left-padded rows get transformers' window exactly (their
    real tokens are consecutive slots); a row with pad slots inside its cache (onnxruntime-genai's
    right padding) gets the window of its tokens without the pads."""
    # optional heavy dependency, imported here: only the hf exports come to this function
    from transformers import masking_utils

    real = attention_mask.to(torch.int64).cumsum(-1)

    def overlay(sliding_window: int) -> Any:
        def inner_mask(batch_idx: Any, head_idx: Any, q_idx: Any, kv_idx: Any) -> Any:
            return real[batch_idx, kv_idx] > real[batch_idx, q_idx] - sliding_window

        return inner_mask

    original = masking_utils.sliding_window_overlay
    # and where a modeling module imported the name (Gemma 3/4's vision-language masks: the
    # ``and_mask_function`` of their ``create_causal_mask``)
    holders = [masking_utils] + [
        module for name, module in list(sys.modules.items())
        if name.startswith("transformers.models.") and getattr(module, "sliding_window_overlay", None) is original
    ]  # fmt: skip
    for holder in holders:
        setattr(holder, "sliding_window_overlay", overlay)  # noqa: B010 (modules typed without it)
    try:
        yield
    finally:
        for holder in holders:
            setattr(holder, "sliding_window_overlay", original)  # noqa: B010


@contextlib.contextmanager
def head_on_rows(model: torch.nn.Module, positions: torch.Tensor | None) -> Iterator[list[bool]]:
    """Within the block (``positions`` ``None``: nothing changes), the model's output embeddings
    (its LM head, ``get_output_embeddings()``) run on the hidden state of ``positions`` only (:func:`take_rows`; a 3-D input only), so its
    MatMul takes one row per batch instead of ``sequence_length``. What the model does after the
    head (softcapping, scaling) is per position, so the logits equal the full logits' rows.

    Yields a list that holds ``True`` once the head ran on the rows; left empty (a model without
    output embeddings, or whose head is never called on a 3-D input), the caller takes the rows
    of the full logits."""
    selected: list[bool] = []
    head = cast(Any, model).get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if positions is None or not isinstance(head, torch.nn.Module):
        yield selected
        return

    def select(_module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        hidden = args[0] if args else None
        if not isinstance(hidden, torch.Tensor) or hidden.dim() != 3:
            return None
        selected.append(True)
        return (take_rows(hidden, cast(torch.Tensor, positions)), *args[1:])

    handle = head.register_forward_pre_hook(select)
    try:
        yield selected
    finally:
        handle.remove()
