"""``onnxport verify MODEL.onnx SPEC``.

``verify`` loads an ONNX file and the SPEC's model, checks the file (``onnx.checker`` full check and
onnxruntime load), and compares every output with eager PyTorch on the SPEC's example inputs and on
a second set with other dynamic dims; ``--localize`` re-captures the SPEC to find the first FX node
whose value in the file diverges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from onnxport._export import export
from onnxport.cli._common import EXIT_EXPORT_FAILED, EXIT_USAGE, add_row, consoles, fail
from onnxport.cli.spec import SpecError, load_spec
from onnxport.errors import InputError, OnnxportError
from onnxport.verify.api import ONNXProgram, verify


def verification_tables(result: Any) -> list[Table]:
    """The rich tables printed for a :class:`~onnxport.verify.compare.VerificationResult`."""
    tables = []
    if result.checks:
        checks = Table(title="checks", title_justify="left")
        for column in ("check", "result", "seconds", "detail"):
            checks.add_column(column)
        for c in result.checks:
            add_row(checks, c.name, "ok" if c.passed else Text("FAILED", style="red"), f"{c.seconds:.2f}", c.detail)
        tables.append(checks)
    for s in result.input_sets:
        shapes = ", ".join(f"{k} {list(v)}" for k, v in s.shapes.items())
        table = Table(title=Text(f"{s.label} ({shapes})"), title_justify="left")
        for column in ("output", "shape", "dtype", "max abs diff", "max rel diff", "tolerance", "result"):
            table.add_column(column)
        for o in s.outputs:
            add_row(table, 
                o.name, str(list(o.actual_shape)), str(o.actual_dtype).removeprefix("torch."),
                f"{o.max_abs_diff:.3g}", f"{o.max_rel_diff:.3g}", f"rtol {o.rtol:g}, atol {o.atol:g}",
                "pass" if o.passed else Text("FAIL", style="red"),
            )
        tables.append(table)
    loc = result.localization
    if loc is not None and loc.first is not None:
        d = loc.first
        table = Table(title="first diverging node", title_justify="left", show_header=False)
        table.add_column("")
        table.add_column("", overflow="fold")
        add_row(table, "FX node", d.node.name)
        add_row(table, "ATen op", d.target)
        add_row(table, "ONNX nodes", ", ".join(d.onnx_nodes))
        add_row(table, "module", d.module_path or "(top level)")
        add_row(table, "source", d.source_line or "(none)")
        add_row(table, "max abs diff", f"{d.comparison.max_abs_diff:.3g}")
        tables.append(table)
    return tables


def verify_command(
    model_path: Annotated[Path, typer.Argument(metavar="MODEL.onnx", help="The ONNX file to verify.", show_default=False)],
    spec: Annotated[str, typer.Argument(metavar="SPEC", help="The PyTorch model and inputs, as for `onnxport export`.", show_default=False)],
    rtol: Annotated[float | None, typer.Option("--rtol", help="Relative tolerance (default per dtype).", show_default=False)] = None,
    atol: Annotated[float | None, typer.Option("--atol", help="Absolute tolerance (default per dtype).", show_default=False)] = None,
    localize: Annotated[bool, typer.Option("--localize", help="Re-capture SPEC and name the first FX node whose value in MODEL.onnx diverges.")] = False,
) -> None:
    """Verify an ONNX file against the PyTorch model of SPEC.

    Runs `onnx.checker` (full check), loads the file in onnxruntime (one session), and compares
    every output (values, shapes, dtypes) with eager PyTorch on SPEC's example inputs and on a
    second input set where every named dynamic dim is one larger.

    **Exit codes**: 0 every output within tolerance; 1 a check failed or an output differs;
    2 bad MODEL.onnx or SPEC.
    """
    out, err = consoles()
    try:
        program = ONNXProgram.load(model_path)
        loaded = load_spec(spec)
    except (SpecError, InputError) as e:
        fail(err, str(e), EXIT_USAGE)
    try:
        if localize:
            err.print(f"capturing {spec} to localize...", markup=False)
            captured = export(loaded.model, loaded.args, loaded.kwargs, dynamic_shapes=loaded.dynamic_shapes,
                              input_names=loaded.input_names, output_names=loaded.output_names)
            program.exported_program = captured.exported_program
        result = verify(program, loaded.args, loaded.kwargs, rtol=rtol, atol=atol,
                                 localize=localize, reference=loaded.model)
    except OnnxportError as e:
        fail(err, str(e), EXIT_EXPORT_FAILED)
    for table in verification_tables(result):
        out.print(table)
    if localize and result.localization is not None:
        out.print(Text(result.localization.summary().splitlines()[0]))
    if not result.passed:
        hint = "" if localize else " Run again with --localize to find the first diverging node."
        fail(err, f"{model_path} differs from eager PyTorch.{hint}", EXIT_EXPORT_FAILED)
    out.print(Text(f"{model_path} matches eager PyTorch.", style="bold green"))


__all__ = ["verification_tables", "verify_command"]
