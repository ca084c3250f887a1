"""Choose the runtime check's second input size inside the guards torch.export recorded.

torch.export records a guard instead of failing when a model's code constrains sizes declared
dynamic by a relation (``seq % 2 == 0`` from a ``reshape(b, t // 2, 2 * f)``, ``H % stride`` in TF
"same" padding, "the last feature map is 1x1" in transformers' MobileNetV2 at 32x32). The runtime
check's first choice of other sizes (each dim + about half, ``inputs._spread``) can fall outside
them while other sizes inside the declared ranges satisfy every guard. :func:`choose_sizes` reads
the guards from the captured program's ShapeEnv (``ShapeEnv.guards``, the expressions
``ExportedProgram._guards_code`` is printed from in ``torch/export/exported_program.py:
_convert_guards_to_code``), keeps those over input dims only, and searches, in this order:

1. the first choice (every dim + about half);
2. per group of dims equal in the example (moved together so they stay equal), then per dim name
   (the symbols torch.export gave each input for one named dim move together), the
   candidates of :func:`candidates` (the next multiples of 2..64, offsets of ±1..3, ± a quarter or
   a half, double), keeping a candidate when it makes fewer guards fail (coordinate descent, at
   most three rounds).

A specialization is reported only when no tried size set satisfies every guard.

When the first choice satisfies every guard, it can still share the example's side of a branch by
chance (a parity: SEW-D pads its upsampled frames only when their count is odd, and the example
and the first choice both gave an even count). :attr:`SizeChoice.probe` is then the first size set,
one dim moved to one of its candidates, where a guard over that dim alone is false: the runtime
check compares the ONNX model with eager there.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP
from torch.utils._sympy.printers import PythonPrinter

from onnxport.capture.specialization import guard_source

_MULTIPLES = (2, 4, 8, 16, 32, 64)
_ROUNDS = 3


@dataclasses.dataclass(frozen=True)
class Guard:
    """One guard over input dims.

    Attributes:
        expr: The sympy condition over the input symbols (``Eq(Mod(s53, 2), 0)``).
        names: Input symbol → its dim name, for :attr:`text`.
        where: The user source line that recorded it.
    """

    expr: Any
    names: Mapping[Any, str] = dataclasses.field(repr=False)
    where: str
    fn: Callable[..., Any] | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The condition with each symbol written as its dim name (``Eq(Mod(height, 2), 0)``);
        computed on demand, by renaming in the printed text (substituting symbols would make sympy
        re-evaluate a large guard)."""
        names = {str(s): n for s, n in self.names.items()}
        return re.sub(r"\b[a-z]\d+\b", lambda m: names.get(m.group(0), m.group(0)), str(self.expr))

    def holds(self, sizes: Mapping[Any, int]) -> bool:
        """Whether the guard is true at ``sizes`` (symbol → value); True when it cannot be decided,
        False when it divides by zero there."""
        if self.fn is not None:
            try:
                return bool(self.fn(**{str(s): int(v) for s, v in sizes.items()}))
            except Exception:  # a printed form Python cannot evaluate: fall back on sympy below
                pass
        try:
            value = self.expr.xreplace({s: sympy.Integer(v) for s, v in sizes.items()})
        except ZeroDivisionError:  # Mod(x, height // 16) at a height under 16: not a size the model takes
            return False
        except (TypeError, ValueError):
            return True
        return value != sympy.false


def _compile(expr: Any) -> Callable[..., Any] | None:
    """``expr`` as a Python function of its symbols by name, as torch prints guards to code."""
    names = sorted(str(s) for s in expr.free_symbols)
    try:
        code = PythonPrinter().doprint(expr)
        namespace = {**SYMPY_INTERP, "math": math, "inf": math.inf}
        return eval(f"lambda {''.join(n + ', ' for n in names)}**_: {code}", namespace)  # noqa: S307 (torch's own printed guard)
    except Exception:  # an expression the printer does not handle: sympy evaluates it instead
        return None


def input_guards(values: Iterable[torch.Tensor], names: Mapping[Any, str]) -> list[Guard]:
    """The ShapeEnv guards whose symbols are all input dims in ``names`` (symbol → dim name).

    Args:
        values: The FakeTensor ``val`` of the program's user inputs (the ShapeEnv is theirs).
        names: Input symbol → the name to show for it.
    """
    shape_env = None
    for val in values:
        for dim in val.shape:
            if isinstance(dim, torch.SymInt):
                shape_env = dim.node.shape_env
                break
        if shape_env is not None:
            break
    if shape_env is None:
        return []
    known = set(names)
    guards = []
    for guard in getattr(shape_env, "guards", ()):
        free = guard.expr.free_symbols
        if not free or not free <= known:
            continue
        guards.append(Guard(guard.expr, names, guard_source(guard), _compile(guard.expr)))
    return guards


def candidates(value: int, lower: int, upper: int | None) -> list[int]:
    """Other sizes to try for a dim of example size ``value`` within ``[lower, upper]``, nearest
    forms first: the spread size, the next multiples of 2..64 above it, ``value`` + 2..64 (same
    residue), offsets of ±1..3, ± a quarter, minus a half, double."""
    spread = value + max(1, value // 2)
    raw = [spread]
    raw += [-(-spread // m) * m for m in _MULTIPLES]
    raw += [value + m for m in _MULTIPLES]
    raw += [value + 1, value - 1, value + 2, value - 2, value + 3, value - 3]
    raw += [value + max(1, value // 4), value - max(1, value // 4), value - value // 2, 2 * value]
    out: list[int] = []
    for c in raw:
        if c != value and c >= lower and (upper is None or c <= upper) and c not in out:
            out.append(c)
    return out


@dataclasses.dataclass
class SizeChoice:
    """What :func:`choose_sizes` found.

    Attributes:
        sizes: Symbol → size satisfying every guard, or ``None`` when no tried set did.
        first: The first choice (every dim + about half).
        rejected: The guards false at ``first`` (empty when the first choice was kept).
        tried: How many size sets were evaluated.
        probe: When ``first`` satisfies every guard: sizes near it (one dim moved to one of its
            :func:`candidates`) where a guard over that dim alone is false, or ``None``.
        probe_rejected: The guards false at ``probe``.
    """

    sizes: dict[Any, int] | None
    first: dict[Any, int]
    rejected: list[Guard]
    tried: int
    probe: dict[Any, int] | None = None
    probe_rejected: list[Guard] = dataclasses.field(default_factory=list)


def _dims(example: Mapping[Any, int], names: Mapping[Any, str] | None) -> list[list[Any]]:
    """The symbols of ``example`` grouped by dim name: torch.export gives each input its own symbol
    for a dim the inputs share (``sequence_length`` of ``input_ids`` and ``attention_mask``) until
    a guard joins them, and the runtime feeds one size per name."""
    groups: dict[Any, list[Any]] = {}
    for symbol in example:
        groups.setdefault((names or {}).get(symbol, symbol), []).append(symbol)
    return list(groups.values())


def choose_sizes(guards: list[Guard], example: Mapping[Any, int],
                 bounds: Mapping[Any, tuple[int, int | None]], names: Mapping[Any, str] | None = None) -> SizeChoice | None:
    """Sizes, every one different from the example's, that satisfy every guard (module docstring).

    Args:
        guards: From :func:`input_guards`.
        example: Symbol → example size.
        bounds: Symbol → ``(lower, upper)`` of its range constraint (upper ``None``: unbounded).
        names: Symbol → dim name; symbols of one name always move together (:func:`_dims`).

    Returns:
        The :class:`SizeChoice`, or ``None`` when some dim has no other allowed size.
    """
    options = {s: candidates(v, *bounds[s]) for s, v in example.items()}
    if any(not c for c in options.values()):
        return None
    current = {s: c[0] for s, c in options.items()}
    tried = 1

    def failing(sizes: Mapping[Any, int]) -> int:
        return sum(not g.holds(sizes) for g in guards)

    first = dict(current)
    rejected = [g for g in guards if not g.holds(first)]
    if not rejected:
        return _probe(guards, first, options, _dims(example, names))
    score = len(rejected)
    groups: dict[int, list[Any]] = {}
    for s, v in example.items():
        groups.setdefault(v, []).append(s)
    units = [g for g in groups.values() if len(g) > 1] + _dims(example, names)
    for _ in range(_ROUNDS):
        if score == 0:
            break
        improved = False
        for unit in units:
            if score == 0:
                break
            best, best_score = None, score
            for choice in options[unit[0]]:
                if any(choice not in options[s] for s in unit):
                    continue
                trial = {**current, **{s: choice for s in unit}}
                tried += 1
                n = failing(trial)
                if n < best_score:
                    best, best_score = trial, n
                    if n == 0:
                        break
            if best is not None:
                current, score, improved = best, best_score, True
        if not improved:
            break
    return SizeChoice(current if score == 0 else None, first, rejected, tried)


def _probe(guards: list[Guard], first: dict[Any, int], options: Mapping[Any, list[int]],
           dims: list[list[Any]]) -> SizeChoice:
    """The choice when ``first`` satisfies every guard, with the :attr:`SizeChoice.probe` found by
    moving one dim at a time through its candidates until a guard over that dim alone is false.
    ``dims``: the symbols grouped by dim name, moved together.
    Guards relating several dims (``total_sequence_length == past_sequence_length +
    sequence_length``) state how inputs must agree, not a branch: moving one dim breaks them in any
    model, so they are not probed."""
    tried = 1
    for unit in dims:  # the symbols of one dim name move together
        own = [g for g in guards if g.expr.free_symbols <= set(unit)]
        choices = [c for c in options[unit[0]] if all(c in options[s] for s in unit)]
        for choice in choices if own else ():
            if choice == first[unit[0]]:
                continue
            trial = {**first, **{s: choice for s in unit}}
            tried += 1
            false = [g for g in own if not g.holds(trial)]
            if false:
                return SizeChoice(first, first, [], tried, trial, false)
    return SizeChoice(first, first, [], tried)


__all__ = ["Guard", "SizeChoice", "candidates", "choose_sizes", "input_guards"]
