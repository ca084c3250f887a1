"""onnxruntime-genai generates from onnxport's CLI exports of many decoder families, standard and
``--target onnxruntime --kv-cache shared``, with transformers' tokens.

    python -m venv --system-site-packages /work/venv-genai
    /work/venv-genai/bin/pip install onnxruntime-genai==0.18.0
    PYTHONPATH=src /work/venv-genai/bin/python bench/clients/genai_families.py [--variants std,shared,int4,pruned] [TYPE ...]

For each transformers ``model_type`` (default :data:`FAMILIES`: the decoders onnxruntime-genai's
model builder knows and others: dense, MoE, sliding-window, partial rotary), a random-weight model is built
from the type's default config shrunk to 2 layers of width 64 (:data:`SHRINK`, plus the type's own
fields in :data:`EXTRA`: windows of 4 tokens so the 26-token run crosses them), saved as a
safetensors folder and exported by ``onnxport export --hf`` (the streamed path users take, with its
validation) once per variant:

- ``std``: the standard graph (``past_present_share_buffer: false``);
- ``shared``: ``--target onnxruntime --kv-cache shared`` (GroupQueryAttention over a fixed buffer,
  ``past_present_share_buffer: true``);
- ``int4``: ``shared`` plus ``--quantize int4`` (its tokens are printed, not compared: random
  weights quantized to 4 bits pick other argmaxes);
- ``pruned``: ``shared`` plus ``--prune-lm-head`` (logits of the last position only, read by
  genai as pruned logits).

``onnxruntime_genai.Model(folder)`` then generates 20 greedy tokens from a 6-token prompt
(``min_length`` keeps eos from stopping early), compared with transformers'
``generate(do_sample=False, min_new_tokens=20)``. ``--padded``: a batch of that prompt and a
3-token one instead, which genai pads on the right (``PadInputs``), each row compared with
transformers generating its prompt alone. One row per type; exit status 1 when an export
fails or a compared row differs. A type whose graph genai cannot feed (hybrid states, multi-query
fused caches, MLA's latent cache) gets no ``genai_config.json``: reported as ``no genai_config``,
not a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any

import torch
from genai import NEW_TOKENS, PROMPT, genai_tokens  # bench/clients/genai.py, beside this script

FAMILIES = [
    "llama", "mistral", "ministral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi", "phi3",
    "granite", "olmo", "olmo2", "olmo3", "smollm3", "cohere", "cohere2", "starcoder2", "stablelm",
    "falcon", "gpt_neox", "gptj", "codegen", "glm", "glm4", "exaone4", "helium", "nemotron", "seed_oss",
    "qwen2_moe", "qwen3_moe", "mixtral", "gpt_oss", "glm4_moe", "granitemoe", "olmoe", "phimoe",
    # session 41: latent attention (absorbed), GPT-Neo's positional mask, GPT-BigCode's multi-query cache, XGLM
    "deepseek_v2", "deepseek_v3", "glm4_moe_lite", "minicpm3", "gpt_neo", "gpt_bigcode", "xglm",
    # session 42: baddbmm scores over [B * heads] batches; A.X K1's and LongCat-Flash's latent attention
    "gpt_neox_japanese", "axk1", "longcat_flash", "dots1", "gemma3n_text",
    # session 43: hybrids (gated delta rule, short convolution, Mamba2 layers beside attention layers)
    "qwen3_5_text", "qwen3_next", "olmo_hybrid", "lfm2", "lfm2_moe", "bamba", "granitemoehybrid", "nemotron_h",
]  # fmt: skip
SHRINK = dict(
    num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
    head_dim=16, vocab_size=512, num_experts=4, num_local_experts=4, num_experts_per_tok=2,
    moe_intermediate_size=32, shared_expert_intermediate_size=32, layer_types=None, pad_token_id=0,
    bos_token_id=1, eos_token_id=2,
)  # fmt: skip
WINDOW = dict(sliding_window=4)
MLA = dict(head_dim=8, num_key_value_heads=4, kv_lora_rank=40, q_lora_rank=48, qk_rope_head_dim=8, qk_nope_head_dim=16,
           v_head_dim=16, n_routed_experts=4, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1)
INDEXER = dict(index_n_heads=4, index_head_dim=16, index_topk=4)
LINEAR = dict(layer_types=["linear_attention", "full_attention"], linear_num_value_heads=4, linear_num_key_heads=2,
              linear_key_head_dim=16, linear_value_head_dim=16)
EXTRA: dict[str, dict[str, Any]] = {
    "gptj": dict(rotary_dim=8), "codegen": dict(rotary_dim=8), "glm": dict(eos_token_id=[2]),
    "glm4": dict(eos_token_id=[2]), "glm4_moe": dict(eos_token_id=[2], first_k_dense_replace=1, n_group=1, topk_group=1),
    "mistral": WINDOW, "ministral": WINDOW, "gemma2": WINDOW, "gemma3_text": WINDOW, "cohere2": WINDOW,
    "gpt_oss": WINDOW, "exaone4": WINDOW,
    "deepseek_v2": MLA | dict(q_lora_rank=None),
    "deepseek_v3": MLA,
    "youtu": MLA, "glm4_moe_lite": MLA, "minicpm3": MLA, "mistral4": MLA,
    "gpt_neo": dict(num_layers=2, attention_types=[[["global", "local"], 1]], window_size=4),
    "qwen3_next": dict(layer_types=["linear_attention", "full_attention"]),
    # session 42
    "axk1": MLA, "axk2": MLA | INDEXER, "deepseek_v32": MLA | INDEXER, "glm_moe_dsa": MLA | INDEXER | dict(eos_token_id=[2]),
    "longcat_flash": MLA | dict(ffn_hidden_size=128, expert_ffn_hidden_size=32, num_layers=1, zero_expert_num=2),
    "dots1": dict(n_routed_experts=4, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1),
    "gemma3n_text": dict(num_kv_shared_layers=0, layer_types=["sliding_attention", "full_attention"], sliding_window=4,
                         altup_num_inputs=2, laurel_rank=8, hidden_size_per_layer_input=8, vocab_size_per_layer_input=512,
                         activation_sparsity_pattern=[0.0, 0.0], intermediate_size=[128, 128]),
    "zaya": dict(num_experts_per_tok=1),
    # session 43: hybrids of gated delta rule / short convolution / Mamba layers and attention layers
    "qwen3_5_text": LINEAR, "qwen3_5_moe_text": LINEAR, "qwen4_exp_text": LINEAR,
    "lfm2": dict(layer_types=["conv", "full_attention"]), "lfm2_moe": dict(layer_types=["conv", "full_attention"]),
    "granitemoehybrid": dict(layer_types=["mamba", "attention"], mamba_n_heads=4, mamba_d_head=32, mamba_d_state=16,
                             mamba_n_groups=1),
    "bamba": dict(attn_layer_indices=[1], mamba_n_heads=4, mamba_d_head=32, mamba_d_state=16, mamba_n_groups=1),
    "nemotron_h": dict(hybrid_override_pattern="M*", layers_block_type=["mamba", "attention"], mamba_num_heads=4,
                       mamba_head_dim=32, ssm_state_size=16, n_groups=1),
    "falcon_h1": dict(mamba_n_heads=4, mamba_d_head=32, mamba_d_state=16, mamba_n_groups=1),
}  # fmt: skip
VARIANTS = {
    "std": [],
    "shared": ["--target", "onnxruntime", "--kv-cache", "shared"],
    "int4": ["--target", "onnxruntime", "--kv-cache", "shared", "--quantize", "int4"],
    "pruned": ["--target", "onnxruntime", "--kv-cache", "shared", "--prune-lm-head"],
}


def shrunk_config(model_type: str) -> Any:
    """The type's default config with the :data:`SHRINK` fields it has (of a matching type) and
    its :data:`EXTRA`."""
    import transformers

    base = transformers.AutoConfig.for_model(model_type)

    def fits(key: str, value: Any) -> bool:
        if not hasattr(base, key) or isinstance(getattr(type(base), key, None), property):
            return False
        current = getattr(base, key)
        return current is None or isinstance(current, type(value)) or isinstance(value, type(current))

    fields = {k: v for k, v in SHRINK.items() if fits(k, v)} | EXTRA.get(model_type, {})
    return transformers.AutoConfig.for_model(model_type, **fields)


def padded_tokens(folder: pathlib.Path, prompts: list[list[int]]) -> list[list[int]]:
    """20 greedy tokens per prompt from onnxruntime-genai for a batch of ``prompts``, padded on the
    right with the folder's ``pad_token_id`` (as genai's ``PadInputs`` pads a tokenizer's batch)."""
    import numpy as np
    import onnxruntime_genai as og  # optional: installed in its own venv

    pad = json.loads((folder / "genai_config.json").read_text())["model"]["pad_token_id"]
    longest = max(map(len, prompts))
    model = og.Model(str(folder))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=longest + NEW_TOKENS, min_length=longest + NEW_TOKENS,
                              do_sample=False, batch_size=len(prompts))  # fmt: skip
    generator = og.Generator(model, params)
    generator.append_tokens(np.array([p + [pad] * (longest - len(p)) for p in prompts], dtype=np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return [list(map(int, generator.get_sequence(i)))[longest:] for i in range(len(prompts))]


def check(model_type: str, work: pathlib.Path, variants: list[str], padded: bool = False) -> dict[str, str]:
    """Each variant's outcome for ``model_type``: ``equal``, ``DIFFERENT ...``, ``no genai_config``,
    ``tokens ...`` (int4), ``export failed: ...`` or ``genai failed: ...``; ``no model ...`` when
    transformers cannot build or run the type from the shrunk config (not counted as a failure);
    ``padded``: a right-padded batch of two prompts."""
    import transformers

    torch.manual_seed(0)
    prompts = [PROMPT, PROMPT[-3:]] if padded else [PROMPT]
    reference: Any = []
    try:
        model = transformers.AutoModelForCausalLM.from_config(shrunk_config(model_type)).eval()
        for prompt in prompts:
            ids = torch.tensor([prompt])
            with torch.no_grad():
                reference.append(model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
                                                min_new_tokens=NEW_TOKENS, do_sample=False)[0, len(prompt):].tolist())  # fmt: skip
    except Exception as e:  # the shrunk config misses what the type needs (transformers' and hub's own errors)
        return {"all": f"no model from the shrunk config: {type(e).__name__}: {str(e)[:200]}"}
    model.save_pretrained(work / "src")
    reference = reference if padded else reference[0]
    outcomes = {}
    for variant in variants:
        out = work / variant
        command = [sys.executable, "-m", "onnxport", "export", "--hf", str(work / "src"), "-o", str(out)]
        proc = subprocess.run([*command, *VARIANTS[variant]], capture_output=True, text=True)
        if proc.returncode:
            outcomes[variant] = "export failed: " + (proc.stdout + proc.stderr).strip().splitlines()[-1][:300]
        elif not (out / "genai_config.json").is_file():
            outcomes[variant] = "no genai_config"
        else:
            try:
                tokens: Any = padded_tokens(out, prompts) if padded else genai_tokens(out)
            except RuntimeError as e:  # onnxruntime-genai's own errors (a config it refuses)
                outcomes[variant] = f"genai failed: {str(e)[:300]}"
                continue
            if variant == "int4":
                outcomes[variant] = f"tokens {tokens}"
            else:
                outcomes[variant] = "equal" if tokens == reference else f"DIFFERENT {tokens} vs {reference}"
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("types", nargs="*", default=FAMILIES)
    parser.add_argument("--variants", default="std,shared", help=f"comma-separated of {', '.join(VARIANTS)}")
    parser.add_argument("--padded", action="store_true", help="a right-padded batch of a 6- and a 3-token prompt")
    args = parser.parse_args()
    import onnxruntime_genai as og  # optional: installed in its own venv

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    variants = args.variants.split(",")
    print(f"onnxruntime-genai {og.__version__}; variants {', '.join(variants)}" + ("; padded batch" if args.padded else ""))
    failed = 0
    for model_type in args.types:
        with tempfile.TemporaryDirectory() as tmp:
            outcomes = check(model_type, pathlib.Path(tmp), variants, args.padded)
        failed += any(o.startswith(("export failed", "DIFFERENT", "genai failed")) for o in outcomes.values())
        print(f"{model_type}: " + "; ".join(f"{v} {o}" for v, o in outcomes.items()), flush=True)
    print(json.dumps({"types": len(args.types), "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
