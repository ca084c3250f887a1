"""Capture an ``nn.Module`` as an ``ExportedProgram`` with torch.export, trying strategies in order.

The order follows torch.onnx's ``_capture_strategies.py``: non-strict first (traces Python as is), then
strict (TorchDynamo bytecode analysis), then draft export (``torch.export._draft_export``), which
gets past data-dependent guards by specializing on the example values and lists what it
specialized. Every attempt is recorded for the report; when all fail, the error names the first
real cause (data-dependent guard, unsupported Python construct, constraint violation) and the
user's source line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch._dynamo.config
import torch.fx.experimental._config
from torch._dynamo.exc import Unsupported, UserError
from torch._subclasses.fake_tensor import DataDependentOutputException, FakeTensor
from torch.export import ExportedProgram
from torch.export._draft_export import draft_export
from torch.fx.experimental.symbolic_shapes import (
    ConstraintViolationError,
    GuardOnDataDependentSymNode,
)
from torch.utils._pytree import tree_leaves

from onnxport.capture.bounds import known_dims
from onnxport.capture.fake_leaks import fake_tensors_undone
from onnxport.capture.finite import AssumedFinite
from onnxport.capture.flex import sdpa_instead_of_flex
from onnxport.capture.guard_sources import PACKAGE_DIR, model_frames
from onnxport.capture.packed import keep_packed_sequences
from onnxport.capture.patches import library_patches
from onnxport.capture.rnn import keep_recurrent_ops
from onnxport.capture.time_limit import OutOfTime, time_limit
from onnxport.errors import CaptureError, user_source_line


@dataclasses.dataclass
class Attempt:
    """One capture attempt: strategy name, seconds taken, and the error if it failed.

    ``warnings`` lists the values draft export specialized; ``assumed_finite`` the source lines of
    the finiteness tests decided as finite (:mod:`onnxport.capture.finite`)."""

    strategy: str
    seconds: float
    error: BaseException | None = None
    traceback: str | None = None
    cause: str | None = None
    source_line: str | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    assumed_finite: list[str] = dataclasses.field(default_factory=list)

    @property
    def success(self) -> bool:
        return self.error is None


@contextlib.contextmanager
def _size_oblivious(oblivious: bool = True) -> Iterator[None]:
    """Do not specialize dims of size 0/1 in the example inputs (a batch of 1 stays dynamic), as
    torch.onnx's ``_capture_strategies.py`` does with ``backed_size_oblivious`` (``oblivious=False``:
    torch.export's own rule, :func:`capture_sizes_above_one`); keep the ATen RNN
    ops whole with a dynamic sequence length (:func:`onnxport.capture.rnn.keep_recurrent_ops`) and
    packed sequences padded (:func:`onnxport.capture.packed.keep_packed_sequences`);
    replace library functions that specialize sizes (:mod:`onnxport.capture.patches`); locate guards
    at the model's lines (:func:`onnxport.capture.guard_sources.model_frames`)."""
    with (
        torch.fx.experimental._config.patch(backed_size_oblivious=oblivious),  # type: ignore[attr-defined]
        keep_recurrent_ops(),
        keep_packed_sequences(),
        library_patches(),
        model_frames(),
    ):
        yield


@contextlib.contextmanager
def uncached_fake_tensors() -> Iterator[None]:
    """Within the block, FakeTensor dispatch results are not memoized
    (``torch._dynamo.config.fake_tensor_cache_enabled``).

    The cache pays off when many ops repeat on the same static shapes (a CNN's identical blocks);
    a transformer traced with symbolic batch and sequence dims mostly builds entries it never
    hits, each checked against the shape environment. onnxport.hf captures with it off: the
    streamed export of SmolLM2-135M's shapes (two layers captured, ``hf/repeat.py``) took 3.4 s
    instead of 4.7 s (median of 4 alternating runs, ``bench/llm_speed.py --family smollm2``'s
    checkpoint). The captured program is the same either way.
    """
    with torch._dynamo.config.patch(fake_tensor_cache_enabled=False):
        yield


# ``ExportedProgram.graph_module.meta`` key: the finiteness tests :class:`AssumedFinite` decided.
ASSUMED_FINITE = "onnxport_assumed_finite"


def _nonstrict(
    model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any, oblivious: bool = True
) -> ExportedProgram:
    with _size_oblivious(oblivious), known_dims(model, dynamic_shapes), AssumedFinite() as finite:
        ep = torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    ep.graph_module.meta[ASSUMED_FINITE] = finite.decided
    return ep


def _strict(model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any) -> ExportedProgram:
    with _size_oblivious(), _quiet_guard_errors():
        return torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=True)


# TorchDynamo logs a guard it cannot create at error level, traceback included, before raising
# (``torch/_guards.py``, ``Guard.create``: a constraint violation is one). onnxport records the
# raised error and reports it (``CaptureError``, or the warning of a relaxed capture), so the log
# only repeats it, and reads as a failure when a later strategy succeeds.
_GUARD_LOGGER = "torch._guards"


@contextlib.contextmanager
def _quiet_guard_errors() -> Iterator[None]:
    """Silence :data:`_GUARD_LOGGER` for the duration, unless the user asked for torch's logs
    (``TORCH_LOGS``)."""
    logger = logging.getLogger(_GUARD_LOGGER)
    if os.environ.get("TORCH_LOGS"):
        yield
        return
    disabled = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = disabled


def _draft(model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any) -> ExportedProgram:
    with _size_oblivious(), known_dims(model, dynamic_shapes):
        return draft_export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)


def _eager_experts(model: torch.nn.Module) -> list[Any]:
    """The configs of transformers' experts modules that run the "eager" expert loop.

    transformers 5 decorates every MoE experts class with ``use_experts_implementation``
    (``transformers/integrations/moe.py``): ``forward`` dispatches on
    ``config._experts_implementation``; the instances carry ``has_gate`` and ``_is_expert_parallel``.
    """
    configs: list[Any] = []
    for module in model.modules():
        config = getattr(module, "config", None)
        if (
            hasattr(module, "_is_expert_parallel") and hasattr(module, "has_gate")
            and getattr(config, "_experts_implementation", None) == "eager"
            and all(config is not c for c in configs)
        ):
            configs.append(config)
    return configs


def _experts_as_grouped_mm(
    model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any
) -> ExportedProgram:
    """Non-strict export with transformers' "eager" expert loop replaced by "grouped_mm".

    The eager loop iterates over the experts some token selected (``for expert_idx in
    expert_hit``: a data-dependent trip count, ``Eq(u0, 0)``) and cannot be captured without
    specializing on the example's routing. ``grouped_mm`` (transformers' default) computes the same
    sums with fixed shapes: tokens sorted by expert, one grouped matmul per projection
    (``transformers::grouped_mm_fallback`` / ``aten._grouped_mm``, translated by ``ops/nn/moe.py``).
    The model's setting is restored afterwards.
    """
    configs = _eager_experts(model)
    if not configs:
        raise _NotApplicable("no transformers experts module runs the 'eager' loop")
    try:
        for config in configs:
            config._experts_implementation = "grouped_mm"
        return _nonstrict(model, args, kwargs, dynamic_shapes)
    finally:
        for config in configs:
            config._experts_implementation = "eager"


class _NotApplicable(Exception):
    """A rewrite strategy that does not apply to this model (not recorded as an attempt)."""


STRATEGIES: tuple[tuple[str, Callable[..., ExportedProgram]], ...] = (
    ("torch.export.export(strict=False)", _nonstrict),
    # Rewrites of known data-dependent constructs into equivalent fixed-shape code; each applies
    # only where it finds its construct.
    ("transformers experts 'eager' loop as 'grouped_mm', torch.export.export(strict=False)", _experts_as_grouped_mm),
    ("torch.export.export(strict=True)", _strict),
    ("torch.export._draft_export.draft_export", _draft),
)
# A constraint violation a size-oblivious capture reports for a test of a dim against 1, e.g.
# "satisfy the generated guard L['x'].size()[0] != 1" (:func:`capture_sizes_above_one`).
_SIZE_ONE_GUARD = re.compile(r"generated guard [^\n]*!= 1\b")
SIZES_ABOVE_ONE = "torch.export.export(strict=False), dynamic dims assumed above 1"
# The budget of that capture after a mismatch of symbolic sizes: at least a minute, else 4x the
# size-oblivious attempt's seconds (LTX-Video: 1.2 s then 1.5 s; Mask2Former: 17 s then > 9 min).
RETRY_MIN_SECONDS, RETRY_FACTOR = 60.0, 4.0


def capture_sizes_above_one(
    model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any, attempts: list[Attempt]
) -> ExportedProgram | None:
    """After :func:`capture` failed on guards ``size != 1`` that the declared ranges include 1 for,
    and the ranges cannot be relaxed to the code's (``Dim.DYNAMIC`` hints lose a derived dim's
    relation: ``2 * Dim("h")``), capture non-strict with torch.export's own size rule: a dynamic
    dim is assumed to be at least 2, so ``size != 1`` holds without a guard (an attention
    broadcasting a ``[batch, ...]`` tensor: AuraFlow, HunyuanVideo in diffusers 0.42, which
    ``torch.export.export`` alone captures; the example's sizes must be above 1). Records the
    attempt in ``attempts`` and warns with the guards assumed. Returns ``None`` when no attempt
    failed on such a guard, or when this capture fails too."""
    guards = sorted({m.group(0) for a in attempts if a.cause == CONSTRAINT_VIOLATION
                     for m in _SIZE_ONE_GUARD.finditer(str(a.error))})  # fmt: skip
    if not guards:
        return None
    return _capture_above_one(model, args, kwargs, dynamic_shapes, attempts, why=f"tests {'; '.join(guards)}")


def _capture_above_one(model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any,
                       attempts: list[Attempt], *, why: str, budget: float | None = None) -> ExportedProgram | None:
    """Non-strict capture without ``backed_size_oblivious`` (dynamic dims assumed above 1), recorded
    in ``attempts`` with a warning that the model ``why`` (what the size-oblivious capture met);
    ``None`` when it fails too, or takes more than ``budget`` seconds
    (:mod:`onnxport.capture.time_limit`)."""
    start = time.perf_counter()
    try:
        with fake_tensors_undone(model), time_limit(budget) if budget else contextlib.nullcontext():
            ep = _nonstrict(model, args, kwargs, dynamic_shapes, oblivious=False)
    except OutOfTime as e:  # a retry that spins in sympy: the original failure is the report
        attempts.append(Attempt(SIZES_ABOVE_ONE, time.perf_counter() - start, RuntimeError(str(e)), "", OTHER))
        return None
    except Exception as e:  # recorded; the caller raises the original failure
        attempts.append(_failed(SIZES_ABOVE_ONE, start, e))
        return None
    message = (
        f"onnxport captured the model with dynamic dims assumed above 1 (torch.export's rule): the model "
        f"{why}; at size 1 the graph runs the path of larger sizes. Check the outputs "
        "at size 1 (onnxport.verify with such inputs), or give those dims min=2."
    )
    attempts.append(Attempt(SIZES_ABOVE_ONE, time.perf_counter() - start, warnings=[message],
                            assumed_finite=ep.graph_module.meta.get(ASSUMED_FINITE, [])))  # fmt: skip
    warnings.warn(message, UserWarning, stacklevel=5)
    return ep


DATA_DEPENDENT = "data-dependent guard"
UNSUPPORTED_CONSTRUCT = "unsupported Python construct"
CONSTRAINT_VIOLATION = "constraint violation"
SHAPE_MISMATCH = "shape mismatch"
# A mismatch between sizes torch holds as expressions of the dynamic dims ("tensor a (32) must
# match tensor b ((s53//s47))"): torch could not prove the sizes equal for every size, often only
# under backed_size_oblivious (LTX-Video's ``temb.view``), or the example inputs do not fit.
SYMBOLIC_MISMATCH = "shape mismatch between symbolic sizes"
DEVICE_MISMATCH = "device mismatch"
RAISED = "exception raised in forward"
OTHER = "error"
# Causes that say what is wrong with the model, in the order they are preferred: shape and device
# mismatches come before an unsupported construct (strict mode reports the same failure as a
# "TorchRuntimeError"); an exception raised in forward comes last, since code may raise only
# because it sees FakeTensors (another strategy's unsupported construct is then the real cause).
REAL_CAUSES = (DATA_DEPENDENT, CONSTRAINT_VIOLATION, SHAPE_MISMATCH, DEVICE_MISMATCH, SYMBOLIC_MISMATCH,
               UNSUPPORTED_CONSTRUCT, RAISED)
# Causes no other strategy can fix: the shapes/devices of the inputs and weights do not fit.
MODEL_FAILURES = (SHAPE_MISMATCH, DEVICE_MISMATCH)

_DEVICE_TEXT = re.compile(r"device mismatch|(?:on|found at least two) (?:the same |different )?devices?|\bmeta\b.*\bcpu\b|\bcpu\b.*\bmeta\b", re.I)
_SHAPE_TEXT = re.compile(
    r"size mismatch|shape mismatch|cannot be multiplied|must have same reduction dim|must match the size"
    r"|shape '\[.*\]' is invalid|expected .*(?:shape|size|dim)|doesn't match the broadcast shape"
    r"|the size of tensor a|not in range for dimension|dimension out of range|split sizes add up to",
    re.I,
)
# A size printed as an expression of ShapeEnv symbols (s53, u0) in a shape-mismatch message.
_SYMBOL_TEXT = re.compile(r"[(\[,\s+*/-][su]\d+\b")
# Dynamo's report of an op that raised on fake tensors (strict mode): the op's own error, which
# non-strict capture raises as it is, not a construct Dynamo cannot trace.
_FAKE_CALL_TEXT = ("when making fake tensor call", "failed to run FX node with fake tensors")


def classify(error: BaseException) -> str:
    """The kind of a capture failure: one of :data:`REAL_CAUSES`, or ``"error"``.

    Shape and device mismatches are recognised from the messages of torch's meta kernels and
    FakeTensor (``torch/_meta_registrations.py``, ``torch/_subclasses/fake_tensor.py``); an exception
    the model raised itself is one whose traceback has a frame outside torch, or Dynamo's
    "Observed exception".
    """
    chain = _chain(error)
    for e in chain:
        if isinstance(e, (GuardOnDataDependentSymNode, DataDependentOutputException)):
            return DATA_DEPENDENT
        if isinstance(e, ConstraintViolationError) or (
            isinstance(e, UserError) and "Constraints violated" in str(e)
        ):
            return CONSTRAINT_VIOLATION
    text = "\n".join(str(e) for e in chain)
    if _DEVICE_TEXT.search(text):
        return DEVICE_MISMATCH
    if _SHAPE_TEXT.search(text):
        return SYMBOLIC_MISMATCH if _SYMBOL_TEXT.search(text) else SHAPE_MISMATCH
    for e in chain:
        if isinstance(e, Unsupported):
            if "Data-dependent" in str(e):
                return DATA_DEPENDENT
            fake_call = any(t in str(e) for t in _FAKE_CALL_TEXT)
            return RAISED if "Observed exception" in str(e) or fake_call else UNSUPPORTED_CONSTRUCT
    if not isinstance(error, UserError) and _raised_by_user(error):
        return RAISED
    return OTHER


def _raised_by_user(error: BaseException) -> bool:
    """The exception's innermost frame is the user's code (a ``raise`` in forward), not torch's."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and not _is_library_frame(frames[-1].filename)


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    e: BaseException | None = error
    while e is not None and e not in seen:
        seen.append(e)
        e = e.__cause__ or e.__context__
    return seen


def _first_cause(error: BaseException, max_lines: int = 8) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    shown = "\n".join(lines[:max_lines]) + ("\n..." if len(lines) > max_lines else "")
    return f"{type(error).__name__}: {shown}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def capture(
    model: torch.nn.Module,
    args: tuple,
    kwargs: dict,
    dynamic_shapes: Any,
    attempts: list[Attempt],
) -> ExportedProgram:
    """Run the capture strategies until one succeeds; record each in ``attempts``.

    A program from draft export is returned with a ``UserWarning`` (and ``Attempt.warnings``) for
    every value it specialized: the ONNX model then holds only the branch taken by the example
    inputs. A transformers model set to ``attn_implementation="flex_attention"`` is captured
    with ``"sdpa"`` (:func:`onnxport.capture.flex.sdpa_instead_of_flex`).

    Args:
        model: The module to capture (not modified: attributes a strategy left holding fake
            tensors are put back, :mod:`onnxport.capture.fake_leaks`).
        args: Positional example inputs.
        kwargs: Keyword example inputs.
        dynamic_shapes: As for ``torch.export.export``.
        attempts: Receives one :class:`Attempt` per strategy tried.

    Returns:
        The first ``ExportedProgram`` a strategy produced.

    Raises:
        CaptureError: Every strategy failed; the message names the first real cause (its kind
            and the user's source line) and lists every attempt.
    """
    with sdpa_instead_of_flex(model):
        return _first_capture(model, args, kwargs, dynamic_shapes, attempts)


def _first_capture(model: torch.nn.Module, args: tuple, kwargs: dict, dynamic_shapes: Any,
                   attempts: list[Attempt]) -> ExportedProgram:
    """:func:`capture`'s loop over :data:`STRATEGIES`."""
    constrained = False
    for name, strategy in STRATEGIES:
        if constrained and strategy is not _strict:
            continue
        start = time.perf_counter()
        try:
            with fake_tensors_undone(model):
                ep = strategy(model, args, kwargs, dynamic_shapes)
        except _NotApplicable:
            continue
        except Exception as e:  # recorded and re-raised below as CaptureError
            attempts.append(_failed(name, start, e))
            if attempts[-1].cause == CONSTRAINT_VIOLATION and _is_user_error(e) and not constrained:
                # Dynamo traces len(tensor) and int(size) symbolically where non-strict mode
                # specializes them (RT-DETR's batch_size = len(source_flatten)): strict mode only,
                # never draft export, which would hide the violation behind a specialized graph.
                constrained = True
                continue
            if _is_user_error(e) or attempts[-1].cause in MODEL_FAILURES:
                break
            if attempts[-1].cause == SYMBOLIC_MISMATCH and strategy is _nonstrict:
                failed = attempts[-1]
                budget = max(RETRY_MIN_SECONDS, RETRY_FACTOR * failed.seconds)
                relaxed = _capture_above_one(model, args, kwargs, dynamic_shapes, attempts,
                                             why=f"met {_first_line(e)}", budget=budget)
                if relaxed is not None:
                    return relaxed
                if _fails_in_eager(model, args, kwargs):  # the inputs do not fit: a plain mismatch
                    failed.cause = SHAPE_MISMATCH
                break  # strict mode and draft export reason about the sizes as the first attempt did
            continue
        attempt = Attempt(name, time.perf_counter() - start, warnings=_draft_warnings(ep),
                          assumed_finite=ep.graph_module.meta.get(ASSUMED_FINITE, []))
        attempts.append(attempt)
        if attempt.warnings:
            warnings.warn(
                "onnxport captured the model with draft export, which specialized on the example "
                "inputs:\n" + "\n".join(attempt.warnings),
                UserWarning,
                stacklevel=3,
            )
        return ep
    raise capture_error(attempts)


def _fails_in_eager(model: torch.nn.Module, args: tuple, kwargs: dict) -> bool:
    """``forward`` raises on the example inputs (run without autograd, after every capture attempt
    failed, so a state it changes matters to no capture); ``False`` for fake or meta tensors."""
    tensors = [*tree_leaves((args, kwargs)), *model.parameters(), *model.buffers()]
    if any(isinstance(t, torch.Tensor) and (t.is_meta or isinstance(t, FakeTensor)) for t in tensors):
        return False
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    except Exception:  # any failure: the inputs do not fit the model
        return True
    return False


def _failed(name: str, start: float, error: BaseException) -> Attempt:
    """The failed attempt of strategy ``name`` started at ``start`` (``time.perf_counter``), inside
    the ``except`` that caught ``error``."""
    return Attempt(name, time.perf_counter() - start, error, traceback.format_exc(), classify(error), source_line(error))


def _rank(attempt: Attempt) -> int:
    """An attempt's cause in :data:`REAL_CAUSES` order; strict mode's unsupported construct in
    onnxport's own code (a wrapper class defined in a function: ``Invalid call to __build_class__``)
    says nothing about the model and ranks after an exception the model raised (ProphetNet's
    ``use_cache is only supported for decoder_input_ids of length 1``)."""
    if attempt.cause == UNSUPPORTED_CONSTRUCT and _in_onnxport(attempt.source_line):
        return len(REAL_CAUSES)
    return REAL_CAUSES.index(attempt.cause or OTHER)


def _in_onnxport(source_line: str | None) -> bool:
    """Whether a source line (``File "...", line N, in f``) is in onnxport's own package."""
    return bool(source_line) and f'File "{PACKAGE_DIR}{os.sep}' in str(source_line)


def capture_error(attempts: list[Attempt]) -> CaptureError:
    """The error for a capture where every attempt failed: first real cause, source line, attempts."""
    failed = [a for a in attempts if a.error is not None]
    real = [a for a in failed if a.cause in REAL_CAUSES]
    # the most telling cause (REAL_CAUSES order), the earliest attempt among equals
    first = min(real, key=_rank) if real else failed[0]
    assert first.error is not None
    tried = "\n".join(f"  - {a.strategy}: {_first_line(a.error)}" for a in failed if a.error)
    where = f"Source:\n  {first.source_line}\n" if first.source_line else ""
    advice = {
        DATA_DEPENDENT: "Control flow or shapes depend on tensor values: use torch.cond, "
        "torch._check, or compute the value outside the model.",
        UNSUPPORTED_CONSTRUCT: "Rewrite the Python construct named above in plain torch code.",
        SYMBOLIC_MISMATCH: "If the example inputs run in eager, torch.export could not show these "
        "sizes equal for every size of the dynamic dims: the code relates dims declared independent. "
        "Declare fewer dims dynamic, use one Dim object for dims that are always equal, or give the "
        "dims the ranges the code supports (Dim(min=..., max=...)). If they do not, pass inputs of "
        "the shapes forward() expects.",
        SHAPE_MISMATCH: "The example inputs' shapes do not fit the model's weights or ops at the "
        "source line above: pass inputs of the shapes forward() expects.",
        DEVICE_MISMATCH: "Inputs, parameters and buffers are on different devices (or on the meta "
        "device): move the model and the example inputs to one real device, e.g. model.to('cpu').",
        RAISED: "forward() raised this exception on the example inputs (source line above): fix "
        "the inputs or the code; onnxport can only export what runs in eager PyTorch.",
        CONSTRAINT_VIOLATION: "dynamic_shapes declares a dim dynamic that the code specializes: "
        "mark it static or fix the code that depends on its value.",
    }.get(first.cause or OTHER, "Fix the model code named above, or check that "
          "args/kwargs/dynamic_shapes match forward().")
    expression = guard_expression(first.error) if first.cause == DATA_DEPENDENT else None
    if expression:
        where = f"Data-dependent expression: {expression}\n{where}"
    error = CaptureError(
        f"torch.export could not capture the model: {first.cause}; first cause ({first.strategy}):\n"
        f"{_first_cause(first.error)}\n{where}"
        f"Attempts:\n{tried}\n{advice}",
        cause=first.cause or OTHER,
        source_line=first.source_line,
        attempts=attempts,
        expression=expression,
    )
    error.__cause__ = first.error
    return error


_EXPRESSION = re.compile(r"data-dependent expression (.+?)(?: \(unhinted|\.?\s*$|\.? +\()", re.MULTILINE)


def guard_expression(error: BaseException) -> str | None:
    """The expression of a data-dependent guard (``Eq(u0, 1)``) in torch's message, or ``None``.

    torch.fx.experimental.symbolic_shapes writes ``Could not guard on data-dependent expression
    <expr> (unhinted: ...)`` and ``Could not extract specialized integer from data-dependent
    expression <expr> (unhinted: ...)``.
    """
    for e in _chain(error):
        match = _EXPRESSION.search(str(e))
        if match:
            return match.group(1).strip()
    return None


def _draft_warnings(ep: ExportedProgram) -> list[str]:
    """What draft export specialized (empty for other strategies or a sound draft export)."""
    report = getattr(ep, "_report", None)
    if report is None or report.successful():
        return []
    out = []
    for failure in report.failures:
        if failure.xfail:
            continue
        data = failure.data if isinstance(failure.data, dict) else {}
        frames = data.get("user_stack") or []
        where = ""
        if frames:
            frame = frames[-1]
            filename = report.str_to_filename.get(frame.get("filename"))
            where = f' at File "{filename}", line {frame.get("line")}' if filename else f' at line {frame.get("line")}'
            if frame.get("loc"):
                where += f" ({frame['loc'].strip()})"
        what = data.get("expr")
        detail = f"{what} assumed {data.get('result')}" if what is not None else ""
        out.append(f"{failure.failure_type.name}{where}: {detail}".rstrip(": "))
    return out


def _is_user_error(error: BaseException) -> bool:
    """Errors that another strategy cannot fix (wrong arguments, bad dynamic_shapes)."""
    if isinstance(error, TypeError) and "argument" in str(error):
        return True
    # A constraint violation means the model fixes or relates dims declared dynamic: another
    # strategy (draft export above all) would only hide it behind a specialized graph.
    text = str(error)
    return isinstance(error, UserError) and ("dynamic_shapes" in text or "Constraints violated" in text)


def _is_library_frame(filename: str) -> bool:
    return filename.startswith(PACKAGE_DIR) or any(
        part in filename
        for part in ("site-packages/torch", "/torch/", "site-packages/sympy", "/sympy/", "<frozen", "/contextlib.py")
    )


def source_line(error: BaseException) -> str | None:
    """The user's innermost source line for a capture error: Dynamo's recorded user stack when
    present, else the traceback's last frame outside torch and onnxport.

    Returns:
        ``File "f.py", line N, in fn`` and the code line, or ``None``.
    """
    for e in _chain(error):
        stack = getattr(e, "real_stack", None)
        if stack:
            frame = stack[-1]
            return f'File "{frame.filename}", line {frame.lineno}, in {frame.name}\n    {frame.line or ""}'.rstrip()
    for e in _chain(error):
        frames = [f for f in traceback.extract_tb(e.__traceback__) if not _is_library_frame(f.filename)]
        if frames:
            f = frames[-1]
            return f'File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line or ""}'.rstrip()
    return None


__all__ = ["Attempt", "capture", "capture_error", "classify", "guard_expression", "source_line", "user_source_line"]
