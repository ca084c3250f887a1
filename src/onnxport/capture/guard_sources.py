"""Where torch.export records a guard: the model's line, not PyTorch's own code.

``ShapeEnv`` locates a guard at the first stack frame outside its ``uninteresting_files()``
(``torch/fx/experimental/symbolic_shapes.py``: ``_get_user_frame``). A guard that a PyTorch op
adds while it checks sizes (``Tensor.view``'s ``infer_size`` in ``torch/_prims_common``, the fake
kernels of ``torch/_subclasses/fake_impls.py``) is then located in PyTorch, and the
:class:`~onnxport.errors.DynamicShapesError` that names the guard's line pointed there (a view
of a sequence in 4-token windows: ``torch/_prims_common/__init__.py``, line 1104, in infer_size).
:func:`model_frames` adds PyTorch's own files, except ``torch/nn`` (the layers models are built
from), and onnxport's to that set while a capture runs: the location is then the model's line that
called the op.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import torch
from torch.fx.experimental import symbolic_shapes

#: onnxport's own package folder (``.../onnxport``): frames there are not the model's
PACKAGE_DIR = str(Path(os.path.abspath(__file__)).parents[1])


@functools.lru_cache(maxsize=1)
def _framework_files() -> frozenset[str]:
    """PyTorch's Python files outside ``torch/nn``, and onnxport's (its capture modes and patches
    run between the model's line and the op)."""
    root = Path(torch.__file__).parent
    files = {str(path) for path in root.rglob("*.py") if path.relative_to(root).parts[0] != "nn"}
    return frozenset(files | {str(path) for path in Path(PACKAGE_DIR).rglob("*.py")})


@contextlib.contextmanager
def model_frames() -> Iterator[None]:
    """Within the block, guards are located at the first frame outside PyTorch (module docstring)."""
    skipped = symbolic_shapes.uninteresting_files()  # torch's cached set, read at each guard
    added = _framework_files() - skipped
    skipped.update(added)
    try:
        yield
    finally:
        skipped.difference_update(added)


__all__ = ["PACKAGE_DIR", "model_frames"]
