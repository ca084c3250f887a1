"""``dynamic_shapes`` as users write it → what torch.export accepts, plus the user's dim names.

torch.export accepts ``Dim`` objects and ``Dim.AUTO`` / ``Dim.DYNAMIC``; onnxport also accepts plain
strings (``{0: "batch_size"}``), as torch.onnx.export(dynamo=True) does. A string becomes
``Dim.DYNAMIC`` and its text names the ONNX symbolic dimension.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export import Dim

from onnxport.errors import InputError

AxisNames = dict[int, str]


def _convert(spec: Any, path: str) -> Any:
    """Replace string dims by ``Dim.DYNAMIC`` recursively."""
    if isinstance(spec, str):
        return Dim.DYNAMIC
    if isinstance(spec, Mapping):
        return {k: _convert(v, f"{path}.{k}") for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(_convert(v, f"{path}.{i}") for i, v in enumerate(spec))
    return spec


def to_torch_export(dynamic_shapes: Any, combined: Mapping[str, Any] | None = None) -> Any:
    """The ``dynamic_shapes`` argument to give torch.export.

    A dict keyed by input names gets ``None`` (static) for the inputs it does not mention
    (torch.export wants every input named, e.g. a ``use_cache=False`` keyword).
    """
    if dynamic_shapes is None:
        return None
    converted = _convert(dynamic_shapes, "dynamic_shapes")
    if isinstance(converted, dict) and combined is not None:
        unknown = [k for k in converted if k not in combined]
        if unknown:
            raise InputError(
                f"dynamic_shapes names {unknown}, which are not inputs of forward; inputs: {list(combined)}."
            )
        converted = {name: converted.get(name) for name in combined}
    return converted


def _dim_name(dim: Any) -> str | None:
    if isinstance(dim, str):
        return dim
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
        name = _dim_name(dim)
        if name is not None:
            names[int(axis)] = name
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


def signature_order(forward: Any, combined: Mapping[str, Any]) -> list[str]:
    """The names of ``combined`` in forward-signature order (how a tuple ``dynamic_shapes`` binds)."""
    try:
        params = list(inspect.signature(forward).parameters)
    except (TypeError, ValueError):
        return list(combined)
    order = {name: i for i, name in enumerate(params)}
    return sorted(combined, key=lambda n: order.get(n, len(order)))


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
    if isinstance(dynamic_shapes, (list, tuple)):
        specs: Mapping[str, Any] = dict(zip(signature_order(forward, combined), dynamic_shapes))
    elif isinstance(dynamic_shapes, Mapping):
        specs = dynamic_shapes
    else:
        specs = {}
    out: list[tuple[str, AxisNames]] = []
    for name, value in combined.items():
        _walk(value, specs.get(name), name, out)
    return out


def _walk(value: Any, spec: Any, path: str, out: list[tuple[str, AxisNames]]) -> None:
    if isinstance(value, torch.Tensor):
        out.append((path, _axis_names(spec)))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            sub = spec.get(k) if isinstance(spec, Mapping) else None
            _walk(v, sub, f"{path}.{k}", out)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            sub = spec[i] if isinstance(spec, (list, tuple)) and i < len(spec) else None
            _walk(v, sub, f"{path}.{i}", out)
    elif isinstance(value, (int, float, bool, str)) or value is None:
        return
    else:
        # Other pytree nodes (HF caches, dataclasses): flatten with torch's pytree.
        leaves, _ = torch.utils._pytree.tree_flatten(value)
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, torch.Tensor):
                out.append((f"{path}.{i}", {}))


def symbol_names(
    user_inputs: Sequence[torch.fx.Node], leaves: Sequence[tuple[str, AxisNames]]
) -> dict[str, str]:
    """Symbol (``"s72"``) → user dim name, read off the placeholders' FakeTensor shapes."""
    names: dict[str, str] = {}
    for node, (_, axes) in zip(user_inputs, leaves):
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        for axis, name in axes.items():
            if axis >= val.dim():
                raise InputError(
                    f"dynamic_shapes names axis {axis} ({name!r}) of input {node.name}, "
                    f"which has only {val.dim()} dimensions."
                )
            dim = val.shape[axis]
            if isinstance(dim, torch.SymInt) and dim.node.expr.is_Symbol:
                names.setdefault(str(dim.node.expr), name)
    return names
