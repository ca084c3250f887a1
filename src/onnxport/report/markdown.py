"""A markdown report of one export, written on success and on failure.

Sections (``##``): Steps (a checklist: each capture attempt, decomposition, pre-flight, translation,
optimization, checks, onnxruntime load, accuracy), Timings, Capture attempts, Unsupported operators
(when any), Model statistics (parameters per dtype, ATen ops before and after decomposition, ONNX
ops), Verification (per input set and output, |diff| histograms, the first diverging node), Error
and tracebacks (on failure), Environment. Table cells are escaped and code fences are longer than
any backtick run in their content, so the file renders as clean markdown.
"""

from __future__ import annotations

import collections
import os
import platform
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy
import onnx
import onnx_ir
import torch

from onnxport.report import stats
from onnxport.translate.preflight import table_markdown
from onnxport.version import __version__

VERIFY_STEPS = ("onnx.checker (full_check)", "onnxruntime load", "accuracy")


def _versions() -> list[tuple[str, str]]:
    import onnxruntime  # heavy optional runtime: only its version is read

    return [
        ("python", platform.python_version()),
        ("platform", platform.platform()),
        ("onnxport", __version__),
        ("torch", torch.__version__),
        ("onnx", onnx.__version__),
        ("onnx_ir", onnx_ir.__version__),
        ("onnxruntime", onnxruntime.__version__),
        ("numpy", numpy.__version__),
    ]


def _cell(value: Any) -> str:
    text = " ".join(str(value).split())
    return text.replace("\\", "\\\\").replace("|", "\\|") or " "


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A markdown table (cells escaped, one line each)."""
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def fence(text: str, lang: str = "") -> list[str]:
    """A fenced code block whose fence is longer than any backtick run in ``text``."""
    run, best = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        best = max(best, run)
    marks = "`" * max(3, best + 1)
    return [f"{marks}{lang}", text.rstrip("\n"), marks, ""]


def _histogram(counter: collections.Counter[str], what: str) -> list[str]:
    if not counter:
        return ["(none)", ""]
    return table([what, "count"], [(f"`{k}`", v) for k, v in counter.most_common()])


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def _checklist(status: Any, verify_ran: bool) -> list[str]:
    out = ["## Steps", ""]
    steps = {s.name: s for s in status.steps}
    for step in status.steps:
        mark = "x" if step.ok else " "
        label = step.name
        if step.name == "decompose":
            label = "decomposition: " + ("run_decompositions ran" if status.decomposed else "skipped (every op translated directly)")
        elif step.name == "translate":
            label = "translation"
        detail = f" — {_inline(step.detail.splitlines()[0])}" if step.detail else ""
        out.append(f"- [{mark}] {_inline(label)} ({step.seconds:.2f} s){detail}")
        if step.name == "capture":
            for a in status.capture_attempts:
                result = "succeeded" if a.success else f"failed: {_first_line(a.error)}"
                if a.cause and not a.success:
                    result += f" ({a.cause})"
                if a.warnings:
                    result += f"; specialized {len(a.warnings)} value(s)"
                if a.assumed_finite:
                    result += f"; {len(a.assumed_finite)} finiteness test(s) taken as finite"
                out.append(f"  - [{'x' if a.success else ' '}] `{a.strategy}` {_inline(result)} ({a.seconds:.2f} s)")
    if not verify_ran and status.error is None:
        for name in VERIFY_STEPS:
            if name not in steps:
                out.append(f"- [ ] {name}: not run (export(verify=False); use verify=True or onnxport.verify)")
    return [*out, ""]


def _inline(text: str) -> str:
    """Text safe on one markdown line (no newlines; HTML-ish brackets escaped)."""
    return " ".join(str(text).split()).replace("<", "&lt;").replace(">", "&gt;")


def _timings(status: Any) -> list[str]:
    rows = [(s.name, f"{s.seconds:.3f}", "ok" if s.ok else "failed") for s in status.steps]
    rows.append(("total", f"{status.total_seconds:.3f}", ""))
    return ["## Timings", "", *table(["step", "seconds", "result"], rows)]


def _attempts(status: Any) -> list[str]:
    out = ["## Capture attempts", ""]
    if not status.capture_attempts:
        return [*out, "No capture: an ExportedProgram was given, or the export stopped before capture.", ""]
    rows = []
    for a in status.capture_attempts:
        result = "success" if a.success else _first_line(a.error)
        rows.append((f"`{a.strategy}`", result, a.cause or "", (a.source_line or "").replace("\n", " "), f"{a.seconds:.2f}"))
    out += table(["strategy", "result", "cause", "source line", "seconds"], rows)
    for a in status.capture_attempts:
        if a.warnings:
            out += [f"Draft export specialized on the example inputs ({a.strategy}):", ""]
            out += [f"- {_inline(w)}" for w in a.warnings] + [""]
        if a.assumed_finite:
            out += [f"Finiteness tests taken as finite, the branch of finite activations traced ({a.strategy}; "
                    "onnxport.capture.finite):", ""]
            out += [f"- {_inline(w)}" for w in a.assumed_finite] + [""]
    return out


def _unsupported(status: Any) -> list[str]:
    if not status.unsupported:
        return []
    return ["## Unsupported operators", "", f"{len(status.unsupported)} operator(s) have no translation "
            "(found in one pass before translation):", "", table_markdown(status.unsupported)]


def _statistics(status: Any, program: Any) -> list[str]:
    out = ["## Model statistics", ""]
    captured = status.captured_program
    ep = captured if captured is not None else (program.exported_program if program is not None else None)
    if ep is not None:
        out += ["### Parameters per dtype", ""]
        rows = [(d, n, f"{e:,}", f"{b:,}") for d, n, e, b in stats.parameters_per_dtype(ep)]
        out += table(["dtype", "tensors", "elements", "bytes"], rows) if rows else ["(none)", ""]
        out += ["### ATen ops captured (before decomposition)", "", *_histogram(stats.aten_histogram(ep), "op")]
        after = status.decomposed_program
        out += ["### ATen ops after decomposition", ""]
        if after is None:
            out += ["(the export stopped before decomposition)", ""]
        elif not status.decomposed:
            out += ["Same as captured: decomposition was skipped (every op has a translation).", ""]
        else:
            out += _histogram(stats.aten_histogram(after), "op")
    if program is not None:
        out += ["### ONNX model", "", *table(["", ""], stats.onnx_facts(program.model))]
        out += ["### ONNX ops", "", *_histogram(stats.onnx_histogram(program.model), "op")]
    if len(out) == 2:
        out += ["(no model statistics: the export stopped before capture)", ""]
    return out


def verification_section(result: Any) -> list[str]:
    """The verification results as markdown (checks, per input set and output, localization)."""
    out = ["## Verification", ""]
    if result.checks:
        out += table(["check", "result", "seconds", "detail"],
                     [(c.name, "ok" if c.passed else "FAILED", f"{c.seconds:.2f}", c.detail) for c in result.checks])
    for s in result.input_sets:
        shapes = ", ".join(f"`{k}` {list(v)}" for k, v in s.shapes.items())
        out += [f"### {_inline(s.label)}: {'pass' if s.passed else 'FAIL'}", "", f"Inputs: {shapes}", ""]
        rows = [(f"`{o.name}`", list(o.actual_shape), str(o.actual_dtype).removeprefix("torch."),
                 f"{o.max_abs_diff:.3g}", f"{o.max_rel_diff:.3g}", f"rtol {o.rtol:g}, atol {o.atol:g}",
                 o.mismatched, "pass" if o.passed else "FAIL") for o in s.outputs]
        out += table(["output", "shape", "dtype", "max abs diff", "max rel diff", "tolerance", "mismatched", "result"], rows)
        for o in s.outputs:
            if o.histogram:
                out += [f"Histogram of abs diff, `{o.name}`: " + ", ".join(f"{k}: {v}" for k, v in o.histogram), ""]
            out += [f"- `{o.name}`: {_inline(n)}" for n in o.notes]
            if o.notes:
                out.append("")
    loc = result.localization
    if loc is not None:
        out += ["### Localization", "", _inline(loc.summary().splitlines()[0]), ""]
        if loc.first is not None:
            d = loc.first
            out += table(["", ""], [
                ("first diverging FX node", f"`{d.node.name}`"),
                ("ATen op", f"`{d.target}`"),
                ("ONNX nodes", ", ".join(f"`{n}`" for n in d.onnx_nodes)),
                ("module", d.module_path or "(top level)"),
                ("source line", (d.source_line or "").replace("\n", " ")),
                ("max abs diff", f"{d.comparison.max_abs_diff:.3g}"),
            ])
    return out


def render(model: Any, status: Any, program: Any) -> str:
    """The report text (markdown)."""
    name = type(model).__name__
    ok = status.error is None
    program = program if program is not None else getattr(status, "program", None)
    out = [f"# onnxport export report: {name}", ""]
    out += [f"**Result: {'success' if ok else 'failure'}**", ""]
    if not ok:
        out += [f"Failed with `{type(status.error).__name__}`: {_inline(str(status.error).strip().splitlines()[0] if str(status.error).strip() else '')}", ""]
    verify_ran = status.verification is not None or any(s.name in VERIFY_STEPS for s in status.steps)
    out += _checklist(status, verify_ran)
    out += _timings(status)
    out += _attempts(status)
    out += _unsupported(status)
    out += _statistics(status, program)
    if status.verification is not None:
        out += verification_section(status.verification)
    if status.error is not None:
        tb = "".join(traceback.format_exception(status.error))
        out += ["## Error", "", *fence(str(status.error)), "<details><summary>Traceback</summary>", "",
                *fence(tb), "</details>", ""]
    failed = [a for a in status.capture_attempts if a.traceback]
    if failed:
        out += ["## Capture tracebacks", ""]
        for a in failed:
            out += [f"<details><summary>{_inline(a.strategy)}</summary>", "", *fence(a.traceback), "</details>", ""]
    out += ["## Environment", "", *table(["package", "version"], _versions())]
    return "\n".join(out).rstrip("\n") + "\n"


def write_report(destination: Any, model: Any, status: Any, program: Any) -> Path:
    """Write the report; ``destination=True`` means ``onnxport_report_<Model>.md`` in the cwd.

    Returns:
        The path written.
    """
    if destination is True:
        path = Path(os.getcwd()) / f"onnxport_report_{type(model).__name__}.md"
    else:
        path = Path(destination)
    path.write_text(render(model, status, program), encoding="utf-8")
    return path


__all__ = ["fence", "render", "table", "verification_section", "write_report"]
