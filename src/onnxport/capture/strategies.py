"""Capture an ``nn.Module`` as an ``ExportedProgram`` with torch.export, trying strategies in order.

The order follows torch.onnx's ``_capture_strategies.py``: non-strict first (traces Python as is), then
strict (TorchDynamo bytecode analysis). Every attempt is recorded for the report.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.fx.experimental._config
from torch.export import ExportedProgram

from onnxport.errors import CaptureError, user_source_line


@dataclasses.dataclass
class Attempt:
    """One capture attempt: strategy name, seconds taken, and the error if it failed."""

    strategy: str
    seconds: float
    error: BaseException | None = None
    traceback: str | None = None

    @property
    def success(self) -> bool:
        return self.error is None


def _size_oblivious() -> Any:
    """Do not specialize dims of size 0/1 in the example inputs (a batch of 1 stays dynamic), as
    torch.onnx's ``_capture_strategies.py`` does with ``backed_size_oblivious``."""
    return torch.fx.experimental._config.patch(backed_size_oblivious=True)


def _nonstrict(model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any) -> ExportedProgram:
    with _size_oblivious():
        return torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)


def _strict(model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any) -> ExportedProgram:
    with _size_oblivious():
        return torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=True)


STRATEGIES: tuple[tuple[str, Callable[..., ExportedProgram]], ...] = (
    ("torch.export.export(strict=False)", _nonstrict),
    ("torch.export.export(strict=True)", _strict),
)


def _first_cause(error: BaseException, max_lines: int = 8) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    shown = "\n".join(lines[:max_lines]) + ("\n..." if len(lines) > max_lines else "")
    return f"{type(error).__name__}: {shown}"


def capture(
    model: torch.nn.Module,
    args: tuple,
    kwargs: dict,
    dynamic_shapes: Any,
    attempts: list[Attempt],
) -> ExportedProgram:
    """Run the capture strategies until one succeeds; record each in ``attempts``.

    Raises:
        CaptureError: Every strategy failed; the message gives the first strategy's cause.
    """
    for name, strategy in STRATEGIES:
        start = time.perf_counter()
        try:
            ep = strategy(model, args, kwargs, dynamic_shapes)
        except Exception as e:  # recorded and re-raised below as CaptureError
            attempts.append(Attempt(name, time.perf_counter() - start, e, traceback.format_exc()))
            if _is_user_error(e):
                break
            continue
        attempts.append(Attempt(name, time.perf_counter() - start))
        return ep
    first = attempts[0].error
    assert first is not None
    tried = ", ".join(a.strategy for a in attempts)
    raise CaptureError(
        f"torch.export could not capture the model (tried {tried}).\n"
        f"First cause: {_first_cause(first)}\n"
        f"{_source_hint(first)}"
        "Fix the model code named above, or check that args/kwargs/dynamic_shapes match forward()."
    ) from first


def _is_user_error(error: BaseException) -> bool:
    """Errors that another strategy cannot fix (wrong arguments, bad dynamic_shapes)."""
    from torch._dynamo.exc import UserError

    if isinstance(error, TypeError) and "argument" in str(error):
        return True
    return isinstance(error, UserError) and "dynamic_shapes" in str(error)


def _source_hint(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    user = [f for f in frames if "site-packages/torch" not in f.filename and "onnxport" not in f.filename]
    if not user:
        return ""
    f = user[-1]
    return f'Source: File "{f.filename}", line {f.lineno}, in {f.name}\n  {f.line}\n'


__all__ = ["Attempt", "capture", "user_source_line"]
