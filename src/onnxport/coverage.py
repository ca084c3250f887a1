"""Operator coverage: which Core ATen overloads onnxport translates, and how OpInfo samples fare.

``python -m onnxport.coverage run``   runs the OpInfo samples (every dtype onnxport tests) and
                                      writes ``docs/coverage_results.json``; about 1 h on 2 cores.
``python -m onnxport.coverage write`` regenerates ``docs/coverage.md`` from the registry and
                                      that JSON (seconds).
``python -m onnxport.coverage check`` exits 1 when ``docs/coverage.md`` is stale (CI runs the
                                      same check as a test).

The "Architectures" section renders ``docs/architectures.json``, written by
``bench/coverage_compare.py --json docs/architectures.json`` (the zoo of real architectures,
onnxport and torch.onnx), with the reason of every failure from ``ARCHITECTURE_NOTES``.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import logging
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from onnxport.ops import default_registry
from onnxport.testing import opinfo as oi
from onnxport.translate.registry import MAX_OPSET, Registry

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RESULTS = DOCS / "coverage_results.json"
MARKDOWN = DOCS / "coverage.md"
ARCHITECTURES = DOCS / "architectures.json"
# Why an architecture of onnxport.testing.zoo fails, beyond the error's first line (kept with the
# data so the rendered page stays exact; tests/models/test_zoo.py marks the same cases xfail).
ARCHITECTURE_NOTES: dict[str, str] = {}
# How docs/architectures.json was produced (rendered under the table's introduction).
ARCHITECTURES_RUN = (
    "The last run (2026-11-23): a full run of both exporters, then `--merge` re-runs of the cases "
    "changed since (efficientnet, dinov2, mamba, jamba, dpt-depth, segformer, bamba, mamba2) and of "
    "the torch.onnx rows the full run had not reached; 2 cores shared with other jobs, load average "
    "8–12, so the seconds compare the two exporters within a row, not with a quiet machine. "
    "mobilenet-v2 was re-run alone on 2026-11-24 (load ~1) after its batch norms were calibrated "
    "(`_calibrated`: its outputs had been ~1e-25, so no comparison could fail). The 17 cases "
    "from bloom to ast were added and run with `--merge` on 2026-11-24 (load ~2–3, while other "
    "tests ran). unet2d-condition was re-run with `--merge` on 2026-11-28 (load ~1) after its second "
    "size became odd (9x13 latents, capture/upsampling.py). unet1d, ltx-video and longformer were "
    "added with `--merge` on 2026-12-05 (session 37, while the test suite ran: load ~3): the cases "
    "its divisibility warning, symbolic-mismatch retry and symbolic as_strided made pass."
)
DTYPE_ORDER = ("float32", "float16", "bfloat16", "int32", "int64", "bool")
SAMPLES_PER_CASE = 3


def core_aten_overloads() -> list[torch._ops.OpOverload]:
    """Every ``aten`` overload tagged ``torch.Tag.core``, sorted by name.

    Enumerated from the registered schemas (``torch._C._jit_get_all_schemas``): ``dir(torch.ops.aten)``
    only lists the packets some code already touched, so it depends on what was imported.
    """
    found = {}
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        packet = getattr(torch.ops.aten, schema.name.removeprefix("aten::"), None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        op = getattr(packet, schema.overload_name or "default", None)
        if isinstance(op, torch._ops.OpOverload) and torch.Tag.core in op.tags:
            found[str(op)] = op
    return [found[k] for k in sorted(found)]


def _target_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    module = getattr(target, "__module__", "") or ""
    return f"{module}.{getattr(target, '__name__', repr(target))}".lstrip(".")


# -- running ----------------------------------------------------------------------------------

def _run_case(args: tuple[str, str, int]) -> tuple[str, str, list[list[Any]]]:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    name, dtype_name, limit = args
    info = oi.op_db()[name]
    out: list[list[Any]] = []
    try:
        samples = oi.samples(info, getattr(torch, dtype_name), limit)
    except Exception as e:  # the OpInfo cannot build samples for this dtype on CPU
        return name, dtype_name, [["sample_error", f"{type(e).__name__}: {e}"[:200], []]]
    for sample in samples:
        result = oi.run_sample(info, sample, optimize=False)
        if result.status == "skip":
            continue
        out.append([result.status, result.detail[:200] if not result.passed else "", list(result.aten_ops)])
    return name, dtype_name, out


def core_named_opinfos() -> list[str]:
    """The OpInfos named after a Core ATen op (``add``, ``sort``, ``nn.functional.conv2d`` → no;
    ``nn.functional.pad`` → ``pad``...): the subset the non-float32 dtypes run by default."""
    core = {str(o).split(".")[1] for o in core_aten_overloads()}
    return [n for n in oi.op_db() if n.removeprefix("nn.functional.").split(".")[0] in core]


def run(dtypes: Sequence[str], limit: int, jobs: int, names: Sequence[str] | None = None,
        scope: str | None = "every OpInfo") -> dict[str, Any]:
    """Run every (OpInfo, dtype) case and merge the outcome into ``docs/coverage_results.json``."""
    cases = [(n, oi.DTYPE_NAMES[d], limit) for n, d in oi.iter_cases(names, [getattr(torch, x) for x in dtypes])]
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"samples_per_case": {}, "results": {}}
    start = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        for i, (name, dtype_name, out) in enumerate(pool.map(_run_case, cases, chunksize=2)):
            data["results"].setdefault(name, {})[dtype_name] = out
            if (i + 1) % 200 == 0:
                print(f"{i + 1}/{len(cases)} cases, {time.perf_counter() - start:.0f} s", flush=True)
                _save(data, dtypes, limit, scope)  # partial results survive an interrupted run
    _save(data, dtypes, limit, scope)
    print(f"{len(cases)} cases in {time.perf_counter() - start:.0f} s → {RESULTS}")
    return data


def _save(data: dict[str, Any], dtypes: Sequence[str], limit: int, scope: str | None) -> None:
    previous = data.get("samples_per_case")
    if not isinstance(previous, dict):  # older format: one limit, float32 only
        previous = {"float32": previous} if isinstance(previous, int) else {}
    data["samples_per_case"] = {**previous, **{d: limit for d in dtypes}}
    if scope is not None:  # a rerun of listed OpInfos keeps the recorded scope
        data["scope"] = {**data.get("scope", {}), **{d: scope for d in dtypes}}
    data["results"] = {k: dict(sorted(v.items())) for k, v in sorted(data["results"].items())}
    RESULTS.write_text(json.dumps(data, indent=0, sort_keys=False) + "\n")


# -- rendering --------------------------------------------------------------------------------

def _rate(passed: int, total: int) -> str:
    return f"{passed}/{total}" if total else "–"


def _opsets(registry: Registry, target: Any) -> str:
    sinces = sorted({t.since for t in registry.translations_for(target)})
    return ", ".join(f"{s}+" for s in sinces) if sinces else ""


def _samples_text(results: dict[str, Any]) -> str:
    per = results.get("samples_per_case") or {}
    if isinstance(per, int):  # results written by an older run: one limit for every dtype
        per = {d: per for d in DTYPE_ORDER}
    scope = results.get("scope") or {}
    if not per:
        return f"{SAMPLES_PER_CASE} samples"
    groups: dict[tuple[int, str], list[str]] = collections.defaultdict(list)
    for d in DTYPE_ORDER:
        if d in per:
            groups[(int(per[d]), scope.get(d, "every OpInfo"))].append(d)
    return "; ".join(f"{n} sample{'s' if n > 1 else ''} of {where} ({', '.join(ds)})"
                     for (n, where), ds in sorted(groups.items(), reverse=True))


def render(registry: Registry | None = None, results: dict[str, Any] | None = None) -> str:
    """The markdown of ``docs/coverage.md`` (deterministic for a given registry and results)."""
    registry = registry or default_registry()
    if results is None:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"results": {}}
    core = core_aten_overloads()
    core_set = set(core)

    per_op: dict[str, dict[str, list[int]]] = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    per_dtype: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    per_info: dict[str, dict[str, list[int]]] = {}
    for info_name, by_dtype in results.get("results", {}).items():
        per_info[info_name] = {}
        for dtype_name, samples in by_dtype.items():
            counts = [0, 0]
            for status, _detail, ops in samples:
                ok = status == "pass"
                counts[0] += ok
                counts[1] += 1
                for op in ops:
                    per_op[op][dtype_name][0] += ok
                    per_op[op][dtype_name][1] += 1
            per_info[info_name][dtype_name] = counts
            per_dtype[dtype_name][0] += counts[0]
            per_dtype[dtype_name][1] += counts[1]

    def dtype_cells(target: Any) -> str:
        stats = per_op.get(_target_name(target), {})
        return " | ".join(_rate(*stats[d]) if d in stats else "–" for d in DTYPE_ORDER)

    translated = [op for op in core if registry.is_registered(op)]
    missing = [op for op in core if not registry.is_registered(op)]
    lines = [
        "# Operator coverage",
        "",
        "Generated by `python -m onnxport.coverage write` from the translation registry and",
        "`docs/coverage_results.json` (written by `python -m onnxport.coverage run`: every OpInfo of",
        "`torch.testing._internal.common_methods_invocations.op_db`, each dtype it supports among",
        f"{', '.join(DTYPE_ORDER)}: up to {_samples_text(results)} per case,",
        "exported without optimization, run in onnxruntime and compared with eager).",
        "Do not edit by hand; `tests/test_coverage_doc.py` fails when this file is stale.",
        "",
        "## Summary",
        "",
        f"- Core ATen overloads (`torch.Tag.core`, torch {torch.__version__.split('+')[0]}): {len(core)}",
        f"  - translated: {len(translated)}",
        f"  - without translation: {len(missing)}",
        f"- Other ops translated directly (kept whole by the decomposition step): "
        f"{sum(1 for t in registry.targets() if t not in core_set)}",
        "",
        "OpInfo samples passing, per dtype (a sample passes when values, shapes and dtypes match eager):",
        "",
        "| dtype | passing / attempted | rate |",
        "|---|---|---|",
    ]
    for d in DTYPE_ORDER:
        p, t = per_dtype.get(d, [0, 0])
        lines.append(f"| {d} | {p}/{t} | {100 * p / t:.1f}% |" if t else f"| {d} | – | – |")
    header = "| op | status | opsets | " + " | ".join(DTYPE_ORDER) + " |"
    rule = "|---|---|---|" + "---|" * len(DTYPE_ORDER)
    lines += [
        "",
        "The dtype columns count the OpInfo samples whose exported graph contains the op",
        "(passing/attempted); – means no sample reached it in that dtype.",
        "",
        "## Core ATen overloads",
        "",
        header,
        rule,
    ]
    for op in core:
        status = "translated" if registry.is_registered(op) else "**missing**"
        lines.append(f"| `{op}` | {status} | {_opsets(registry, op)} | {dtype_cells(op)} |")
    others = sorted((t for t in registry.targets() if t not in core_set), key=_target_name)
    lines += [
        "",
        "## Other ops translated directly",
        "",
        "High-level ops kept whole (one ONNX op or a better pattern than their decomposition), and",
        "the Python `operator`/`sym_*` functions of dynamic shapes.",
        "",
        header,
        rule,
    ]
    for target in others:
        lines.append(f"| `{_target_name(target)}` | translated | {_opsets(registry, target)} | {dtype_cells(target)} |")
    lines += [
        "",
        "## OpInfo pass rates",
        "",
        "Samples passing/attempted per OpInfo and dtype (– : dtype not supported by the OpInfo).",
        "",
        "| OpInfo | " + " | ".join(DTYPE_ORDER) + " |",
        "|---|" + "---|" * len(DTYPE_ORDER),
    ]
    for info_name in sorted(per_info):
        cells = [_rate(*per_info[info_name][d]) if d in per_info[info_name] else "–" for d in DTYPE_ORDER]
        lines.append(f"| `{info_name}` | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Opsets: translations are selected per target opset (18–{MAX_OPSET}); "
                 "`18+, 20+` means one encoding from opset 18 and a newer one from 20.")
    lines.append("")
    lines += RULES
    if ARCHITECTURES.exists():
        lines += _architectures(json.loads(ARCHITECTURES.read_text()))
    return "\n".join(lines)


# Hand-written rules rendered before "Architectures" (architecture.md has the design).
RULES = [
    "## Recurrent nets",
    "",
    "- `nn.LSTM`, `nn.GRU`, `nn.RNN` (tanh/relu; uni/bidirectional, multi-layer, batch_first, with or",
    "  without initial states) → one ONNX `LSTM`/`GRU`/`RNN` per layer, dynamic batch and sequence",
    "  (`capture/rnn.py`, `ops/nn/rnn.py`; tests: `tests/ops/nn/test_rnn.py`).",
    "- `nn.LSTM(proj_size > 0)`: ONNX LSTM has no projection; one ONNX `Scan` per layer and direction",
    "  carrying (h, c) (`ops/nn/rnn_proj.py`), so the length stays dynamic.",
    "- `pack_padded_sequence` → RNN → `pad_packed_sequence` (enforce_sorted True or False, batch_first",
    "  either): the padded input with the lengths as ONNX `sequence_lens` (`capture/packed.py`, as",
    "  torch.onnx's TorchScript exporter did); outputs are 0 past each length, final states at each",
    "  length. The padded output keeps the input's length T where eager trims it to `max(lengths)`:",
    "  equal when the batch is padded to its longest sequence or `total_length=T` is given.",
    "- Cells (`nn.LSTMCell`, ...) in a Python loop: unrolled over a static step count.",
    "",
    "## The runtime check's second size",
    "",
    "After translation the model runs in onnxruntime on the example and on a second input set where",
    "every dynamic dim moves by about half its size (`verify/runtime_check.py`). When the guards",
    "torch.export recorded on the dynamic dims reject those sizes (`H % 2 == 0`, a last feature map of",
    "1x1, `(H // 8)**2 + 1 == 17`), the ONNX model runs there anyway and is compared with the model in",
    "eager mode: equal outputs keep those sizes (the guard does not matter to the graph, MobileNetV2);",
    "an onnxruntime refusal or a difference is a `DynamicShapesError` naming the guards, their source",
    "lines and an example size that takes the general path (TF \"same\" padding's `H % 2` branch); a",
    "model that itself rejects those sizes (a `reshape` needing an even length) is run",
    "at sizes found inside the guards (`verify/guards.py`: multiples, offsets, dims equal in the example",
    "moved together) with a `UserWarning` naming the guards. No size found: `DynamicShapesError`.",
    "",
]


def _architectures(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The "Architectures" section: one row per zoo case, both exporters, reasons of failures."""
    def status(r: dict[str, Any] | None) -> str:
        if r is None:
            return "not run"
        if r["error"] is None:
            return f"pass ({r['nodes']} nodes, max abs diff {r['max_diff']:.1e})"
        return "fail: " + r["error"].replace("|", "/").replace("\n", " ")[:200]

    ours = sum(1 for r in rows.values() if r.get("onnxport", {}).get("error", "x") is None)
    theirs = sum(1 for r in rows.values() if r.get("torch.onnx", {}).get("error", "x") is None)
    lines = [
        "## Architectures",
        "",
        "Real architectures from small configs with random weights (`onnxport.testing.zoo`: transformers,",
        "diffusers, torch.nn), exported with dynamic shapes and run in onnxruntime at two sizes (the second",
        "different in every dynamic dim) against eager PyTorch, by onnxport and by",
        "`torch.onnx.export(dynamo=True)`: `bench/coverage_compare.py --json docs/architectures.json`, then",
        f"`python -m onnxport.coverage write`. onnxport passes {ours} of {len(rows)}, torch.onnx {theirs}.",
        "",
        ARCHITECTURES_RUN,
        "",
        "| architecture | onnxport | torch.onnx | why onnxport fails |",
        "|---|---|---|---|",
    ]
    for name, by in rows.items():
        ours_row = by.get("onnxport")
        why = ARCHITECTURE_NOTES.get(name, "") if ours_row is not None and ours_row["error"] is not None else ""
        lines.append(f"| `{name}` | {status(ours_row)} | {status(by.get('torch.onnx'))} | {why} |")
    lines.append("")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onnxport.coverage", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run the OpInfo samples and write docs/coverage_results.json")
    p_run.add_argument("--dtypes", nargs="*", default=list(DTYPE_ORDER))
    p_run.add_argument("--samples", type=int, default=SAMPLES_PER_CASE)
    p_run.add_argument("--jobs", type=int, default=2)
    p_run.add_argument("--ops", nargs="*", default=None, help="OpInfo names (default: all)")
    p_run.add_argument("--core-only", action="store_true", help="only the OpInfos named after a Core ATen op")
    sub.add_parser("write", help="regenerate docs/coverage.md")
    sub.add_parser("check", help="exit 1 if docs/coverage.md is stale")
    args = parser.parse_args(argv)
    if args.command == "run":
        names = core_named_opinfos() if args.core_only else args.ops
        scope = "the OpInfos named after a Core ATen op" if args.core_only else (
            "the listed OpInfos" if args.ops else "every OpInfo")
        run(args.dtypes, args.samples, args.jobs, names, None if args.ops else scope)
        MARKDOWN.write_text(render())
        return 0
    if args.command == "write":
        MARKDOWN.write_text(render())
        return 0
    fresh = render()
    if not MARKDOWN.exists() or MARKDOWN.read_text() != fresh:
        print(f"{MARKDOWN} is stale: run `python -m onnxport.coverage write`.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
