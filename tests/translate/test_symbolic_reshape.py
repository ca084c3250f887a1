"""Reshape targets from symbolic size expressions (ops/shape.py: ``sym_expr_value``, ``reshape_to``).

Mamba2's chunked scan pads the sequence to a multiple of the chunk size and views it as chunks; the
recorded dims are expressions such as ``(s + Mod(4 - Mod(s, 4), 4)) // 4`` (issue 14). The builder is
checked directly against Python's evaluation in onnxruntime at several sizes; the real model runs
in tests/models/test_zoo.py (``mamba2`` at lengths 7 and 12, chunk size 4).
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import sympy
import torch
from torch.utils._sympy.functions import CeilDiv, FloorDiv, Max, Min, Mod, PythonMod

import onnxport
from onnxport.ops._common import sym_expr_value
from onnxport.translate.context import Ctx

s, t = sympy.symbols("s t", integer=True, positive=True)
PAD = Mod(4 - Mod(s, 4), 4)
EXPRESSIONS = [
    (s + PAD, lambda s, t: s + (4 - s % 4) % 4),
    (FloorDiv(s + PAD, 4), lambda s, t: (s + (4 - s % 4) % 4) // 4),
    (FloorDiv(s + PAD, FloorDiv(s + PAD, 4)), lambda s, t: 4),  # Mamba2's unsimplified chunk size
    (PythonMod(3 * s + t, 5), lambda s, t: (3 * s + t) % 5),
    (CeilDiv(s, 3) * t - 1, lambda s, t: -(-s // 3) * t - 1),
    (Max(s, t) + Min(s, 2 * t), lambda s, t: max(s, t) + min(s, 2 * t)),
]


def _run(expr: sympy.Expr, sizes: list[tuple[int, int]]) -> list[int]:
    x = ir.Value(name="x", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape(["s", "t"]))
    graph = ir.Graph([x], [], nodes=[], opset_imports={"": 23}, name="g")
    ctx = Ctx(graph, 23)
    out = sym_expr_value(ctx, expr, {s: ctx.op.Shape(x, start=0, end=1), t: ctx.op.Shape(x, start=1, end=2)})
    assert out is not None
    out.name = "y"
    graph.outputs.append(out)
    session = ort.InferenceSession(
        ir.to_proto(ir.Model(graph, ir_version=10)).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return [int(session.run(None, {"x": np.zeros(size, np.float32)})[0][0]) for size in sizes]


@pytest.mark.parametrize(("expr", "python"), EXPRESSIONS, ids=[str(e) for e, _ in EXPRESSIONS])
def test_size_expression_evaluates_like_python(expr: sympy.Expr, python: object) -> None:
    sizes = [(1, 1), (4, 2), (7, 3), (12, 5), (13, 8)]
    assert _run(expr, sizes) == [python(a, b) for a, b in sizes]  # type: ignore[operator]


def test_unknown_symbol_or_function_is_not_built() -> None:
    graph = ir.Graph([], [], nodes=[], opset_imports={"": 23})
    ctx = Ctx(graph, 23)
    assert sym_expr_value(ctx, s + t, {s: ctx.const([1])}) is None  # t has no value
    assert sym_expr_value(ctx, sympy.sqrt(s), {s: ctx.const([1])}) is None


class Chunks(torch.nn.Module):
    """Mamba2's ``reshape_into_chunks``: pad the sequence to a multiple of 4, view as chunks."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad = (4 - x.shape[1] % 4) % 4
        x = torch.nn.functional.pad(x, (0, 0, 0, pad, 0, 0))
        return x.reshape(x.shape[0], -1, 4, x.shape[2]).cumsum(1)


def test_padded_chunk_view_at_lengths_off_the_chunk_size() -> None:
    model = Chunks()
    program = onnxport.export(model, (torch.randn(2, 7, 3),), dynamic_shapes={"x": {0: "b", 1: "s"}})
    for shape in [(2, 7, 3), (3, 12, 3), (1, 5, 3)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(program(x)[0], model(x))


class _SquareGrid(torch.nn.Module):
    """DPT's neck: an image's patches (flattened) back to their grid, ``side = int(n ** 0.5)``
    (square images only, as in DPT)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        patches = x.flatten(2).transpose(1, 2)  # (batch, height * width, channels)
        side = math.trunc(patches.shape[1] ** 0.5)  # a SymFloat truncated: math.trunc in the graph
        return patches.reshape(x.shape[0], side, side, x.shape[1]).sum(dim=2)


def test_truncated_square_root_of_a_dim() -> None:
    dyn = torch.export.Dim.DYNAMIC
    program = onnxport.export(_SquareGrid(), (torch.randn(2, 3, 4, 4),), dynamic_shapes=({0: dyn, 2: dyn, 3: dyn},))
    for side in (4, 7, 10):
        x = torch.randn(3, 3, side, side)
        (actual,) = program(x)
        expected = _SquareGrid()(x)
        assert actual.shape == expected.shape == (3, side, 3)
        torch.testing.assert_close(actual, expected)


class _CeilPad(torch.nn.Module):
    """MobileViT's size to the next patch multiple, ``int(math.ceil(height / patch) * patch)``, and
    a floor of the same ratio."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        up = math.ceil(x.shape[2] / 4) * 4
        down = math.floor(x.shape[2] / 4) * 4
        padded = torch.nn.functional.pad(x, (0, 0, 0, up - x.shape[2]))
        return torch.cat([padded, x[:, :, :down]], dim=2)


def test_ceil_and_floor_of_a_dim_ratio() -> None:
    program = onnxport.export(_CeilPad(), (torch.randn(2, 3, 8, 5),), dynamic_shapes=({2: torch.export.Dim.DYNAMIC},))
    for height in (8, 9, 13):
        x = torch.randn(2, 3, height, 5)
        (actual,) = program(x)
        expected = _CeilPad()(x)
        assert actual.shape == expected.shape == (2, 3, -(-height // 4) * 4 + height // 4 * 4, 5)
        torch.testing.assert_close(actual, expected)
