"""Capture-time replacement of GPT-Neo's attention mask: computed from positions, not sliced from
its stored ``(max_positions, max_positions)`` table.

transformers' ``GPTNeoSelfAttention._attn`` masks the scores with
``self.bias[:, :, key_length - query_length : key_length, :key_length]``, a slice of a causal (or,
for ``"local"`` layers, sliding-window) boolean table registered at ``max_position_embeddings``
squared. With symbolic lengths the slice's sizes are ``Min``/``Max`` expressions that every layer
compounds: torch.export took 7 s for 2 layers, 19 s for 4, 54 s for 6 and did not finish 24
(GPT-Neo 1.3B) in 10 minutes; and each layer's table became a constant of the graph (4 MiB per
layer at 2048 positions).

The table holds ``j <= i`` (``torch.tril``) and, for local layers, also ``j > i - window_size``
(``bias ^ tril(bias, -window_size)``), for query position ``i`` and key position ``j``; the
queries sit at the end of the keys (positions ``key_length - query_length + q``). During a
capture with symbolic sizes the replacement builds that mask from ``arange``s and otherwise runs
the original (weights in float32, the dtype minimum where masked, the additive mask, softmax, as
the original does). Within ``max_position_embeddings`` the two masks are the same booleans.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch


def positional_mask(attn: Callable[..., Any]) -> Callable[..., Any]:
    """GPT-Neo's ``_attn`` with the mask built from positions when the lengths are symbolic."""

    @functools.wraps(attn)
    def wrapper(self: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: Any = None) -> Any:
        query_length, key_length = query.size(-2), key.size(-2)
        if not isinstance(query_length, torch.SymInt) and not isinstance(key_length, torch.SymInt):
            return attn(self, query, key, value, attention_mask)
        query, key = query.to(torch.float32), key.to(torch.float32)
        weights = torch.matmul(query, key.transpose(-1, -2))
        rows = torch.arange(query_length, device=query.device) + (key_length - query_length)
        distance = rows[:, None] - torch.arange(key_length, device=query.device)[None, :]  # i - j
        allowed = distance >= 0
        if self.attention_type == "local":
            allowed = allowed & (distance < self.config.window_size)
        # a Python number, not a tensor: a constant of the graph, which the onnxruntime target reads
        # even for a meta model (onnxport.passes.ort.attention_match._positional_causal)
        weights = torch.where(allowed, weights, torch.finfo(weights.dtype).min)
        if attention_mask is not None:
            weights = weights + attention_mask
        weights = torch.nn.functional.softmax(weights, dim=-1).to(value.dtype)
        weights = self.attn_dropout(weights)
        return torch.matmul(weights, value), weights

    return wrapper
