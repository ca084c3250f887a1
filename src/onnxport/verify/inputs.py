"""Input sets for verification: normalizing user-given sets, and generating one with other dynamic dims.

For a dynamic model, verifying only on the example inputs misses every bug that shows only at another
shape (a dim baked into a Reshape, a broadcast that only works for batch 2). :func:`second_input_set`
builds a set where every symbolic dim of the graph inputs takes another value allowed by the
ExportedProgram's ``range_constraints`` (the example value + 1, or - 1 at the upper bound). Values are
the example tensors' own values repeated cyclically along the resized axes, so token ids stay in
the vocabulary and masks stay masks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sympy
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from onnxport.errors import InputError

InputSet = tuple[tuple[Any, ...], dict[str, Any]]


def normalize(args: Any, kwargs: Mapping[str, Any] | None) -> InputSet:
    """``(args, kwargs)`` with ``args`` a tuple (one tensor becomes a 1-tuple) and ``kwargs`` a dict."""
    if isinstance(args, torch.Tensor):
        args = (args,)
    return tuple(args), dict(kwargs or {})


def normalize_sets(inputs: Sequence[Any] | None) -> list[InputSet]:
    """Each item of ``inputs`` is an args tuple (or one tensor), or an ``(args, kwargs)`` pair whose
    second element is a dict.

    Raises:
        InputError: An item is neither.
    """
    sets = []
    for i, item in enumerate(inputs or ()):
        if isinstance(item, torch.Tensor):
            sets.append(normalize(item, None))
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
            sets.append(normalize(item[0], item[1]))
        elif isinstance(item, (tuple, list)):
            sets.append(normalize(tuple(item), None))
        elif isinstance(item, Mapping):
            sets.append(((), dict(item)))
        else:
            raise InputError(
                f"inputs[{i}] is a {type(item).__name__}; give an args tuple, a kwargs dict or an "
                "(args, kwargs) pair."
            )
    return sets


def shapes_of(args: tuple[Any, ...], kwargs: Mapping[str, Any], names: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Input name → shape of each tensor leaf of ``(args, kwargs)``, names in graph-input order."""
    leaves = [t for t in torch.utils._pytree.tree_leaves((args, dict(kwargs))) if isinstance(t, torch.Tensor)]
    names = list(names) + [f"input_{i}" for i in range(len(names), len(leaves))]
    return {n: tuple(t.shape) for n, t in zip(names, leaves)}


def _user_placeholders(ep: ExportedProgram) -> list[torch.fx.Node]:
    user = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    return [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]


def _choose(value: int, lower: int, upper: Any) -> int | None:
    """Another value for a dim: value + 1 if allowed, else value - 1, never 0 or 1 (specialized)."""
    for candidate in (value + 1, value - 1, value + 2):
        if candidate >= max(lower, 2) and (upper is None or candidate <= upper) and candidate != value:
            return candidate
    return None


def _upper(bound: Any) -> int | None:
    """A finite integer bound, or ``None`` for ``int_oo``/``oo``."""
    if getattr(bound, "is_finite", True) is False or getattr(bound, "is_infinite", False):
        return None
    try:
        return int(bound)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def _spread(value: int, lower: int, upper: Any) -> int | None:
    """A farther value for a dim: ``value + max(1, value // 2)``, so a dim read in blocks (patches,
    strides) changes its block count and parity; dims equal in the example stay equal (a relation
    torch.export did not record, such as key and value lengths, still holds); :func:`_choose` when
    that leaves the range."""
    candidate = value + max(1, value // 2)
    if upper is None or candidate <= upper:
        return candidate
    return _choose(value, lower, upper)


def input_symbols(ep: ExportedProgram, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[Any, int]:
    """Every symbol of a user input's dims → its example value: a whole dim (``s0``), or the one
    symbol of a derived dim (``4*s1`` of ``dynamic_shapes={2: 4 * Dim("h")}``; its value solved
    from the size).

    Args:
        ep: The ExportedProgram the ONNX model was translated from.
        args, kwargs: The example inputs.
    """
    flat = ep._graph_module_flat_inputs(args, dict(kwargs))
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    user = set(_user_placeholders(ep))
    example: dict[Any, int] = {}
    derived: list[tuple[Any, int]] = []
    for value, node in zip(flat, placeholders):
        val = node.meta.get("val")
        if node not in user or not isinstance(val, torch.Tensor) or not isinstance(value, torch.Tensor):
            continue
        for dim, size in zip(val.shape, value.shape):
            if isinstance(dim, torch.SymInt) and dim.node.expr.is_Symbol:
                example[dim.node.expr] = int(size)
            elif isinstance(dim, torch.SymInt):
                derived.append((dim.node.expr, int(size)))
    for expr, size in derived:
        unknown = [s for s in expr.free_symbols if s not in example]
        if len(unknown) == 1:
            solved = sympy.solve(sympy.Eq(expr.xreplace(example), size), unknown[0])
            if len(solved) == 1 and solved[0].is_integer:
                example[unknown[0]] = int(solved[0])
    return example


def symbol_bounds(ep: ExportedProgram, symbol: Any) -> tuple[int, int | None]:
    """``(lower, upper)`` of ``symbol`` in ``ep.range_constraints`` (lower at least 2: sizes 0 and 1
    are specialized by torch; ``None`` for an unbounded upper end)."""
    ranges = {str(k): v for k, v in ep.range_constraints.items()}
    vr = ranges.get(str(symbol))
    if vr is None:
        return 2, None
    return max(int(vr.lower), 2), _upper(vr.upper)


def resized_inputs(
    ep: ExportedProgram, args: tuple[Any, ...], kwargs: Mapping[str, Any], sizes: Mapping[Any, int],
) -> InputSet:
    """The example inputs with each symbolic dim set to its value in ``sizes`` (symbol → size).

    Values are the example tensors' own, repeated cyclically along the resized axes (token ids stay
    in the vocabulary, masks stay masks); a dim written as an expression of symbols (``2*s0``)
    takes the expression's value. A tensor with a dim whose symbol has no size stays unchanged.
    """
    flat = ep._graph_module_flat_inputs(args, dict(kwargs))
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    by_id = {id(v): p for v, p in zip(flat, placeholders)}
    new = dict(sizes)

    def resize(leaf: Any) -> Any:
        node = by_id.get(id(leaf))
        if node is None or not isinstance(leaf, torch.Tensor):
            return leaf
        val = node.meta["val"]
        sizes = [sympy.sympify(dim.node.expr.xreplace(new)) if isinstance(dim, torch.SymInt) else None for dim in val.shape]
        if any(size is not None and not size.is_number for size in sizes):
            return leaf  # a dim whose symbol has no size: the whole tensor stays as it is
        out = leaf
        for axis, size in enumerate(sizes):
            if size is not None:
                out = out.index_select(axis, torch.arange(int(size)) % max(leaf.shape[axis], 1))
        return out

    new_args, new_kwargs = torch.utils._pytree.tree_map(resize, (tuple(args), dict(kwargs)))
    return tuple(new_args), dict(new_kwargs)


def second_input_set(
    ep: ExportedProgram, args: tuple[Any, ...], kwargs: Mapping[str, Any], *, spread: bool = False,
) -> tuple[InputSet, dict[str, int]] | None:
    """Example inputs with every symbolic input dim changed, or ``None`` for a static model.

    Args:
        ep: The ExportedProgram the ONNX model was translated from.
        args, kwargs: The example inputs.
        spread: Change dims by about half their size (:func:`_spread`, the runtime check's first
            choice) instead of by one (:func:`_choose`, verification's).

    Returns:
        ``((args, kwargs), {symbol: new value})``, or ``None`` when no input dim is symbolic or no
        other value satisfies the range constraints.
    """
    example = input_symbols(ep, args, kwargs)
    if not example:
        return None
    new: dict[Any, int] = {}
    for symbol, size in example.items():
        lower, upper = symbol_bounds(ep, symbol)
        choice = _spread(size, lower, upper) if spread else _choose(size, lower, upper)
        if choice is None:
            return None
        new[symbol] = choice
    return resized_inputs(ep, args, kwargs, new), {str(k): v for k, v in new.items()}


def second_input_set_from_onnx(graph_inputs: Sequence[Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[InputSet, dict[str, int]] | None:
    """Like :func:`second_input_set` for a model without ExportedProgram (loaded from a file): every
    named symbolic dim of the ONNX graph inputs takes its example value + 1.

    Args:
        graph_inputs: The ONNX graph inputs (``onnx_ir.Value``), in feed order.
        args, kwargs: The example inputs; their tensor leaves bind to the graph inputs in order.

    Returns:
        ``((args, kwargs), {dim name: new value})`` or ``None`` when no input dim is symbolic.
    """
    leaves = [t for t in torch.utils._pytree.tree_leaves((tuple(args), dict(kwargs))) if isinstance(t, torch.Tensor)]
    plan: dict[int, list[tuple[int, str]]] = {}
    example: dict[str, int] = {}
    for leaf, value in zip(leaves, graph_inputs):
        for axis, dim in enumerate(value.shape or ()):
            if not isinstance(dim, int) and dim.value and axis < leaf.dim():
                plan.setdefault(id(leaf), []).append((axis, dim.value))
                example.setdefault(dim.value, int(leaf.shape[axis]))
    if not example:
        return None
    new = {name: size + 1 for name, size in example.items()}

    def resize(leaf: Any) -> Any:
        for axis, name in plan.get(id(leaf), ()):
            leaf = leaf.index_select(axis, torch.arange(new[name]) % max(leaf.shape[axis], 1))
        return leaf

    new_args, new_kwargs = torch.utils._pytree.tree_map(resize, (tuple(args), dict(kwargs)))
    return (tuple(new_args), dict(new_kwargs)), new


__all__ = [
    "InputSet", "input_symbols", "normalize", "normalize_sets", "resized_inputs", "second_input_set",
    "second_input_set_from_onnx", "shapes_of", "symbol_bounds",
]
