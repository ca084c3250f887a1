"""The frozen options of one export and the opset policy (a leaf module every layer may read).

:func:`onnxport.export` validates its keyword arguments once into an :class:`ExportOptions`; every
stage of the orchestrator (``_export.py``) reads that one object. The parameter names and meanings
are ``torch.onnx.export``'s (torch/onnx/__init__.py), plus onnxport's own (``modules_as_functions``,
``half_precision_compute``).
"""

from __future__ import annotations

import dataclasses
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
    if opset_version < 1:
        raise OpsetError(f"opset_version must be positive, got {opset_version}.")
    return opset_version


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """Every parameter of one export, validated (see :func:`onnxport.export` for their meaning).

    Attributes:
        opset: The opset of the saved model (``opset_version`` or ``DEFAULT_OPSET``).
        target_opset: The opset translations are selected for: ``max(opset, MIN_OPSET)``; when it
            differs from ``opset`` the model is converted after the passes.
        registry: The translation registry of this export (``translate.registry.Registry``, the
            default one plus ``custom_translations``).
        f: The file to save to (``None``: not saved).
        report: ``False``, ``True`` or the report's path.
    """

    opset: int = DEFAULT_OPSET
    registry: Any = None
    dynamic_shapes: Any = None
    dynamic_axes: Mapping[str, Any] | None = None
    dynamic: bool = False
    input_names: tuple[str, ...] | None = None
    output_names: tuple[str, ...] | None = None
    optimize: bool = True
    verify: bool = False
    check_runtime: bool = True
    f: str | os.PathLike[str] | None = None
    export_params: bool = True
    external_data: bool | None = None
    report: bool | str | os.PathLike[str] = False
    modules_as_functions: Any = None
    half_precision_compute: str | None = "float32"

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
            InputError: ``half_precision_compute`` is not ``"float32"`` or ``None``.
        """
        for key in ("input_names", "output_names"):
            if kwargs.get(key) is not None:
                kwargs[key] = tuple(_names(kwargs[key], key))
        return cls(opset=check_opset(opset_version), **kwargs)

    @property
    def target_opset(self) -> int:
        return max(self.opset, MIN_OPSET)


def _names(names: Any, what: str) -> Sequence[str]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InputError(f"{what} must be a list of strings, got {type(names).__name__}.")
    return names


__all__ = ["DEFAULT_OPSET", "MAX_OPSET", "MIN_OPSET", "ExportOptions", "check_opset"]
