"""A wall-clock budget for an optional capture attempt (``signal.setitimer``, main thread only).

A retry that may fix a capture (torch.export's own size rule after a size-oblivious mismatch,
:func:`onnxport.capture.strategies.capture`) can also spin in sympy for many minutes where the
first attempt failed in seconds (Mask2Former's Swin backbone: over 9 min in ``sympy.simplify``).
Under :func:`time_limit` the attempt raises :class:`OutOfTime` once its budget is spent, and the
original failure is reported. Python delivers the signal between bytecodes, so torch's and
sympy's pure-Python loops are interrupted and their ``finally`` blocks (onnxport's patches
restored) run. Off the main thread, on platforms without ``SIGALRM``, or while the process already
has a real-time timer set, the attempt runs without a budget.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class OutOfTime(BaseException):  # noqa: N818
    """The budget of :func:`time_limit` is spent (a ``BaseException``, so that no ``except
    Exception`` inside torch or sympy swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`OutOfTime` in the body after ``seconds`` of wall time (module docstring)."""
    if (threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM")
            or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise OutOfTime(f"stopped after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


__all__ = ["OutOfTime", "time_limit"]
