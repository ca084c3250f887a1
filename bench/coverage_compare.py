"""Coverage of real architectures: onnxport vs ``torch.onnx.export(dynamo=True)`` in one run.

Every case of ``onnxport.testing.zoo`` (small configs, random weights, dynamic shapes) is exported
by both exporters, run in onnxruntime at two sizes (the second different in every dynamic dim) and
compared with eager. Each (case, exporter) runs in its own child process (``--one CASE EXPORTER``)
so a crash, a hang (``--timeout``) or one exporter's caches cannot touch the other's figures.

Prints a table (export seconds, main-graph nodes, pass/fail per exporter), the ratios over the cases
both pass, and checks that no case torch.onnx exports and runs is missing from onnxport's passes
(exit status 1 if one is).

Usage::

    HF_HUB_OFFLINE=1 python bench/coverage_compare.py [--cases mamba2,mixtral-moe] [--json PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BENCH = Path(__file__).resolve().parent
EXPORTERS = ("onnxport", "torch.onnx")
MARKER = "COVERAGE_RESULT "


def child(case: str, exporter: str) -> None:
    """Run one case with one exporter and print its :class:`Result` as JSON after ``MARKER``."""
    import warnings

    warnings.simplefilter("ignore")
    from onnxport.testing import zoo

    result = zoo.run(zoo.BY_NAME[case], exporter)
    print(MARKER + json.dumps(dataclasses.asdict(result)), flush=True)


def run_child(case: str, exporter: str, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", case, exporter]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"case": case, "exporter": exporter, "export_seconds": timeout, "nodes": 0, "max_diff": 0.0,
                "error": f"timeout after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return {"case": case, "exporter": exporter, "export_seconds": 0.0, "nodes": 0, "max_diff": 0.0,
            "error": f"child exited with {proc.returncode}: {tail}"}


def table(rows: dict[str, dict[str, dict]], families: dict[str, str]) -> str:
    lines = [
        "| case | family | onnxport s | torch.onnx s | onnxport nodes | torch.onnx nodes | onnxport | torch.onnx |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case, by in rows.items():
        ours, theirs = by["onnxport"], by["torch.onnx"]

        def status(r: dict) -> str:
            return f"pass ({r['max_diff']:.1e})" if r["error"] is None else "FAIL: " + r["error"].replace("|", "/")

        lines.append(
            f"| {case} | {families[case]} | {ours['export_seconds']:.1f} | {theirs['export_seconds']:.1f} | "
            f"{ours['nodes'] or '-'} | {theirs['nodes'] or '-'} | {status(ours)} | {status(theirs)} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", nargs=2, metavar=("CASE", "EXPORTER"), help=argparse.SUPPRESS)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per (case, exporter)")
    parser.add_argument("--json", type=Path, default=BENCH / "results" / "coverage_compare.json")
    ns = parser.parse_args()
    if ns.one:
        child(*ns.one)
        return 0

    from onnxport.testing import zoo

    names = ns.cases.split(",") if ns.cases else [c.name for c in zoo.CASES]
    unknown = [n for n in names if n not in zoo.BY_NAME]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(zoo.BY_NAME)}")
    rows: dict[str, dict[str, dict]] = {}
    for name in names:
        rows[name] = {}
        for exporter in EXPORTERS:
            rows[name][exporter] = r = run_child(name, exporter, ns.timeout)
            print(f"{name:28s} {exporter:10s} {r['export_seconds']:6.1f} s {r['nodes']:6d} nodes  "
                  f"{'pass' if r['error'] is None else 'FAIL ' + r['error'][:150]}", flush=True)
    ns.json.parent.mkdir(parents=True, exist_ok=True)
    ns.json.write_text(json.dumps(rows, indent=1))
    print()
    print(table(rows, {c.name: c.family for c in zoo.CASES}))

    ours = {n for n, by in rows.items() if by["onnxport"]["error"] is None}
    theirs = {n for n, by in rows.items() if by["torch.onnx"]["error"] is None}
    both = sorted(ours & theirs)
    print(f"\ncases: {len(rows)}; onnxport passes {len(ours)}, torch.onnx passes {len(theirs)}, both {len(both)}")
    if both:
        seconds = [rows[n]["torch.onnx"]["export_seconds"] / max(rows[n]["onnxport"]["export_seconds"], 1e-3)
                   for n in both]
        nodes = [rows[n]["torch.onnx"]["nodes"] / max(rows[n]["onnxport"]["nodes"], 1) for n in both]
        print(f"over the {len(both)} both pass: export time torch.onnx/onnxport median {statistics.median(seconds):.2f}x "
              f"(geomean {statistics.geometric_mean(seconds):.2f}x); nodes torch.onnx/onnxport median "
              f"{statistics.median(nodes):.2f}x")
    missing = sorted(theirs - ours)
    if missing:
        print(f"MISSING: torch.onnx exports and runs {missing}, onnxport does not")
        return 1
    print("OK: every case torch.onnx exports and runs, onnxport does too")
    return 0


if __name__ == "__main__":
    sys.exit(main())
