"""Localization cost: ``verify(localize=True)`` vs one plain ``verify`` on a 6-layer GPT-2.

Usage::

    HF_HUB_OFFLINE=1 python bench/localize.py                    # both configs, 3 repeats
    HF_HUB_OFFLINE=1 python bench/localize.py --configs small --repeat 5 --json /tmp/loc.json

Configs (random weights, ``use_cache=False``, input_ids + attention_mask, dynamic batch/sequence):

- ``small``: GPT-2 small's dims (n_embd 768, 12 heads, vocab 50257, 1024 positions), 6 layers.
- ``tiny``: the test suite's config (n_embd 32, 4 heads, vocab 100), 6 layers.

Both calls do the same work around the comparison (one serialization, the full ONNX checker, one
onnxruntime session, the example inputs and the generated second input set); localization adds
every FX node's value as a graph output and runs the graph module under ``torch.fx.Interpreter``.
Each timing is the median of ``--repeat`` runs after one warm-up run of each; the figure printed
is ``localize / plain``, which the issue requires to be below 3.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CONFIGS: dict[str, dict[str, Any]] = {
    "small": {"n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024},
    "tiny": {"n_embd": 32, "n_head": 4, "vocab_size": 100, "n_positions": 64},
}
BATCH, SEQUENCE = 2, 32


def build(name: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor], dict[str, Any]]:
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=6, use_cache=False, bos_token_id=0, eos_token_id=0, **CONFIGS[name])
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQUENCE), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(BATCH, SEQUENCE, dtype=torch.int64)
    mask[0, -3:] = 0
    dynamic = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
               "use_cache": None}
    return model, {"input_ids": ids, "attention_mask": mask, "use_cache": False}, dynamic


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run(name: str, repeat: int) -> dict[str, Any]:
    import onnxport

    model, kwargs, dynamic = build(name)
    export_seconds, program = timed(lambda: onnxport.export(model, (), kwargs, dynamic_shapes=dynamic))
    plain = lambda: onnxport.verify(program, (), kwargs)  # noqa: E731
    localize = lambda: onnxport.verify(program, (), kwargs, localize=True)  # noqa: E731
    plain()
    localize()  # warm-up: first-call costs (imports, allocator) out of both
    plain_times, localize_times = [], []
    for _ in range(repeat):  # interleaved, so machine load hits both alike
        seconds, plain_result = timed(plain)
        plain_times.append(seconds)
        seconds, localize_result = timed(localize)
        localize_times.append(seconds)
    loc = localize_result.localization
    row = {
        "config": name,
        "parameters": sum(p.numel() for p in model.parameters()),
        "export_seconds": round(export_seconds, 3),
        "plain_seconds": round(statistics.median(plain_times), 3),
        "localize_seconds": round(statistics.median(localize_times), 3),
        "plain_all": [round(t, 3) for t in plain_times],
        "localize_all": [round(t, 3) for t in localize_times],
        "ratio": round(statistics.median(localize_times) / statistics.median(plain_times), 2),
        "nodes_compared": loc.compared,
        "nodes_without_counterpart": loc.skipped,
        "diverging": len(loc.diverging),
        "plain_passed": plain_result.passed,
        "max_abs_diff": plain_result.max_abs_diff,
        "sessions_per_call": localize_result.sessions,
    }
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default="small,tiny", help="comma-separated: small, tiny")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "localize.json"))
    args = parser.parse_args(argv)
    rows = []
    for name in args.configs.split(","):
        row = run(name.strip(), args.repeat)
        rows.append(row)
        print(
            f"gpt2-6L {row['config']:5s} ({row['parameters'] / 1e6:.1f} M params): plain verify "
            f"{row['plain_seconds']:.3f} s, verify(localize=True) {row['localize_seconds']:.3f} s "
            f"-> {row['ratio']:.2f}x ({row['nodes_compared']} FX values compared in "
            f"{row['sessions_per_call']} session; max abs diff {row['max_abs_diff']:.2g})",
            flush=True,
        )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    worst = max(r["ratio"] for r in rows)
    print(f"worst ratio {worst:.2f}x (required < 3x); results in {args.json}")
    return 0 if worst < 3 else 1


if __name__ == "__main__":
    sys.exit(main())
