"""TorchScript modules and functions (``torch.jit.script`` / ``torch.jit.trace``, or a ``.pt`` file
from ``torch.jit.load``) as ExportedPrograms.

torch.export cannot capture a ScriptModule: it has no Python source to trace (``inspect``'s
"could not get source code"; torch.onnx's ``dynamo=True`` path fails the same way in both of its
torch.export strategies). PyTorch converts TorchScript graphs to ExportedPrograms itself,
``torch._export.converter.TS2EPConverter`` (``torch/_export/converter.py``): each TorchScript node
becomes its ATen op, and the program is exported non-strict at the example inputs. The conversion
has no ``dynamic_shapes``: shapes are the example's, and TorchScript control flow on sizes keeps
the branch the example took, so a dynamic dim is refused rather than declared and left wrong.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch._export.converter import TS2EPConverter
from torch.export import ExportedProgram

from onnxport.errors import CaptureError, DynamicShapesError

TORCHSCRIPT = (torch.jit.ScriptModule, torch.jit.ScriptFunction)


def is_torchscript(model: Any) -> bool:
    """``model`` is a TorchScript module or function."""
    return isinstance(model, TORCHSCRIPT)


def from_torchscript(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dynamic: bool) -> ExportedProgram:
    """``model`` (TorchScript) converted to an ExportedProgram at the example inputs (module docstring).

    Args:
        model: A ``torch.jit.ScriptModule`` or ``torch.jit.ScriptFunction``.
        args: Positional example inputs.
        kwargs: Keyword example inputs.
        dynamic: Whether the caller declared dynamic dims (``dynamic_shapes``, ``dynamic_axes`` or
            ``dynamic=True``).

    Returns:
        The converted program (static shapes), with a ``UserWarning`` saying so.

    Raises:
        DynamicShapesError: Dynamic dims were declared.
        CaptureError: PyTorch's converter failed (its error in the message).
    """
    if dynamic:
        raise DynamicShapesError(
            f"model is TorchScript ({type(model).__name__}); PyTorch converts TorchScript graphs to an "
            "ExportedProgram at the example inputs' shapes only (torch._export.converter.TS2EPConverter), "
            "so dims cannot be dynamic. Export the Python nn.Module (before torch.jit.script/trace) for "
            "dynamic shapes, or leave out dynamic_shapes/dynamic_axes/dynamic."
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = TS2EPConverter(model, args, kwargs or None).convert()
    except Exception as e:  # the converter's own failure, reported as onnxport's
        raise CaptureError(
            f"model is TorchScript ({type(model).__name__}) and PyTorch's TorchScript converter "
            f"(torch._export.converter.TS2EPConverter) failed: {type(e).__name__}: {str(e).strip()[:500]}\n"
            "Export the Python nn.Module (before torch.jit.script/trace) instead.",
            cause="error",
        ) from e
    warnings.warn(
        "model is TorchScript: converted with torch._export.converter.TS2EPConverter at the example "
        "inputs (no dynamic_shapes); size-dependent control flow keeps the example's branch.",
        UserWarning,
        stacklevel=4,
    )
    return ep


__all__ = ["TORCHSCRIPT", "from_torchscript", "is_torchscript"]
