"""The translation registry: ``OpOverload`` → translation functions, selected by opset.

A translation is declared with :func:`translates`; the decorator only *marks* the function. The
default registry is built once per process by :func:`onnxport.ops.default_registry` from the op
family modules :mod:`onnxport.ops` imports explicitly; this module imports nothing from ``ops``
(the families import :func:`translates` from here, so the dependency runs one way).

Opset selection follows the ONNX versioning rule used by torch.onnx's ``_registration.py`` and
tinygrad's ``nn/onnx.py``: among the encodings registered for a target, the one with the highest
``since`` that is ≤ the target opset wins.

Complex tensors are carried as real tensors with a trailing dimension of 2 (see
``docs/architecture.md``, "Complex numbers"). A node with a complex input or output is translated
only by an entry declared ``complex=True``, which knows that layout; ordinary entries never see it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import torch

from onnxport.errors import InputError
from onnxport.options import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET, check_opset  # noqa: F401 (re-exported)


class Promote(enum.Enum):
    """How the dispatcher promotes the tensor and scalar arguments of an elementwise op.

    Mirrors ``torch._prims_common.ELEMENTWISE_TYPE_PROMOTION_KIND`` (without opmath upcasts).
    """

    NONE = "none"
    DEFAULT = "default"  # all operands to the common dtype
    INT_TO_FLOAT = "int_to_float"  # common dtype, integral/bool → default float dtype


@dataclasses.dataclass(frozen=True)
class Translation:
    """One registered translation of an operator.

    Attributes:
        target: The ``torch._ops.OpOverload`` (or Python callable such as ``operator.mul``).
        fn: ``fn(ctx, *args, **kwargs) -> ir.Value | tuple[ir.Value, ...]``.
        since: Lowest ONNX opset this encoding is valid for.
        promote: Type promotion applied by the dispatcher before calling ``fn``.
        promote_args: Names of the arguments promoted (empty: every Tensor/Scalar argument).
        custom: Registered by the user: wins over onnxport's own translations at every opset.
        complex: Translates the nodes with a complex tensor input or output, which it receives and
            returns as real tensors with a trailing dimension of 2 (real, imaginary).
    """

    target: Any
    fn: Callable[..., Any]
    since: int = MIN_OPSET
    promote: Promote = Promote.NONE
    promote_args: tuple[str, ...] = ()
    custom: bool = False
    complex: bool = False

    @property
    def name(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__qualname__}"


_MARK = "__onnxport_translations__"


def check_target(target: Any) -> None:
    """Raise :class:`InputError` if ``target`` is an ``OpOverloadPacket`` (the registry is keyed by overloads)."""
    if isinstance(target, torch._ops.OpOverloadPacket):
        raise InputError(
            f"{target} is an OpOverloadPacket; register an overload such as "
            f"{target}.default (the registry is keyed by torch._ops.OpOverload)."
        )


def translates(
    *targets: Any,
    since: int = MIN_OPSET,
    promote: Promote | str = Promote.NONE,
    promote_args: Iterable[str] = (),
    complex: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as the translation of one or more ATen overloads.

    Args:
        *targets: ``torch._ops.OpOverload`` objects (``aten.gelu.default``), Python callables
            such as ``operator.mul`` for symbolic-int arithmetic, or the qualified name
            ``"ns::op.overload"`` of an op of an optional library (resolved when a graph uses it).
        since: Lowest opset the encoding is valid for.
        promote: Type promotion done by the dispatcher (see :class:`Promote`).
        promote_args: Argument names to promote; default all Tensor/Scalar arguments.
        complex: The encoding for nodes with a complex tensor input or output (complex-as-real
            layout); chosen by the dispatcher for those nodes only.

    Raises:
        InputError: A target is an ``OpOverloadPacket`` instead of an overload.
    """
    for target in targets:
        check_target(target)
    promote = Promote(promote)

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        entries = list(getattr(fn, _MARK, ()))
        entries.extend(
            Translation(t, fn, since, promote, tuple(promote_args), complex=complex) for t in targets
        )
        setattr(fn, _MARK, tuple(entries))
        return fn

    return mark


class Registry:
    """A mapping from operator targets to their opset-versioned translations.

    Use :func:`onnxport.ops.default_registry` for onnxport's own translations; :meth:`copy` it to add custom ones
    for one export without touching the shared default.
    """

    def __init__(self) -> None:
        self._table: dict[Any, list[Translation]] = {}

    def register(self, translation: Translation) -> None:
        """Add a translation; a later registration with the same ``since`` (and origin) overrides an
        earlier one."""
        check_target(translation.target)
        entries = [
            e for e in self._table.get(translation.target, [])
            if (e.since, e.custom, e.complex) != (translation.since, translation.custom, translation.complex)
        ]
        entries.append(translation)
        entries.sort(key=lambda e: e.since)
        self._table[translation.target] = entries

    def register_module(self, module: ModuleType, *, defined_here: bool = False) -> None:
        """Register every function in ``module`` marked with :func:`translates`.

        With ``defined_here``, only the functions ``module`` defines (``fn.__module__``): a marked
        function it imports from another module is left to that module, so it is registered once
        (how :func:`onnxport.ops.default_registry` registers the op families).
        """
        for value in vars(module).values():
            if defined_here and getattr(value, "__module__", None) != module.__name__:
                continue
            for translation in getattr(value, _MARK, ()):
                self.register(translation)

    def register_translation(
        self, target: Any, fn: Callable[..., Any], *, since: int = MIN_OPSET,
        promote: Promote | str = Promote.NONE, promote_args: tuple[str, ...] = (), complex: bool = False,
    ) -> None:
        """Register a user translation of ``target`` (an ``OpOverload`` such as
        ``torch.ops.mylib.op.default``); it wins over onnxport's own translation of the same target.

        Raises:
            InputError: ``target`` is an ``OpOverloadPacket`` or ``fn`` is not callable.
        """
        if not callable(fn):
            raise InputError(f"The translation registered for {target} must be callable, got {type(fn).__name__}.")
        self.register(Translation(target, fn, since, Promote(promote), tuple(promote_args), custom=True, complex=complex))

    def _entries(self, target: Any) -> list[Translation]:
        """The entries of ``target``, or of its qualified name (``"ns::op.overload"``) for the
        translations registered by name for ops of optional libraries that may not be loaded."""
        entries = self._table.get(target)
        if entries is None and isinstance(target, torch._ops.OpOverload):
            entries = self._table.get(qualified_name(target))
        return entries or []

    def get(self, target: Any, opset: int, complex: bool = False) -> Translation | None:
        """Return the translation with the highest ``since`` ≤ ``opset``, or ``None``.

        User (custom) translations are preferred over onnxport's own at any opset. ``complex``
        selects among the entries declared ``complex=True`` (for a node with a complex tensor input
        or output) instead of the ordinary ones.
        """
        best = None
        for entry in self._entries(target):
            if entry.complex != complex:
                continue
            if entry.since <= opset and (best is None or entry.custom or not best.custom):
                best = entry
        return best

    def is_registered(self, target: Any) -> bool:
        return bool(self._entries(target))

    def translations_for(self, target: Any) -> tuple[Translation, ...]:
        return tuple(self._entries(target))

    def targets(self) -> frozenset[Any]:
        """Every registered target; one registered by name counts once its op is loaded."""
        return frozenset(
            resolved for t in self._table if (resolved := _resolve(t) if isinstance(t, str) else t) is not None
        )

    def entries(self) -> list[Translation]:
        """Every registered translation, those registered by name included (loaded or not)."""
        return [entry for entries in self._table.values() for entry in entries]

    def copy(self) -> Registry:
        new = Registry()
        new._table = {k: list(v) for k, v in self._table.items()}
        return new


def qualified_name(op: torch._ops.OpOverload) -> str:
    """``"ns::op.overload"`` (``"transformers::grouped_mm_fallback.default"``): the key of a
    translation registered by name, for an op whose library may not be imported yet."""
    return f"{op._schema.name}.{op._overloadname}"


def _resolve(name: str) -> Any:
    """The ``OpOverload`` named ``"ns::op.overload"`` if its library is loaded, else ``None``."""
    qualified, _, overload = name.rpartition(".")
    namespace, _, op = qualified.partition("::")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), op), overload)
    except (AttributeError, RuntimeError):
        return None


