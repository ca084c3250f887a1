"""What every ``onnxport`` subcommand shares: exit codes, the error line, progress, formatting.

Progress and errors go to stderr, results to stdout. Exit codes: 0 success, 1 the export (or
verification) failed with an :class:`~onnxport.errors.OnnxportError` (printed without traceback),
2 bad command line, SPEC or input file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

import onnx_ir as ir
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

EXIT_EXPORT_FAILED = 1
EXIT_USAGE = 2

# The orchestrator's step names (onnxport.status) as the progress lines show them.
STEP_LABELS = {"capture": "capturing", "translate": "translating", "verify": "verifying", "save": "saving"}


def consoles() -> tuple[Console, Console]:
    """``(out, err)``: stdout for results, stderr for progress and errors (no markup guessing)."""
    return Console(soft_wrap=True, highlight=False), Console(stderr=True, soft_wrap=True, highlight=False)


# Set by the root ``--debug`` option: unexpected exceptions keep their traceback.
DEBUG = {"enabled": False}


def guarded(command: Callable[..., None]) -> Callable[..., None]:
    """Wrap a subcommand so that an exception onnxport did not foresee (a bug, a dependency's
    error) prints one red line naming it and how to get the traceback (``--debug``), exit 1; with
    ``--debug`` it propagates with its traceback. Typer/click exits and usage errors pass through."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except (typer.Exit, typer.Abort, KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:  # anything else: one line, no traceback, unless --debug
            # click's usage errors (typer vendors click: match by class name) exit 2 as before
            if DEBUG["enabled"] or any(c.__name__ == "ClickException" for c in type(e).__mro__):
                raise
            _, err = consoles()
            fail(err, f"{type(e).__name__}: {e}\n(an unexpected error: run again as `onnxport --debug "
                 "COMMAND ...` for the traceback, and report it)", EXIT_EXPORT_FAILED)

    return wrapper


def fail(err: Console, message: str, code: int) -> NoReturn:
    """Print ``Error: message`` in red on ``err`` and exit with ``code``."""
    err.print(Text(f"Error: {message}", style="bold red"))
    raise typer.Exit(code)


@dataclasses.dataclass
class Progress:
    """Shows which step runs: a spinner on a terminal, one plain line per step otherwise (CI).

    Use :meth:`phase` around a block of the CLI's own, or pass the object as ``export(progress=)``:
    each step the orchestrator starts closes the previous one (:meth:`close` closes the last).
    """

    console: Console
    _open: Any = dataclasses.field(default=None, repr=False)

    @contextlib.contextmanager
    def phase(self, text: str) -> Iterator[None]:
        """Show ``text`` while the block runs (on a terminal, then a check mark and the seconds)."""
        self(text)
        try:
            yield
        finally:
            self.close()

    def __call__(self, step: str) -> None:
        """A step starts (the previous one, if any, is done)."""
        self.close()
        text = STEP_LABELS.get(step, step)
        if not self.console.is_terminal:
            self.console.print(f"{text}...", markup=False, highlight=False)
            return
        status = self.console.status(f"{text}…")
        status.start()
        self._open = (text, time.perf_counter(), status)

    def close(self) -> None:
        """Mark the running step done (on a terminal: a check mark and its seconds)."""
        if self._open is None:
            return
        text, start, status = self._open
        self._open = None
        status.stop()
        self.console.print(Text.assemble(("✓ ", "green"), f"{text} ({time.perf_counter() - start:.1f} s)"))


def add_row(table: Table, *cells: object) -> None:
    """Add a row with every cell as plain text (``[batch, 4]`` is not rich markup)."""
    table.add_row(*(c if isinstance(c, Text) else Text(str(c)) for c in cells))


def format_dtype(dtype: ir.DataType | None) -> str:
    """``int64``, ``float32``, ... (numpy names)."""
    if dtype is None:
        return "?"
    try:
        return str(dtype.numpy().name)
    except (TypeError, ValueError):
        return dtype.name.lower()


def format_shape(shape: ir.Shape | None) -> str:
    """``[batch, sequence, 384]``: symbolic dims by name, ``?`` when unknown."""
    if shape is None:
        return "?"
    dims = [str(d) if isinstance(d, int) else (d.value or "?") for d in shape]
    return "[" + ", ".join(dims) + "]"


def format_bytes(size: int) -> str:
    """Decimal units, as Hugging Face shows model sizes: ``90.9 MB``."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def value_rows(values: Sequence[ir.Value]) -> list[tuple[str, str, str]]:
    """``(name, dtype, shape)`` of graph inputs or outputs."""
    return [(v.name or "?", format_dtype(v.dtype), format_shape(v.shape)) for v in values]


def text_table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows as aligned, space-separated columns (plain text, stable in logs and tests)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip()
        for row in rows
    ]


__all__ = [
    "EXIT_EXPORT_FAILED",
    "EXIT_USAGE",
    "DEBUG",
    "Progress",
    "guarded",
    "add_row",
    "consoles",
    "fail",
    "format_bytes",
    "format_dtype",
    "format_shape",
    "text_table",
    "value_rows",
]
