"""Export a function or module, run the ONNX program and compare it with eager torch.

Import as ``from _eager import ...``: ``tests/`` is on ``sys.path`` under pytest (its ``conftest.py``
has no package above it, and ruff's ``src`` lists ``tests`` so the import sorts as first-party).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

import onnxport


class Fn(torch.nn.Module):
    """A module whose forward is ``fn`` (a lambda or a torch function), positional inputs."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


class Fn1(Fn):
    """One named input ``x`` (for dynamic_shapes)."""

    def forward(self, x: torch.Tensor) -> Any:  # type: ignore[override]
        return self.fn(x)


class Outputs(list):
    """The ONNX outputs of the example inputs; ``program`` is the exported program."""

    program: onnxport.ONNXProgram


INTS = [torch.int32, torch.int64]


def ints(dtype: torch.dtype, *shape: int, lo: int = -9, hi: int = 10) -> torch.Tensor:
    """Random integers in ``[lo, hi)`` of ``dtype`` and ``shape`` (the integer-op tests' inputs)."""
    return torch.randint(lo, hi, shape, dtype=dtype)


def leaves(value: Any) -> list[torch.Tensor]:
    """``value`` flattened through nested tuples and lists."""
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in leaves(v)]
    return [value]


def check_against_eager(
    fn: Any,
    *args: torch.Tensor,
    rtol: float | None = 2e-4,
    atol: float | None = 2e-5,
    opset: int | None = None,
    optimize: bool = True,
    dynamic_shapes: Any = None,
    others: tuple = (),
    skip: tuple[int, ...] = (),
    exact: bool = False,
    equal_nan: bool = True,
    expected: Any = None,
    tol_by_dtype: Mapping[torch.dtype, tuple[float, float]] | None = None,
) -> Outputs:
    """Export ``fn`` (wrapped in ``Fn``, or ``Fn1`` with ``dynamic_shapes``; a module is exported
    as is) on ``args``, run the program on ``args`` and on each input tuple of ``others``, and
    compare every output with eager on dtype, shape and values.

    ``rtol``/``atol`` None: torch's per-dtype defaults. ``exact``: zero tolerance.
    ``tol_by_dtype``: (rtol, atol) by the expected output's dtype for floating outputs, zero
    tolerance for the others. ``skip``: output indices compared on dtype and shape only.
    ``expected``: what eager is replaced with on ``args`` (not on ``others``).
    Returns the ONNX outputs of ``args``, with the program as ``.program``.
    """
    if isinstance(fn, torch.nn.Module):
        model = fn
    else:
        model = Fn1(fn) if dynamic_shapes is not None else Fn(fn)
    program = onnxport.export(model, args, opset_version=opset, optimize=optimize,
                              dynamic_shapes=dynamic_shapes)
    first = None
    for i, inputs in enumerate((args, *others)):
        want = leaves(model(*inputs) if expected is None or i else expected)
        got = list(program(*inputs))
        assert len(got) == len(want), (len(got), len(want))
        for k, (a, e) in enumerate(zip(got, want)):
            assert a.dtype == e.dtype and a.shape == e.shape, (k, a.dtype, e.dtype, a.shape, e.shape)
            if k in skip:
                continue
            if exact or (tol_by_dtype is not None and not e.is_floating_point()):
                r, t = 0.0, 0.0
            elif tol_by_dtype is not None:
                r, t = tol_by_dtype[e.dtype]
            else:
                r, t = rtol, atol
            torch.testing.assert_close(a, e.resolve_conj(), rtol=r, atol=t, equal_nan=equal_nan)
        if first is None:
            first = Outputs(got)
            first.program = program
    assert first is not None
    return first
