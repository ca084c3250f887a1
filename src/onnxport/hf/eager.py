"""The transformers model run in eager PyTorch (cache probes, validation references), its failures
raised as onnxport's :class:`~onnxport.errors.HFError` with the source line they came from.

A model that cannot run in eager mode cannot be exported (a config whose head counts do not fit
its attention, a checkpoint of another architecture...); the error names the exception, what
onnxport was running it for and the innermost frame outside torch and onnxport.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

from onnxport.capture.strategies import source_line
from onnxport.errors import HFError, OnnxportError

T = TypeVar("T")


def run(purpose: str, fn: Callable[[], T]) -> T:
    """``fn()`` under ``torch.no_grad()``.

    Args:
        purpose: What the run is for, completing "... in eager PyTorch <purpose>".

    Raises:
        HFError: ``fn`` raised anything but an onnxport error (those pass through unchanged).
    """
    try:
        with torch.no_grad():
            return fn()
    except OnnxportError:
        raise
    except Exception as e:
        text = str(e).strip()
        first = text.splitlines()[0] if text else ""
        where = source_line(e)
        raise HFError(
            f"The model raised {type(e).__name__} in eager PyTorch {purpose}: {first}\n"
            + (f"Source:\n  {where}\n" if where else "")
            + "onnxport exports what runs in eager mode: check the model's config (head counts, "
            "sizes) and the code at that line."
        ) from e
