"""Compare onnxruntime results with eager PyTorch: values, shapes, dtypes, NaN-aware, per dtype.

The rules for one tensor pair (expected = eager, actual = ONNX):

- shapes and dtypes must be equal;
- finite positions pass when ``|actual - expected| <= atol + rtol * |expected|`` (:data:`TOLERANCES`
  per dtype unless ``rtol``/``atol`` are given; integer and bool tensors must be equal);
- where eager is NaN, ONNX NaN matches; a finite ONNX value there is *not* a failure but is
  counted in ``nan_ignored`` and explained: eager's own result is undefined at that position (a
  fully-masked attention row is the common case);
- where eager is ±inf, ONNX must give the same infinity;
- a NaN or infinity in ONNX where eager is finite is a failure.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from onnxport.errors import VerificationError
from onnxport.runtime import CheckResult

# The one tolerance table of onnxport, ``(rtol, atol)`` per dtype, used by ``onnxport.verify``,
# the Hugging Face validation (hf/validate.py) and the OpInfo suite (testing/opinfo.py): a finite
# position passes when |actual - expected| <= atol + rtol * |expected| (torch.testing.assert_close's
# rule). float32 allows for onnxruntime's fused kernels and reassociated sums (its atol is Optimum's
# validation default, 1e-4); float16/bfloat16 allow for ORT kernels that compute in float32 and
# round once where eager rounds at every step (bfloat16 keeps 8 mantissa bits: 2**-7 ≈ 7.8e-3 per
# rounding, torch.testing's bfloat16 rtol is 1.6e-2). Integers and bools compare exactly.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-3, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
    torch.complex64: (1e-3, 1e-4),
    torch.complex128: (1e-7, 1e-7),
}

# Upper edges of the |diff| histogram buckets; the last bucket is everything above 1e-1.
HISTOGRAM_EDGES = (0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


def tolerance(dtype: torch.dtype, rtol: float | None = None, atol: float | None = None) -> tuple[float, float]:
    """``(rtol, atol)`` for ``dtype``: the given values, else :data:`TOLERANCES` (0, 0 for exact dtypes)."""
    default = TOLERANCES.get(dtype, (0.0, 0.0))
    return (default[0] if rtol is None else rtol, default[1] if atol is None else atol)


def _bucket_labels() -> list[str]:
    labels = ["== 0"]
    for low, high in zip(HISTOGRAM_EDGES[1:], HISTOGRAM_EDGES[2:]):
        labels.append(f"[{low:.0e}, {high:.0e})")
    labels.insert(1, f"(0, {HISTOGRAM_EDGES[1]:.0e})")
    labels.append(f">= {HISTOGRAM_EDGES[-1]:.0e}")
    return labels


HISTOGRAM_LABELS = tuple(_bucket_labels())


@dataclasses.dataclass
class OutputComparison:
    """One output (or intermediate value) compared with eager.

    Attributes:
        name: The ONNX value name.
        expected_shape, actual_shape: Eager's and onnxruntime's shapes.
        expected_dtype, actual_dtype: Eager's and onnxruntime's dtypes.
        max_abs_diff: Largest ``|actual - expected|`` over positions compared (``inf`` when the
            shapes differ or a non-finite value mismatches).
        max_rel_diff: Largest ``|actual - expected| / |expected|``.
        passed: Shapes, dtypes and values all within tolerance.
        rtol, atol: The tolerance applied.
        mismatched: Number of positions beyond tolerance.
        histogram: ``(bucket label, count)`` pairs of ``|diff|`` over finite positions.
        nan_ignored: Positions where eager is NaN and ONNX is finite (not failures; see module doc).
        notes: Explanations (NaN/inf handling, shape or dtype mismatch).
    """

    name: str
    expected_shape: tuple[int, ...]
    actual_shape: tuple[int, ...]
    expected_dtype: torch.dtype
    actual_dtype: torch.dtype
    max_abs_diff: float
    max_rel_diff: float
    passed: bool
    rtol: float = 0.0
    atol: float = 0.0
    mismatched: int = 0
    histogram: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    nan_ignored: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        """One line: name, shape, dtype, max abs/rel diff, verdict."""
        verdict = "" if self.passed else "  MISMATCH"
        text = (
            f"{self.name}: shape {list(self.actual_shape)} {str(self.actual_dtype).removeprefix('torch.')}, "
            f"max abs diff {self.max_abs_diff:.3g}, max rel diff {self.max_rel_diff:.3g}"
            f" (rtol {self.rtol:g}, atol {self.atol:g}){verdict}"
        )
        return "; ".join([text, *self.notes])


def compare_tensors(
    name: str,
    expected: torch.Tensor,
    actual: torch.Tensor,
    rtol: float | None = None,
    atol: float | None = None,
    *,
    detail: bool = True,
    strict_nan: bool = False,
) -> OutputComparison:
    """Compare one eager tensor with one onnxruntime tensor with the rules of this module.

    Float tensors are compared in their own precision (float64 stays float64, lower precisions in
    float32); the NaN/inf rules only cost extra passes when a non-finite value is present.

    Args:
        name: The value's name (for messages).
        expected: Eager's tensor, any shape and dtype.
        actual: onnxruntime's tensor.
        rtol, atol: Override the dtype's tolerance.
        detail: Also compute the max relative diff and the histogram (localization skips them
            for the many values that pass).
        strict_nan: A finite ONNX value where eager is NaN fails (the OpInfo suite: a single op's
            NaN is defined by its inputs); by default it is counted in ``nan_ignored``.

    Returns:
        The :class:`OutputComparison`.
    """
    e = expected.detach().cpu()
    a = actual.detach().cpu()
    r, t = tolerance(e.dtype, rtol, atol)
    result = OutputComparison(name, tuple(e.shape), tuple(a.shape), e.dtype, a.dtype, 0.0, 0.0, True, r, t)
    if result.expected_shape != result.actual_shape:
        result.passed = False
        result.max_abs_diff = result.max_rel_diff = math.inf
        result.notes.append(f"shape differs: eager {list(e.shape)}, ONNX {list(a.shape)}")
        return result
    if e.dtype != a.dtype:
        result.passed = False
        result.notes.append(f"dtype differs: eager {e.dtype}, ONNX {a.dtype}")
    if e.numel() == 0:
        return result
    if e.is_complex() or a.is_complex():
        # resolve_conj: eager may return a lazily conjugated view (fft.ifft), which view_as_real refuses
        e = torch.view_as_real(e.to(torch.complex128).resolve_conj())
        a = torch.view_as_real(a.to(torch.complex128).resolve_conj())
    if not (e.is_floating_point() or a.is_floating_point()):
        return _compare_exact(result, e, a, detail)
    work = torch.float64 if torch.float64 in (e.dtype, a.dtype) else torch.float32
    ef, af = e.to(work), a.to(work)
    if bool(torch.isfinite(ef).all()) and bool(torch.isfinite(af).all()):
        return _finish(result, (ef - af).abs(), ef.abs(), 0, detail)
    e_nan, a_nan = torch.isnan(ef), torch.isnan(af)
    e_inf, a_inf = torch.isinf(ef), torch.isinf(af)
    finite = ~(e_nan | e_inf)
    nan_ok = e_nan & a_nan
    nan_ignored = e_nan & ~a_nan & ~a_inf
    inf_ok = e_inf & (ef == af)
    bad_nonfinite = (e_nan & a_inf) | (e_inf & ~inf_ok) | (finite & (a_nan | a_inf))
    if strict_nan:
        bad_nonfinite |= nan_ignored
        nan_ignored = torch.zeros_like(nan_ignored)
    result.nan_ignored = int(nan_ignored.sum())
    n_nan = int(e_nan.sum())
    if n_nan:
        result.notes.append(
            f"eager is NaN at {n_nan} position(s): ONNX is NaN at {int(nan_ok.sum())}, finite at "
            f"{result.nan_ignored} (eager's own result is undefined there, e.g. a fully-masked "
            "attention row: NaN matches NaN, a finite ONNX value is not counted as a mismatch)"
        )
    n_inf = int(e_inf.sum())
    if n_inf:
        result.notes.append(f"eager is ±inf at {n_inf} position(s): ONNX matches at {int(inf_ok.sum())}")
    onnx_only = int((finite & (a_nan | a_inf)).sum())
    if onnx_only:
        result.notes.append(f"ONNX is NaN/inf at {onnx_only} position(s) where eager is finite")
    both_finite = finite & ~(a_nan | a_inf)
    result = _finish(result, (ef - af).abs()[both_finite], ef.abs()[both_finite], int(bad_nonfinite.sum()), detail)
    if bad_nonfinite.any():
        result.max_abs_diff = result.max_rel_diff = math.inf
    return result


def _finish(result: OutputComparison, diff: torch.Tensor, ref: torch.Tensor, bad: int, detail: bool) -> OutputComparison:
    """Fill max diffs, mismatch count, histogram and verdict from finite ``|diff|`` and ``|expected|``."""
    if diff.numel():
        result.max_abs_diff = float(diff.max())
        if detail:
            result.max_rel_diff = float((diff / ref.clamp_min(1e-12)).max())
            result.histogram = histogram(diff)
    beyond = diff > (result.atol + result.rtol * ref)
    result.mismatched = int(beyond.sum()) + bad
    if result.mismatched and not detail and diff.numel():  # a failure always gets the detail
        result.max_rel_diff = float((diff / ref.clamp_min(1e-12)).max())
        result.histogram = histogram(diff)
    result.passed = result.passed and result.mismatched == 0
    return result


def _compare_exact(result: OutputComparison, e: torch.Tensor, a: torch.Tensor, detail: bool) -> OutputComparison:
    """Integer and bool tensors: equal or not (the diff is reported as a float for information)."""
    if e.dtype == torch.bool or a.dtype == torch.bool:
        e, a = e.to(torch.int64), a.to(torch.int64)
    diff = (e.to(torch.int64) - a.to(torch.int64)).abs().to(torch.float64)
    return _finish(result, diff, e.abs().to(torch.float64), 0, detail)


def histogram(diff: torch.Tensor) -> list[tuple[str, int]]:
    """``(label, count)`` of ``|diff|`` values per decade bucket (see :data:`HISTOGRAM_LABELS`)."""
    if diff.numel() == 0:
        return []
    flat = diff.reshape(-1)
    zero = int((flat == 0).sum())
    edges = torch.tensor(HISTOGRAM_EDGES[1:], dtype=flat.dtype)
    # bucket 0: (0, 1e-7), 1: [1e-7, 1e-6), ..., last: >= 1e-1; zeros land in bucket 0 and are moved.
    buckets = torch.bucketize(flat, edges, right=True)
    counts = torch.bincount(buckets, minlength=len(HISTOGRAM_EDGES)).tolist()
    counts[0] -= zero
    return [(label, c) for label, c in zip(HISTOGRAM_LABELS, [zero, *counts]) if c]


@dataclasses.dataclass
class InputSetResult:
    """The comparison of every output on one set of inputs.

    Attributes:
        label: ``"example inputs"``, ``"generated: batch=3, sequence=9"`` or ``"inputs[i]"``.
        shapes: Input name → shape fed.
        outputs: One :class:`OutputComparison` per output.
    """

    label: str
    shapes: dict[str, tuple[int, ...]]
    outputs: list[OutputComparison]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outputs)


@dataclasses.dataclass
class VerificationResult:
    """Everything :func:`onnxport.verify` found.

    Attributes:
        input_sets: One :class:`InputSetResult` per input set (the example inputs first).
        checks: The model checks run (checker, onnxruntime load).
        localization: With ``localize=True``: a :class:`onnxport.verify.localize.Localization`.
        sessions: onnxruntime sessions created (1 per verification, with or without localization).
    """

    input_sets: list[InputSetResult]
    checks: list[CheckResult] = dataclasses.field(default_factory=list)
    localization: Any = None
    sessions: int = 0

    @property
    def outputs(self) -> list[OutputComparison]:
        """The comparisons on the example inputs (the first input set)."""
        return self.input_sets[0].outputs if self.input_sets else []

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.input_sets) and all(c.passed for c in self.checks)

    @property
    def max_abs_diff(self) -> float:
        return max((o.max_abs_diff for s in self.input_sets for o in s.outputs), default=0.0)

    def summary(self) -> str:
        """Plain-text lines: per input set and output, then the localized node if any."""
        lines = []
        for check in self.checks:
            lines.append(f"{check.name}: {'ok' if check.passed else 'FAILED'}{' - ' + check.detail if check.detail else ''}")
        for s in self.input_sets:
            lines.append(f"[{s.label}] " + ", ".join(f"{k} {list(v)}" for k, v in s.shapes.items()))
            lines.extend("  " + o.summary() for o in s.outputs)
        if self.localization is not None:
            lines.append(self.localization.summary())
        return "\n".join(lines)


def compare_outputs(
    names: Sequence[str],
    expected: Sequence[torch.Tensor],
    actual: Sequence[torch.Tensor],
    rtol: float | None = None,
    atol: float | None = None,
) -> list[OutputComparison]:
    """Compare outputs pairwise (names from the ONNX graph).

    Raises:
        VerificationError: The number of outputs differs.
    """
    if len(expected) != len(actual):
        raise VerificationError(f"The ONNX model returned {len(actual)} outputs; eager returned {len(expected)}.")
    return [compare_tensors(n, e, a, rtol, atol) for n, e, a in zip(names, expected, actual)]


__all__ = [
    "HISTOGRAM_LABELS",
    "TOLERANCES",
    "CheckResult",
    "InputSetResult",
    "OutputComparison",
    "VerificationResult",
    "compare_outputs",
    "compare_tensors",
    "histogram",
    "tolerance",
]
