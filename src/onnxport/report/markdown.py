"""A markdown report of one export: step checklist, timings, capture attempts, op histograms, errors."""

from __future__ import annotations

import collections
import os
import platform
import traceback
from pathlib import Path
from typing import Any

import torch


def _versions() -> list[tuple[str, str]]:
    import onnx
    import onnx_ir
    import onnxruntime

    from onnxport import __version__

    return [
        ("python", platform.python_version()),
        ("onnxport", __version__),
        ("torch", torch.__version__),
        ("onnx", onnx.__version__),
        ("onnx_ir", onnx_ir.__version__),
        ("onnxruntime", onnxruntime.__version__),
    ]


def _histogram(items: Any) -> str:
    counts = collections.Counter(items)
    rows = "\n".join(f"| `{k}` | {v} |" for k, v in counts.most_common())
    return f"| op | count |\n|---|---|\n{rows}\n"


def render(model: Any, status: Any, program: Any) -> str:
    """The report text."""
    name = type(model).__name__
    ok = status.error is None
    out = [f"# onnxport export report: {name}", "", f"**Result: {'success' if ok else 'failure'}**", ""]
    out += ["## Steps", ""]
    for step in status.steps:
        mark = "x" if step.ok else " "
        out.append(f"- [{mark}] {step.name} ({step.seconds:.2f} s){': ' + step.detail if step.detail else ''}")
    out += ["", "## Capture attempts", "", "| strategy | result | seconds |", "|---|---|---|"]
    for a in status.capture_attempts:
        result = "success" if a.success else f"{type(a.error).__name__}: {str(a.error).splitlines()[0] if str(a.error) else ''}"
        out.append(f"| {a.strategy} | {result.replace('|', '/')} | {a.seconds:.2f} |")
    out += ["", f"Decomposition ran: {'yes' if status.decomposed else 'no (every op translated directly)'}", ""]
    if program is not None:
        ep = program.exported_program
        if ep is not None:
            out += ["## ATen ops translated", "", _histogram(str(n.target) for n in ep.graph.nodes if n.op == "call_function")]
        out += ["## ONNX ops", "", _histogram(n.op_type for n in program.model.graph)]
    if status.verification is not None:
        out += ["## Verification", "", "```", status.verification.summary(), "```", ""]
    if status.error is not None:
        tb = "".join(traceback.format_exception(status.error))
        out += ["## Error", "", "```", str(status.error), "```", "", "<details><summary>Traceback</summary>", "",
                "```", tb, "```", "", "</details>", ""]
    out += ["## Environment", "", "| package | version |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in _versions()]
    return "\n".join(out) + "\n"


def write_report(destination: Any, model: Any, status: Any, program: Any) -> Path:
    """Write the report; ``destination=True`` means ``onnxport_report_<Model>.md`` in the cwd."""
    if destination is True:
        path = Path(os.getcwd()) / f"onnxport_report_{type(model).__name__}.md"
    else:
        path = Path(destination)
    path.write_text(render(model, status, program), encoding="utf-8")
    return path
