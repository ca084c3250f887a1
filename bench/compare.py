"""Compare onnxport with ``torch.onnx.export(dynamo=True)``: export time, peak memory, node count.

Every (model, exporter) pair runs in a fresh child process (``--one MODEL EXPORTER``) so neither
exporter profits from the other's imports and caches. A child imports everything and builds the
model, then measures a ``cold`` export (the first in the process: registry and decomposition tables
are built here) and ``--repeat`` ``warm`` exports (median time). The onnxport child also times
``torch.export.export`` alone (warm). Both ONNX models are run in onnxruntime on the example
inputs and compared with eager.

Usage::

    HF_HUB_OFFLINE=1 python bench/compare.py [--models bert,mlp] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BENCH = Path(__file__).resolve().parent
EXPORTERS = ("onnxport", "torch.onnx")
MARKER = "BENCH_RESULT "
MB = 1024 * 1024
MIN_MB = 1.0  # memory ratios divide by at least this, so sub-MB deltas do not explode


# -- child: measurement -------------------------------------------------------------------------
class PeakRSS:
    """Samples this process's RSS every ``interval`` seconds in a background thread."""

    def __init__(self, interval: float = 0.005) -> None:
        import psutil

        self._proc = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self.before = self.peak = self._proc.memory_info().rss
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            self._stop.wait(self._interval)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)

    @property
    def delta_mb(self) -> float:
        """Peak RSS during the block minus RSS before it, in MB."""
        return (self.peak - self.before) / MB


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@contextmanager
def measured(record: dict[str, Any]) -> Iterator[None]:
    """Fill ``record`` with seconds, peak RSS delta and ru_maxrss for the block."""
    gc.collect()
    maxrss_before = _maxrss_mb()
    with PeakRSS() as rss:
        start = time.perf_counter()
        yield
        record["seconds"] = time.perf_counter() - start
    record["peak_delta_mb"] = rss.delta_mb
    record["rss_before_mb"] = rss.before / MB
    record["maxrss_mb"] = _maxrss_mb()
    record["maxrss_growth_mb"] = record["maxrss_mb"] - maxrss_before


def _exporter(
    name: str, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dyn: Any
) -> Callable[[], Any]:
    if name == "onnxport":
        import onnxport

        return lambda: onnxport.export(model, args, kwargs, dynamic_shapes=dyn)
    import importlib

    import onnxscript  # noqa: F401  torch.onnx imports it lazily; import before measuring
    import torch

    importlib.import_module("torch.onnx._internal.exporter._compat")
    return lambda: torch.onnx.export(
        model, args, kwargs=kwargs, dynamic_shapes=dyn, dynamo=True, verbose=False
    )


def _first_line(e: BaseException) -> str:
    """``Type: first line``; a first line ending in ':' keeps the line it introduces."""
    lines = [line.strip() for line in str(e).strip().splitlines()]
    text = lines[0] if lines else ""
    if text.endswith(":") and len(lines) > 1:
        text = f"{text} {lines[1]}"
    return f"{type(e).__name__}: {text}"


def count_nodes(model: Any) -> int:
    """Nodes of an ``onnx_ir.Model``: the main graph, its subgraphs and its functions."""
    import onnx_ir as ir

    n = sum(1 for _ in ir.traversal.RecursiveGraphIterator(model.graph))
    return n + sum(
        sum(1 for _ in ir.traversal.RecursiveGraphIterator(f)) for f in model.functions.values()
    )


def max_abs_diff(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], expected: Any) -> float:
    """Run an ``onnx_ir.Model`` in onnxruntime and return the max |ONNX - eager| over all outputs.

    Raises:
        ValueError: The inputs or outputs do not match the example's / eager's in number or shape.
    """
    import numpy as np
    import onnx_ir as ir
    import onnxruntime as ort
    import torch

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        ir.serde.serialize_model(model).SerializeToString(),
        options,
        providers=["CPUExecutionProvider"],
    )
    names = [i.name for i in session.get_inputs()]
    named = {k: v for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    if not any(isinstance(a, torch.Tensor) for a in args) and set(names) == set(named):
        feeds = {n: named[n].numpy() for n in names}
    else:
        leaves = [
            t
            for t in torch.utils._pytree.tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor)
        ]
        if len(leaves) != len(names):
            raise ValueError(f"{len(names)} ONNX inputs {names} vs {len(leaves)} example tensors")
        feeds = {n: t.numpy() for n, t in zip(names, leaves, strict=True)}
    got = session.run(None, feeds)
    want = [t for t in torch.utils._pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
    if len(got) != len(want):
        raise ValueError(f"{len(got)} ONNX outputs vs {len(want)} eager outputs")
    diff = 0.0
    for g, w in zip(got, want, strict=True):
        if tuple(g.shape) != tuple(w.shape):
            raise ValueError(f"output shape {tuple(g.shape)} vs eager {tuple(w.shape)}")
        diff = max(
            diff,
            float(np.max(np.abs(g.astype(np.float64) - w.numpy().astype(np.float64)), initial=0.0)),
        )
    return diff


def _steps(program: Any) -> dict[str, float] | None:
    """onnxport's per-step seconds (``ONNXProgram.status.steps``); None for torch.onnx."""
    status = getattr(program, "status", None)
    steps = getattr(status, "steps", None)
    return {s.name: s.seconds for s in steps} if steps else None


def _torch_export_seconds(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dyn: Any, repeat: int) -> float:
    """``torch.export.export(..., strict=False)`` alone: one warm-up, then the median of ``repeat``."""
    import torch

    torch.export.export(model, args, kwargs, dynamic_shapes=dyn, strict=False)
    times = []
    for _ in range(repeat):
        rec: dict[str, Any] = {}
        with measured(rec):
            torch.export.export(model, args, kwargs, dynamic_shapes=dyn, strict=False)
        times.append(rec["seconds"])
    return statistics.median(times)


def run_one(model_name: str, exporter: str, repeat: int) -> dict[str, Any]:
    """Measure one exporter on one model in this process (the ``--one`` child)."""
    import torch

    from models import FACTORIES, to_dim_dynamic

    model, args, kwargs, dyn = FACTORIES[model_name]()
    with torch.no_grad():
        expected = model(*args, **kwargs)
    export = _exporter(exporter, model, args, kwargs, dyn)
    result: dict[str, Any] = {"model": model_name, "exporter": exporter, "cold": {}, "warm": []}
    try:
        with measured(result["cold"]):
            program = export()
        result["cold_steps"] = _steps(program)
        for _ in range(repeat):
            result["warm"].append({})
            with measured(result["warm"][-1]):
                program = export()
    except Exception as e:  # recorded and reported, the benchmark goes on with the next pair
        result["error"] = _first_line(e)
        return result
    result["warm_seconds"] = statistics.median(w["seconds"] for w in result["warm"])
    result["warm_peak_delta_mb"] = max(w["peak_delta_mb"] for w in result["warm"])
    result["nodes"] = count_nodes(program.model)
    result["steps"] = _steps(program)
    if exporter == "onnxport":
        try:
            result["torch_export_seconds"] = _torch_export_seconds(model, args, kwargs, to_dim_dynamic(dyn), repeat)
        except Exception as e:  # torch.export alone may refuse what onnxport's capture handles (FlexAttention)
            result["torch_export_error"] = _first_line(e)
    try:
        result["max_abs_diff"] = max_abs_diff(program.model, args, kwargs, expected)
    except Exception as e:  # a verification failure is a result, not a crash
        result["verify_error"] = _first_line(e)
    return result


# -- parent: orchestration and reporting --------------------------------------------------------
def spawn(model_name: str, exporter: str, repeat: int, timeout: float = 900.0) -> dict[str, Any]:
    """Run ``--one MODEL EXPORTER`` in a fresh interpreter and parse its result line."""
    cmd = [
        sys.executable,
        str(BENCH / "compare.py"),
        "--one",
        model_name,
        exporter,
        "--repeat",
        str(repeat),
    ]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=os.environ.copy()
        )
    except subprocess.TimeoutExpired:
        return {
            "model": model_name,
            "exporter": exporter,
            "error": f"timed out after {timeout:.0f} s",
        }
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER) :])
    tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {
        "model": model_name,
        "exporter": exporter,
        "error": f"child exited {proc.returncode}: {tail}",
    }


def _ratio(a: float | None, b: float | None, floor: float = 0.0) -> float | None:
    if a is None or b is None:
        return None
    return max(a, floor) / max(b, floor) if max(b, floor) > 0 else None


def summarize(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """One model's row: both results and the onnxport/torch.onnx and onnxport/torch.export ratios."""
    ow, tw = ours.get("warm_seconds"), theirs.get("warm_seconds")
    om, tm = ours.get("cold", {}).get("peak_delta_mb"), theirs.get("cold", {}).get("peak_delta_mb")
    return {
        "model": ours["model"],
        "onnxport": ours,
        "torch.onnx": theirs,
        "time_ratio": _ratio(ow, tw),
        "cold_time_ratio": _ratio(
            ours.get("cold", {}).get("seconds"), theirs.get("cold", {}).get("seconds")
        ),
        "memory_ratio": _ratio(om, tm, MIN_MB),
        "torch_export_ratio": _ratio(ow, ours.get("torch_export_seconds")),
    }


def _fmt(x: Any, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _diff(r: dict[str, Any]) -> str:
    if "error" in r:
        return "FAILED"
    return (
        f"verify failed: {r['verify_error']}"
        if "verify_error" in r
        else _fmt(r.get("max_abs_diff"), ".1e")
    )


def print_table(rows: list[dict[str, Any]]) -> None:
    """Print the per-model table, the errors, and a summary line with the worst ratios."""
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title="onnxport vs torch.onnx (dynamo=True): warm = median of repeats, memory = cold peak RSS delta"
    )
    for col in (
        "model",
        "ours s",
        "t.onnx s",
        "ratio",
        "cold ours/t.onnx s",
        "t.export s",
        "ours/t.export",
        "ours MB",
        "t.onnx MB",
        "MB ratio",
        "nodes ours/t.onnx",
        "max|Δ| ours",
        "max|Δ| t.onnx",
    ):
        table.add_column(col, justify="left" if col == "model" else "right")
    for row in rows:
        o, t = row["onnxport"], row["torch.onnx"]
        cold = f"{_fmt(o.get('cold', {}).get('seconds'), '.2f')}/{_fmt(t.get('cold', {}).get('seconds'), '.2f')}"
        table.add_row(
            row["model"],
            _fmt(o.get("warm_seconds")),
            _fmt(t.get("warm_seconds")),
            _fmt(row["time_ratio"], ".2f"),
            cold,
            _fmt(o.get("torch_export_seconds")),
            _fmt(row["torch_export_ratio"], ".2f"),
            _fmt(o.get("cold", {}).get("peak_delta_mb"), ".1f"),
            _fmt(t.get("cold", {}).get("peak_delta_mb"), ".1f"),
            _fmt(row["memory_ratio"], ".2f"),
            f"{_fmt(o.get('nodes'), 'd')}/{_fmt(t.get('nodes'), 'd')}",
            _diff(o),
            _diff(t),
        )
    console = Console(width=200)
    console.print(table)
    for row in rows:
        for name in EXPORTERS:
            r = row[name]
            if "error" in r:
                console.print(
                    f"[red]{row['model']} / {name} failed:[/red] {r['error']}", markup=True
                )
        if "torch_export_error" in row["onnxport"]:
            console.print(f"{row['model']}: torch.export alone failed: {row['onnxport']['torch_export_error']}")
    worst = []
    for key, label in (
        ("time_ratio", "time"),
        ("memory_ratio", "memory"),
        ("torch_export_ratio", "vs torch.export"),
    ):
        scored = [(row[key], row["model"]) for row in rows if row[key] is not None]
        if scored:
            value, model = max(scored)
            worst.append(f"{label} {value:.2f}x ({model})")
    console.print("Worst onnxport ratios: " + ("; ".join(worst) or "none measured"))


def main(argv: list[str] | None = None) -> int:
    """Parse the command line; run one child measurement or the whole comparison."""
    from models import FACTORIES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", default=",".join(FACTORIES), help="comma-separated: " + ",".join(FACTORIES)
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="warm exports per child (median is reported)"
    )
    parser.add_argument(
        "--json", default=str(BENCH / "results" / "compare.json"), help="where to write results"
    )
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "EXPORTER"), help=argparse.SUPPRESS)
    ns = parser.parse_args(argv)
    if ns.one:
        model_name, exporter = ns.one
        print(MARKER + json.dumps(run_one(model_name, exporter, max(ns.repeat, 1))), flush=True)
        return 0
    names = [m.strip() for m in ns.models.split(",") if m.strip()]
    unknown = sorted(set(names) - set(FACTORIES))
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(FACTORIES)}")
    rows = []
    for name in names:
        results = {}
        for exporter in EXPORTERS:
            print(f"[{name}] {exporter} ...", file=sys.stderr, flush=True)
            results[exporter] = spawn(name, exporter, max(ns.repeat, 1))
        rows.append(summarize(results["onnxport"], results["torch.onnx"]))
    out = Path(ns.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    out.write_text(json.dumps({"repeat": ns.repeat, "loadavg": load, "rows": rows}, indent=2))
    print_table(rows)
    print(
        f"Load average at the end (1/5/15 min): {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} on {os.cpu_count()} CPUs"
    )
    print(f"JSON: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
