"""onnxport vs torch.onnx.export(dynamo=True) on the same float32 OpInfo samples.

    python bench/opinfo_compare.py [--samples 3] [--jobs 2] [--ops add mul ...] [--json out.json]

Each OpInfo of ``op_db`` that supports float32 contributes up to ``--samples`` samples; each
sample is exported by both exporters (default opset, optimization on), run in onnxruntime and
compared with eager by the same check (``onnxport.testing.opinfo.compare_outputs``). Prints the
samples passing / attempted per exporter, the ops where one exporter passes more samples than the
other, and writes the per-op counts to ``bench/results/opinfo_compare.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch

EXPORTERS = ("onnxport", "torch.onnx")


def _quiet() -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    try:
        import onnxruntime as ort

        ort.set_default_logger_severity(4)
    except Exception:  # onnxruntime without the setter: its errors only go to stderr
        pass


def _cache_torchlib_registry() -> None:
    """torch.onnx.export rebuilds its torchlib registry on every call (~3 s of a ~4 s export of one
    op); build it once per process and reuse it. No result changes: without a custom translation
    table the registry is never modified after it is built."""
    import functools

    from torch.onnx._internal.exporter import _registration

    original = _registration.ONNXRegistry.from_torchlib.__func__

    @functools.cache
    def cached(opset_version: int) -> Any:
        return original(_registration.ONNXRegistry, opset_version)

    def from_torchlib(cls: Any, opset_version: int = 18) -> Any:
        return cached(opset_version)

    if not getattr(_registration.ONNXRegistry, "_onnxport_bench_cached", False):
        _registration.ONNXRegistry.from_torchlib = classmethod(from_torchlib)  # type: ignore[method-assign]
        _registration.ONNXRegistry._onnxport_bench_cached = True  # type: ignore[attr-defined]


def run_op(args: tuple[str, int]) -> tuple[str, dict[str, list[str]]]:
    """Statuses per exporter for the first ``limit`` float32 samples of one OpInfo."""
    _quiet()
    from onnxport.testing import opinfo as oi

    _cache_torchlib_registry()
    name, limit = args
    info = oi.op_db()[name]
    out: dict[str, list[str]] = {e: [] for e in EXPORTERS}
    try:
        samples = oi.samples(info, torch.float32, limit)
    except Exception:  # no float32 CPU samples
        return name, out
    for sample in samples:
        results = {e: oi.run_sample(info, sample, exporter=e) for e in EXPORTERS}
        if any(r.status == "skip" for r in results.values()):
            continue
        for e, r in results.items():
            out[e].append(r.status)
    return name, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ops", nargs="*", default=None)
    parser.add_argument("--json", default=str(Path(__file__).parent / "results" / "opinfo_compare.json"))
    args = parser.parse_args()
    _quiet()
    from onnxport.testing import opinfo as oi

    names = args.ops or [n for n, d in oi.iter_cases(None, [torch.float32])]
    start = time.perf_counter()
    per_op: dict[str, dict[str, list[str]]] = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for i, (name, out) in enumerate(pool.map(run_op, [(n, args.samples) for n in names], chunksize=2)):
            per_op[name] = out
            if (i + 1) % 100 == 0:
                print(f"  {i + 1}/{len(names)} ops, {time.perf_counter() - start:.0f} s", flush=True)
    seconds = time.perf_counter() - start
    report = summarize(per_op)
    report["seconds"] = round(seconds, 1)
    report["torch"] = torch.__version__
    print_report(report)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({**report, "per_op": per_op}, indent=1) + "\n")


def summarize(per_op: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    totals = {e: [0, 0] for e in EXPORTERS}
    ops_passing = {e: 0 for e in EXPORTERS}
    differ = []
    only_torch = []
    for name, out in sorted(per_op.items()):
        passed = {}
        for e in EXPORTERS:
            p = sum(s == "pass" for s in out[e])
            passed[e] = p
            totals[e][0] += p
            totals[e][1] += len(out[e])
            ops_passing[e] += bool(out[e]) and p == len(out[e])
        if passed["onnxport"] != passed["torch.onnx"]:
            differ.append((name, passed["onnxport"], passed["torch.onnx"], len(out["onnxport"])))
        if out["torch.onnx"] and passed["torch.onnx"] == len(out["torch.onnx"]) and passed["onnxport"] < passed["torch.onnx"]:
            only_torch.append(name)
    return {
        "samples": {e: {"passed": p, "attempted": t, "rate": round(100 * p / t, 2) if t else 0.0}
                    for e, (p, t) in totals.items()},
        "ops_all_samples_passing": ops_passing,
        "differ": differ,
        "torch_onnx_passes_onnxport_not": only_torch,
    }


def print_report(report: dict[str, Any]) -> None:
    print(f"\nfloat32 OpInfo samples ({report['seconds']} s, torch {report['torch']}):")
    for e, s in report["samples"].items():
        print(f"  {e:11s} {s['passed']:5d} / {s['attempted']:5d} passing ({s['rate']:.1f}%), "
              f"{report['ops_all_samples_passing'][e]} ops with every sample passing")
    gap = report["samples"]["onnxport"]["rate"] - report["samples"]["torch.onnx"]["rate"]
    print(f"  difference: {gap:+.1f} percentage points")
    print("\nOps where the exporters differ (samples passing: onnxport vs torch.onnx, of n):")
    for name, a, b, n in report["differ"]:
        mark = "<" if a < b else ">"
        print(f"  {name:45s} {a} {mark} {b}  (n={n})")
    print(f"\nOps torch.onnx passes fully and onnxport does not: {report['torch_onnx_passes_onnxport_not'] or 'none'}")


if __name__ == "__main__":
    main()
