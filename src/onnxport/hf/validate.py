"""Output validation as Optimum does it: run eager and onnxruntime on fresh inputs (other shapes
than the export's) and compare every output with :func:`onnxport.verify.compare.compare_tensors`,
onnxport's one comparison (shape, dtype, values; NaN-aware), with its tolerance table
(:data:`onnxport.verify.compare.TOLERANCES`) or, when ``atol`` is given, Optimum's rule: max abs
difference ≤ ``atol`` (``optimum/exporters/onnx/convert.py``, ``validate_model_outputs``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import onnx
import torch

from onnxport.errors import VerificationError
from onnxport.hf.eager import run as run_eager
from onnxport.metadata import KEY_STACK_TRACE
from onnxport.runtime import refusal_parts
from onnxport.verify import referee
from onnxport.verify.compare import OutputComparison, compare_tensors
from onnxport.verify.ties import index_ordered, kept_state

# The hf exporter's default: the shared table (float32: rtol 1e-3, atol 1e-4).
DEFAULT_ATOL: float | None = None


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """An ``atol`` with a relative part: ``|onnx - eager| ≤ atol + rtol·|eager|`` elementwise."""

    atol: float
    rtol: float


# Weights exported in bfloat16/float16: eager CPU rounds every half op, onnxruntime's CPU provider
# computes most of them in float32 (passes/half_compute.py), so outputs differ by a few roundings
# of the output's own magnitude: 0.1 absolute (small values) plus 2% (two bfloat16 steps, 2⁻⁷ each:
# a logit near 20 is on a grid of 0.125).
HALF_TOLERANCE = Tolerance(0.1, 2e-2)


def tolerance_for(atol: float | None, weights: set[torch.dtype]) -> float | Tolerance | None:
    """``atol``, or :data:`HALF_TOLERANCE` when it is ``None`` and the exported graph keeps
    half-precision ``weights`` (the one rule of both hf export paths)."""
    return HALF_TOLERANCE if atol is None and weights & {torch.bfloat16, torch.float16} else atol


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
    atol: float | Tolerance | None = None,
    rerun: referee.Rerun | None = None,
) -> list[OutputCheck]:
    """One :class:`OutputCheck` per output of component ``where[0]`` on input set ``where[1]``
    (``atol``: ``None``, the tolerance table; a number, Optimum's max abs difference; a
    :class:`Tolerance`, with a relative part); with ``rerun`` (:func:`eager_rerun`), a float32 output beyond tolerance is refereed
    (:mod:`onnxport.verify.referee`: is the difference float32 rounding?).

    Raises:
        VerificationError: The number of outputs differs from eager's.
    """
    if len(actual) != len(expected):
        raise VerificationError(
            f"{where[0]} returned {len(actual)} outputs on {where[1]}; eager returned {len(expected)}."
        )
    rtol: float | None = None if atol is None else 0.0
    if isinstance(atol, Tolerance):
        rtol, atol = atol.rtol, atol.atol
    comparisons = [compare_tensors(name, e, a, rtol, atol) for name, a, e in zip(names, actual, expected)]
    referee.settle(comparisons, expected, actual, rerun)
    return [OutputCheck(*where, c.name, c.max_abs_diff, c.atol, tuple(a.shape), c.expected_shape == c.actual_shape, c)
            for c, a in zip(comparisons, actual)]


def eager_rerun(module: torch.nn.Module, inputs: dict[str, Any]) -> referee.Rerun:
    """The ``rerun`` of :func:`compare_outputs`: ``module`` on ``inputs`` again, through :func:`eager`."""
    return referee.Rerun(module, (), inputs, lambda m, _, k: eager(m, k))


def eager(module: torch.nn.Module, inputs: dict[str, Any]) -> list[torch.Tensor]:
    """The module's outputs as a flat tensor list.

    Raises:
        HFError: The module raised (:func:`onnxport.hf.eager.run`).
    """
    # ties in ONNX TopK's order, from the model's state before the run (onnxport.verify.ties)
    with kept_state(module):
        out = run_eager(f"on the validation inputs ({describe(inputs)})", lambda: index_ordered(lambda: module(**inputs)))
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def describe(feeds: dict[str, Any]) -> str:
    """``input_ids 3x5, past 0``: the first input's shape and the past length (cache models)."""
    name, first = next(iter(feeds.items()))
    text = f"{name} {'x'.join(str(d) for d in first.shape)}"
    past = feeds.get("past_key_values")
    if past:
        text += f", past {past[0][0].shape[2]}"
    return text


def refusal(path: Path, error: BaseException, component: str, inputs: str) -> VerificationError:
    """The error for onnxruntime refusing to run the saved ``component`` (``path``, read without
    its external data) on fresh inputs: onnxruntime's reason, the ONNX node it names and the source
    line that node was traced from (its ``pkg.torch.onnx.stack_trace`` metadata)."""
    reason, op_type, name = refusal_parts(error)
    lines = [f"onnxruntime refused to run {component} on fresh inputs ({inputs}), where eager PyTorch runs: {reason}"]
    if name:
        lines.append(f"ONNX node: {name} ({op_type})")
        try:
            proto = onnx.load(str(path), load_external_data=False)
        except Exception:  # the message above still names the node
            proto = None
        node = next((n for n in proto.graph.node if n.name == name), None) if proto else None
        trace = {p.key: p.value for p in node.metadata_props}.get(KEY_STACK_TRACE, "") if node else ""
        if trace.strip():
            where = [line.strip() for line in trace.strip().splitlines()[-2:]]
            lines.append("Traced at:\n  " + "\n    ".join(where))
    lines.append(
        "No file was written. The graph runs at the export's sizes and not at these: a size of the example "
        "is baked into it (a position table or a grid the code sized with a Python number). Export with "
        "inputs at the size you will run, or report it with the model."
    )
    return VerificationError("\n".join(lines))
