"""``dynamic_shapes`` as users write it → what torch.export accepts, plus the user's dim names.

torch.export accepts ``Dim`` objects and ``Dim.AUTO`` / ``Dim.DYNAMIC``; onnxport also accepts plain
strings (``{0: "batch_size"}``), as torch.onnx.export(dynamo=True) does. A string becomes
``Dim.DYNAMIC`` and its text names the ONNX symbolic dimension; a :class:`DimName` (a string with a
lower bound) becomes ``Dim.DYNAMIC(min=...)``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export import Dim
from torch.export.dynamic_shapes import _DerivedDim, _Dim, _DimHint

from onnxport.capture.strategies import CONSTRAINT_VIOLATION, classify
from onnxport.errors import DynamicShapesError, InputError
from onnxport.options import ExportOptions

AxisNames = dict[int, str]


class DimName(str):
    """A dim name that also bounds the size from below: ``DimName("sequence_length", min=1)``.

    A plain string dim is ``Dim.DYNAMIC``, whose range starts at 0; code that is only shape-correct
    for sizes of at least 1 then fails to capture. transformers' MPT attention, for one, slices its
    ALiBi bias (1 row) from ``max(0, 1 - query_length)`` and adds it to scores of ``sequence_length``
    rows: only ``sequence_length >= 1`` makes that row count 1, i.e. broadcastable
    (``fake_impls.infer_size``). A ``DimName`` becomes ``Dim.DYNAMIC(min=min)`` (torch.export
    ``_DimHint`` bounds) and names the ONNX symbolic dimension like any string.
    """

    min: int

    def __new__(cls, name: str, min: int = 0) -> DimName:  # noqa: A002 - torch.export's spelling
        obj = super().__new__(cls, name)
        obj.min = min
        return obj


def _convert(spec: Any) -> Any:
    """Replace string dims by ``Dim.DYNAMIC`` (a :class:`DimName`: with its lower bound) recursively."""
    if isinstance(spec, DimName) and spec.min:
        return Dim.DYNAMIC(min=spec.min)
    if isinstance(spec, str):
        return Dim.DYNAMIC
    if isinstance(spec, Mapping):
        return {k: _convert(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(_convert(v) for v in spec)
    return spec


def to_torch_export(dynamic_shapes: Any, combined: Mapping[str, Any] | None = None) -> Any:
    """The ``dynamic_shapes`` argument to give torch.export.

    A dict keyed by input names gets ``None`` (static) for the inputs it does not mention
    (torch.export wants every input named, e.g. a ``use_cache=False`` keyword), in the structure of
    a dict, list or tuple input.
    """
    if dynamic_shapes is None:
        return None
    converted = _convert(dynamic_shapes)
    if isinstance(converted, dict) and combined is not None:
        converted = {name: _static_like(combined[name]) if converted.get(name) is None else converted[name]
                     for name in combined}
    return converted


def _static_like(value: Any) -> Any:
    """``None`` (static) in the structure of ``value``: torch.export wants a dict or a list input's
    spec to mirror it ("inputs['cfg'] is a <class 'dict'>, but dynamic_shapes['cfg'] is not"), where
    ``None`` for the whole input means every tensor in it static."""
    if isinstance(value, Mapping):
        return {k: _static_like(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_static_like(v) for v in value)
    return None


def as_hints(export_shapes: Any) -> Any:
    """``export_shapes`` with every ``Dim`` object replaced by ``Dim.DYNAMIC`` over its range, or
    ``None`` when it holds none, or a derived dim (``2 * Dim("h")``) whose relation a hint cannot keep.

    torch.export raises on a ``Dim`` whose range the code narrows (``batch != 1`` from a broadcast
    in ``nn.MultiheadAttention``, a 25-row table); a ``Dim.DYNAMIC`` hint takes the narrowed range,
    as onnxport's string dims do (torch.export docs, "Dynamic shapes": ``Dim.AUTO``/``DYNAMIC``).
    """
    found = False

    def hint(spec: Any) -> Any:
        nonlocal found
        if isinstance(spec, _DerivedDim):
            raise LookupError
        if isinstance(spec, _Dim):
            found = True
            return Dim.DYNAMIC(min=spec.min, max=spec.max)
        if isinstance(spec, Mapping):
            return {k: hint(v) for k, v in spec.items()}
        if isinstance(spec, (list, tuple)):
            return type(spec)(hint(v) for v in spec)
        return spec

    try:
        relaxed = hint(export_shapes)
    except LookupError:
        return None
    return relaxed if found else None


def tensor_leaves(combined: Mapping[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """Every tensor of the inputs with its dotted path (``input_dict.tensor_x``), in pytree order."""
    out: list[tuple[str, AxisNames]] = []
    tensors: list[torch.Tensor] = []
    for name, value in combined.items():
        _walk(value, None, name, out, tensors)
    return [(path, t) for (path, _), t in zip(out, tensors)]


def _spec_for(value: Any, path: str, leaf_axes: Mapping[str, Mapping[int, Any]]) -> Any:
    """A dynamic_shapes subtree for ``value`` holding ``leaf_axes[path]`` at its tensor leaves."""
    if isinstance(value, torch.Tensor):
        axes = leaf_axes.get(path)
        return dict(axes) if axes else None
    if isinstance(value, Mapping):
        return {k: _spec_for(v, f"{path}.{k}", leaf_axes) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_spec_for(v, f"{path}.{i}", leaf_axes) for i, v in enumerate(value))
    return None


def _axis(axis: Any, where: str) -> int:
    """An axis given by the user: an ``int`` (not a bool, a float or a string such as ``"zero"``).

    Raises:
        InputError: Anything else, naming where it was found.
    """
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise InputError(
            f"{where} uses {axis!r} as an axis: axes are ints (0 for the first dim), e.g. {{0: 'batch_size'}}."
        )
    return axis


def _legacy_axes(axes: Any, name: str) -> dict[int, str]:
    """``dynamic_axes`` entry (``{0: "batch"}`` or ``[0, 1]``) → axis → dim name.

    Raises:
        InputError: An axis that is not an int, or a dim name that is not a non-empty string.
    """
    where = f"dynamic_axes[{name!r}]"
    if isinstance(axes, Mapping):
        out = {}
        for a, n in axes.items():
            if not isinstance(n, str) or not n:
                raise InputError(f"{where} names axis {a!r} {n!r}: dim names are non-empty strings such as 'batch_size'.")
            out[_axis(a, where)] = n
        return out
    if isinstance(axes, (list, tuple)):
        return {_axis(a, where): f"{name}_dim_{a}" for a in axes}
    raise InputError(f"dynamic_axes[{name!r}] must be a dict {{axis: name}} or a list of axes, got {axes!r}.")


def resolve(
    forward: Any,
    combined: Mapping[str, Any],
    *,
    dynamic_shapes: Any = None,
    dynamic_axes: Mapping[str, Any] | None = None,
    dynamic: bool = False,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
) -> tuple[Any, list[tuple[str, AxisNames]]]:
    """Turn any of the three ways to declare dynamic dims into torch.export's ``dynamic_shapes``.

    Args:
        dynamic_shapes: As for torch.export (by forward-parameter name, or positionally), with
            strings allowed as dim names; a dict may also be keyed by ``input_names``.
        dynamic_axes: The TorchScript exporter's form, ``{"input_ids": {0: "batch", 1: "seq"}}``
            or ``{"input_ids": [0, 1]}``, keyed by input names (outputs' entries are ignored: output
            dims follow from the inputs).
        dynamic: Every axis of every tensor input dynamic (``Dim.AUTO``), except those the model
            fixes.

    Returns:
        The spec for torch.export and, per tensor input leaf, its path and named axes.

    Raises:
        InputError: Several forms given, unknown input names, or an axis beyond an input's rank.
    """
    if dynamic_shapes is not None and not isinstance(dynamic_shapes, (Mapping, list, tuple)):
        raise InputError(
            f"dynamic_shapes must be a dict (by input name) or a tuple (one entry per input), got "
            f"{type(dynamic_shapes).__name__}: {dynamic_shapes!r}. Example: {{'x': {{0: 'batch_size'}}}}."
        )
    if dynamic_axes is not None and not isinstance(dynamic_axes, Mapping):
        raise InputError(
            f"dynamic_axes must be a dict {{input_name: {{axis: dim_name}}}}, got {type(dynamic_axes).__name__}."
        )
    if isinstance(dynamic_shapes, Mapping):
        dynamic_shapes = _varargs_positional(forward, combined, dynamic_shapes)
    given = [n for n, v in (("dynamic_shapes", dynamic_shapes), ("dynamic_axes", dynamic_axes), ("dynamic", dynamic)) if v]
    if len(given) > 1:
        raise InputError(f"Give only one of {', '.join(given)}: they all declare the dynamic dims.")
    leaves = tensor_leaves(combined)
    paths = [p for p, _ in leaves]
    by_input_name = dict(zip(input_names or (), paths))
    spec = dynamic_shapes
    if dynamic:
        spec = {n: _spec_for(v, n, {p: {a: Dim.AUTO for a in range(t.dim())} for p, t in leaves}) for n, v in combined.items()}
    elif dynamic_axes:
        leaf_axes: dict[str, dict[int, Any]] = {}
        for key, axes in dynamic_axes.items():
            path = by_input_name.get(key, key)
            if path in paths:
                leaf_axes[path] = _legacy_axes(axes, key)
            elif key not in (output_names or ()):
                raise InputError(f"dynamic_axes names {key!r}, which is neither an input ({', '.join(by_input_name or paths)}) nor in output_names.")
        spec = {n: _spec_for(v, n, leaf_axes) for n, v in combined.items()}
    elif isinstance(dynamic_shapes, Mapping) and any(k not in combined for k in dynamic_shapes):
        leaf_axes = {}
        for key, axes in dynamic_shapes.items():
            if key in combined:
                continue
            if key not in by_input_name:
                raise InputError(
                    f"dynamic_shapes names {key!r}, which is not an input: forward takes {list(combined)}"
                    + (f", input_names are {list(input_names)}" if input_names else "") + "."
                )
            leaf_axes[by_input_name[key]] = axes
        spec = {n: dynamic_shapes[n] if n in dynamic_shapes else _spec_for(v, n, leaf_axes) for n, v in combined.items()}
    named = leaf_names(forward, combined, spec)
    for (path, tensor), (_, axes) in zip(leaves, named):
        for axis, name in axes.items():
            if not -tensor.dim() <= axis < tensor.dim():
                raise InputError(
                    f"dynamic_shapes declares axis {axis} ({name!r}) of input {path!r}, which has only "
                    f"{tensor.dim()} dimensions (shape {list(tensor.shape)})."
                )
    _check_ranks(spec, combined, forward)
    check_dim_names(leaves, named)
    return to_torch_export(spec, combined), named


def check_dim_names(leaves: Sequence[tuple[str, torch.Tensor]], named: Sequence[tuple[str, AxisNames]]) -> None:
    """One dim name stands for one size: the example sizes of the axes sharing a name must agree
    (ONNX treats equal ``dim_param`` names as equal sizes: onnx/onnx docs/IR.md, "Tensor shapes").

    Raises:
        DynamicShapesError: A name given to axes whose example sizes differ, naming both.
    """
    first: dict[str, tuple[str, int, int]] = {}
    for (path, tensor), (_, axes) in zip(leaves, named):
        for axis, name in axes.items():
            size = int(tensor.shape[axis])
            if name not in first:
                first[name] = (path, axis % tensor.dim(), size)
                continue
            other_path, other_axis, other_size = first[name]
            if other_size != size:
                raise DynamicShapesError(
                    f"Dim name {name!r} is used for input {other_path!r} axis {other_axis} (example size "
                    f"{other_size}) and input {path!r} axis {axis % tensor.dim()} (example size {size}): one "
                    "name means one size. Give the axes different names, or examples of equal size."
                )


def _check_ranks(spec: Any, combined: Mapping[str, Any], forward: Any) -> None:
    """Unnamed dims (Dim.AUTO/DYNAMIC) beyond a tensor's rank are errors too."""
    if not isinstance(spec, (list, tuple, Mapping)):
        return
    spec = bind_specs(forward, combined, spec)

    def walk(value: Any, sub: Any, path: str) -> None:
        if isinstance(value, torch.Tensor):
            axes = list(sub) if isinstance(sub, Mapping) else list(range(len(sub))) if isinstance(sub, (list, tuple)) else []
            if isinstance(sub, (list, tuple)) and len(sub) != value.dim():
                raise InputError(f"dynamic_shapes for input {path!r} lists {len(sub)} dims; the tensor has {value.dim()} (shape {list(value.shape)}).")
            for axis in axes:
                if not isinstance(axis, int) or not -value.dim() <= axis < value.dim():
                    raise InputError(f"dynamic_shapes declares axis {axis!r} of input {path!r}, which has only {value.dim()} dimensions (shape {list(value.shape)}).")
        elif isinstance(value, Mapping) and isinstance(sub, Mapping):
            for k, v in value.items():
                walk(v, sub.get(k), f"{path}.{k}")
        elif isinstance(value, (list, tuple)) and isinstance(sub, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, sub[i] if i < len(sub) else None, f"{path}.{i}")

    for name, value in combined.items():
        walk(value, spec.get(name), name)


def _dim_name(dim: Any) -> str | None:
    """The user's name of an axis: a string, or a ``Dim``'s name (``4*h`` for ``4 * Dim("h")``)."""
    if isinstance(dim, str):
        return str(dim)
    name = getattr(dim, "__name__", None)
    if name and not name.startswith("_") and name not in ("AUTO", "DYNAMIC", "STATIC"):
        return name
    return None


def _axis_names(spec: Any) -> AxisNames:
    """Axis → user name for one tensor's spec (a dict by axis, or a list/tuple per axis)."""
    items: Any
    if isinstance(spec, Mapping):
        items = spec.items()
    elif isinstance(spec, (list, tuple)):
        items = enumerate(spec)
    else:
        return {}
    names = {}
    for axis, dim in items:
        axis = _axis(axis, "dynamic_shapes")
        if not (dim is None or isinstance(dim, (str, int, Dim, _DimHint))) or isinstance(dim, bool) or dim == "":
            raise InputError(
                f"dynamic_shapes gives axis {axis} the value {dim!r}: use a dim name (a non-empty string "
                "such as 'batch_size'), torch.export.Dim('batch_size'), Dim.AUTO / Dim.DYNAMIC, or None."
            )
        name = _dim_name(dim)
        if name is not None:
            names[axis] = name
    return names


def bind_inputs(forward: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Forward-parameter name → example input, in the order torch.export flattens them: the
    positional arguments, then the keyword arguments in the order given.

    Raises:
        InputError: The inputs do not bind to ``forward``'s signature.
    """
    try:
        sig = inspect.signature(forward)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise InputError(
            f"The example inputs do not match forward{_signature(forward)}: {e}. "
            "Pass args as a tuple of positional inputs and kwargs as a dict of keyword inputs."
        ) from e
    combined: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        param = sig.parameters[name]
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            for i, v in enumerate(value):
                combined[f"{name}_{i}"] = v
        elif param.kind is not inspect.Parameter.VAR_KEYWORD and name not in kwargs:
            combined[name] = value
    combined.update(kwargs)
    return combined


def _bound_names(params: Mapping[str, inspect.Parameter], combined: Mapping[str, Any]) -> list[str]:
    """The parameters an input was bound to, in signature order (how torch.export binds a tuple
    spec): a ``*args`` parameter once, for its ``name_0`` ... inputs; inputs of ``**kwargs`` last."""
    varargs = {n for n, p in params.items() if p.kind is inspect.Parameter.VAR_POSITIONAL}
    names = [n for n in params if n in combined or (n in varargs and f"{n}_0" in combined)]
    return names + [n for n in combined if n not in names and not any(n.startswith(f"{v}_") for v in varargs)]


def _varargs_positional(forward: Any, combined: Mapping[str, Any], dynamic_shapes: Mapping[str, Any]) -> Any:
    """A dict spec naming a ``*args`` parameter, as the positional tuple torch.export binds the same
    way (its dict form would need the ``name_0`` ... inputs that :func:`bind_inputs` makes)."""
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return dynamic_shapes
    varargs = [n for n, p in params.items() if p.kind is inspect.Parameter.VAR_POSITIONAL]
    if not any(v in dynamic_shapes for v in varargs) or not set(dynamic_shapes) <= set(params):
        return dynamic_shapes
    return tuple(dynamic_shapes.get(n) for n in _bound_names(params, combined))


def bind_specs(forward: Any, combined: Mapping[str, Any], dynamic_shapes: Any) -> Mapping[str, Any]:
    """``dynamic_shapes`` keyed like ``combined`` (:func:`bind_inputs`).

    A tuple/list binds to forward's parameters in signature order, as ``torch.export`` binds it; a
    ``*args`` parameter's spec is one tuple with an entry per element, which is spread over the
    ``name_0``, ``name_1`` ... inputs that :func:`bind_inputs` made of it.
    """
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    if isinstance(dynamic_shapes, (list, tuple)):
        specs: dict[str, Any] = dict(zip(_bound_names(params, combined), dynamic_shapes))
    elif isinstance(dynamic_shapes, Mapping):
        specs = dict(dynamic_shapes)
    else:
        return {}
    for name, param in params.items():
        if param.kind is inspect.Parameter.VAR_POSITIONAL and isinstance(specs.get(name), (list, tuple)):
            for i, sub in enumerate(specs.pop(name)):
                specs[f"{name}_{i}"] = sub
    return specs


def _signature(forward: Any) -> str:
    try:
        return str(inspect.signature(forward))
    except (TypeError, ValueError):
        return "(...)"


def leaf_names(forward: Any, combined: Mapping[str, Any], dynamic_shapes: Any) -> list[tuple[str, AxisNames]]:
    """For every tensor leaf of the inputs (pytree order): its dotted path and its named axes.

    Paths use the forward signature's names and the container keys/indices:
    ``tensor_x``, ``input_dict.tensor_x``, ``input_list.0``.
    """
    specs = bind_specs(forward, combined, dynamic_shapes)
    out: list[tuple[str, AxisNames]] = []
    for name, value in combined.items():
        _walk(value, specs.get(name), name, out)
    return out


def _walk(
    value: Any, spec: Any, path: str, out: list[tuple[str, AxisNames]], tensors: list[torch.Tensor] | None = None
) -> None:
    if isinstance(value, torch.Tensor):
        out.append((path, _axis_names(spec)))
        if tensors is not None:
            tensors.append(value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            sub = spec.get(k) if isinstance(spec, Mapping) else None
            _walk(v, sub, f"{path}.{k}", out, tensors)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            sub = spec[i] if isinstance(spec, (list, tuple)) and i < len(spec) else None
            _walk(v, sub, f"{path}.{i}", out, tensors)
    elif isinstance(value, (int, float, bool, str)) or value is None:
        return
    else:
        # Other pytree nodes (HF caches, dataclasses): flatten with torch's pytree.
        leaves, _ = torch.utils._pytree.tree_flatten(value)
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, torch.Tensor):
                out.append((f"{path}.{i}", {}))
                if tensors is not None:
                    tensors.append(leaf)


def symbol_names(
    user_inputs: Sequence[torch.fx.Node], leaves: Sequence[tuple[str, AxisNames]]
) -> dict[str, str]:
    """Symbol (``"s72"``) → ONNX dim name, read off the placeholders' FakeTensor shapes.

    User names win; a symbol the user did not name (``Dim.AUTO``, ``Dim.DYNAMIC``, ``dynamic=True``)
    is named after its first input and axis: ``input_ids_dim_1``.
    """
    names: dict[str, str] = {}
    unnamed: dict[str, str] = {}
    for node, (path, axes) in zip(user_inputs, leaves):
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        axes = {axis % max(val.dim(), 1): name for axis, name in axes.items()}
        for axis, dim in enumerate(val.shape):
            if not isinstance(dim, torch.SymInt):
                continue
            expr = dim.node.expr
            if not expr.is_Symbol:  # a derived dim (4*s1 named "4*h"): its one symbol is "h"
                roots = set(re.findall(r"[A-Za-z_]\w*", axes.get(axis, "")))
                if len(expr.free_symbols) == 1 and len(roots) == 1:
                    names.setdefault(str(next(iter(expr.free_symbols))), roots.pop())
                continue
            symbol = str(expr)
            if axis in axes:
                names.setdefault(symbol, axes[axis])
            else:
                unnamed.setdefault(symbol, f"{path}_dim_{axis}")
    return {**unnamed, **names}


_DIM_REF = re.compile(r"(?:L|inputs)((?:\[[^\]]+\])+)\.(?:size\(\)|shape)\[(\d+)\]")


def _user_stack(text: str) -> str:
    """The user's frames of torch's "User stack:" section (strict mode records it for a
    specialization; torch's own frames dropped), or ''."""
    if "User stack:" not in text:
        return ""
    frames = re.findall(r'(  File "[^"]+", line \d+, in \w+\n    [^\n]+)', text.split("User stack:", 1)[1])
    mine = [f for f in frames if "/torch/" not in f.split(",")[0]]
    return "\n".join(mine[-2:])


def explain_violation(error: Exception, leaves: Sequence[tuple[str, AxisNames]],
                      attempts: Sequence[Any] = ()) -> Exception:
    """Rewrite torch.export's constraint-violation error in terms of the user's inputs and axes.

    ``L['x'].size()[0]`` / ``inputs['x'].shape[0]`` become ``input 'x' axis 0 ("batch")``; torch's
    suggested fixes are kept, and the user's line that specialized a dim when a strict-mode
    ``attempts`` entry recorded it (``for t in range(x.shape[1])``: a Python loop over the dim).
    Any other capture error is returned unchanged.
    """
    cause = error.__cause__
    text = str(cause) if cause is not None else ""
    if cause is None or classify(cause) != CONSTRAINT_VIOLATION:  # e.g. a data-dependent guard
        return error
    where = next((w for w in (_user_stack(str(a.error)) for a in (*attempts,) if a.error is not None) if w), "")
    where = where or _user_stack(text)
    text = text.split("User stack:", 1)[0].rstrip()
    if where:
        text += "\n  The code that specialized it:\n" + where
    names = {path: axes for path, axes in leaves}

    def readable(match: re.Match[str]) -> str:
        keys = [k.strip("'\"") for k in re.findall(r"\[([^\]]+)\]", match.group(1))]
        if keys and keys[0] in ("kwargs", "args") and len(keys) > 1:
            keys = keys[1:]
        path, axis = ".".join(keys), int(match.group(2))
        label = names.get(path, {}).get(axis)
        return f"input {path!r} axis {axis}" + (f" ({label!r})" if label else "")

    lines = [_DIM_REF.sub(readable, line) for line in text.splitlines()]
    body = "\n".join(line for line in lines if line.strip() and "draft_export" not in line and "TORCH_LOGS" not in line.split("!")[-1])
    return DynamicShapesError(
        "dynamic_shapes cannot be honoured: the model constrains dims declared dynamic.\n"
        f"{body}\n"
        "Fix: declare those axes static (leave them out, or use Dim.STATIC), use Dim.AUTO to let "
        "torch.export decide, or apply the suggested fixes above."
    )


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """The model's inputs as every later stage needs them, resolved once from ``dynamic_shapes``
    (or ``dynamic_axes`` / ``dynamic=True``) and ``input_names``.

    Attributes:
        export_shapes: The ``dynamic_shapes`` argument for ``torch.export.export``.
        leaves: Per tensor input leaf (pytree order): its path (``input_dict.tensor_x``) and the
            names of its dynamic axes (``{0: "batch"}``). Empty for an ExportedProgram.
        input_names: The user's graph input names, if given.
        output_names: The user's graph output names, if given.
    """

    export_shapes: Any = None
    leaves: tuple[tuple[str, AxisNames], ...] = ()
    input_names: tuple[str, ...] | None = None
    output_names: tuple[str, ...] | None = None

    def graph_names(self, tensor_inputs: Sequence[torch.fx.Node]) -> tuple[dict[str, str], dict[str, str]]:
        """Placeholder name → graph input name, and symbol (``s72``) → ONNX dim name.

        Raises:
            InputError: More ``input_names`` than tensor inputs.
        """
        leaves = list(self.leaves)
        if len(leaves) != len(tensor_inputs):
            leaves = [(n.name, {}) for n in tensor_inputs]
        names = [path for path, _ in leaves]
        if self.input_names is not None:
            if len(self.input_names) > len(tensor_inputs):
                raise InputError(
                    f"input_names has {len(self.input_names)} names but the model has {len(tensor_inputs)} "
                    f"tensor inputs ({', '.join(names)})."
                )
            names[: len(self.input_names)] = list(self.input_names)
        input_map = {n.name: name for n, name in zip(tensor_inputs, names)}
        return input_map, symbol_names(tensor_inputs, leaves)


def input_spec(
    model: Any,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    options: ExportOptions,
) -> InputSpec:
    """Resolve the dynamic dims and names of ``model``'s inputs once (see :func:`resolve`).

    An ExportedProgram's shapes are already fixed: only the names are kept.

    Raises:
        InputError: See :func:`resolve` and :func:`bind_inputs`.
    """
    if not isinstance(model, torch.nn.Module):
        return InputSpec(None, (), options.input_names, options.output_names)
    combined = bind_inputs(model.forward, args, kwargs)
    export_shapes, leaves = resolve(
        model.forward, combined, dynamic_shapes=options.dynamic_shapes, dynamic_axes=options.dynamic_axes,
        dynamic=options.dynamic, input_names=options.input_names, output_names=options.output_names,
    )
    return InputSpec(export_shapes, tuple(leaves), options.input_names, options.output_names)
