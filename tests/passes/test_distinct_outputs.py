"""Repeated outputs of a graph and of a Scan body get distinct values (passes/distinct_outputs.py):
a recurrence step returning its carry and ``carry.clone()`` (RecurrentGemma's RG-LRU) was optimized
into one body value listed twice, and onnxruntime computed wrong values for both outputs."""

from __future__ import annotations

import torch
from torch._higher_order_ops.scan import scan

import onnxport


def _step(state: torch.Tensor, xs: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    a, x = xs
    state = a * state + x
    return state, state.clone()


class Recurrence(torch.nn.Module):
    def forward(self, a: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return scan(_step, torch.zeros_like(x[0]), (a, x))


class Twice(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x * 2
        return y, y.clone()


def test_scan_body_returning_its_carry_twice_matches_eager() -> None:
    a, x = torch.rand(7, 2, 5), torch.randn(7, 2, 5)
    program = onnxport.export(Recurrence(), (a, x), dynamic_shapes=({0: "steps"}, {0: "steps"}))
    body = next(n for n in program.model.graph if n.op_type == "Scan").attributes["body"].as_graph()
    assert len({id(v) for v in body.outputs}) == len(body.outputs) == 2
    for steps in (7, 3):
        a, x = torch.rand(steps, 2, 5), torch.randn(steps, 2, 5)
        expected = Recurrence()(a, x)
        actual = program(a, x)
        for got, want in zip(actual, expected):
            assert got.shape == want.shape
            torch.testing.assert_close(got, want)


def test_graph_returning_one_value_twice_has_two_outputs() -> None:
    x = torch.randn(3, 4)
    program = onnxport.export(Twice(), (x,))
    outputs = program.model.graph.outputs
    assert len({id(v) for v in outputs}) == 2 and len({v.name for v in outputs}) == 2
    for got in program(x):
        torch.testing.assert_close(got, x * 2)


def test_one_value_returned_twice_keeps_the_output_names_asked_for() -> None:
    """``output_names=["a", "b"]`` on ``return y, y``: identity elimination renamed the merged value
    after the last output, and the graph's outputs were ``b, b_1`` (a DeepSeek-V4 cache, whose
    keys are its values, had no ``present.0.key``); the names asked for are given back."""

    class Same(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y = x * 2
            return y, y

    x = torch.randn(3, 4)
    program = onnxport.export(Same(), (x,), output_names=["a", "b"])
    assert [v.name for v in program.model.graph.outputs] == ["a", "b"]
    for got in program(x):
        torch.testing.assert_close(got, x * 2)
