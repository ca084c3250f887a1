"""Python branches on whether activations are finite, decided as finite during capture and probes.

Models written for float16 training clamp overflowing activations only once one is not finite.
BART's encoder layer (transformers ``modeling_bart.BartEncoderLayer``, copied into 36 other model
files: mBART, Marian, Pegasus, M2M100, PLBart, Blenderbot, ...) reads::

    if hidden_states.dtype == torch.float16 and not torch.isfinite(hidden_states).all():
        hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)

A Python ``if`` on a tensor's value is a data-dependent guard: torch.export's non-strict and strict
modes refuse it, draft export specializes on the example's values, and on the streamed path
(weights on the meta device) neither the shape probes (fake tensors) nor any capture can evaluate
it: every float16 checkpoint of those families was refused ("DataDependentOutputException ... on a
probe input").

:class:`AssumedFinite` decides such a test as a run on finite activations does, without evaluating
it: the truth value (``Tensor.__bool__``) of ``isfinite(x).all()`` / ``isfinite(x).any()`` is
``True``, that of ``isinf(x)`` / ``isnan(x)`` reduced by ``.any()`` / ``.all()`` is ``False``. Only
those reductions of those predicates are decided; any other value test is left to torch.export. The
graph then holds the finite branch, which is what eager runs on any input that does not overflow
(draft export made the same choice from finite example values). Each decision's source line is
recorded (:attr:`AssumedFinite.decided`) for the export report.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_PREDICATES = {"isfinite": True, "isinf": False, "isnan": False}
_REDUCTIONS = ("all", "any")
# the attribute marking a tensor with the truth value it is decided as
_KIND = "_onnxport_finite_predicate"
_ASSUMED = "_onnxport_assumed_truth"
_TORCH = os.path.dirname(torch.__file__)


def _caller() -> str:
    """``file:line`` of the innermost frame outside torch and this module (the model's code)."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not frame.filename.startswith(_TORCH) and frame.filename != __file__:
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return "unknown source"


class AssumedFinite(TorchFunctionMode):
    """A torch function mode deciding finiteness tests as finite (module doc).

    Attributes:
        decided: ``file:line: code`` of each decided test, once per line, in order.
    """

    def __init__(self) -> None:
        super().__init__()
        self.decided: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func is torch.Tensor.__bool__ and args and hasattr(args[0], _ASSUMED):
            where = _caller()
            if where not in self.decided:
                self.decided.append(where)
            return getattr(args[0], _ASSUMED)
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if not isinstance(out, torch.Tensor) or out.dtype != torch.bool:
            return out
        if name in _PREDICATES:
            setattr(out, _KIND, name)
        elif name in _REDUCTIONS and len(args) == 1 and not kwargs and hasattr(args[0], _KIND):
            setattr(out, _ASSUMED, _PREDICATES[getattr(args[0], _KIND)])
        return out


__all__ = ["AssumedFinite"]
