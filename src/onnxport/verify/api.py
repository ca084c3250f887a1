"""``onnxport.verify``: run the ONNX model in onnxruntime and compare with eager, optionally localizing.

One verification builds exactly one onnxruntime session (checked with ``onnx.checker`` full check
first, from the same serialization), with or without localization.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export import ExportedProgram

from onnxport import draws, runtime
from onnxport.errors import InputError, VerificationError
from onnxport.program import ONNXProgramBase
from onnxport.status import Step
from onnxport.verify import inputs as inputs_mod
from onnxport.verify import localize as localize_mod
from onnxport.verify import referee
from onnxport.verify.compare import (
    CheckResult,
    InputSetResult,
    VerificationResult,
    compare_outputs,
)
from onnxport.verify.ties import eager_outputs


def _rerun(reference: Any, ep: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> referee.Rerun:
    """The reference as :mod:`onnxport.verify.referee` runs it again (flattened as the check's)."""
    module = reference.module() if isinstance(reference, ExportedProgram) else reference
    return referee.Rerun(module, args, kwargs, lambda m, a, k: eager_outputs(m, a, k, ep))


def _run(session: Any, args: tuple[Any, ...], kwargs: dict[str, Any], names: Sequence[str] | None = None) -> dict[str, torch.Tensor]:
    feeds = runtime.feeds([i.name for i in session.get_inputs()], args, kwargs)
    wanted = list(names) if names is not None else [o.name for o in session.get_outputs()]
    return dict(zip(wanted, runtime.run_session(session, feeds, wanted)))


def verify(
    program: Any,
    args: Any = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    inputs: Sequence[Any] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    localize: bool = False,
    reference: Any = None,
    generate_inputs: bool = True,
    checks: list[CheckResult] | None = None,
    prepack: bool = True,
) -> VerificationResult:
    """Compare an :class:`~onnxport.ONNXProgram` run in onnxruntime with eager PyTorch.

    Every output is compared (shape, dtype and values; NaN-aware, see
    :mod:`onnxport.verify.compare`) on the example inputs, on each extra set in ``inputs``, and, for
    a model with dynamic input dims, on a generated set where every dynamic dim has another value
    (:func:`onnxport.verify.inputs.second_input_set`). The model is checked with
    ``onnx.checker.check_model(full_check=True)`` and loaded in exactly one onnxruntime session.

    Args:
        program: The :class:`~onnxport.ONNXProgram`.
        args: Positional example inputs (a tuple, or one tensor).
        kwargs: Keyword example inputs.
        inputs: More input sets: each an args tuple, a kwargs dict or an ``(args, kwargs)`` pair.
        rtol, atol: Tolerances for every float output (default: per dtype,
            :data:`onnxport.verify.compare.TOLERANCES`; integers and bools compare exactly).
        localize: Also find the first FX node whose ONNX value diverges beyond tolerance on the
            example inputs (needs ``program.exported_program``); the same single session exposes
            the intermediate values.
        reference: The eager model to compare with (default: ``program.exported_program``; required
            for a program loaded from a file).
        generate_inputs: Generate the second input set for dynamic models.
        checks: Receives the check results as they happen (also in the returned result).
        prepack: ``False`` opens the session without pre-packing the weights
            (``runtime.create_session(prepack=False)``: 8 s less for 2 GB of float32 MatMul
            weights, slower runs), and the session is not kept for later calls of the program:
            its memory-mapped weights leave the resident set as it runs (``transient``).

    Returns:
        A :class:`~onnxport.verify.compare.VerificationResult`: per input set and output the shapes,
        dtypes, max abs/rel diff, |diff| histogram and verdict; the checks; and with ``localize``,
        a :class:`~onnxport.verify.localize.Localization`. A mismatch is not raised: read
        ``result.passed``.

    Raises:
        ModelCheckError: The checker rejected the model or onnxruntime refused to load it.
        InputError: No eager reference is available, or the inputs do not fit the model.
        VerificationError: The number of outputs differs from eager's.
    """
    ep = program.exported_program
    reference = reference if reference is not None else ep
    if reference is None:
        raise InputError(
            "This ONNXProgram has no ExportedProgram (loaded from a file): pass reference=<the "
            "nn.Module> to compare with."
        )
    if localize and ep is None:
        raise InputError("localize=True needs the ExportedProgram the ONNX model was translated from.")
    example = inputs_mod.normalize(args, kwargs)
    sets: list[tuple[str, inputs_mod.InputSet]] = [("example inputs", example)]
    if generate_inputs:
        if ep is not None:
            generated = inputs_mod.second_input_set(ep, *example)
        else:
            generated = inputs_mod.second_input_set_from_onnx(list(program.model.graph.inputs), *example)
        if generated is not None:
            (g_args, g_kwargs), dims = generated
            label = "generated: " + ", ".join(f"{_dim_label(program, k)}={v}" for k, v in dims.items())
            sets.append((label, (g_args, g_kwargs)))
    sets += [(f"inputs[{i}]", s) for i, s in enumerate(inputs_mod.normalize_sets(inputs))]

    graph = program.model.graph
    output_names = [o.name for o in graph.outputs]
    input_names = [i.name for i in graph.inputs]
    checks = checks if checks is not None else []
    nodes: list[torch.fx.Node] = []
    extra: list[Any] = []
    skipped = 0
    if localize:
        nodes, extra, skipped = localize_mod.candidates(ep, program.model)
    # A model that draws noise is compared with its draws at their mean on both sides (onnxport.draws).
    at_mean = draws.has_draws(program.model)
    session = runtime.create_session(
        program.model, check=True, extra_outputs=extra, checks=checks, tempdir_owner=program, draws_at_mean=at_mean,
        prepack=prepack, transient=not prepack,
    )
    if not extra and not at_mean and prepack:
        program._session = session  # later program(...) calls reuse the checked session
    result = VerificationResult([], checks, sessions=1)
    for i, (label, (a, k)) in enumerate(sets):
        try:
            if localize and i == 0:
                wanted = {n.name for n in nodes}
                eager_values, expected = localize_mod.eager_values(ep, a, k, wanted)
                onnx_values = _run(session, a, k)
            else:
                expected = eager_outputs(reference, a, k, ep)
                onnx_values = _run(session, a, k, output_names)
        except InputError:
            raise
        except Exception as e:  # the user's inputs or model raised: name the input set
            raise InputError(f"Running the model on {label} failed: {type(e).__name__}: {e}") from e
        actual = runtime.restore_complex(program.model, [onnx_values[n] for n in output_names])
        outputs = compare_outputs(output_names, expected, actual, rtol, atol)
        referee.settle(outputs, expected, actual, functools.partial(_rerun, reference, ep, a, k))
        result.input_sets.append(InputSetResult(label, inputs_mod.shapes_of(a, k, input_names), outputs))
        if localize and i == 0:
            result.localization = localize_mod.first_divergence(
                ep, program.model, nodes, eager_values, onnx_values, skipped=skipped, rtol=rtol, atol=atol
            )
            result.localization.outputs_match = all(o.passed for o in outputs)
    return result


def _dim_label(program: Any, symbol: str) -> str:
    """The ONNX name of a symbolic dim (``batch``) when the graph inputs show it, else the symbol."""
    ep = program.exported_program
    if ep is None:
        return symbol
    names = {s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"}
    user = [n for n in ep.graph.nodes
            if n.op == "placeholder" and n.name in names and isinstance(n.meta.get("val"), torch.Tensor)]
    for node, value in zip(user, program.model.graph.inputs):
        for dim, onnx_dim in zip(node.meta["val"].shape, value.shape or ()):
            if isinstance(dim, torch.SymInt) and str(dim.node.expr) == symbol and not isinstance(onnx_dim, int):
                return onnx_dim.value or symbol
    return symbol


def mismatch_error(result: VerificationResult) -> VerificationError:
    """The error for a failed verification: every mismatching output, and the localized node."""
    lines = ["The ONNX model's outputs differ from eager PyTorch:"]
    for s in result.input_sets:
        bad = [o for o in s.outputs if not o.passed]
        if bad:
            lines.append(f"[{s.label}] " + ", ".join(f"{k} {list(v)}" for k, v in s.shapes.items()))
            lines.extend("  " + o.summary() for o in bad)
    node = None
    loc = result.localization
    if loc is not None and loc.first is not None:
        node = loc.first.node
        lines.append(loc.first.summary())
    elif loc is not None and loc.outputs_match:
        lines.append(
            f"Localization compared {loc.compared} FX node values and found none diverging, and the outputs match "
            "eager in its session, whose extra outputs (every compared value) keep onnxruntime from fusing across "
            "those nodes: one of onnxruntime's graph rewrites changes the result. Confirm with "
            "SessionOptions.graph_optimization_level = ORT_DISABLE_ALL, find the rewrite with "
            "InferenceSession(..., disabled_optimizers=[...]) and report it to onnxruntime with the model "
            "(onnxport already steers clear of the ones it knows, e.g. passes/pad_max_pool.py)."
        )
    elif loc is None:
        lines.append("Find the first diverging node: onnxport.verify(program, args, kwargs, localize=True).")
    return VerificationError("\n".join(lines), node, result)



def verify_export(program: Any, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], status: Any,
                  *, prepack: bool = True) -> VerificationResult:
    """``export(verify=True)``: verify and record the checks and the accuracy as status steps.

    On a mismatch the divergence is localized (a second session, only then) so the error names the
    first diverging node and its source line. ``prepack``: as :func:`verify`'s.

    Raises:
        ModelCheckError: A check failed (recorded as a failed step).
        VerificationError: An output differs beyond tolerance (the ``accuracy`` step fails).
    """
    checks: list[CheckResult] = []
    start = time.perf_counter()

    def record(error: BaseException | None) -> None:
        for check in checks:
            status.record(Step(check.name, check.seconds, check.passed, check.detail))
        if not checks or all(c.passed for c in checks):
            seconds = time.perf_counter() - start - sum(c.seconds for c in checks)
            detail = "" if error is None else f"{type(error).__name__}: {str(error).splitlines()[0]}"
            status.record(Step("accuracy", seconds, error is None, detail))
        if error is not None:
            status.error = error

    try:
        result = verify(program, args, kwargs, reference=model, checks=checks, prepack=prepack)
        status.verification = result
        if not result.passed and program.exported_program is not None:
            located = verify(program, args, kwargs, reference=model, localize=True, generate_inputs=False)
            result.localization = located.localization
            result.sessions += located.sessions
        if not result.passed:
            raise mismatch_error(result)
    except BaseException as e:
        record(e)
        raise
    record(None)
    return result



class ONNXProgram(ONNXProgramBase):
    """An exported ONNX model with the ExportedProgram it came from (``onnxport.ONNXProgram``).

    :class:`onnxport.program.ONNXProgramBase` (save, load, run in onnxruntime; its docstring lists
    the attributes) plus :meth:`verify`, which lives here because verification sits above the
    program in the pipeline.
    """

    def verify(
        self,
        args: Any = (),
        kwargs: dict[str, Any] | None = None,
        *,
        inputs: Sequence[Any] | None = None,
        rtol: float | None = None,
        atol: float | None = None,
        localize: bool = False,
        reference: Any = None,
    ) -> VerificationResult:
        """Compare with eager PyTorch; see :func:`onnxport.verify` (same arguments and result).

        Returns:
            A :class:`onnxport.verify.compare.VerificationResult` (``.passed``, ``.input_sets``,
            ``.localization``).

        Raises:
            ModelCheckError: onnx.checker or onnxruntime refused the model.
            InputError: No eager reference, or inputs that do not fit.
        """
        return verify(self, args, kwargs, inputs=inputs, rtol=rtol, atol=atol, localize=localize,
                      reference=reference)


__all__ = ["ONNXProgram", "mismatch_error", "verify", "verify_export"]
