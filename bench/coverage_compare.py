"""Coverage of real architectures: onnxport vs ``torch.onnx.export(dynamo=True)`` in one run.

Every case of ``onnxport.testing.zoo`` (small configs, random weights, dynamic shapes) is exported
by both exporters, run in onnxruntime at two sizes (the second different in every dynamic dim) and
compared with eager. Each exporter runs the cases in its own child process (``--child``), the two
children at the same time (so both see the same machine load; the seconds are comparable with each
other, not with a quiet machine); a case that crashes its child or runs past ``--timeout`` is
recorded as failed and a fresh child goes on with the next one. Neither exporter shares the
other's imports or caches.

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
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BENCH = Path(__file__).resolve().parent
EXPORTERS = ("onnxport", "torch.onnx")
MARKER = "COVERAGE_RESULT "
STARTED = "COVERAGE_STARTED "


def child(exporter: str, cases: list[str]) -> None:
    """Run ``cases`` in order with one exporter; print each :class:`Result` as JSON after ``MARKER``."""
    import warnings

    warnings.simplefilter("ignore")
    from onnxport.testing import zoo

    for case in cases:
        print(f"{STARTED}{case}", flush=True)
        result = zoo.run(zoo.BY_NAME[case], exporter)
        print(MARKER + json.dumps(dataclasses.asdict(result)), flush=True)


def _failed(case: str, exporter: str, error: str, seconds: float = 0.0) -> dict:
    return {"case": case, "exporter": exporter, "export_seconds": seconds, "nodes": 0, "max_diff": 0.0,
            "error": error}


def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line)
    lines.put(None)


def run_exporter(
    exporter: str, cases: list[str], timeout: float, out: dict[str, dict[str, dict]], on_result: Callable[[], None]
) -> None:
    """One child process runs the cases in order; a case that crashes the child or runs past
    ``timeout`` is recorded as failed and a new child takes the rest."""
    remaining = list(cases)
    while remaining:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", exporter, ",".join(remaining)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()
        current, started = None, time.perf_counter()
        while True:
            try:
                line = lines.get(timeout=max(1.0, timeout - (time.perf_counter() - started)))
            except queue.Empty:
                proc.kill()
                line = None
                if current is not None:
                    out[current][exporter] = _failed(current, exporter, f"timeout after {timeout:.0f} s", timeout)
                    remaining.remove(current)
                    on_result()
                break
            if line is None:  # the child exited
                proc.wait()
                if current is not None:
                    out[current][exporter] = _failed(current, exporter, f"child exited with {proc.returncode}")
                    remaining.remove(current)
                    on_result()
                break
            if line.startswith(STARTED):
                current, started = line[len(STARTED):].strip(), time.perf_counter()
            elif line.startswith(MARKER):
                r = json.loads(line[len(MARKER):])
                out[r["case"]][exporter] = r
                on_result()
                remaining.remove(r["case"])
                current = None
                print(f"{r['case']:28s} {exporter:10s} {r['export_seconds']:6.1f} s {r['nodes']:6d} nodes  "
                      f"{'pass' if r['error'] is None else 'FAIL ' + r['error'][:150]}", flush=True)


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
    parser.add_argument("--child", nargs=2, metavar=("EXPORTER", "CASES"), help=argparse.SUPPRESS)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per (case, exporter)")
    parser.add_argument("--json", type=Path, default=BENCH / "results" / "coverage_compare.json")
    parser.add_argument("--exporters", type=lambda v: v.split(","), default=list(EXPORTERS),
                        help="comma-separated subset of onnxport,torch.onnx")
    parser.add_argument("--merge", action="store_true",
                        help="update the rows of --json for these cases, keep the others (table and check: all rows)")
    ns = parser.parse_args()
    if ns.child:
        child(ns.child[0], ns.child[1].split(","))
        return 0

    from onnxport.testing import zoo

    names = ns.cases.split(",") if ns.cases else [c.name for c in zoo.CASES]
    unknown = [n for n in names if n not in zoo.BY_NAME]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(zoo.BY_NAME)}")
    if not ns.cases:  # round-robin over the families: a partial run still spans all of them
        by_family: dict[str, list[str]] = {}
        for c in zoo.CASES:
            by_family.setdefault(c.family, []).append(c.name)
        columns = list(by_family.values())
        names = [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)]
    rows: dict[str, dict[str, dict]] = {n: {} for n in names}
    previous = json.loads(ns.json.read_text()) if ns.merge and ns.json.exists() else {}
    lock = threading.Lock()
    order = [c.name for c in zoo.CASES]

    def save() -> dict[str, dict[str, dict]]:
        """Write the rows done so far (merged into the previous file with --merge), in list order."""
        with lock:
            merged = {**previous, **{n: {**previous.get(n, {}), **by} for n, by in rows.items() if by}}
            done = {n: merged[n] for n in order if n in merged}
            ns.json.parent.mkdir(parents=True, exist_ok=True)
            ns.json.write_text(json.dumps(done, indent=1))
            return done

    workers = [threading.Thread(target=run_exporter, args=(e, names, ns.timeout, rows, save)) for e in ns.exporters]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    rows = save()
    for by in rows.values():
        for exporter in EXPORTERS:
            by.setdefault(exporter, _failed("", exporter, "not run"))
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
