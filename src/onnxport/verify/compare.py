"""Compare an ONNXProgram's onnxruntime outputs with eager PyTorch, output by output."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from onnxport.errors import VerificationError

# (rtol, atol) per dtype: float32 allows for onnxruntime's fused kernels and reassociated sums.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-3, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}


@dataclasses.dataclass
class OutputComparison:
    """One output: its name, shapes and dtypes on both sides, and the largest differences."""

    name: str
    expected_shape: tuple[int, ...]
    actual_shape: tuple[int, ...]
    expected_dtype: torch.dtype
    actual_dtype: torch.dtype
    max_abs_diff: float
    max_rel_diff: float
    passed: bool


@dataclasses.dataclass
class VerificationResult:
    """Every output's comparison; ``passed`` when all pass."""

    outputs: list[OutputComparison]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)

    @property
    def max_abs_diff(self) -> float:
        return max((o.max_abs_diff for o in self.outputs), default=0.0)

    def summary(self) -> str:
        return "\n".join(
            f"{o.name}: shape {list(o.actual_shape)} {o.actual_dtype}, max abs diff {o.max_abs_diff:.3g}"
            f"{'' if o.passed else '  MISMATCH'}"
            for o in self.outputs
        )


def eager_outputs(model: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """Run the model in eager PyTorch and flatten its outputs to tensors (pytree order)."""
    from torch.export import ExportedProgram

    module = model.module() if isinstance(model, ExportedProgram) else model
    with torch.no_grad():
        out = module(*args, **kwargs)
    return [x for x in torch.utils._pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]


def compare(names: list[str], expected: list[torch.Tensor], actual: list[torch.Tensor]) -> VerificationResult:
    """Compare values, shapes and dtypes with the tolerances in :data:`TOLERANCES`."""
    if len(expected) != len(actual):
        raise VerificationError(f"The ONNX model returned {len(actual)} outputs; eager returned {len(expected)}.")
    results = []
    for name, e, a in zip(names, expected, actual):
        e = e.detach().cpu()
        shape_ok = tuple(e.shape) == tuple(a.shape)
        dtype_ok = e.dtype == a.dtype
        if shape_ok and e.numel():
            ef, af = e.double(), a.double()
            both_nan = torch.isnan(ef) & torch.isnan(af)
            same_inf = torch.isinf(ef) & (ef == af)
            diff = (ef - af).abs().masked_fill(both_nan | same_inf, 0)
            diff = diff.nan_to_num(nan=float("inf"))
            max_abs = float(diff.max())
            max_rel = float((diff / ef.abs().clamp_min(1e-12)).max())
            rtol, atol = TOLERANCES.get(e.dtype, (0.0, 0.0))
            values_ok = bool((diff <= atol + rtol * ef.abs().nan_to_num(0)).all())
        else:
            max_abs = max_rel = 0.0 if shape_ok else float("inf")
            values_ok = shape_ok
        results.append(
            OutputComparison(name, tuple(e.shape), tuple(a.shape), e.dtype, a.dtype, max_abs, max_rel,
                             shape_ok and dtype_ok and values_ok)
        )
    return VerificationResult(results)


def verify_program(program: Any, model: Any, args: tuple, kwargs: dict, *, raise_on_mismatch: bool = False) -> VerificationResult:
    """Run ``program`` in onnxruntime and ``model`` in eager on the same inputs and compare.

    Raises:
        VerificationError: onnxruntime cannot load the model, or (``raise_on_mismatch``) an output
            differs in shape, dtype or beyond tolerance.
    """
    expected = eager_outputs(model, args, kwargs)
    actual = program(*args, **kwargs)
    names = [o.name for o in program.model.graph.outputs]
    result = compare(names, expected, actual)
    if raise_on_mismatch and not result.passed:
        raise VerificationError("The ONNX model's outputs differ from eager PyTorch:\n" + result.summary())
    return result
