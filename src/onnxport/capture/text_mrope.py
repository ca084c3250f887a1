"""Interleaved multimodal rotary positions on text alone: the plain rotary table.

The text decoders of Qwen3-VL, Qwen3-VL-MoE, Qwen3.5, Qwen3.5-MoE, Qwen3-Omni-MoE's thinker and
Qwen4-Exp build their rotary table from three position rows (temporal, height, width;
``*TextRotaryEmbedding.forward`` in their modeling files)::

    position_ids = position_ids.expand(3, -1, -1)      # [B, S] → 3 equal rows
    freqs = position_ids[..., None] * inv_freq          # [3, B, S, R / 2]
    cos = recomposition_frequencies(freqs.cos() * attention_scaling)

where ``recomposition_frequencies`` takes every third frequency of the height and width sections
from rows 1 and 2 into row 0 and concatenates the result with itself. With 2-D ``position_ids``
(a text-only model: ``Qwen3_5ForCausalLM``, the text decoder onnxruntime-genai runs) the three
rows are equal (the text model hands the rotary ``position_ids[None].expand(4, ...)[1:]``: rows of
one tensor, stride 0 on the row axis), so the recomposed table is row 0 itself, ``cos(cat(freqs, freqs))`` — the plain
rotary table of Llama's ``LlamaRotaryEmbedding`` — and the capture records it without the
copies (two ``Gather``s, a strided ``Slice``, a ``ScatterND`` and four ``Transpose``s per section
and per table, about 100 nodes) that hid the rotary from the onnxruntime target's matcher
(:mod:`onnxport.passes.ort.rotary`), which now folds it into GroupQueryAttention. Equal bit for
bit: each element is the same product, cosine and scaling. Three-row positions (the multimodal
decoder, :mod:`onnxport.hf.multimodal_rope`) and other rope types (whose forward updates the
frequencies first) run the original.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

#: (module, class) of the text rotary embeddings whose forward and ``recomposition_frequencies``
#: are Qwen3-VL's (checked against its source in tests/capture/test_text_mrope.py)
TEXT_MROPE_CLASSES: tuple[tuple[str, str], ...] = tuple(
    (f"transformers.models.{name}.modeling_{name}", cls)
    for name, cls in (
        ("qwen3_vl", "Qwen3VLTextRotaryEmbedding"),
        ("qwen3_vl_moe", "Qwen3VLMoeTextRotaryEmbedding"),
        ("qwen3_5", "Qwen3_5TextRotaryEmbedding"),
        ("qwen3_5_moe", "Qwen3_5MoeTextRotaryEmbedding"),
        ("qwen3_omni_moe", "Qwen3OmniMoeThinkerTextRotaryEmbedding"),
        ("qwen4_exp", "Qwen4ExpTextRotaryEmbedding"),
    )
)


def text_positions(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` (a text rotary embedding's ``forward(x, position_ids)``) computing the plain
    rotary table for position ids ``[B, S]``, or ``[3, B, S]`` rows of one expanded tensor, of the
    default rope type: ``(cos, sin)``, each ``[B, S, R]`` in ``x``'s dtype (module docstring)."""

    @functools.wraps(original)
    def forward(self: Any, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if position_ids.ndim == 3 and position_ids.stride(0) == 0:  # rows of one expanded tensor
            position_ids = position_ids[0]
        if position_ids.ndim != 2 or getattr(self, "rope_type", None) != "default":
            return original(self, x, position_ids)
        with torch.no_grad():
            freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
            table = torch.cat((freqs, freqs), dim=-1)
            cos, sin = table.cos() * self.attention_scaling, table.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

    return forward
