"""Decode-step latency of a grouped-query decoder's standard graph with and without
``RepeatKVPass`` (``onnxport/passes/fusions/repeat_kv.py``), same run.

    HF_HUB_OFFLINE=1 python bench/repeat_kv_speed.py [--workdir DIR] [--layers 4] [--family gemma2]

A random-weight Llama checkpoint with the 0.85B shapes of ``llm_speed.py`` (hidden 2048,
intermediate 5632, 32 query heads over 8 KV heads of 64, vocab 32000; ``--layers`` layers) is
exported twice through the command line (``onnxport export --hf CKPT -o OUT --no-validate``):

- ``without``: the pass disabled in the child process, so every ``Attention`` reads transformers'
  ``repeat_kv`` copies of the cache (``Reshape(Expand(Unsqueeze))``, what ``torch.onnx.export``
  records too);
- ``with``: onnxport's standard graph, the ``Attention`` reading the 8 KV heads (Attention-23's own
  grouping).

``--family gemma2``: a Gemma 2 checkpoint of the same shapes (head_dim 64, its default logit
softcapping), which transformers runs through its eager attention: ``without``, its two MatMuls
read the copies; ``with``, they are grouped products over the 8 KV heads (session 43).

Each decode step (one token after ``past`` cached tokens, batch 1 and 4) is timed in one
onnxruntime session per graph (``--threads`` intra-op threads), the graphs alternating with a pause
before every run, median of ``--repeats``; the logits of both graphs are compared (max abs
difference). Prints milliseconds and the ratio with / without per cell as JSON.
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
from llm_speed import SETTLE_SECONDS, feeds, session  # noqa: E402  (beside this script)

SHAPE = dict(hidden_size=2048, intermediate_size=5632, num_attention_heads=32, num_key_value_heads=8,
             vocab_size=32000, max_position_embeddings=4096)  # fmt: skip
# the onnxport command line with RepeatKVPass doing nothing
_WITHOUT = (
    "import onnx_ir as ir; from onnxport.passes.fusions import repeat_kv; "
    "repeat_kv.RepeatKVPass.call = lambda self, model: ir.passes.PassResult(model, False); "
    "from onnxport.cli import main; main()"
)


def checkpoint(folder: Path, layers: int, family: str) -> None:
    """The random-weight checkpoint (kept in ``folder`` across runs)."""
    import torch
    import transformers

    if (folder / "config.json").is_file():
        return
    torch.manual_seed(0)
    if family == "gemma2":
        config = transformers.Gemma2Config(num_hidden_layers=layers, head_dim=64, **SHAPE)
    else:
        config = transformers.LlamaConfig(num_hidden_layers=layers, **SHAPE)
    transformers.AutoModelForCausalLM.from_config(config).eval().save_pretrained(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/onnxport_repeat_kv_speed"))
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--pasts", default="128,1024")
    parser.add_argument("--batches", default="1,4")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--family", choices=("llama", "gemma2"), default="llama")
    args = parser.parse_args()
    source = args.workdir / "checkpoint"
    checkpoint(source, args.layers, args.family)
    for name, cli in (("without", ["-c", _WITHOUT]), ("with", ["-m", "onnxport"])):
        out = args.workdir / name
        if not (out / "onnx" / "model.onnx").is_file():
            command = [sys.executable, *cli, "export", "--hf", str(source), "-o", str(out), "--no-validate"]
            subprocess.run(command, check=True, capture_output=True)
    sessions = {name: session(args.workdir / name / "onnx" / "model.onnx", args.threads) for name in ("without", "with")}
    report: dict[str, Any] = {}
    head_dim = SHAPE["hidden_size"] // SHAPE["num_attention_heads"]
    for batch in (int(b) for b in args.batches.split(",")):
        for past in (int(p) for p in args.pasts.split(",")):
            step = {name: feeds(s, batch, 1, past, head_dim) for name, s in sessions.items()}
            logits = {name: s.run(["logits"], step[name])[0] for name, s in sessions.items()}
            times: dict[str, list[float]] = {name: [] for name in sessions}
            for _ in range(args.repeats):
                for name, s in sessions.items():
                    time.sleep(SETTLE_SECONDS)
                    start = time.perf_counter()
                    s.run(["logits"], step[name])
                    times[name].append(time.perf_counter() - start)
            ms = {name: 1000 * float(np.median(t)) for name, t in times.items()}
            report[f"batch {batch} past {past}"] = ms | {
                "with/without": ms["with"] / ms["without"],
                "logits_max_abs_diff": float(np.abs(logits["with"] - logits["without"]).max()),
            }
            print(json.dumps({f"batch {batch} past {past}": report[f"batch {batch} past {past}"]}), flush=True)


if __name__ == "__main__":
    main()
