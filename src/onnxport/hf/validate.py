"""Output validation as Optimum does it: run eager and onnxruntime on fresh inputs (other shapes
than the export's) and compare every output with :func:`onnxport.verify.compare.compare_tensors`,
onnxport's one comparison (shape, dtype, values; NaN-aware), with its tolerance table
(:data:`onnxport.verify.compare.TOLERANCES`) or, when ``atol`` is given, Optimum's rule: max abs
difference ≤ ``atol`` (``optimum/exporters/onnx/convert.py``, ``validate_model_outputs``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from onnxport.errors import VerificationError
from onnxport.hf.eager import run as run_eager
from onnxport.verify.compare import OutputComparison, compare_tensors

# The hf exporter's default: the shared table (float32: rtol 1e-3, atol 1e-4).
DEFAULT_ATOL: float | None = None


@dataclasses.dataclass
class OutputCheck:
    """One output of one component on one input set.

    Attributes:
        component: ``model``, ``encoder_model`` or ``decoder_model``.
        inputs: The input sizes (``input_ids 3x5, past 0``).
        output: The graph output name.
        max_abs_diff: Over positions where eager is finite (``inf`` on a shape mismatch).
        atol: The absolute tolerance applied.
        shape: The ONNX output's shape.
        shape_ok: Whether the ONNX shape equals eager's.
        comparison: The full :class:`~onnxport.verify.compare.OutputComparison`.
    """

    component: str
    inputs: str
    output: str
    max_abs_diff: float
    atol: float
    shape: tuple[int, ...]
    shape_ok: bool = True
    comparison: OutputComparison | None = None

    @property
    def passed(self) -> bool:
        if self.comparison is not None:
            return self.comparison.passed
        return self.shape_ok and self.max_abs_diff <= self.atol


def compare_outputs(
    where: tuple[str, str],
    names: Sequence[str],
    actual: Sequence[torch.Tensor],
    expected: Sequence[torch.Tensor],
    atol: float | None = None,
) -> list[OutputCheck]:
    """One :class:`OutputCheck` per output of component ``where[0]`` on input set ``where[1]``.

    Raises:
        VerificationError: The number of outputs differs from eager's.
    """
    if len(actual) != len(expected):
        raise VerificationError(
            f"{where[0]} returned {len(actual)} outputs on {where[1]}; eager returned {len(expected)}."
        )
    rtol = None if atol is None else 0.0
    checks = []
    for name, a, e in zip(names, actual, expected):
        c = compare_tensors(name, e, a, rtol, atol)
        shape_ok = c.expected_shape == c.actual_shape
        checks.append(OutputCheck(*where, name, c.max_abs_diff, c.atol, tuple(a.shape), shape_ok, c))
    return checks


def eager(module: torch.nn.Module, inputs: dict[str, Any]) -> list[torch.Tensor]:
    """The module's outputs as a flat tensor list.

    Raises:
        HFError: The module raised (:func:`onnxport.hf.eager.run`).
    """
    out = run_eager(f"on the validation inputs ({describe(inputs)})", lambda: module(**inputs))
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def describe(feeds: dict[str, Any]) -> str:
    """``input_ids 3x5, past 0``: the first input's shape and the past length (cache models)."""
    name, first = next(iter(feeds.items()))
    text = f"{name} {'x'.join(str(d) for d in first.shape)}"
    past = feeds.get("past_key_values")
    if past:
        text += f", past {past[0][0].shape[2]}"
    return text
