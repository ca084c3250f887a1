"""What happened during one export, step by step: read by the report, the CLI and ``ONNXProgram``.

A leaf module: every layer may record steps without importing the orchestrator. The step checklist
follows torch.onnx's ``torch/onnx/_internal/exporter/_reporting.py`` (one line per step, its time
and its error).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Called with a step's name when it starts (the CLI shows it as progress).
ProgressCallback = Callable[[str], None]


@dataclasses.dataclass
class Step:
    """One pipeline step: its name, seconds taken, and what went wrong if it failed."""

    name: str
    seconds: float = 0.0
    ok: bool = True
    detail: str = ""


@dataclasses.dataclass
class ExportStatus:
    """What happened during one export, step by step (read by the report and the CLI).

    Attributes:
        steps: Every step run, in order, with seconds (wall clock) and errors.
        capture_attempts: The ``capture.strategies.Attempt`` of each torch.export strategy tried.
        decomposed: Whether ``run_decompositions`` ran (else the fast path).
        error: The exception that ended the export, if any.
        verification: The ``verify.compare.VerificationResult`` when verification ran.
        captured_program, decomposed_program: The ExportedProgram before/after decomposition.
        unsupported: The pre-flight rows (ops without translation).
        program: The ONNXProgram once built (the report reads it when verification fails).
        files: The files the save step wrote (the model, and its external data file if any).
        progress: Called with each step's name as it starts (``None``: silent).
    """

    steps: list[Step] = dataclasses.field(default_factory=list)
    capture_attempts: list[Any] = dataclasses.field(default_factory=list)
    decomposed: bool = False
    error: BaseException | None = None
    verification: Any = None
    captured_program: Any = None
    decomposed_program: Any = None
    unsupported: list[Any] = dataclasses.field(default_factory=list)
    program: Any = None
    files: list[Path] = dataclasses.field(default_factory=list)
    progress: ProgressCallback | None = dataclasses.field(default=None, repr=False, compare=False)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[Step]:
        """Record the block as step ``name`` (seconds, and the error if it raises)."""
        step = Step(name)
        self.steps.append(step)
        if self.progress is not None:
            self.progress(name)
        start = time.perf_counter()
        try:
            yield step
        except BaseException as e:
            step.ok = False
            step.detail = f"{type(e).__name__}: {e}"
            self.error = e
            raise
        finally:
            step.seconds = time.perf_counter() - start

    def record(self, step: Step) -> None:
        """Append a step measured elsewhere (the verification's checks)."""
        self.steps.append(step)

    @property
    def total_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)


__all__ = ["ExportStatus", "ProgressCallback", "Step"]
