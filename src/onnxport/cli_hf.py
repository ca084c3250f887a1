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
) -> None:
    """Export ``folder`` for ``task`` into ``output_dir`` and print the summary.

    Raises:
        typer.Exit: 2 for a bad folder/task/output folder (``HFError``), 1 when the export or the
            validation failed.
    """
    import onnxport.hf
    from onnxport.cli import Progress
    from onnxport.errors import HFError, OnnxportError

    progress = Progress(err)
    label = f"exporting {folder} ({task or 'task from the architecture'})"
    try:
        if streams(folder):
            with WeightBar(err, label) as bar:
                result = onnxport.hf.export(
                    folder, task, opset_version=opset, output_dir=output_dir, stream=True, optimize=optimize,
                    progress=bar,
                )
        else:
            with progress.phase(label):
                result = onnxport.hf.export(
                    folder, task, opset_version=opset, output_dir=output_dir, optimize=optimize
                )
    except HFError as e:
        _fail(err, str(e), EXIT_USAGE)
    except OnnxportError as e:
        _fail(err, str(e), EXIT_EXPORT_FAILED)
    for line in summary_lines(result):
        out.print(line, markup=False, highlight=False)


def streams(folder: Path) -> bool:
    """True when ``onnxport.hf.export`` takes the streamed path for ``folder`` (safetensors)."""
    return folder.is_dir() and any(folder.glob("*.safetensors"))


class WeightBar:
    """A rich progress display for the streamed export: a spinner while the graph is exported,
    then a bar over the checkpoint's tensors and bytes, then the validation (implements
    :class:`onnxport.hf.streamed.WeightProgress`). Off a terminal, one line per phase."""

    def __init__(self, console: Console, label: str) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = console
        self.display = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(binary_units=True),
            TextColumn("{task.fields[tensors]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.task = self.display.add_task(label, total=None, tensors="")
        self.count = self.total = self.done = 0

    def __enter__(self) -> WeightBar:
        if self.console.is_terminal:
            self.display.start()
        else:
            self.console.print(f"{self.display.tasks[0].description}...", markup=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.console.is_terminal:
            self.display.stop()

    def begin(self, count: int, nbytes: int) -> None:
        self.count, self.total, self.done = count, nbytes, 0
        self.display.update(
            self.task, description="streaming weights", total=nbytes, completed=0,
            tensors=f"0/{count} tensors",
        )
        if not self.console.is_terminal:
            self.console.print(
                f"streaming {count} tensors ({nbytes / 2**30:.2f} GiB) into external data...",
                markup=False,
            )

    def advance(self, name: str, nbytes: int) -> None:
        self.done += 1
        self.display.update(
            self.task, advance=nbytes, tensors=f"{self.done}/{self.count} tensors"
        )
        if self.done == self.count:
            self.display.update(self.task, description="validating against eager")
            if not self.console.is_terminal:
                self.console.print("validating against eager...", markup=False)


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
    streamed = getattr(result, "streamed", None)
    if streamed is not None:
        lines.append(
            f"Weights: streamed from the checkpoint ({streamed.weight_bytes / 2**30:.2f} GiB of "
            f"{streamed.checkpoint_bytes / 2**30:.2f} GiB, {str(streamed.dtype).removeprefix('torch.')}); "
            f"validation: {streamed.validation}"
            + (
                " — the model is too large to run in memory: a 2-layer copy of it with those"
                " layers' real weights was exported the same way and compared with eager"
                if streamed.validation.startswith("slice")
                else ""
            )
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
    run_hf_export(folder, task, output, opset, optimize, out, err)
