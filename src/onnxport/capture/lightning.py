"""Capture-time replacement of MiniMax's lightning attention (transformers
``MiniMaxLightningAttention.forward``) without a cache: one expression for any sequence length.

Without a cache, transformers computes the layer's decayed linear attention block by block
(``for i in range(num_blocks)``, ``num_blocks = ceil(seq_len / block_size)``): torch.export unrolls
the loop for the example's block count under a guard (``Eq((s + 255)//256, 1)``), so the graph held
sequences of one block count only (at most 256 tokens for MiniMax-Text-01's ``block_size``).

Per head with slope ``r`` (``get_slope_rate``), each block adds the within-block term
``((Q Kᵀ) ∘ D) V`` with ``D[i, j] = exp(-r (i - j))`` for ``j ≤ i`` (``diagonal_decay``) and the term
of the earlier blocks through the running state ``S``, decayed by ``exp(-r (i + 1))`` for the query
(``query_decay``), ``exp(-r (B - j - 1))`` for the keys (``key_decay``) and ``exp(-r B)`` per block
(``block_decay``). Summed, position ``t`` receives ``exp(-r (t - s)) (q_t · k_s) v_s`` from every
``s ≤ t``: the blocks are an evaluation order of

    out = ((Q Kᵀ) ∘ M) V,   M[t, s] = exp(-r (t - s)) if s ≤ t else 0,

and the state the layer returns is ``S = Σ_s exp(-r (T - 1 - s)) k_sᵀ v_s`` (``T`` the length).
During capture, with symbolic sizes and no cache, the forward computes that expression (memory
``T²`` per head, as softmax attention); the rest of the layer (projections, padding mask, norm,
output gate) is the original's. Eager runs, and a capture with a cache, use the original.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 (the torch convention)


def _decayed_attention(self: Any, hidden_states: torch.Tensor, attention_mask: Any, pad: Callable[..., Any]) -> tuple[torch.Tensor, torch.Tensor]:
    batch, length, _ = hidden_states.shape
    qkv = pad(self.act_fn(self.qkv_proj(hidden_states)), attention_mask)
    qkv = qkv.reshape(batch, length, self.num_attention_heads, 3 * self.head_dim)
    query, key, value = (t.transpose(1, 2) for t in torch.split(qkv, self.head_dim, dim=3))
    rate = self.slope_rate.to(query.dtype)  # (heads, 1, 1)
    positions = torch.arange(length, device=query.device, dtype=query.dtype)
    distance = positions[:, None] - positions[None, :]  # t - s
    mask = torch.exp(torch.where(distance >= 0, -rate * distance, float("-inf")))  # (heads, T, T)
    output = torch.matmul(torch.matmul(query, key.transpose(-1, -2)) * mask, value)
    tail = torch.exp(-rate * (length - 1 - positions)[:, None])  # (heads, T, 1): exp(-r (T - 1 - s))
    state = torch.matmul((key * tail).transpose(-1, -2), value)
    output = output.transpose(1, 2).reshape(batch, length, self.num_attention_heads * self.head_dim)
    output = self.norm(output)
    output = F.sigmoid(self.output_gate(hidden_states)) * output
    return self.out_proj(output), state


def whole_sequence(forward: Callable[..., Any]) -> Callable[..., Any]:
    """``forward`` of MiniMax's lightning attention computing the closed form (module docstring)
    when the sequence length is symbolic and there is no cache; the original otherwise. The
    padding mask is the one the original calls (``apply_mask_to_padding_states`` of its module);
    a transformers without it keeps the original forward."""
    pad = getattr(forward, "__globals__", {}).get("apply_mask_to_padding_states")
    if pad is None:
        return forward

    @functools.wraps(forward)
    def wrapper(self: Any, hidden_states: torch.Tensor, position_embeddings: Any, attention_mask: Any,
                past_key_values: Any = None, **kwargs: Any) -> Any:  # fmt: skip
        if past_key_values is not None or not isinstance(hidden_states.shape[1], torch.SymInt):
            return forward(self, hidden_states, position_embeddings, attention_mask, past_key_values, **kwargs)
        return _decayed_attention(self, hidden_states, attention_mask, pad)

    return wrapper
