"""onnxport's translations, one module per op family. Every module is listed here explicitly."""

from __future__ import annotations

from onnxport.ops import (
    activation,
    attention,
    control_flow,
    conv,
    conversion,
    creation,
    elementwise,
    indexing,
    linalg,
    norm,
    pool,
    reduction,
    shape,
    symbolic,
)

OP_MODULES = (
    activation,
    attention,
    control_flow,
    conv,
    conversion,
    creation,
    elementwise,
    indexing,
    linalg,
    norm,
    pool,
    reduction,
    shape,
    symbolic,
)
