"""dynamic_shapes: strings and Dim objects name ONNX dims; a batch of 1 stays dynamic."""

from __future__ import annotations

import torch
from torch.export import Dim

import onnxport


class BatchMatMul(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x @ y


def test_dim_objects_keep_their_names_and_auto_stays_symbolic() -> None:
    batch = Dim("batch")
    program = onnxport.export(
        BatchMatMul(), (torch.randn(3, 4, 5), torch.randn(3, 5, 6)),
        dynamic_shapes={"x": {0: batch, 1: Dim.AUTO}, "y": {0: batch}},
    )
    x_shape = program.model.graph.inputs[0].shape
    assert str(x_shape[0]) == "batch" and isinstance(x_shape[1], onnxport_symbolic()) and x_shape[2] == 5
    (out,) = program(torch.randn(2, 7, 5), torch.randn(2, 5, 6))
    assert out.shape == (2, 7, 6)


def onnxport_symbolic() -> type:
    import onnx_ir as ir

    return ir.SymbolicDim


def test_batch_of_one_stays_dynamic() -> None:
    x, y = torch.randn(1, 4, 5), torch.randn(1, 5, 6)
    program = onnxport.export(BatchMatMul(), (x, y), dynamic_shapes={"x": {0: "batch"}, "y": {0: "batch"}})
    assert program.model.graph.inputs[0].shape == ("batch", 4, 5)
    x2, y2 = torch.randn(6, 4, 5), torch.randn(6, 5, 6)
    (out,) = program(x2, y2)
    torch.testing.assert_close(out, x2 @ y2, rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_as_tuple_with_kwargs_order() -> None:
    class Two(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a * 2 + b.sum()

    program = onnxport.export(
        Two(), (), {"b": torch.randn(3), "a": torch.randn(2, 3)},
        dynamic_shapes={"a": {0: "rows"}, "b": None},
    )
    names = {v.name: v.shape for v in program.model.graph.inputs}
    assert names["a"] == ("rows", 3) and names["b"] == (3,)
    a, b = torch.randn(5, 3), torch.randn(3)
    (out,) = program(a=a, b=b) if [v.name for v in program.model.graph.inputs] == ["a", "b"] else program(b=b, a=a)
    torch.testing.assert_close(out, a * 2 + b.sum())
