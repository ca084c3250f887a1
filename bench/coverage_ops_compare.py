"""onnxport vs torch.onnx.export(dynamo=True) on issue 14's hand-written coverage cases
(``onnxport.testing.coverage_cases``: recurrent nets, attention masks, dynamic-resolution resize).

    python bench/coverage_ops_compare.py [--only rnn/ sdpa/ ...] [--json out.json]

Each case is exported by both exporters with the case's ``dynamic_shapes``, run in onnxruntime at
the two input sizes and compared with eager by the same check (``coverage_cases.compare``). Prints
per case: passed or the first line of the failure, export seconds, and the onnxport / torch.onnx
export-time ratio; then the totals. Part B's ``bench/coverage_compare.py`` can import ``CASES``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
import warnings
from pathlib import Path
from typing import Any

import torch

import onnxport
from onnxport.testing.coverage_cases import CASES, TF_SAME_PAD, Case, compare


def _quiet() -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import onnxruntime as ort

    ort.set_default_logger_severity(4)


def _torch_onnx(model: torch.nn.Module, case: Case) -> Any:
    program = torch.onnx.export(model, case.inputs(0), dynamic_shapes=case.dynamic_shapes, dynamo=True,
                                verbose=False)
    assert program is not None

    def run(*args: Any) -> list[torch.Tensor]:
        return [torch.as_tensor(o) for o in program(*args)]

    return run


def _onnxport(model: torch.nn.Module, case: Case) -> Any:
    program = onnxport.export(model, case.inputs(0), dynamic_shapes=case.dynamic_shapes)
    return lambda *args: program(*args)


def run_one(case: Case, exporter: str) -> dict[str, Any]:
    """Export ``case`` with ``exporter``, run both sizes, compare; never raises."""
    model = case.build()
    start = time.perf_counter()
    try:
        run = (_onnxport if exporter == "onnxport" else _torch_onnx)(model, case)
    except Exception as e:  # a failed export is a result
        return {"passed": False, "stage": "export", "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160]}"}
    seconds = time.perf_counter() - start
    for size in (0, 1):
        args = case.inputs(size)
        try:
            with torch.no_grad():
                expected = [t for t in torch.utils._pytree.tree_leaves(model(*args)) if isinstance(t, torch.Tensor)]
            compare(f"size {size}", run(*args), expected, case.atol)
        except Exception as e:  # onnxruntime refusal or mismatch
            return {"passed": False, "stage": f"size {size}", "seconds": seconds,
                    "error": f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160]}"}
    return {"passed": True, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="case name prefixes")
    parser.add_argument("--json", default="bench/results/coverage_ops_compare.json")
    ns = parser.parse_args()
    _quiet()
    cases = [c for c in [*CASES, TF_SAME_PAD] if not ns.only or any(c.name.startswith(p) for p in ns.only)]
    results: dict[str, dict[str, Any]] = {}
    for case in cases:
        row = {ex: run_one(case, ex) for ex in ("onnxport", "torch.onnx")}
        results[case.name] = row
        a, b = row["onnxport"], row["torch.onnx"]
        ratio = f"{a['seconds'] / b['seconds']:.2f}" if "seconds" in a and "seconds" in b else "-"
        def cell(r: dict[str, Any]) -> str:
            return "pass" if r["passed"] else f"FAIL ({r['stage']}: {r['error']})"
        print(f"{case.name:60s} onnxport {cell(a)} | torch.onnx {cell(b)} | export time ratio {ratio}", flush=True)
    for ex in ("onnxport", "torch.onnx"):
        print(f"{ex}: {sum(r[ex]['passed'] for r in results.values())}/{len(results)} cases pass at two sizes")
    only_torch = [n for n, r in results.items() if r["torch.onnx"]["passed"] and not r["onnxport"]["passed"]]
    print("torch.onnx passes, onnxport does not:", only_torch or "none")
    out = Path(ns.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
