"""onnxport's translations, one module per op family. Every module is listed here explicitly."""

from __future__ import annotations

import importlib
from types import ModuleType

FAMILIES = (
    "activation",
    "attention",
    "backward",
    "bessel",
    "control_flow",
    "conv",
    "conversion",
    "creation",
    "elementwise",
    "factorization",
    "fft",
    "gamma",
    "incomplete_gamma",
    "indexing",
    "layout",
    "ldl",
    "linalg",
    "math",
    "moe",
    "norm",
    "orthogonal_polynomials",
    "pad",
    "pool",
    "random",
    "reduction",
    "resize",
    "scatter",
    "shape",
    "sort",
    "special",
    "special_common",
    "spectral",
    "symbolic",
)

OP_MODULES: tuple[ModuleType, ...] = tuple(importlib.import_module(f"{__name__}.{name}") for name in FAMILIES)
