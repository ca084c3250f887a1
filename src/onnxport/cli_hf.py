"""``onnxport export --hf FOLDER [--task TASK] -o OUT/``: :func:`onnxport.hf.export` from the CLI.

Prints, per exported component, the graph inputs and outputs with their shapes, then the
validation table (every output on fresh inputs: max abs diff vs eager and pass/fail) and the files
written. Exit codes as for ``onnxport export``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from onnxport.passes.ort import QuantizeOptions

EXIT_EXPORT_FAILED = 1
EXIT_USAGE = 2


def run_hf_export(
    folder: Path,
    task: str | None,
    output_dir: Path,
    opset: int | None,
    optimize: bool,
    out: Console,
    err: Console,
    *,
    target: str = "onnx",
    quantization: dict[str, Any] | None = None,
) -> None:
    """Export ``folder`` for ``task`` into ``output_dir`` and print the summary.

    ``quantization`` holds :class:`onnxport.passes.ort.QuantizeOptions` fields (``bits`` may be an
    unknown string, reported as a usage error).

    Raises:
        typer.Exit: 2 for a bad folder/task/output folder/target/quantization (``HFError``,
            ``InputError``), 1 when the export or the validation failed.
    """
    import onnxport.hf
    from onnxport.cli import Progress
    from onnxport.errors import HFError, InputError, OnnxportError
    from onnxport.passes.ort import QuantizeOptions

    progress = Progress(err)
    try:
        quantize = None
        if quantization is not None:
            if quantization["bits"] not in (4, 8):
                raise InputError(f"--quantize must be int4 or int8, not {quantization['bits']!r}.")
            quantize = QuantizeOptions(**quantization)
        with progress.phase(f"exporting {folder} ({task or 'task from the architecture'})"):
            result = onnxport.hf.export(
                folder,
                task,
                opset_version=opset,
                output_dir=output_dir,
                optimize=optimize,
                target=target,
                quantize=quantize,
            )
    except (HFError, InputError) as e:
        _fail(err, str(e), EXIT_USAGE)
    except OnnxportError as e:
        _fail(err, str(e), EXIT_EXPORT_FAILED)
    for line in summary_lines(result):
        out.print(line, markup=False, highlight=False)


def summary_lines(result: Any) -> list[str]:
    """The summary of an :class:`onnxport.hf.HFExport`, one string per line."""
    from onnxport.cli import _table, _value_rows

    lines = [f"Exported {type(result.model).__name__} for {result.task}"]
    for name, program in result.programs.items():
        graph = program.model.graph
        lines += [
            f"{name}.onnx ({result.seconds.get(name, 0.0):.1f} s, opset "
            f"{program.model.opset_imports.get('', '?')}, {len(graph)} nodes)",
            "  Inputs:",
            *_table(_value_rows(graph.inputs), indent="    "),
            "  Outputs:",
            *_table(_value_rows(graph.outputs), indent="    "),
        ]
    if result.checks:
        worst = max(c.max_abs_diff for c in result.checks)
        verdict = "pass" if result.passed else "FAIL"
        lines.append(
            f"Validation (onnxruntime vs eager on fresh inputs, atol {result.checks[0].atol:g}): "
            f"{verdict}, {len(result.checks)} outputs, max abs diff {worst:.3g}"
        )
        lines += _table(
            [
                (
                    f"{c.component}/{c.output}",
                    c.inputs,
                    f"max abs diff {c.max_abs_diff:.3g}",
                    "pass" if c.passed else "FAIL",
                )
                for c in result.checks
            ]
        )
    if result.output_dir is not None:
        lines.append(f"Output: {result.output_dir} ({', '.join(str(f) for f in result.files)})")
    return lines


def _fail(err: Console, message: str, code: int) -> NoReturn:
    err.print(Text(f"Error: {message}", style="bold red"))
    raise typer.Exit(code)


def hf_command(
    spec: str | None,
    folder: Path | None,
    task: str | None,
    output: Path,
    opset: int | None,
    optimize: bool,
    verify: bool,
    *,
    target: str = "onnx",
    quantization: dict[str, Any] | None = None,
) -> None:
    """The ``export`` command with ``--hf`` (called by :func:`onnxport.cli.export_command`)."""
    if folder is None:
        raise typer.BadParameter("give a SPEC or --hf FOLDER.", param_hint="'SPEC'")
    if spec is not None:
        raise typer.BadParameter(
            "give either a SPEC or --hf FOLDER, not both.", param_hint="'--hf'"
        )
    del verify  # --hf always validates every output on fresh inputs
    out = Console(soft_wrap=True, highlight=False)
    err = Console(stderr=True, soft_wrap=True, highlight=False)
    run_hf_export(
        folder, task, output, opset, optimize, out, err, target=target, quantization=quantization
    )
