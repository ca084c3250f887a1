"""bfloat16/float16 OpInfo pass rate with and without the half-precision compute pass.

    python bench/half_compute_opinfo.py --dtype bfloat16 --mode on  --out /tmp/hc_bf16_on.json
    python bench/half_compute_opinfo.py --dtype bfloat16 --mode off --out /tmp/hc_bf16_off.json

150 OpInfos evenly spaced over ``oi.iter_cases(None, [dtype])`` (sorted by name), 2 samples each,
``optimize=True``. ``--mode off`` exports with ``half_precision_compute=None``; ``--n 0``: every OpInfo.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import time
import warnings

import torch

import onnxport
from onnxport.testing import opinfo as oi


def chosen(dtype: torch.dtype, n: int) -> list[str]:
    names = [name for name, _ in oi.iter_cases(None, [torch.bfloat16])]
    if n >= len(names):
        return [name for name, _ in oi.iter_cases(names, [dtype])]
    step = len(names) / n
    picked = [names[int(i * step)] for i in range(n)]
    supported = {name for name, _ in oi.iter_cases(picked, [dtype])}
    return [name for name in picked if name in supported]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--mode", choices=["on", "off", "default"], default="default")
    p.add_argument("--n", type=int, default=150)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    dtype = getattr(torch, a.dtype)
    if a.mode != "default":
        onnxport.export = functools.partial(
            onnxport.export, half_precision_compute="float32" if a.mode == "on" else None)
    warnings.simplefilter("ignore")
    rows = []
    start = time.time()
    for name in chosen(dtype, a.n or 10**9):
        info = oi.op_db()[name]
        for i, sample in enumerate(oi.samples(info, dtype, 2)):
            r = oi.run_sample(info, sample, optimize=True)
            rows.append({"name": name, "sample": i, "status": r.status, "detail": r.detail[:300]})
    counts = collections.Counter(r["status"] for r in rows)
    ran = sum(v for k, v in counts.items() if k != "skip")
    rate = counts["pass"] / ran if ran else 0.0
    summary = {"dtype": a.dtype, "mode": a.mode, "samples": ran, "counts": dict(counts),
               "pass_rate": round(100 * rate, 1), "seconds": round(time.time() - start)}
    print(json.dumps(summary))
    with open(a.out, "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
