"""Output validation as Optimum does it: run eager and onnxruntime on fresh inputs (other shapes
than the export's) and check every output's shape and max abs difference against ``atol``."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

DEFAULT_ATOL = 1e-4


@dataclasses.dataclass
class OutputCheck:
    """One output of one component on one input set.

    Attributes:
        component: ``model``, ``encoder_model`` or ``decoder_model``.
        inputs: The input sizes (``batch=3 sequence=5 past=0``).
        output: The graph output name.
        max_abs_diff: Over positions where eager is finite (``inf`` on a shape mismatch).
        atol: The tolerance.
        shape: The ONNX output's shape.
    """

    component: str
    inputs: str
    output: str
    max_abs_diff: float
    atol: float
    shape: tuple[int, ...]
    shape_ok: bool = True

    @property
    def passed(self) -> bool:
        return self.shape_ok and self.max_abs_diff <= self.atol


def compare_outputs(
    component: str,
    inputs: str,
    names: Sequence[str],
    actual: Sequence[torch.Tensor],
    expected: Sequence[torch.Tensor],
    atol: float,
) -> list[OutputCheck]:
    """One :class:`OutputCheck` per output (NaN where eager is NaN is ignored, as eager's own
    value is undefined there)."""
    checks = []
    for name, a, e in zip(names, actual, expected, strict=True):
        if a.shape != e.shape:
            checks.append(
                OutputCheck(component, inputs, name, float("inf"), atol, tuple(a.shape), False)
            )
            continue
        a64, e64 = a.double(), e.double()
        finite = torch.isfinite(e64)
        diff = (a64 - e64).abs()
        bad = finite & ~torch.isfinite(a64)
        worst = float("inf") if bad.any() else (float(diff[finite].max()) if finite.any() else 0.0)
        checks.append(OutputCheck(component, inputs, name, worst, atol, tuple(a.shape)))
    return checks


def eager(module: torch.nn.Module, inputs: dict[str, Any]) -> list[torch.Tensor]:
    """The module's outputs as a flat tensor list."""
    with torch.no_grad():
        out = module(**inputs)
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def describe(feeds: dict[str, Any]) -> str:
    """``input_ids 3x5, past 0``: the first input's shape and the past length (cache models)."""
    name, first = next(iter(feeds.items()))
    text = f"{name} {'x'.join(str(d) for d in first.shape)}"
    past = feeds.get("past_key_values")
    if past:
        text += f", past {past[0][0].shape[2]}"
    return text
