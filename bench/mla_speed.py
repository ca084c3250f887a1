"""Decode-step latency of a multi-head latent attention decoder (DeepSeek-V2-Lite's shapes):
transformers' computation against onnxport's standard graph and its onnxruntime target, both of
which compute the attention absorbed over the cached latent (``onnxport.hf.mla``), same run.

    HF_HUB_OFFLINE=1 python bench/mla_speed.py [--workdir DIR] [--layers 4] [--pasts 128,1024]

A random-weight DeepSeek-V2-Lite-shaped checkpoint (hidden 2048, 16 heads, kv_lora_rank 512,
qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128, vocab 32000; ``--layers`` layers, the
first dense (intermediate 10944), the others 8 routed experts of 1408 + 2 shared, 6 per token) is
saved with ``save_pretrained`` into ``--workdir`` and exported through the command line:

- ``transformers``: transformers' computation (``DeepseekV2Attention``: the cached latent
  re-expanded through ``kv_b_proj`` at every step), which is what ``torch.onnx.export`` captures:
  the standard export in a child process with ``onnxport.hf.mla.ABSORBABLE`` emptied (onnxport's
  standard graph up to session 41);
- ``standard``: ``onnxport export --hf CKPT -o OUT --no-validate``, the absorbed form over
  transformers' cache (same inputs and outputs as ``transformers``);
- ``onnxruntime``: ``--target onnxruntime --kv-cache shared``, GroupQueryAttention over the
  latent, run as onnxruntime-genai runs it (``llm_speed.SharedBuffer``: 2048-row buffers bound as
  both past and present).

Each decode step (batch 1, one token after ``past`` cached tokens) is timed in one onnxruntime
session per graph (``--threads`` intra-op threads), the graphs alternating, median of
``--repeats``; the first logits of a 16-token prompt are compared with ``transformers``' (max abs
difference). Prints milliseconds and the ratios to ``transformers`` per past length, and the export
seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from llm_speed import SharedBuffer, feeds, session  # noqa: E402  (beside this script)

SHAPE = dict(
    vocab_size=32000, hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408, num_attention_heads=16,
    num_key_value_heads=16, head_dim=64, kv_lora_rank=512, q_lora_rank=None, qk_rope_head_dim=64, qk_nope_head_dim=128,
    v_head_dim=128, n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=6, first_k_dense_replace=1, n_group=1,
    topk_group=1, max_position_embeddings=4096, pad_token_id=0, bos_token_id=1, eos_token_id=2,
)  # fmt: skip
VARIANTS = {"transformers": [], "standard": [], "onnxruntime": ["--target", "onnxruntime", "--kv-cache", "shared"]}
# the onnxport command line with latent attention left as transformers computes it
_UNABSORBED = "import sys; from onnxport.hf import mla; mla.ABSORBABLE.clear(); from onnxport.cli import main; main()"


def checkpoint(folder: Path, layers: int) -> None:
    """The random-weight checkpoint (kept in ``folder`` across runs)."""
    import torch
    import transformers

    if (folder / "config.json").is_file():
        return
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model("deepseek_v2", num_hidden_layers=layers, **SHAPE)
    transformers.AutoModelForCausalLM.from_config(config).eval().save_pretrained(folder)


def export(source: Path, out: Path, extra: list[str]) -> float:
    """Seconds of one ``onnxport export --hf`` (the folder is reused when it exists); the
    ``transformers`` variant without the absorbed form."""
    if (out / "onnx" / "model.onnx").is_file():
        return float("nan")
    start = time.perf_counter()
    cli = ["-c", _UNABSORBED] if out.name == "transformers" else ["-m", "onnxport"]
    command = [sys.executable, *cli, "export", "--hf", str(source), "-o", str(out), "--no-validate", *extra]
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/onnxport_mla_speed"))
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--pasts", default="128,1024")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    checkpoint(args.workdir / "checkpoint", args.layers)
    seconds = {name: export(args.workdir / "checkpoint", args.workdir / name, extra) for name, extra in VARIANTS.items()}
    sessions: dict[str, Any] = {name: session(args.workdir / name / "onnx" / "model.onnx", args.threads) for name in VARIANTS}
    sessions["onnxruntime"] = SharedBuffer(sessions["onnxruntime"])
    head = SHAPE["kv_lora_rank"] + SHAPE["qk_rope_head_dim"]
    prompt = {name: feeds(s, 1, 16, 0, head) for name, s in sessions.items()}
    for name in prompt:
        prompt[name]["input_ids"] = prompt["transformers"]["input_ids"]
    logits = {name: s.run(["logits"], prompt[name])[0] for name, s in sessions.items()}
    report: dict[str, Any] = {"export_seconds": seconds, "first_logits_max_abs_diff": {
        name: float(np.abs(logits[name] - logits["transformers"]).max()) for name in ("standard", "onnxruntime")}}  # fmt: skip
    for past in (int(p) for p in args.pasts.split(",")):
        step = {name: feeds(s, 1, 1, past, head) for name, s in sessions.items()}
        times: dict[str, list[float]] = {name: [] for name in sessions}
        for name, s in sessions.items():
            s.run(["logits"], step[name])  # warm-up (binds the shared buffers)
        for _ in range(args.repeats):
            for name, s in sessions.items():
                time.sleep(0.05)  # onnxruntime's spinning threads settle (llm_speed.SETTLE_SECONDS)
                start = time.perf_counter()
                s.run(["logits"], step[name])
                times[name].append(time.perf_counter() - start)
        ms = {name: 1000 * float(np.median(t)) for name, t in times.items()}
        report[f"decode_past_{past}_ms"] = ms | {
            f"{name}/transformers": ms[name] / ms["transformers"] for name in ("standard", "onnxruntime")}  # fmt: skip
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
