"""The ``onnxport`` command line (typer): one module per subcommand, shared helpers in ``_common``.

- ``export`` (:mod:`onnxport.cli.export`): SPEC → ONNX file, or a Hugging Face folder → output folder.
- ``verify`` (:mod:`onnxport.cli.verify`): an ONNX file against eager PyTorch.
- ``inspect`` (:mod:`onnxport.cli.inspection`): what is in an ONNX file.
- ``report`` (:mod:`onnxport.cli.report`): export with the markdown report of every step.

Every command that exports calls :func:`onnxport.export` (or :func:`onnxport.hf.export`): the CLI
never re-runs a stage itself. Entry point: ``onnxport.cli:main`` (``[project.scripts]``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from onnxport.cli._common import (
    EXIT_EXPORT_FAILED,
    EXIT_USAGE,
    Progress,
    format_bytes,
    format_dtype,
    format_shape,
)
from onnxport.cli.export import export_command
from onnxport.cli.inspection import inspect_command
from onnxport.cli.report import report_command
from onnxport.cli.verify import verify_command
from onnxport.version import __version__

app = typer.Typer(
    name="onnxport",
    help=(
        "Export PyTorch models to ONNX: torch.export capture, onnxport's own ATen-to-ONNX "
        "translation, verified in onnxruntime.\n\n"
        "Run `onnxport export --help` for the SPEC forms, `--dynamic` syntax and exit codes."
    ),
    rich_markup_mode="markdown",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"onnxport {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print onnxport's version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Export PyTorch models to ONNX with onnxport.

    Commands:

    * `export SPEC -o OUT.onnx`: export a model given by a factory file (`file.py:factory`), or a
      local Hugging Face model folder (`export --hf FOLDER -o OUT/`); see `onnxport export --help`.

    * `verify MODEL.onnx SPEC`: check an ONNX file and compare it with the PyTorch model
      (`--localize` names the first diverging node).

    * `inspect MODEL.onnx`: inputs/outputs, opsets, op histogram, weights, metadata.

    * `report SPEC`: export and write a markdown report of every step.

    Exit codes: 0 success, 1 the export failed (message in red, no traceback), 2 bad command line
    or SPEC.
    """


app.command("export")(export_command)
app.command("verify")(verify_command)
app.command("inspect")(inspect_command)
app.command("report")(report_command)


def main() -> None:
    """Entry point of the ``onnxport`` script and ``python -m onnxport``."""
    app()


__all__ = [
    "EXIT_EXPORT_FAILED",
    "EXIT_USAGE",
    "Progress",
    "app",
    "format_bytes",
    "format_dtype",
    "format_shape",
    "main",
]
