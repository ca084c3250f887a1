"""A tiny random-weight Llama checkpoint on disk, for the streamed ``--hf`` path's tests."""

from __future__ import annotations

import pathlib
from typing import Any

import torch

LAYERS = 3


def llama_checkpoint(folder: pathlib.Path, dtype: torch.dtype = torch.float32, tied: bool = True) -> Any:
    """A random-weight 3-layer Llama (head size 16, as GroupQueryAttention's CPU kernel needs)
    saved in shards of ~40 kB with ``model.safetensors.index.json``; returns the eager model."""
    import transformers  # optional: the callers skip without it (pytest.importorskip)

    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
        tie_word_embeddings=tied,
        architectures=["LlamaForCausalLM"],
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(dtype).eval()
    model.save_pretrained(folder, max_shard_size="40KB")
    assert len(list(folder.glob("*.safetensors"))) >= 2
    assert (folder / "model.safetensors.index.json").is_file()
    return model
