"""Every transformers causal-LM type through the onnxruntime target and onnxruntime-genai (issue 16).

For each model type of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` (or ``--types``): the
type's default config shrunk to 2 layers of width 64 (:data:`SIZES`, applied to the keys the config
has, ``*layer_types`` lists cut to 2; a heuristic: some configs refuse it, which the row says),
random weights (parameters a model initializes to zero, such as Afmoe's router, re-drawn: a zero
router ties every expert, and torch.topk and onnxruntime's TopK break ties differently), saved with
``save_pretrained`` and exported from that folder with ``onnxport.hf.export(folder,
target="onnxruntime", kv_cache="shared")`` (the command line's streamed path, validated against
eager). Then onnxruntime-genai loads the folder as written and generates 20 greedy tokens for a
right-padded batch of two prompts, compared with transformers' ``generate`` on each prompt
(``tests/_generation.assert_genai_equals_transformers``). ``--int4`` exports with
``quantize="int4"`` and only checks that genai generates (int4 tokens differ from float ones).

Each type runs in a child process (``--timeout`` seconds; a crash or a timeout is a row too).
Rows: ``equal`` (tokens equal transformers'), ``ran`` (``--int4``), ``DIFF``, ``no genai_config``
(exported, e.g. a hybrid layer genai cannot feed), or the error: onnxport's own refusal (``HFError``
naming why: no KV cache to share, an attention the kernel cannot express) or the shrunken config's
failure in transformers (a sweep artefact, not an exporter failure).

Usage::

    HF_HUB_OFFLINE=1 python bench/ort_sweep.py [--types llama,mixtral] [--int4] [--json PATH]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
TESTS = Path(__file__).resolve().parent.parent / "tests"
SIZES = dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
    head_dim=16, max_position_embeddings=256, vocab_size=128, moe_intermediate_size=32,
    shared_expert_intermediate_size=64, num_experts=4, num_local_experts=4, n_routed_experts=4,
    num_experts_per_tok=2, n_embd=64, n_layer=2, n_head=4, n_inner=128, ffn_hidden_size=128, d_model=64,
    num_layers=2, n_positions=256, kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8,
    v_head_dim=16, first_k_dense_replace=1, n_group=1, topk_group=1, linear_num_key_heads=2,
    linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16, initializer_range=0.2,
)  # fmt: skip
FUSED = ("GroupQueryAttention", "SkipSimplifiedLayerNormalization", "SkipLayerNormalization", "FastGelu", "MoE",
         "QMoE", "LinearAttention", "CausalConvWithState", "MatMulNBits", "GatherBlockQuantized")  # fmt: skip
MAX_PARAMETERS = 30e6


def _shrunk(config: Any) -> dict[str, Any]:
    """Keyword arguments that shrink ``config``: :data:`SIZES` where it has the key, ``*layer_types`` cut to 2."""
    values = config.to_dict()
    kwargs = {k: v for k, v in SIZES.items() if values.get(k) is not None and not isinstance(values[k], (list, dict))}
    for key, value in values.items():
        if (key.endswith("layer_types") or key == "layers_block_type") and isinstance(value, list):
            kwargs[key] = value[:2]
    return kwargs


def build(model_type: str) -> Any:
    """The tiny random-weight causal LM of ``model_type`` (eval mode)."""
    import torch
    import transformers
    from transformers.models.auto import modeling_auto

    base = transformers.CONFIG_MAPPING[model_type]()
    kwargs = _shrunk(base)
    text = getattr(base, "text_config", None)
    if text is not None and hasattr(text, "to_dict"):
        kwargs["text_config"] = {**text.to_dict(), **_shrunk(text)}
    config = transformers.CONFIG_MAPPING[model_type](**kwargs)
    for key, value in (("pad_token_id", 0), ("bos_token_id", 1), ("eos_token_id", 2)):
        if hasattr(config, key):
            setattr(config, key, value)
    torch.manual_seed(0)
    model = getattr(transformers, modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])(config).eval()
    if sum(p.numel() for p in model.parameters()) > MAX_PARAMETERS:
        raise RuntimeError(f"the shrunken config still has over {MAX_PARAMETERS:.0e} parameters")
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.ndim >= 2 and parameter.is_floating_point() and not parameter.any():
                torch.nn.init.normal_(parameter, std=0.2)
    return model


def child(model_type: str, int4: bool, out: Path) -> None:
    """Build, save, export and generate ``model_type``; write its row to ``out``."""
    row: dict[str, Any] = {"type": model_type, "stage": "build"}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"ort-sweep-{model_type}-") as tmp:
        try:
            import onnx
            import onnxruntime_genai as og

            import onnxport.hf

            sys.path.insert(0, str(TESTS))
            from _generation import PADDED_PROMPTS, assert_genai_equals_transformers, genai_greedy

            model = build(model_type)
            model.save_pretrained(Path(tmp) / "ckpt")
            row["stage"] = "export"
            options = {"quantize": "int4"} if int4 else {}
            folder = Path(tmp) / "out"
            onnxport.hf.export(Path(tmp) / "ckpt", output_dir=folder, target="onnxruntime", kv_cache="shared", **options)
            graph = onnx.load(str(folder / "onnx" / "model.onnx"), load_external_data=False).graph
            ops = collections.Counter(n.op_type for n in graph.node)
            row.update(nodes=len(graph.node), fused={k: ops[k] for k in FUSED if ops[k]})
            row["stage"] = "generate"
            if not (folder / "genai_config.json").exists():
                row["result"] = "no genai_config"
            elif int4:
                row["result"] = f"ran {genai_greedy(og, folder, PADDED_PROMPTS)[0][:6]}"
            else:
                try:
                    assert_genai_equals_transformers(og, model, folder, padded=True)
                    row["result"] = "equal"
                except AssertionError as e:
                    row["result"] = f"DIFF {str(e)[:300]}"
            row["stage"] = "done"
        except Exception as e:  # a row per type: the benchmark reports, it does not stop
            row["result"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            row["traceback"] = traceback.format_exc()[-1500:]
    row["seconds"] = round(time.perf_counter() - start, 1)
    out.write_text(json.dumps(row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", help="comma list of model types (default: every causal-LM type)")
    parser.add_argument("--int4", action="store_true", help="quantize='int4'; check that genai generates")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per type")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--child", nargs=2, metavar=("TYPE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.int4, Path(args.child[1]))
        return
    from transformers.models.auto import modeling_auto

    types = args.types.split(",") if args.types else sorted(modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model_type in types:
            out = Path(tmp) / f"{model_type}.json"
            command = [sys.executable, __file__, "--child", model_type, str(out)] + (["--int4"] if args.int4 else [])
            try:
                subprocess.run(command, timeout=args.timeout, capture_output=True, check=False)
                row = json.loads(out.read_text()) if out.exists() else {"type": model_type, "result": "crashed"}
            except subprocess.TimeoutExpired:
                row = {"type": model_type, "result": f"timeout ({args.timeout:.0f} s)"}
            rows.append(row)
            print(f"{model_type:28} {row.get('result', '')[:140]} {row.get('fused', '')} {row.get('seconds', '')}", flush=True)
    counts = collections.Counter(r.get("result", "").split(" ")[0].rstrip(":") for r in rows)
    print("\n" + ", ".join(f"{k}: {v}" for k, v in counts.most_common()))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
