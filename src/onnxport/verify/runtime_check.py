""""Never a model onnxruntime cannot run": run the exported graph once per input size before it is
handed over.

A graph can pass ``onnx.checker`` and load in onnxruntime and still be refused by a kernel at run
time (a mask shape the Attention kernel does not take, a broadcast baked to the example's size).
:func:`check_runtime` runs the model on the example inputs and, when the model has dynamic dims, on
a second input set where every dynamic dim takes another value: first each dim + about half its
size (patch counts and parities change; dims equal in the example stay equal); when the guards
torch.export recorded reject those sizes, other sizes inside the declared ranges are searched
(:func:`onnxport.verify.guards.choose_sizes`: multiples, offsets, dims moved together) and the
one found is used, with a ``UserWarning`` naming the guards (the model is only valid where they
hold); only when no tried size passes is it a :class:`DynamicShapesError`. When the first choice
satisfies every guard but sizes near it do not (a parity both sizes happen to share), the model
also runs there and is compared with eager (:func:`_probed`). The chosen inputs are
checked once more by torch's own guard function (:func:`check_guards`). A refusal becomes a :class:`RuntimeCheckError`
naming the ONNX node from onnxruntime's message, the FX node it was translated from (its
``pkg.torch.onnx.fx_node`` metadata, stamped by the dispatcher) and the user's source line.

The session is the program's own (``ONNXProgram._inference_session``), so running the program
afterwards costs no second session. Skipped, with the reason in :attr:`RuntimeCheck.skipped`, when
onnxruntime is not installed, when the graph uses operator domains onnxruntime does not ship
(custom translations to a custom-op library), when initializers have no data (a fake or meta
model), or when the weights would not fit in the available RAM twice (serialized bytes plus the
session's copy).
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import onnx_ir as ir
import sympy
import torch
from torch._subclasses.fake_tensor import is_fake
from torch.export.graph_signature import InputKind

from onnxport import draws
from onnxport.errors import DynamicShapesError, RuntimeCheckError, VerificationError
from onnxport.metadata import KEY_FX_NODE, KEY_STACK_TRACE
from onnxport.runtime import (
    available_memory,
    create_session,
    feeds,
    initializer_bytes,
    refusal_parts,
    restore_complex,
    run_session,
)
from onnxport.verify import referee
from onnxport.verify.compare import compare_outputs
from onnxport.verify.guards import SizeChoice, choose_sizes, input_guards
from onnxport.verify.inputs import (
    input_symbols,
    resized_inputs,
    second_input_set_from_onnx,
    symbol_bounds,
)
from onnxport.verify.ties import eager_outputs
from onnxport.weights.save import missing_weights

# Operator domains onnxruntime implements itself (the ONNX standard, ML and its contrib ops).
_ORT_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft", "com.microsoft.nchwc", "ai.onnx.preview.training"}
_SHOWN = 5  # guards named in messages and RuntimeCheck.guards


@dataclasses.dataclass
class RuntimeCheck:
    """What :func:`check_runtime` did.

    Attributes:
        ran: One label per input set the model ran on (``"example inputs"``, then the generated
            sizes such as ``"generated inputs (batch=3, sequence=8)"``).
        skipped: Why the check did not run, or ``None``.
        seconds: Wall time of the runs.
        sizes: The generated input set's dims (dim name → size), empty for a static model.
        guards: The guards torch.export recorded that rejected the first choice of sizes (the first 5; each
            dim + about half); the model is only valid where they hold, and ``sizes`` is a set
            found inside them (``verify/guards.py``). Empty when the first choice passed.
    """

    ran: list[str] = dataclasses.field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)
    guards: list[str] = dataclasses.field(default_factory=list)


def skip_reason(model: ir.Model) -> str | None:
    """Why ``model`` cannot be run here, or ``None`` when it can."""
    try:
        import onnxruntime  # noqa: F401  (optional dependency, imported only to probe it)
    except ImportError:
        return "onnxruntime is not installed"
    known = _ORT_DOMAINS | {f.domain for f in model.functions.values()}
    foreign = sorted(d for d in model.opset_imports if d not in known)
    if foreign:
        return f"the graph uses operator domains onnxruntime does not ship ({', '.join(foreign)}): custom ops"
    missing = missing_weights(model)
    if missing:
        return f"{len(missing)} weights have no data yet (fake mode or meta device; apply_weights first)"
    for value in model.graph.initializers.values():
        if value.const_value is None:
            return f"initializer {value.name!r} has no data (a fake or meta model)"
        if isinstance(value.const_value, ir.ExternalTensor) and not os.path.exists(value.const_value.path):
            return f"initializer {value.name!r} points to a missing external data file"
    available = available_memory()
    needed = 2 * initializer_bytes(model)
    if needed > available:
        return f"the weights need {needed / 2**30:.1f} GiB of RAM to run, {available / 2**30:.1f} GiB are available"
    return None


def _find_node(model: ir.Model, name: str) -> ir.Node | None:
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        if node.name == name:
            return node
    return None


def _fx_node(program: Any, onnx_node: ir.Node | None) -> torch.fx.Node | None:
    """The FX node of the program's ExportedProgram the ONNX node was translated from."""
    ep = getattr(program, "exported_program", None)
    if onnx_node is None or ep is None:
        return None
    stamp = onnx_node.metadata_props.get(KEY_FX_NODE, "")
    match = re.match(r"%?([\w.]+)", stamp)
    if match is None:
        return None
    for module in ep.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                if node.name == match.group(1):
                    return node
    return None


def _runs_unoptimized(program: Any, inputs: dict[str, Any]) -> bool:
    """Whether the graph runs on ``inputs`` in a session with onnxruntime's graph optimizations
    off: then the refusal came from a rewrite of onnxruntime's optimizer, not from the graph."""
    import onnxruntime as ort  # heavy optional runtime, present when a session failed

    def unoptimized(data: Any) -> Any:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 4
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])

    try:
        run_session(create_session(program.model, initializer=unoptimized), inputs)
    except Exception:  # onnxruntime's own exception types: the graph itself is refused
        return False
    return True


# onnxruntime's Gather/GatherElements/ScatterND message for an index outside the data
_OUT_OF_BOUNDS = re.compile(r"out of (data )?bounds|must be within the inclusive range", re.I)


def runtime_error(program: Any, error: BaseException, input_set: str, runs_unoptimized: bool = False) -> RuntimeCheckError:
    """The :class:`RuntimeCheckError` for onnxruntime's refusal ``error`` on ``input_set``
    (``runs_unoptimized``: the same inputs run with onnxruntime's graph optimizations off)."""
    reason, op_type, name = refusal_parts(error)
    onnx_node = _find_node(program.model, name) if name else None
    fx_node = _fx_node(program, onnx_node)
    lines = [f"onnxruntime refused to run the exported model on the {input_set}: {reason}"]
    if name:
        lines.append(f"ONNX node: {name} ({op_type})")
    if fx_node is None and onnx_node is not None and onnx_node.metadata_props.get(KEY_STACK_TRACE):
        lines.append(f"Traced at:\n  {onnx_node.metadata_props[KEY_STACK_TRACE].strip().splitlines()[-1]}")
    if runs_unoptimized:
        lines.append(
            "No file was written. The graph runs with onnxruntime's graph optimizations off "
            "(SessionOptions.graph_optimization_level = ORT_DISABLE_ALL): one of onnxruntime's own rewrites "
            "breaks it (the node above may be one it created). Run the model with optimizations off, or "
            "skip that rewrite (InferenceSession(..., disabled_optimizers=[...])), and report it to "
            "onnxruntime with the model; export(..., check_runtime=False) writes the file anyway."
        )
    elif input_set == "example inputs" and _OUT_OF_BOUNDS.search(reason):
        lines.append(
            "No file was written. An index in the inputs is outside the table it selects from (token ids at or "
            "above the vocabulary size, a special token id the config names outside the embedding): eager "
            "PyTorch raises IndexError on the same inputs. Check the example's ids against the model's "
            "vocab_size and its config's token ids."
        )
    elif input_set == "example inputs":
        lines.append(
            "No file was written. This is an onnxport bug (the translation emitted a form onnxruntime's kernel "
            "does not take): please report it with the model; export(..., check_runtime=False) skips this check."
        )
    else:  # it ran at the example's sizes: a size baked into the graph
        lines.append(
            "No file was written. The graph runs at the example's sizes and not at these: a size is baked into "
            "it. When the example sits at a size the model treats specially (the configured image or "
            "sample size, where position embeddings are not interpolated), export with other example "
            "sizes so that the general path is captured, or make those dims static; otherwise this is an "
            "onnxport bug: please report it with the model. export(..., check_runtime=False) skips this check."
        )
    return RuntimeCheckError("\n".join(lines), fx_node, onnx_node=name, op_type=op_type, input_set=input_set)


def check_guards(ep: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], label: str) -> None:
    """Check the guards torch.export recorded (``ExportedProgram._guards_code``, run by the unlifted
    module's ``_guards_fn`` as ``ep.module()`` does) on inputs whose dynamic dims all changed.

    torch.export accepts a Python branch on sizes declared dynamic when the branch's condition is
    a relation rather than a constant (``H == W``, ``H % 2 == 0``): it records a guard and the graph
    holds only the example's branch, silently wrong or refused by onnxruntime elsewhere (transformers
    ViT's ``interpolate_pos_encoding`` returns the unchanged table when the example is square at the
    config's resolution; TF "same" padding branches on ``H % stride``).

    Raises:
        DynamicShapesError: A guard fails on the generated sizes; names the guard.
    """
    try:
        guards = getattr(ep.module(), "_guards_fn", None)
    except Exception:  # torch could not unlift this program: nothing to check guards with
        return
    if guards is None:
        return
    flat = torch.utils._pytree.tree_leaves((tuple(args), dict(kwargs)))
    try:
        guards(*flat)
    except AssertionError as e:
        raise DynamicShapesError(
            f"torch.export captured the model under a condition on its dynamic dims, so the exported "
            f"model is only valid where it holds: {str(e).strip()} (false on the {label}).\n"
            "A Python branch on an input size took the example's path (for example transformers ViT's "
            "interpolate_pos_encoding skips interpolation when the example is square at the config's "
            "image_size). Export with an example that takes the general path (another size), make those "
            "dims static in dynamic_shapes, or pass check_runtime=False to keep the specialized model."
        ) from e
    except Exception:  # guards referring to inputs this flattening does not match: not checkable
        return


def _user_vals(ep: Any) -> list[torch.Tensor]:
    """The FakeTensor ``val`` of each user tensor input, in order."""
    user = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    vals = [n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]
    return [v for v in vals if isinstance(v, torch.Tensor)]


def _dim_names(program: Any, ep: Any) -> dict[Any, str]:
    """Input symbol → the ONNX graph input's dim name on the first axis it sizes (else the symbol)."""
    names: dict[Any, str] = {}
    for val, graph_input in zip(_user_vals(ep), list(program.model.graph.inputs)):
        shape = graph_input.shape or ()
        for axis, dim in enumerate(val.shape):
            if not isinstance(dim, torch.SymInt):
                continue
            expr = dim.node.expr
            onnx_dim = shape[axis] if axis < len(shape) else None
            label = getattr(onnx_dim, "value", None)
            if expr.is_Symbol and expr not in names:
                names[expr] = label if isinstance(label, str) and label else str(expr)
            elif len(expr.free_symbols) == 1 and isinstance(label, str):
                # a derived dim (4*Dim("h")): its graph dim is "4*h"; the symbol is "h"
                identifiers = set(re.findall(r"[A-Za-z_]\w*", label))
                symbol = next(iter(expr.free_symbols))
                if len(identifiers) == 1 and symbol not in names:
                    names[symbol] = identifiers.pop()
    return names


def _guarded_sizes(program: Any, ep: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[
        dict[Any, int], dict[Any, str], SizeChoice] | None:
    """(symbol → example size, symbol → dim name, the search of ``verify/guards.py``), or ``None``
    for a static model (or one whose dims have no other allowed size)."""
    example = input_symbols(ep, tuple(args), kwargs)
    if not example:
        return None
    names = _dim_names(program, ep)
    names = {s: names.get(s, str(s)) for s in example}
    guards = input_guards(_user_vals(ep), names)
    choice = choose_sizes(guards, example, {s: symbol_bounds(ep, s) for s in example}, names)
    if choice is None:
        return None
    return example, names, choice


def _sizes(names: Mapping[Any, str], sizes: Mapping[Any, int]) -> str:
    """``batch=3, sequence=9``; two symbols of one name and value (the batch of two inputs) once."""
    return ", ".join(dict.fromkeys(f"{names[s]}={v}" for s, v in sizes.items()))


def _specialization_error(names: Mapping[Any, str], example: Mapping[Any, int], choice: SizeChoice,
                          what: str) -> DynamicShapesError:
    """The error for guards that pin the model to the example's path (issue 14: a branch on a
    relation of sizes, such as ViT's ``interpolate_pos_encoding`` shortcut at the configured square
    size before capture/patches.py handled it)."""
    shown = "; ".join(f"{g.text} (at {g.where.splitlines()[0].strip()})" for g in choice.rejected[:3])
    more = f" and {len(choice.rejected) - 3} more" if len(choice.rejected) > 3 else ""
    found = (f"the other sizes tried that satisfy them: {_sizes(names, choice.sizes)}" if choice.sizes is not None
             else f"none of the {choice.tried} other size sets tried satisfies them")
    pairs = [g.text for g in choice.rejected[:_SHOWN]
             if isinstance(g.expr, sympy.Eq) and all(isinstance(a, sympy.Symbol) for a in g.expr.args)]
    tie = (f" If the dims of {', '.join(pairs)} are always equal, give those axes one Dim object in "
           "dynamic_shapes (torch.export then needs no guard for the equality)." if pairs else "")
    return DynamicShapesError(
        f"The model takes another path at {_sizes(names, choice.first)} than at the example "
        f"({_sizes(names, example)}): torch.export recorded conditions on the dynamic dims that hold at "
        f"the example and not there: {_shorten(shown)}{more}. At those sizes the exported model {what}, "
        f"so it holds only the example's path ({found}).\n"
        f"Fix: export with an example where these conditions are false, such as "
        f"{_sizes(names, choice.first)}, so that the graph holds the general path (for example a branch "
        f"on H % stride in TF \"same\" padding, or on the image size equal to the config's).{tie} Or make "
        "those dims static in dynamic_shapes; export(..., check_runtime=False) keeps the specialized model."
    )


def run_at_mean(program: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[Any]:
    """``program(*args, **kwargs)``; for a program that draws noise, with its draws at their mean in
    a session of its own, as the eager reference draws (:mod:`onnxport.draws`)."""
    if not draws.has_draws(program.model):
        return list(program(*args, **kwargs))
    session = create_session(program.model, draws_at_mean=True)
    names = [i.name for i in session.get_inputs()]
    return restore_complex(program.model, run_session(session, feeds(names, tuple(args), dict(kwargs))))


def _judge(program: Any, model: Any, ep: Any, inputs: tuple[tuple[Any, ...], Mapping[str, Any]],
           found: tuple[dict[Any, int], dict[Any, str], SizeChoice]) -> str:
    """Whether the guards false at the first choice of sizes matter for the ONNX model: run it
    there in onnxruntime and the user's model in eager mode.

    Returns:
        ``"benign"`` (the ONNX model matches the model there: the guards constrain nothing the
        graph depends on, as MobileNetV2's "last feature map is 1x1"), or ``"requirement"`` (the
        model itself rejects those sizes, as a ``reshape`` needing an even length).

    Raises:
        DynamicShapesError: onnxruntime refuses the model there or its outputs differ from the
            model's (:func:`_specialization_error`).
    """
    example, names, choice = found
    args, kwargs = inputs
    args1, kwargs1 = resized_inputs(ep, tuple(args), kwargs, choice.first)
    try:
        expected = eager_outputs(model, args1, kwargs1, ep)
    except Exception:  # the model's own code rejects these sizes: the guards restate that
        return "requirement"
    try:
        actual = run_at_mean(program, args1, kwargs1)
    except Exception as e:  # onnxruntime's own exception types, or onnxport's for bad feeds
        raise _specialization_error(names, example, choice, f"fails in onnxruntime ({refusal_parts(e)[0]})") from e
    onnx_names = [o.name for o in program.model.graph.outputs]
    try:
        results = compare_outputs(onnx_names, expected, list(actual))
    except VerificationError as e:
        raise _specialization_error(names, example, choice, str(e)) from e
    referee.settle(results, expected, list(actual), referee.Rerun(model, args1, dict(kwargs1), lambda m, a, k: eager_outputs(m, a, k, ep)))
    bad = [r for r in results if not r.passed]
    if bad:
        r = bad[0]
        how = (f"shape {tuple(r.actual_shape)}, eager {tuple(r.expected_shape)}" if r.actual_shape != r.expected_shape
               else f"max abs diff {r.max_abs_diff:.3g}")
        raise _specialization_error(names, example, choice, f"differs from the model (output {r.name}: {how})")
    return "benign"


def _probed(program: Any, model: Any, ep: Any, inputs: tuple[tuple[Any, ...], Mapping[str, Any]],
            found: tuple[dict[Any, int], dict[Any, str], SizeChoice]) -> str | None:
    """Run the model at :attr:`SizeChoice.probe` (sizes where a recorded guard is false although
    the first choice of sizes satisfied them all) and compare it with eager (:func:`_judge`).

    Returns:
        The label of the input set that ran, or ``None`` when the model itself rejects those sizes.

    Raises:
        DynamicShapesError: The ONNX model fails or differs from the model at the probe (it holds
            only the example's side of a branch, as SEW-D's parity-dependent padding).
    """
    example, names, choice = found
    assert choice.probe is not None
    as_rejected = dataclasses.replace(choice, first=choice.probe, rejected=choice.probe_rejected, sizes=choice.first)
    if _judge(program, model, ep, inputs, (example, names, as_rejected)) == "requirement":
        return None
    return f"probe inputs ({_sizes(names, choice.probe)}) [guards false here; outputs match the model in eager mode]"


def _shorten(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."


def check_runtime(program: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], model: Any = None,
                  *, open_session: Callable[[], None] | None = None) -> RuntimeCheck:
    """Run ``program`` in onnxruntime on the example inputs and on inputs of other sizes.

    Args:
        program: The :class:`onnxport.ONNXProgram` (its session is created here and kept).
        args, kwargs: The example inputs the model was exported with.
        model: The exported ``nn.Module``. When the recorded guards reject the first choice of
            other sizes, the ONNX model runs there and is compared with it (:func:`_judge`):
            equal outputs keep those sizes; a refusal or a difference is a specialization
            (``DynamicShapesError``); a model that rejects the sizes itself makes the search's
            sizes (``verify/guards.py``) used, with a ``UserWarning``. Without it, the search's
            sizes are used with the warning.
        open_session: Called once the check is not skipped, to open the program's session the
            check runs in (default: the program's own, opened on its first call); the export
            passes one without pre-packing for a session released after the check, or one on the
            files it is about to commit.

    Returns:
        A :class:`RuntimeCheck` listing the input sets that ran, or why it was skipped.

    Raises:
        RuntimeCheckError: onnxruntime refused to run a node (names the ONNX node, its FX node and
            the user's source line).
        DynamicShapesError: The guards torch.export recorded pin the model to the example's path
            (names the guards, their source lines and an example size that avoids them).
        ModelCheckError: onnxruntime refused to load the model.
        InputError: The inputs do not match the graph inputs.
    """
    result = RuntimeCheck(skipped=skip_reason(program.model))
    example = [t for t in torch.utils._pytree.tree_leaves((args, dict(kwargs))) if isinstance(t, torch.Tensor)]
    if result.skipped is None and any(t.device.type == "meta" or is_fake(t) for t in example):
        result.skipped = "the example inputs are fake or on the meta device (no values to run)"
    if result.skipped is not None:
        return result
    if open_session is not None:
        open_session()
    start = time.perf_counter()
    sets: list[tuple[str, tuple[Any, ...], Mapping[str, Any]]] = [("example inputs", tuple(args), kwargs)]
    probe = None
    ep = program.exported_program
    if ep is not None:
        found = _guarded_sizes(program, ep, tuple(args), kwargs)
        if found is not None:
            example_sizes, dim_names, choice = found
            judged = choice.rejected and model is not None
            verdict = _judge(program, model, ep, (tuple(args), kwargs), found) if judged else None
            chosen = choice.first if verdict == "benign" else choice.sizes
            if chosen is None:
                raise _specialization_error(dim_names, example_sizes, choice, "is not known to be right")
            if choice.probe is not None and model is not None:
                probe = found
            args2, kwargs2 = resized_inputs(ep, tuple(args), kwargs, chosen)
            result.sizes = {dim_names[s]: v for s, v in chosen.items()}
            label = f"generated inputs ({_sizes(dim_names, chosen)})"
            if choice.rejected:
                result.guards = [g.text for g in choice.rejected[:_SHOWN]]
            if verdict == "benign":
                label += " [guards false here; outputs match the model in eager mode]"
            elif choice.rejected:
                first = _sizes(dim_names, choice.first)
                label += f" [the recorded guards rejected {first}]"
                reason = (" (the model itself rejects those sizes in eager mode)" if verdict == "requirement"
                          else "")
                warnings.warn(
                    f"The exported model is only valid where the guards torch.export recorded on its "
                    f"dynamic dims hold; they rejected {first}{reason} and the runtime check ran at "
                    f"{_sizes(dim_names, chosen)}. Guards ({len(choice.rejected)}): "
                    f"{_shorten('; '.join(result.guards))}",
                    UserWarning, stacklevel=3,
                )
                check_guards(ep, args2, kwargs2, label)
            sets.append((label, args2, kwargs2))
    else:
        second = second_input_set_from_onnx(list(program.model.graph.inputs), tuple(args), kwargs)
        if second is not None:
            (args2, kwargs2), sizes = second
            result.sizes = dict(sizes)
            sets.append(("generated inputs (" + ", ".join(f"{k}={v}" for k, v in sizes.items()) + ")",
                         args2, kwargs2))
    session = program._inference_session()
    names = [i.name for i in session.get_inputs()]
    for label, set_args, set_kwargs in sets:
        inputs = feeds(names, set_args, dict(set_kwargs))
        try:
            run_session(session, inputs)
        except Exception as e:  # onnxruntime's own exception types (Fail, RuntimeException, ...)
            raise runtime_error(program, e, label, _runs_unoptimized(program, inputs)) from e
        result.ran.append(label)
    if probe is not None:
        probed = _probed(program, model, ep, (tuple(args), kwargs), probe)
        if probed is not None:
            result.ran.append(probed)
    result.seconds = time.perf_counter() - start
    return result


__all__ = ["RuntimeCheck", "check_guards", "check_runtime", "runtime_error", "skip_reason"]
