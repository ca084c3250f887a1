"""A FlexAttention self-attention module for tests and benchmarks (``tests/ops/nn``, ``bench/models.py``).

It has what a FlexAttention model exercises in an export: parameters that require grad (torch
refuses FlexAttention's CPU path for them), a causal-and-padding block mask built in ``forward``
with ``create_block_mask`` from an input, and a ``score_mod`` that reads the positions and a
buffer (PyTorch docs, ``torch.nn.attention.flex_attention``).
"""

from __future__ import annotations

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


class MaskedSelfAttention(torch.nn.Module):
    """``x`` (batch, length, width) and ``keep`` (batch, length) bool → (batch, heads, length,
    width / heads): a QKV projection, a causal mask AND the keys ``keep`` allows, scores minus 0.1
    per position of distance plus a per-head key bias (``max_length`` keys at most)."""

    def __init__(self, width: int = 16, heads: int = 2, max_length: int = 64) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.register_buffer("key_bias", torch.randn(heads, max_length))

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        key_bias: torch.Tensor = self.key_bias  # type: ignore[assignment]  # a registered buffer
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)

        def mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
            return (q_idx >= kv_idx) & keep[b, kv_idx]

        def score_mod(score: torch.Tensor, b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                      kv_idx: torch.Tensor) -> torch.Tensor:
            return score - 0.1 * (q_idx - kv_idx).to(score.dtype) + key_bias[h, kv_idx]

        block_mask = create_block_mask(mask_mod, None, None, length, length, device=x.device)
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)


def padding_keep(batch: int, length: int) -> torch.Tensor:
    """A random (batch, length) bool padding mask whose first key is always kept."""
    keep = torch.rand(batch, length) > 0.3
    keep[:, 0] = True
    return keep
