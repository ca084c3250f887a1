"""Dispatcher: type promotion from FakeTensor dtypes, naming, metadata, fast path without decomposition."""

from __future__ import annotations

import pytest
import torch

import onnxport


class Binary(torch.nn.Module):
    def __init__(self, fn: object) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.fn(a, b)  # type: ignore[operator]


CASES = [
    ("int + float tensor", lambda a, b: a + b, torch.int64, torch.float32),
    ("int * 2.5", lambda a, b: a * 2.5 + b, torch.int32, torch.float32),
    ("int / int", lambda a, b: a / b, torch.int64, torch.int64),
    ("floor div negative ints", lambda a, b: torch.div(a, b, rounding_mode="floor"), torch.int64, torch.int64),
    ("trunc div negative ints", lambda a, b: torch.div(a, b, rounding_mode="trunc"), torch.int64, torch.int64),
    ("int >= float scalar", lambda a, b: (a >= 0.5) & (b > 0), torch.int64, torch.float32),
    ("half + float 0-d", lambda a, b: a + b.sum(), torch.float16, torch.float32),
    ("bool + bool", lambda a, b: a + b, torch.bool, torch.bool),
    ("remainder negative", lambda a, b: torch.remainder(a, b), torch.int64, torch.int64),
    ("sub alpha", lambda a, b: torch.sub(a, b, alpha=3), torch.float32, torch.float32),
]


def _sample(dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.tensor([True, False, True, True, False, False])
    values = torch.tensor([-7, -4, -1, 3, 5, 9])
    return values.to(dtype)


@pytest.mark.parametrize(("name", "fn", "dtype_a", "dtype_b"), CASES, ids=[c[0] for c in CASES])
def test_promotion_matches_eager(name: str, fn: object, dtype_a: torch.dtype, dtype_b: torch.dtype) -> None:
    a = _sample(dtype_a)
    b = _sample(dtype_b).flip(0)
    if dtype_b in (torch.int64, torch.int32):
        b = torch.where(b == 0, torch.ones_like(b), b)
    model = Binary(fn)
    program = onnxport.export(model, (a, b))
    (out,) = program(a, b)
    expected = model(a, b)
    assert out.dtype == expected.dtype
    assert out.shape == expected.shape
    torch.testing.assert_close(out, expected, rtol=1e-3, atol=1e-3)


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x))


def test_names_and_metadata_from_fx_nodes() -> None:
    program = onnxport.export(Mlp(), (torch.randn(2, 4),))
    graph = program.model.graph
    gelu = next(n for n in graph if n.op_type == "Gelu")
    assert gelu.outputs[0].name == "gelu" or gelu.outputs[0].is_graph_output()
    meta = gelu.metadata_props
    assert meta["pkg.torch.onnx.fx_node"].startswith("%gelu")
    assert "Mlp" in meta["namespace"] and meta["namespace"].endswith("gelu: aten.gelu.default")
    assert "aten.gelu.default" in meta["pkg.torch.onnx.class_hierarchy"]
    assert "test_dispatch.py" in meta["pkg.torch.onnx.stack_trace"]
    gemm = next(n for n in graph if n.op_type == "Gemm")
    assert "'fc'" in gemm.metadata_props["pkg.torch.onnx.name_scopes"]


def test_fast_path_skips_decomposition_and_keeps_high_level_ops() -> None:
    program = onnxport.export(Mlp(), (torch.randn(2, 4),))
    assert program.status.decomposed is False
    assert [n.op_type for n in program.model.graph] == ["Gemm", "Gelu"]


def test_inplace_op_on_an_input_takes_decomposition_path() -> None:
    """Writing into an input (or anything something else can observe) needs torch's
    functionalization; an in-place op on a fresh intermediate does not (capture/inplace.py)."""

    class OnInput(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x.mul_(2)
            return x + 1

    class OnIntermediate(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2
            y.add_(1)
            return y

    x = torch.randn(3)
    program = onnxport.export(OnInput(), (x.clone(),))
    assert program.status.decomposed is True
    torch.testing.assert_close(program(x)[0], x * 2 + 1)
    program = onnxport.export(OnIntermediate(), (x,))
    assert program.status.decomposed is False
    torch.testing.assert_close(program(x)[0], x * 2 + 1)


def test_derived_dims_stay_symbolic_with_user_names() -> None:
    class Cat(torch.nn.Module):
        def forward(self, x: torch.Tensor, past: torch.Tensor) -> torch.Tensor:
            return torch.cat([past, x], dim=1)

    x, past = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    program = onnxport.export(
        Cat(), (x, past), dynamic_shapes={"x": {0: "batch", 1: "seq"}, "past": {0: "batch", 1: "past"}}
    )
    out = program.model.graph.outputs[0]
    dims = [str(d) for d in out.shape]
    assert dims[0] == "batch" and dims[2] == "4"
    assert set(dims[1].replace(" ", "").split("+")) == {"seq", "past"}
    (res,) = program(torch.randn(1, 2, 4), torch.randn(1, 6, 4))
    assert res.shape == (1, 8, 4)
