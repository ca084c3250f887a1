"""The random-weight checkpoints of the LLM speed benchmarks (``llm_speed.py``, ``genai_speed.py``):
model shapes per ``--family``, and a safetensors folder written tensor by tensor with a word-level
tokenizer, which onnxport and onnxruntime-genai's model builder both read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

LLAMA_1B = {
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
}
QWEN3_06B = {  # Qwen3-0.6B's shapes: q/k RMS norms, head_dim 128 > hidden / heads, tied head
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
}
SMOLLM2_135M = {  # SmolLM2-135M's shapes: a small, deep Llama (30 layers, head_dim 64), tied head
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
}
PHI35_MINI_4L = {  # Phi-3.5-mini's shapes (head_dim 96, 32 heads of keys too), 4 of its 32 layers
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 4,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32064,
}
LFM2_350M = {  # LFM2-350M's shapes: 10 short-convolution layers and 6 attention layers, tied head
    "hidden_size": 1024,
    "intermediate_size": 6656,  # block_auto_adjust_ff_dim makes the MLP 4608 wide, as the release
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "vocab_size": 65536,
}
# --family: transformers config and model classes, shapes, and whether the LM head is tied
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", LLAMA_1B, False),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", QWEN3_06B, True),
    "smollm2": ("LlamaConfig", "LlamaForCausalLM", SMOLLM2_135M, True),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", PHI35_MINI_4L, False),
    "lfm2": ("Lfm2Config", "Lfm2ForCausalLM", LFM2_350M, True),
}
#: families whose graphs also take recurrent states (LFM2's ``past_conv.*``), which only
#: ``genai_speed.py`` feeds (through onnxruntime-genai); ``llm_speed.py``'s sessions feed keys and values
STATE_FAMILIES = frozenset({"lfm2"})
# config fields beyond the shapes: Phi-3.5-mini's LongRoPE (131072 positions, the long factors past
# 4096; its factor lists' shape, values of the same range, not the released ones)
FAMILY_CONFIG: dict[str, dict[str, Any]] = {
    "phi3": {
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {
            "type": "longrope",  # the key of Phi-3.5-mini's config.json, which the builder reads
            "short_factor": [1.0 + 0.002 * i for i in range(48)],
            "long_factor": [1.0 + 1.2 * i for i in range(48)],
        },
    },
    "lfm2": {  # LFM2-350M's layer pattern and convolution length
        "layer_types": ["full_attention" if i in (2, 5, 8, 10, 12, 14) else "conv" for i in range(16)],
        "conv_L_cache": 3,
        "max_position_embeddings": 128000,
    },
}
SMALL = {
    **LLAMA_1B,
    "num_hidden_layers": 2,
    "hidden_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 704,
    "vocab_size": 4000,
}


# -- checkpoint ---------------------------------------------------------------------------------
def make_checkpoint(
    folder: Path, sizes: dict[str, int], shard_bytes: int = 1 << 30, tied: bool = False, family: str = "llama"
) -> int:
    """A random-weight causal LM folder of ``family`` (:data:`FAMILIES`: config, safetensors shards
    + index, tokenizer).

    Weights are drawn tensor by tensor (normal, std 0.02; norms 1 + 0.1 normal) and never held as
    a whole model. ``tied``: the LM head is the embedding table (``tie_word_embeddings``, as Llama
    3.2 1B/3B, Qwen2.5 0.5B-3B, Gemma; no ``lm_head.weight`` in the checkpoint). Returns the number
    of parameters.
    """
    import torch
    import transformers
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    config_class, model_class = (getattr(transformers, name) for name in FAMILIES[family][:2])
    extra = {"max_position_embeddings": 4096, **FAMILY_CONFIG.get(family, {})}
    if "layer_types" in extra:  # the last layers of the pattern (--small: LFM2's attention layer and a conv one)
        extra["layer_types"] = extra["layer_types"][-sizes["num_hidden_layers"] :]
    config = config_class(
        **sizes,
        **extra,
        rms_norm_eps=1e-5,
        tie_word_embeddings=tied,
        architectures=[FAMILIES[family][1]],
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        torch_dtype="float32",
    )
    folder.mkdir(parents=True)
    config.save_pretrained(folder)
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in model_class(config).state_dict().items()}
    if tied:
        shapes.pop("lm_head.weight", None)
    generator = torch.Generator().manual_seed(0)
    shards: list[dict[str, Any]] = [{}]
    size = 0
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            tensor = 1 + 0.1 * torch.randn(shape, generator=generator)
        else:
            tensor = 0.02 * torch.randn(shape, generator=generator)
        if size + tensor.numel() * 4 > shard_bytes and shards[-1]:
            shards.append({})
            size = 0
        shards[-1][name] = tensor
        size += tensor.numel() * 4
        if size >= shard_bytes:
            shards.append({})
            size = 0
    shards = [s for s in shards if s]
    index: dict[str, str] = {}
    for i, shard in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(folder / file), metadata={"format": "pt"})
        index.update(dict.fromkeys(shard, file))
        shard.clear()
    total = sum(int(np.prod(s)) for s in shapes.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total * 4}, "weight_map": index}, indent=1)
    )
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"t{i}": i for i in range(3, sizes["vocab_size"])}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<unk>",
    ).save_pretrained(folder)
    return total
