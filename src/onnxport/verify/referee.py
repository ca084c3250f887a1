"""Referees for float outputs that miss the tolerance: is the difference rounding?

Two float32 computations of one network differ by their rounding: onnxruntime's kernels sum in
other orders than PyTorch's, and a deep stack (random weights, a 12-layer ViT feeding a box head's
sigmoid) amplifies the difference past a fixed tolerance with neither result wrong. On OWL-ViT's
default config (random weights, a 768x768 image) onnxruntime and eager ``pred_boxes`` differ by up
to 2.9e-3 (beyond rtol 1e-3 / atol 1e-4) while onnxruntime is the closer of the two to a float64
run in most draws; the error sits in the one or two boxes whose sigmoid is not saturated.

When a float32 output misses the tolerance, the model is run again, and the output passes when one
of two referees finds the difference within float32 rounding:

1. **float64** (the model run with float64 copies of its float32 weights and inputs): PyTorch's
   accuracy checker's rule (``torch._dynamo.utils.same`` with ``fp64_ref``): RMSE(ONNX, fp64) ≤
   multiplier × RMSE(eager, fp64) + atol / 10, the multiplier 2, or 3 under 1000 elements, and
   onnxport's same bound on the largest error (multiplier 3) so that a few wrong positions cannot
   hide in the mean. It judges errors spread over many positions (an LM's logits).
2. **one-ulp perturbations** (when the model has float32 inputs): eager float32 runs
   :data:`PERTURBATIONS` times with every float32 input moved by one ulp in a random direction
   (``torch.nextafter``); σ, each position's RMS move, is the output's sensitivity to rounding.
   The output passes when RMS(ONNX - eager) ≤ :data:`ULP_MULTIPLIER` × RMS(σ) + atol / 10 and no
   position exceeds the tolerance by more than :data:`ULP_MULTIPLIER` × max(σ). It judges errors
   concentrated in a few sensitive positions, where rule 1 compares two single rounding draws. The
   statistics are pooled over positions because σ from a few runs is unreliable at any one of them:
   with σ equal to the rounding noise, 4 runs and the multiplier 8, a single sensitive position
   fails by chance in 0.5% of draws, 3 of them in 0.01% (a simulation of Gaussian draws). A
   difference below 8x the most sensitive output's rounding scale cannot be told from rounding.

Half-precision outputs (a bfloat16 or float16 model) are judged by rule 1 alone, with the model's
half parameters, buffers and inputs in float64 (float32 when float64 copies do not fit: 2x the
half model's bytes instead of 4x, still 2¹⁶ times finer than bfloat16): eager CPU rounds every half op to its dtype while
onnxruntime computes most of them in float32 (``passes/half_compute.py``), so a graph closer to the
exact result than eager can still miss a fixed tolerance (a tiny bfloat16 Whisper's logits: 0.114
from eager, beyond atol 0.1, with ONNX the closer of the two to float64).

The referees cost nothing when everything passes. The float64 copy is made only when it fits in
half the available memory; an output the float64 model does not return in float64 (the model
casts to float32 itself) is not judged by rule 1.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from onnxport.runtime import available_memory
from onnxport.verify.compare import OutputComparison
from onnxport.verify.ties import kept_state

# torch._dynamo.utils.same: multiplier 2.0 for float32, 3.0 for tensors under 1000 elements.
RMSE_MULTIPLIER = 2.0
SMALL_RMSE_MULTIPLIER = 3.0
SMALL_NUMEL = 1000
MAX_MULTIPLIER = 3.0
PERTURBATIONS = 4
ULP_MULTIPLIER = 8.0

# The dtypes refereed: float32 by both rules, the half dtypes by rule 1 (module doc).
FLOATS = (torch.float32, torch.float16, torch.bfloat16)

Run = Callable[[Any, tuple[Any, ...], dict[str, Any]], Sequence[torch.Tensor]]


@dataclasses.dataclass
class Rerun:
    """How to run the eager model again: ``run(module, args, kwargs)`` returns its outputs
    flattened in the order the comparisons use."""

    module: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    run: Run


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _copy_bytes(module: torch.nn.Module, dtype: torch.dtype) -> int:
    """Bytes of the module's :data:`FLOATS` parameters and buffers once copied to ``dtype``."""
    tensors = [*module.parameters(), *module.buffers()]
    return sum(t.numel() * dtype.itemsize for t in tensors if t.dtype in FLOATS)


def _map_dtypes(fn: Callable[[torch.Tensor], torch.Tensor], value: Any, dtypes: tuple[torch.dtype, ...]) -> Any:
    def one(x: Any) -> Any:
        return fn(x) if isinstance(x, torch.Tensor) and x.dtype in dtypes else x

    return torch.utils._pytree.tree_map(one, value)


def _has_float32(value: Any) -> bool:
    leaves = torch.utils._pytree.tree_leaves(value)
    return any(isinstance(x, torch.Tensor) and x.dtype == torch.float32 and x.numel() for x in leaves)


def upcast_outputs(rerun: Rerun, dtype: torch.dtype = torch.float64) -> list[torch.Tensor] | None:
    """The outputs of the module with its float32 and half-precision parameters and buffers in
    float64 (``torch.func.functional_call`` on float64 copies: the module itself is untouched) on
    the inputs of those dtypes cast to float64, or ``None`` when the module is not an
    ``nn.Module``, the copies would take more than half the available memory, or the model cannot
    run in float64. ``dtype`` float32 makes float32 copies instead (the reference of half-precision
    outputs when float64 copies do not fit)."""
    module = rerun.module
    if not isinstance(module, torch.nn.Module) or _copy_bytes(module, dtype) > available_memory() // 2:
        return None
    try:
        named = {**dict(module.named_parameters(remove_duplicate=False)),
                 **dict(module.named_buffers(remove_duplicate=False))}
        state = {n: t.detach().to(dtype) if t.dtype in FLOATS else t for n, t in named.items()}
        args, kwargs = _map_dtypes(lambda t: t.to(dtype), (tuple(rerun.args), dict(rerun.kwargs)), FLOATS)

        def call(*args: Any, **kwargs: Any) -> Any:
            return torch.func.functional_call(module, state, args, kwargs)

        with torch.no_grad(), kept_state(module):  # ``call`` is no module: rerun.run cannot keep its state
            return list(rerun.run(call, args, kwargs))
    except Exception:  # the model cannot run in float64 (it mixes dtypes it fixes itself): no referee
        return None


def _one_ulp(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    up = torch.rand(t.shape, generator=generator) < 0.5
    return torch.nextafter(t, torch.where(up, math.inf, -math.inf))


def perturbed_outputs(rerun: Rerun, runs: int = PERTURBATIONS) -> list[list[torch.Tensor]]:
    """``runs`` eager runs with every float32 input moved by one ulp (random directions, a fixed
    seed); empty when the inputs hold no float32 tensor or the model raises."""
    inputs = (tuple(rerun.args), dict(rerun.kwargs))
    if not _has_float32(inputs):
        return []
    generator = torch.Generator().manual_seed(0)
    outputs = []
    try:
        for _ in range(runs):
            a, k = _map_dtypes(lambda t: _one_ulp(t, generator), inputs, (torch.float32,))
            with torch.no_grad():
                outputs.append(list(rerun.run(rerun.module, a, k)))
    except Exception:  # the model refuses the moved inputs: no referee
        return []
    return outputs


def _eligible(c: OutputComparison, expected: Any, actual: Any) -> bool:
    return (not c.passed and isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)
            and expected.dtype == actual.dtype and expected.dtype in FLOATS
            and c.expected_shape == c.actual_shape and math.isfinite(c.max_abs_diff))


def _rms(x: torch.Tensor) -> float:
    return float(x.pow(2).mean().sqrt()) if x.numel() else 0.0


def judge_float64(c: OutputComparison, expected: torch.Tensor, actual: torch.Tensor, reference: torch.Tensor) -> bool:
    """Rule 1 of the module doc for one output; the errors are noted either way."""
    ref, e, a = (t.detach().to(torch.float64) for t in (reference, expected, actual))
    keep = torch.isfinite(ref) & torch.isfinite(e) & torch.isfinite(a)
    onnx_error, eager_error = (a - ref).abs()[keep], (e - ref).abs()[keep]
    if onnx_error.numel() == 0:
        return False
    rms_onnx, rms_eager = _rms(onnx_error), _rms(eager_error)
    max_onnx, max_eager = float(onnx_error.max()), float(eager_error.max())
    multiplier = SMALL_RMSE_MULTIPLIER if ref.numel() < SMALL_NUMEL else RMSE_MULTIPLIER
    within = rms_onnx <= multiplier * rms_eager + c.atol / 10 and max_onnx <= MAX_MULTIPLIER * max_eager + c.atol
    c.notes.append(f"against eager in {_name(reference.dtype)}, ONNX's max abs error is {max_onnx:.3g} (RMS {rms_onnx:.3g}), "
                   f"eager {_name(expected.dtype)}'s {max_eager:.3g} (RMS {rms_eager:.3g})"
                   + ("" if within else f": beyond {multiplier:g}x (RMS) / {MAX_MULTIPLIER:g}x (max)"))
    return within


def judge_ulps(c: OutputComparison, expected: torch.Tensor, actual: torch.Tensor, moved: Sequence[torch.Tensor]) -> bool:
    """Rule 2 of the module doc for one output; the figures are noted either way."""
    e, a = expected.detach().to(torch.float64), actual.detach().to(torch.float64)
    moves = torch.stack([m.detach().to(torch.float64) - e for m in moved])
    sigma = moves.pow(2).mean(0).sqrt()
    diff = (a - e).abs()
    keep = torch.isfinite(diff) & torch.isfinite(sigma)
    if not bool(keep.any()):
        return False
    diff, sigma, beyond = diff[keep], sigma[keep], (diff - c.atol - c.rtol * e.abs())[keep]
    rms_diff, rms_sigma, max_sigma = _rms(diff), _rms(sigma), float(sigma.max())
    within = (rms_diff <= ULP_MULTIPLIER * rms_sigma + c.atol / 10
              and float(beyond.max()) <= ULP_MULTIPLIER * max_sigma)
    c.notes.append(f"one-ulp input moves shift eager's output by {rms_sigma:.3g} RMS, {max_sigma:.3g} at most; "
                   f"ONNX differs by {rms_diff:.3g} RMS, {float(beyond.max()):.3g} at most beyond the tolerance"
                   + ("" if within else f": beyond {ULP_MULTIPLIER:g}x"))
    return within


def _repeats(how: Rerun, expected: Sequence[Any], which: Sequence[int]) -> bool:
    """Whether eager gives the same ``expected`` outputs (at positions ``which``) again: a model
    drawing noise that is not taken at the mean would pass any graph as "rounding"."""
    try:
        again = how.run(how.module, how.args, how.kwargs)
    except Exception:  # the referee's own rerun failing leaves the comparison as it was judged
        return False
    # rtol 1e-5: far above a run-to-run rounding difference, far below a fresh random draw's
    return all(i < len(again) and isinstance(again[i], torch.Tensor) and isinstance(e, torch.Tensor)
               and again[i].shape == e.shape and again[i].dtype == e.dtype
               and torch.allclose(again[i], e, rtol=1e-5, atol=1e-7, equal_nan=True)
               for i, e in zip(which, expected))


def settle(
    comparisons: Sequence[OutputComparison],
    expected: Sequence[Any],
    actual: Sequence[Any],
    rerun: Rerun | Callable[[], Rerun] | None,
) -> None:
    """Referee, in place, the float comparisons that failed (module doc); a passed one gets a
    note saying which referee passed it. ``rerun`` (or a function making it) is used only then."""
    failed = [i for i, c in enumerate(comparisons) if _eligible(c, expected[i], actual[i])]
    if not failed or rerun is None:
        return
    how = rerun if isinstance(rerun, Rerun) else rerun()
    if not _repeats(how, [expected[i] for i in failed], failed):
        for i in failed:
            comparisons[i].notes.append(
                "not refereed: eager PyTorch gives other values on the same inputs (a random draw other than "
                "a normal or uniform one, which verification takes at the mean: onnxport.draws)")
        return
    doubles = upcast_outputs(how)
    if doubles is None and any(expected[i].dtype != torch.float32 for i in failed):
        doubles = upcast_outputs(how, torch.float32)  # 2x a half model's bytes, not 4x
    # rule 2 moves float32 inputs by float32 ulps: not run for half outputs alone
    moved = perturbed_outputs(how) if any(expected[i].dtype == torch.float32 for i in failed) else []
    for i in failed:
        c = comparisons[i]
        ref = doubles[i] if doubles is not None and len(doubles) == len(comparisons) else None
        finer = (torch.float64,) if expected[i].dtype == torch.float32 else (torch.float64, torch.float32)
        if isinstance(ref, torch.Tensor) and ref.dtype in finer and tuple(ref.shape) == c.expected_shape:
            if judge_float64(c, expected[i], actual[i], ref):
                c.passed = True
                c.notes.append(f"passed as {_name(expected[i].dtype)} rounding by the {_name(ref.dtype)} referee "
                               "(onnxport.verify.referee)")
                continue
        if expected[i].dtype != torch.float32:
            continue
        runs = [m[i] for m in moved if len(m) == len(comparisons) and isinstance(m[i], torch.Tensor)
                and tuple(m[i].shape) == c.expected_shape]
        if len(runs) == PERTURBATIONS and judge_ulps(c, expected[i], actual[i], runs):
            c.passed = True
            c.notes.append("passed as float32 rounding by the one-ulp referee (onnxport.verify.referee)")


__all__ = ["PERTURBATIONS", "Rerun", "upcast_outputs", "judge_float64", "judge_ulps", "perturbed_outputs", "settle"]
