"""``torch.onnx.export``'s parameters that onnxport has no parameter of its own for, mapped so that
a call written for torch.onnx runs unchanged with ``onnxport.export``.

The meaning of each comes from ``torch.onnx.export``'s docstring (torch 2.13,
``torch/onnx/__init__.py``) and its ``dynamo=True`` path (``_internal/exporter/_compat.py``):

- ``dynamo``: ``True`` is onnxport's only capture (torch.export). ``False`` asks torch.onnx for its
  TorchScript exporter; onnxport ignores it with a ``UserWarning`` (the TorchScript-style
  ``dynamic_axes`` are converted as always).
- ``keep_initializers_as_inputs``: with ``f``, the weights are also graph inputs
  (``ONNXProgram.save``'s parameter of the same name).
- ``profile``: torch.onnx writes a profile of the export to ``artifacts_dir``; onnxport writes its
  report there, whose steps table has each step's seconds.
- ``dump_exported_program``: the captured ``ExportedProgram`` is saved (``torch.export.save``) to
  ``artifacts_dir/onnxport_<Model>.pt2``.
- ``artifacts_dir``: where ``report=True``, ``profile`` and ``dump_exported_program`` write.
- ``export_modules_as_functions``: a collection of module types is onnxport's
  ``modules_as_functions``.
- ``custom_translation_table`` (op → onnxscript function) is translated by
  :mod:`onnxport.translate.onnxscript_table` and used as ``custom_translations`` are.
- ``training``, ``operator_export_type``, ``do_constant_folding``, ``custom_opsets``,
  ``autograd_inlining``: deprecated in torch.onnx and ignored by its ``dynamo=True`` path; onnxport
  ignores them too, with a ``UserWarning`` when one is not its default (the model is exported in
  the mode it is in; constant folding is part of ``optimize``).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onnxport.errors import InputError

# The deprecated options and the values that mean "the default" (torch.onnx's enums are compared
# by name so that this module need not import torch.onnx).
_DEPRECATED_DEFAULTS: dict[str, tuple[Any, ...]] = {
    "training": (None, "EVAL"),
    "operator_export_type": (None, "ONNX"),
    "do_constant_folding": (True,),
    "custom_opsets": (None,),
    "autograd_inlining": (True,),
}


@dataclasses.dataclass(frozen=True)
class TorchOnnxArguments:
    """What the torch.onnx-only parameters change in one export.

    Attributes:
        report: ``report`` as onnxport takes it (``True`` resolved to a path in ``artifacts_dir``).
        modules_as_functions: ``modules_as_functions``, or ``export_modules_as_functions``.
        keep_initializers_as_inputs: Save the weights as graph inputs too (with ``f``).
        dump_exported_program: Where to save the ExportedProgram, or ``None``.
    """

    report: Any
    modules_as_functions: Any
    keep_initializers_as_inputs: bool
    dump_exported_program: Path | None


def _name(value: Any) -> Any:
    return getattr(value, "name", value)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{name} must be True or False, got {value!r}.")
    return value


def torch_onnx_arguments(
    model_name: str,
    *,
    report: Any,
    modules_as_functions: Any,
    dynamo: Any = True,
    keep_initializers_as_inputs: Any = False,
    profile: Any = False,
    dump_exported_program: Any = False,
    artifacts_dir: Any = ".",
    export_modules_as_functions: Any = False,
    deprecated: Mapping[str, Any] | None = None,
) -> TorchOnnxArguments:
    """Check and map torch.onnx's parameters (module docstring).

    Args:
        model_name: The model's class name (file names in ``artifacts_dir``).
        report: onnxport's ``report`` argument.
        modules_as_functions: onnxport's ``modules_as_functions`` argument.
        deprecated: ``training``, ``operator_export_type``, ``do_constant_folding``,
            ``custom_opsets``, ``autograd_inlining`` as given.

    Returns:
        The values the export uses.

    Raises:
        InputError: A flag is not a bool, ``artifacts_dir`` is not a path, or
            ``export_modules_as_functions=True`` (every module), which onnxport does not do.
    """
    if not _flag("dynamo", dynamo):
        warnings.warn(
            "dynamo=False asks torch.onnx for its TorchScript exporter; onnxport always captures with "
            "torch.export (dynamo=True) and ignores it. dynamic_axes are converted to dynamic_shapes.",
            UserWarning,
            stacklevel=3,
        )
    if export_modules_as_functions is True:
        raise InputError(
            "export_modules_as_functions=True (every module a function) is not supported: pass the module "
            "types to keep as ONNX functions, e.g. modules_as_functions={torch.nn.TransformerEncoderLayer} "
            "or {'LlamaDecoderLayer'}."
        )
    if export_modules_as_functions and modules_as_functions is None:
        modules_as_functions = export_modules_as_functions
    if not isinstance(artifacts_dir, (str, os.PathLike)):
        raise InputError(f"artifacts_dir must be a folder path, got {type(artifacts_dir).__name__}: {artifacts_dir!r}.")
    folder = Path(artifacts_dir)
    if _flag("profile", profile) and report is False:
        report = True
    if report is True and folder != Path("."):
        report = folder / f"onnxport_report_{model_name}.md"
    dump = folder / f"onnxport_{model_name}.pt2" if _flag("dump_exported_program", dump_exported_program) else None
    ignored = [
        f"{key}={value!r}" for key, value in (deprecated or {}).items()
        if _name(value) not in _DEPRECATED_DEFAULTS.get(key, (value,)) and not (key == "custom_opsets" and not value)
    ]
    if ignored:
        warnings.warn(
            f"{', '.join(ignored)}: deprecated in torch.onnx and ignored by its torch.export path, and by onnxport. "
            "The model is exported in the mode it is in (call model.eval() or model.train() first); constant "
            "folding is part of optimize=True.",
            UserWarning,
            stacklevel=3,
        )
    return TorchOnnxArguments(
        report, modules_as_functions, _flag("keep_initializers_as_inputs", keep_initializers_as_inputs), dump
    )


__all__ = ["TorchOnnxArguments", "torch_onnx_arguments"]
