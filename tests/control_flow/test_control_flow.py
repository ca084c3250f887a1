"""torch.cond → If, while_loop → Loop, scan → Scan; nested, with captured tensors, checked in onnxruntime."""

from __future__ import annotations

import onnx
import onnx_ir as ir
import torch
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop

import onnxport


def _op_types(graph: ir.Graph) -> list[str]:
    return [n.op_type for n in ir.traversal.RecursiveGraphIterator(graph)]


class Cond(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.5, -2.0, 0.5]))  # captured by the true branch

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def true_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return (x * self.w + y).sin()

        def false_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return (x - y).cos() * 3

        return torch.cond(x.sum() > 0, true_fn, false_fn, (x, y))


def test_cond_takes_each_branch() -> None:
    model = Cond()
    x, y = torch.tensor([1.0, 2.0, 3.0]), torch.randn(3)
    program = onnxport.export(model, (x, y))
    assert "If" in _op_types(program.model.graph)
    onnx.checker.check_model(program.model_proto, full_check=True)
    for sample in (x, -x):  # true branch, then false branch
        torch.testing.assert_close(program(sample, y)[0], model(sample, y).detach())


class NestedCond(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def outer_true(x: torch.Tensor) -> torch.Tensor:
            return torch.cond(x.mean() > 1, lambda x: x * 10, lambda x: x + 100, (x,))

        def outer_false(x: torch.Tensor) -> torch.Tensor:
            return x - 1

        return torch.cond(x.sum() > 0, outer_true, outer_false, (x,))


def test_nested_cond_all_three_paths() -> None:
    model = NestedCond()
    program = onnxport.export(model, (torch.ones(4),))
    assert _op_types(program.model.graph).count("If") == 2
    for x in (torch.full((4,), 2.0), torch.full((4,), 0.5), torch.full((4,), -1.0)):
        torch.testing.assert_close(program(x)[0], model(x))


class CountDown(torch.nn.Module):
    def forward(self, x: torch.Tensor, limit: torch.Tensor, step: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def cond_fn(i: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
            return i < limit  # limit: a captured tensor (additional input)

        def body_fn(i: torch.Tensor, acc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return i + 1, acc * 0.5 + step

        return while_loop(cond_fn, body_fn, (torch.zeros((), dtype=torch.int64), x))


def test_while_loop_different_trip_counts() -> None:
    model = CountDown()
    x, step = torch.randn(3), torch.tensor([1.0, 2.0, 3.0])
    program = onnxport.export(model, (x, torch.tensor(4), step))
    assert "Loop" in _op_types(program.model.graph)
    for limit in (0, 1, 4, 9):  # zero iterations included
        i, acc = program(x, torch.tensor(limit), step)
        exp_i, exp_acc = model(x, torch.tensor(limit), step)
        assert int(i) == int(exp_i) == limit
        torch.testing.assert_close(acc, exp_acc)


class CumulativeScan(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(0.9))

    def forward(self, init: torch.Tensor, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def combine(carry: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            nxt = carry * self.scale + x
            return nxt, nxt.relu()

        return scan(combine, init, xs, dim=1)


def test_scan_matches_eager_on_two_lengths() -> None:
    model = CumulativeScan()
    init, xs = torch.zeros(2), torch.randn(2, 5)
    program = onnxport.export(model, (init, xs), dynamic_shapes=(None, {1: "steps"}))
    assert "Scan" in _op_types(program.model.graph)
    for steps in (5, 8):
        xs = torch.randn(2, steps)
        final, ys = program(init, xs)
        exp_final, exp_ys = model(init, xs)
        torch.testing.assert_close(final, exp_final.detach())
        torch.testing.assert_close(ys, exp_ys.detach())


def test_shape_only_python_branches_are_straight_graphs() -> None:
    class ShapeBranch(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.shape[-1] > 2:  # decided at capture time from the (static) shape
                return x.sum(-1)
            return x.mean(-1)

    model = ShapeBranch()
    x = torch.randn(2, 4)
    program = onnxport.export(model, (x,), dynamic_shapes=({0: "batch"},))
    assert "If" not in _op_types(program.model.graph)
    x2 = torch.randn(5, 4)
    torch.testing.assert_close(program(x2)[0], model(x2))
