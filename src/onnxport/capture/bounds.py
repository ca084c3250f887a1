"""Lower bounds of dynamic dims (``Dim.DYNAMIC(min=1)``) made known while torch.export traces.

onnxport captures with ``backed_size_oblivious`` (:mod:`onnxport.capture.strategies`). torch 2.13
then gives every backed symbol the range ``[0, int_oo]`` during tracing and applies a
``Dim.DYNAMIC(min=...)`` bound only to the finished program's ``range_constraints``; and with that
flag ``guard_or_false`` decides a size test from the ranges alone
(``symbolic_shapes._guard_or`` → ``_static_eval_sym_bool``). Code whose sizes are right only for a
length of at least 1 then fails to capture: transformers' MPT attention slices its one-row ALiBi
bias from ``max(0, 1 - query_length)`` and adds it to scores of ``sequence_length`` rows; the row
count ``1 - Max(0, 1 - past - 2 * sequence_length)`` is 1 (broadcastable) only when
``sequence_length >= 1``.

:func:`lower_bounds` narrows the range of each bounded dim's symbol before the model's ``forward``
runs (a forward pre-hook of the root module, which non-strict torch.export calls with the fake
inputs), through ``ShapeEnv.constrain_symbol_range``, the call torch.export itself uses for a
``Dim``'s range.

The same hook states that the axes sharing a ``Dim`` are equal (``torch._check``): torch.export
gives each input's axis a symbol of its own and joins those of one ``Dim`` only when a guard
relates them or at the end. Code that reshapes one input by another's size before anything joins
them failed to capture: diffusers' ``prepare_attention_mask`` views Sana's caption mask by the
latents' batch, and the view's ``-1`` became ``(s78//s47)``, not 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch.export import Dim
from torch.export.dynamic_shapes import _combine_args, _DimHint


def _bound(hint: Any) -> int:
    """The lower bound a dynamic_shapes entry declares (0: none)."""
    if isinstance(hint, (_DimHint, Dim)) or isinstance(hint, type) and issubclass(hint, Dim):
        low = getattr(hint, "min", None)
        return low if isinstance(low, int) and low > 0 else 0
    return 0


def _axes(value: Any, spec: Any) -> Iterator[tuple[Any, Any]]:
    """``(hint, size)`` for every tensor axis of ``value`` that ``spec`` (torch.export form, the
    same nesting) gives an entry."""
    if isinstance(value, torch.Tensor):
        axes = spec.items() if isinstance(spec, Mapping) else enumerate(spec) if isinstance(spec, (list, tuple)) else ()
        for axis, hint in axes:
            yield hint, value.shape[axis]
    elif isinstance(value, Mapping) and isinstance(spec, Mapping):
        for key, item in value.items():
            yield from _axes(item, spec.get(key))
    elif isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)):
        for item, sub in zip(value, spec):
            yield from _axes(item, sub)


def _hints(spec: Any) -> Iterator[Any]:
    """Every entry of ``dynamic_shapes`` (torch.export form)."""
    if isinstance(spec, Mapping):
        for value in spec.values():
            yield from _hints(value)
    elif isinstance(spec, (list, tuple)):
        for value in spec:
            yield from _hints(value)
    else:
        yield spec


def _constrain(values: Any, spec: Any) -> None:
    """Raise the lower bound of every symbolic dim of ``values`` that ``spec`` bounds."""
    for hint, size in _axes(values, spec):
        low = _bound(hint)
        if low and isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
            env, symbol = size.node.shape_env, size.node.expr
            env.constrain_symbol_range(symbol, compiler_min=low, compiler_max=env.var_to_range[symbol].upper)


def _name(hint: Any) -> str | None:
    """The name of a named ``torch.export.Dim`` (not ``2*Dim``, not ``Dim.DYNAMIC``), else ``None``."""
    return str(hint.__name__) if isinstance(hint, Dim) and not hasattr(hint, "root") else None


def _join(values: Any, spec: Any) -> None:
    """``torch._check`` that the symbolic sizes of one ``Dim`` name in ``values`` are equal."""
    first: dict[str, torch.SymInt] = {}
    for hint, size in _axes(values, spec):
        name = _name(hint)
        if name is None or not isinstance(size, torch.SymInt):
            continue
        if name in first:
            torch._check(size == first[name])
        else:
            first[name] = size


def _shared(dynamic_shapes: Any) -> bool:
    """Whether two axes of ``dynamic_shapes`` (torch.export form) share a named ``Dim``."""
    names = [name for name in map(_name, _hints(dynamic_shapes)) if name is not None]
    return len(names) > len(set(names))


def has_bounds(dynamic_shapes: Any) -> bool:
    """Whether any entry of ``dynamic_shapes`` (torch.export form) declares a lower bound."""
    return any(_bound(hint) for hint in _hints(dynamic_shapes))


@contextlib.contextmanager
def known_dims(model: torch.nn.Module, dynamic_shapes: Any) -> Iterator[None]:
    """While active, a non-strict torch.export of ``model`` traces with the lower bounds of
    ``dynamic_shapes`` (torch.export form) applied to the symbols of the example inputs, and the
    axes that share a ``Dim`` known equal (module docstring).

    Strict export (Dynamo) does not get them: its tracer cannot step into the ShapeEnv.
    """
    bounded, shared = has_bounds(dynamic_shapes), _shared(dynamic_shapes)
    if not (bounded or shared):
        yield
        return

    def apply(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        if torch.compiler.is_dynamo_compiling():  # strict export: Dynamo cannot trace the ShapeEnv
            return
        combined = _combine_args(module, args, kwargs)
        values = combined if isinstance(dynamic_shapes, Mapping) else list(combined.values())
        if bounded:
            _constrain(values, dynamic_shapes)
        if shared:
            _join(values, dynamic_shapes)

    handle = model.register_forward_pre_hook(apply, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()
