"""Keep torch's specialization facts: a dim declared dynamic that the captured program only
supports at (about) its example value is an error, never a graph declaring a dynamic dim it does
not support.

onnxport captures with ``backed_size_oblivious`` (``strategies._size_oblivious``) so that a batch of
1 stays dynamic. Code that branches on such a dim (``if x.shape[0] == 1:``) then records a guard
``Eq(s0, 1)`` in the ShapeEnv instead of failing the capture, and the program holds only the
branch the example took. torch.export's own answer to the same code is a constraint violation
("specialized it to be a constant"); this module restores it by reading the ShapeEnv guards of the
captured program (``torch/fx/experimental/symbolic_shapes.py``: ``ShapeEnv.guards``, each with the
user's source location).
"""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Sequence
from typing import Any

import sympy
import torch
from torch.export import Dim, ExportedProgram
from torch.export.graph_signature import InputKind
from torch.utils._pytree import tree_leaves

from onnxport.errors import DynamicShapesError

AxisNames = dict[int, str]


def _user_tensor_inputs(ep: ExportedProgram) -> list[torch.Tensor]:
    user = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    vals = [n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]
    return [v for v in vals if isinstance(v, torch.Tensor)]


def guard_source(guard: Any) -> str:
    """The user source line that recorded ``guard`` (a ShapeEnv ``ShapeGuard``), or a placeholder."""
    loc = getattr(guard, "sloc", None)
    user = getattr(loc, "maybe_user_loc", None)
    if isinstance(user, str) and user:
        return user
    frame = getattr(loc, "framework_loc", None)
    if isinstance(frame, traceback.FrameSummary):
        return f'File "{frame.filename}", line {frame.lineno}, in {frame.name}\n    {frame.line or ""}'.rstrip()
    return str(loc) if loc is not None else "(source line unknown)"


def _truth(expr: Any, symbol: Any, value: int) -> Any:
    """``expr`` with ``symbol`` = ``value``: ``sympy.true``/``false``, or ``None`` when sympy cannot tell."""
    try:
        result = expr.subs(symbol, value)
    except (TypeError, ValueError, ZeroDivisionError):  # sympy could not substitute (or the guard divides
        return None  # by a size that is 0 at this value, torch's FloorDiv): no conclusion
    return result if result in (sympy.true, sympy.false) else None


def _neighbours(example: int) -> set[int]:
    return {2, 3, example + 1, max(example - 1, 2)} - {example}


def _holds_only_near(expr: Any, symbol: Any, example: int) -> bool:
    """The guard, in ``symbol`` alone, is false for every other size a dynamic dim should take
    (2, 3, example ± 1, and twice and three times the example): the graph is only valid at the
    example's size. A guard that holds at a multiple of the example (``Eq(8*(s//8), s)``: the size
    must be a multiple of 8, from a concatenation of a tensor with its down- and up-sampled copy) is
    a restriction, not a pin (:func:`_restricts`)."""
    values = _neighbours(example) | {2 * example, 3 * example}
    return all(_truth(expr, symbol, value) == sympy.false for value in values)


def _restricts(expr: Any, symbol: Any, example: int) -> list[int]:
    """The neighbouring sizes (2, 3, example ± 1) at which the guard is false, when it holds at a
    multiple of the example but not one past it: sizes the dynamic graph does not support (a bound
    such as ``s >= 4`` holds one past the example and is left to ``range_constraints``)."""
    if _truth(expr, symbol, example + 1) != sympy.false:
        return []
    if not any(_truth(expr, symbol, value) == sympy.true for value in (2 * example, 3 * example)):
        return []
    return sorted(v for v in _neighbours(example) if _truth(expr, symbol, v) == sympy.false)


def check_specialized(ep: ExportedProgram, leaves: Sequence[tuple[str, AxisNames]],
                      examples: Sequence[tuple[str, torch.Tensor]]) -> None:
    """Raise when an axis the user named dynamic was specialized by the captured program.

    Args:
        ep: The captured program (FakeTensor ``val`` on its placeholders).
        leaves: Per tensor input (pytree order): its path and the axes the user named.
        examples: Per tensor input (same order): its path and example tensor.

    Warns:
        UserWarning: Once per axis whose guard also holds at a multiple of the example but not at
            its neighbours (a divisibility requirement), naming the guard and the user's line.

    Raises:
        DynamicShapesError: Naming the input, the axis, the dim name, the size it was fixed to and
            the user's source line that fixed it, with the fix (an example of size >= 2 on that
            axis, or declare the axis static).
    """
    vals = _user_tensor_inputs(ep)
    if len(vals) != len(leaves) or len(examples) != len(leaves):
        return
    warned: set[tuple[str, int]] = set()
    for val, (path, axes), (_, example) in zip(vals, leaves, examples):
        for axis, name in axes.items():
            axis %= max(val.dim(), 1)
            size = int(example.shape[axis])
            dim = val.shape[axis]
            if not isinstance(dim, torch.SymInt):
                raise DynamicShapesError(
                    f"Input {path!r} axis {axis} ({name!r}) is declared dynamic, but the model fixed it to "
                    f"{dim} during capture. Fix: use an example of size >= 2 on that axis (a size of 0 or 1 "
                    "is often specialized), or declare the axis static."
                )
            expr = dim.node.expr
            pinned = [ep.range_constraints.get(symbol) for symbol in expr.free_symbols]
            if expr.is_number or all(r is not None and r.lower == r.upper for r in pinned):
                # strict mode answers a derived dim (32 * Dim("height")) the model fixes with a
                # SymInt that is a constant, not with a constraint violation (PP-DocLayout-V3)
                raise DynamicShapesError(
                    f"Input {path!r} axis {axis} ({name!r}) is declared dynamic, but the captured program "
                    f"allows only size {size} there (torch.export fixed it to that value). Fix: use an "
                    "example at another size (a size of 0 or 1 is often specialized), or declare the "
                    "axis static."
                )
            if not expr.is_Symbol:
                continue
            shape_env = dim.node.shape_env
            for guard in getattr(shape_env, "guards", ()):
                if guard.expr.free_symbols != {expr}:
                    continue
                unsupported = _restricts(guard.expr, expr, size)
                if unsupported and (path, axis) not in warned:
                    warned.add((path, axis))
                    warnings.warn(
                        f"Input {path!r} axis {axis} ({name!r}) is dynamic, but the code requires "
                        f"`{guard.expr}` ({expr} is that axis; false at sizes {unsupported}) at\n  "
                        f"{guard_source(guard)}\nThe graph supports the sizes where that holds; onnxruntime "
                        "fails or computes other values at the others.",
                        stacklevel=3,
                    )
                if _holds_only_near(guard.expr, expr, size):
                    raise DynamicShapesError(
                        f"Input {path!r} axis {axis} ({name!r}) is declared dynamic, but the model only "
                        f"supports size {size} there: the code guards on `{guard.expr}` "
                        f"({expr} is that axis) at\n  {guard_source(guard)}\n"
                        "An ONNX graph with this axis dynamic would hold only the branch the example "
                        f"took. Fix: use an example of size >= 2 on axis {axis} of {path!r} (sizes 0 and "
                        "1 are special cases for torch), remove the size-dependent branch, or declare "
                        "the axis static."
                    )



def warn_narrowed(ep: ExportedProgram, leaves: Sequence[tuple[str, AxisNames]], export_shapes: Any = None) -> None:
    """Warn (``UserWarning``) for each axis the user named dynamic whose size the captured program
    bounds from above (``ExportedProgram.range_constraints``) below any ``Dim(max=...)`` the user
    declared in ``export_shapes``: the graph may fail in onnxruntime past that size. Some bounds are
    the model's own (a position table of 512 rows); others are artefacts of its code (a scan over
    views bounded Qwen3-Next's ``sequence_length`` by its 64-token chunk until
    ``capture/delta_rule.py``), so this warns instead of failing."""
    declared = {int(d.max) for d in tree_leaves(export_shapes) if isinstance(d, Dim) and isinstance(d.max, int)}
    vals = _user_tensor_inputs(ep)
    if len(vals) != len(leaves):
        return
    seen: set[tuple[str, int]] = set()
    for val, (path, axes) in zip(vals, leaves):
        for axis, name in axes.items():
            dim = val.shape[axis % max(val.dim(), 1)]
            expr = dim.node.expr if isinstance(dim, torch.SymInt) else None
            bound = ep.range_constraints.get(expr) if expr is not None else None
            if bound is None or not isinstance(bound.upper, sympy.Integer) or (name, int(bound.upper)) in seen:
                continue
            if int(bound.upper) in declared:  # the user's own Dim(max=...)
                continue
            seen.add((name, int(bound.upper)))
            guard = _bounding_guard(dim, int(bound.upper))
            cause = (
                f"The code bounds it with `{guard.expr}` ({expr} is that axis) at\n  {guard_source(guard)}\n"
                "If that is a branch whose other side computes the same values (a layout change such as "
                ".contiguous()), larger inputs run too."
                if guard is not None else
                "If the model is not limited to that size, its code fixed a size derived from this axis."
            )
            warnings.warn(
                f"Input {path!r} axis {axis} ({name!r}) is dynamic, but the captured program supports it "
                f"only up to {int(bound.upper)} (torch.export narrowed its range to [{bound.lower}, "
                f"{int(bound.upper)}]): onnxruntime may fail on larger inputs. {cause}",
                stacklevel=2,
            )


def _bounding_guard(dim: torch.SymInt, upper: int) -> Any:
    """The ShapeEnv guard in ``dim``'s symbol alone that is false one past ``upper`` (the branch
    that narrowed the range, with its source location), or ``None``."""
    symbol = dim.node.expr
    for guard in getattr(dim.node.shape_env, "guards", ()):
        if guard.expr.free_symbols != {symbol}:
            continue
        try:
            result = guard.expr.subs(symbol, upper + 1)
        except (TypeError, ValueError):  # sympy could not substitute: not this one
            continue
        if result == sympy.false:
            return guard
    return None


__all__ = ["check_specialized", "guard_source", "warn_narrowed"]
