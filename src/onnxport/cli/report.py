"""``onnxport report SPEC``: export SPEC and write the markdown report of every step, on success and
on failure (the report is written by :func:`onnxport.export` itself, ``report/markdown.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from onnxport._export import export
from onnxport.cli._common import EXIT_EXPORT_FAILED, EXIT_USAGE, consoles, fail
from onnxport.cli.spec import SpecError, apply_dynamic, load_spec, parse_dynamic_options
from onnxport.errors import OnnxportError


def report_command(
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="The model, as for `onnxport export`.", show_default=False)],
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="REPORT.md", help="Where to write the report (default onnxport_report_<Model>.md).", show_default=False)] = None,
    opset: Annotated[int | None, typer.Option("--opset", metavar="N", help="Target ONNX opset.", show_default=False)] = None,
    dynamic: Annotated[list[str] | None, typer.Option("--dynamic", metavar="NAME:AXES", help="Dynamic axes, as for `onnxport export`.", show_default=False)] = None,
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Check, load in onnxruntime and compare with eager (default on).")] = True,
) -> None:
    """Export SPEC and write a markdown report of every step, on success and on failure.

    The report has a step checklist (each capture attempt, decomposition, pre-flight, translation,
    checks, onnxruntime load, accuracy), per-step timings, the unsupported-op table, model
    statistics (parameters per dtype, ATen ops before and after decomposition, ONNX ops),
    verification results with the first diverging node, tracebacks and environment versions.

    **Exit codes**: 0 the export succeeded; 1 it failed (the report says why); 2 bad SPEC.
    """
    out, err = consoles()
    if output is not None and not output.parent.is_dir():
        raise typer.BadParameter(f"folder {output.parent} does not exist.", param_hint="'--output'")
    try:
        loaded = load_spec(spec)
        dynamic_shapes = apply_dynamic(loaded, parse_dynamic_options(dynamic or []))
    except SpecError as e:
        fail(err, str(e), EXIT_USAGE)
    path = output or Path(f"onnxport_report_{type(loaded.model).__name__}.md")
    try:
        export(loaded.model, loaded.args, loaded.kwargs, dynamic_shapes=dynamic_shapes,
               input_names=loaded.input_names, output_names=loaded.output_names,
               opset_version=opset, verify=verify, report=path)
    except OnnxportError as e:
        fail(err, f"{e}\nReport: {path}", EXIT_EXPORT_FAILED)
    out.print(Text(f"Exported {loaded.description}; report: {path}", style="bold green"))


__all__ = ["report_command"]
