"""The frozen options of one export and the opset policy (a leaf module every layer may read).

:func:`onnxport.export` validates its keyword arguments once into an :class:`ExportOptions`; every
stage of the orchestrator (``_export.py``) reads that one object. The parameter names and meanings
are ``torch.onnx.export``'s (torch/onnx/__init__.py), plus onnxport's own (``modules_as_functions``,
``half_precision_compute``).
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Mapping, Sequence
from typing import Any

from onnxport.errors import InputError, OpsetError

# Opset policy: translations are written for opsets MIN_OPSET..MAX_OPSET; an older target is
# translated at MIN_OPSET and converted with onnx.version_converter (passes/opset_conversion.py).
# MAX_OPSET is the newest opset onnxruntime 1.31 runs; DEFAULT_OPSET is torch.onnx's default (23).
MIN_OPSET = 18
MAX_OPSET = 26
DEFAULT_OPSET = 23
# The oldest ai.onnx opset onnxruntime implements kernels for (its docs/OperatorKernels.md starts
# at 7); an older target would convert to a model onnxruntime refuses.
MIN_RUNNABLE_OPSET = 7
# The newest opset at which onnxruntime 1.31's CPU provider runs the random ops (RandomNormal(Like),
# RandomUniform(Like), Bernoulli, Multinomial): opset 22 added bfloat16 to their types and
# onnxruntime registers no kernel for that version, so a model of opset 22+ holding one is refused
# at load ("Could not find an implementation for RandomNormalLike(22)").
RANDOM_OPSET = 21

HALF_PRECISION_COMPUTE = ("float32", None)


def check_opset(opset_version: int | None) -> int:
    """Validate the requested opset and return the one to produce (``DEFAULT_OPSET`` for ``None``).

    Raises:
        OpsetError: ``opset_version`` is not an int or outside the supported range.
    """
    if opset_version is None:
        return DEFAULT_OPSET
    if not isinstance(opset_version, int) or isinstance(opset_version, bool):
        raise OpsetError(f"opset_version must be an int, got {opset_version!r}.")
    if opset_version > MAX_OPSET:
        raise OpsetError(
            f"opset_version={opset_version} is newer than onnxport supports ({MIN_OPSET}..{MAX_OPSET}); "
            f"onnxruntime 1.31 runs up to opset {MAX_OPSET}. Use opset_version={MAX_OPSET} or lower."
        )
    if opset_version < MIN_RUNNABLE_OPSET:
        raise OpsetError(
            f"opset_version={opset_version} is older than any opset onnxruntime runs "
            f"({MIN_RUNNABLE_OPSET}..{MAX_OPSET}); use opset_version={DEFAULT_OPSET} (the default) or "
            f"at least {MIN_RUNNABLE_OPSET}."
        )
    return opset_version


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """Every parameter of one export, validated (see :func:`onnxport.export` for their meaning).

    Attributes:
        opset: The opset of the saved model (``opset_version`` or ``DEFAULT_OPSET``).
        target_opset: The opset translations are selected for: ``max(opset, MIN_OPSET)``; when it
            differs from ``opset`` the model is converted after the passes.
        opset_given: Whether ``opset_version`` was given (else :meth:`for_random_ops` may lower it).
        registry: The translation registry of this export (``translate.registry.Registry``, the
            default one plus ``custom_translations``).
        f: The file to save to (``None``: not saved).
        report: ``False``, ``True`` or the report's path.
        keep_initializers_as_inputs: With ``f``: the weights are graph inputs too.
        dump_exported_program: Where to save the captured ExportedProgram (``None``: not saved).
    """

    opset: int = DEFAULT_OPSET
    opset_given: bool = False
    registry: Any = None
    dynamic_shapes: Any = None
    dynamic_axes: Mapping[str, Any] | None = None
    dynamic: bool = False
    input_names: tuple[str, ...] | None = None
    output_names: tuple[str, ...] | None = None
    optimize: bool = True
    verify: bool = False
    check_runtime: bool = True
    f: Any = None
    export_params: bool = True
    external_data: bool | None = None
    report: bool | str | os.PathLike[str] = False
    modules_as_functions: Any = None
    half_precision_compute: str | None = "float32"
    keep_initializers_as_inputs: bool = False
    dump_exported_program: os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        if self.half_precision_compute not in HALF_PRECISION_COMPUTE:
            raise InputError(
                f"half_precision_compute must be 'float32' or None, got {self.half_precision_compute!r}."
            )
        check_opset(self.opset)

    @classmethod
    def create(cls, opset_version: int | None = None, **kwargs: Any) -> ExportOptions:
        """Options from ``onnxport.export``'s keyword arguments (``opset_version`` validated).

        Raises:
            OpsetError: See :func:`check_opset`.
            InputError: ``half_precision_compute`` is not ``"float32"`` or ``None``; names are not
                distinct non-empty strings; ``f`` is neither a path nor a binary file object; a
                flag is not a bool.
        """
        for key in ("input_names", "output_names"):
            if kwargs.get(key) is not None:
                kwargs[key] = tuple(_names(kwargs[key], key))
        both = set(kwargs.get("input_names") or ()) & set(kwargs.get("output_names") or ())
        if both:
            raise InputError(
                f"{sorted(both)} named both an input and an output: graph value names must be unique. "
                "Rename the output (e.g. 'logits') or the input."
            )
        check_destination(kwargs.get("f"))
        for key in ("optimize", "verify", "dynamic", "export_params"):
            if key in kwargs and not isinstance(kwargs[key], (bool, int)):
                raise InputError(f"{key} must be True or False, got {kwargs[key]!r}.")
        if kwargs.get("external_data") not in (None, True, False):
            raise InputError(f"external_data must be True, False or None, got {kwargs['external_data']!r}.")
        report = kwargs.get("report", False)
        if not isinstance(report, (bool, str, os.PathLike)):
            raise InputError(f"report must be True, False or a path, got {type(report).__name__}.")
        return cls(opset=check_opset(opset_version), opset_given=opset_version is not None, **kwargs)

    @property
    def target_opset(self) -> int:
        return max(self.opset, MIN_OPSET)

    def for_random_ops(self, has_random: bool) -> ExportOptions:
        """These options, at :data:`RANDOM_OPSET` when the program draws random numbers and the
        opset was the default (an opset the user gave is kept: onnxruntime will refuse it)."""
        if has_random and not self.opset_given and self.opset > RANDOM_OPSET:
            return dataclasses.replace(self, opset=RANDOM_OPSET)
        return self


def _names(names: Any, what: str) -> Sequence[str]:
    """``input_names``/``output_names`` checked: a list of distinct, non-empty strings (ONNX value
    names must be unique in a graph: onnx/onnx docs/IR.md, "Names Within a Graph").

    Raises:
        InputError: Not a list, an entry that is not a non-empty string, or a repeated name.
    """
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise InputError(f"{what} must be a list of strings, got {type(names).__name__}: {names!r}.")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise InputError(
                f"{what}[{i}] is {name!r}: every name must be a non-empty string. "
                f"Pass {what}=[{', '.join(repr(str(n) or f'{what[:-6]}_{j}') for j, n in enumerate(names))}]."
            )
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise InputError(
                f"{what} repeats {name!r} (positions {seen[name]} and {i}): graph value names must be "
                "unique. Give every input/output its own name."
            )
        seen[name] = i
    return names


def check_destination(f: Any) -> None:
    """``f`` must be a path (``str``/``os.PathLike``) or a writable binary file object.

    Raises:
        InputError: Anything else (bytes, an int, a text-mode file, a closed file).
    """
    if f is None or isinstance(f, (str, os.PathLike)):
        if isinstance(f, str) and not f:
            raise InputError("f is an empty string: give the path of the .onnx file to write.")
        return
    if hasattr(f, "write"):
        if getattr(f, "closed", False):
            raise InputError("f is a closed file object: pass an open binary file (or a path).")
        if "b" not in getattr(f, "mode", "b") or isinstance(f, io.TextIOBase):
            raise InputError("f is a text file object: open it in binary mode ('wb') or pass an io.BytesIO.")
        return
    raise InputError(f"f must be a path (str or os.PathLike) or a binary file object, got {type(f).__name__}: {f!r}.")


__all__ = ["DEFAULT_OPSET", "MAX_OPSET", "MIN_OPSET", "RANDOM_OPSET", "ExportOptions", "check_destination", "check_opset"]
