"""Tiny decoders whose head size (16) onnxruntime's GroupQueryAttention CPU kernel accepts."""

from __future__ import annotations

from typing import Any

from onnxport.testing.tiny_models import DECODER, _make

GQA_DECODER = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}


def llama(**overrides: Any) -> Any:
    return _make("LlamaConfig", "LlamaForCausalLM", **GQA_DECODER)(**overrides)
