"""Layout ops over weights (Reshape, Transpose, Squeeze, Unsqueeze, Concat) become initializers
derived from the weights (:mod:`onnxport.passes.weight_layout`): no node runs them, the values are
eager's, and a weight read elsewhere is neither folded nor stored twice."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import torch
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

import onnxport
from onnxport.passes.weight_layout import WeightLayoutPass

LAYOUT = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat"}


class StackedExperts(torch.nn.Module):
    """Parameters viewed, transposed and joined in forward, as DBRX's experts are."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w1 = torch.nn.Parameter(torch.randn(3 * 4, 5, generator=g))
        self.v1 = torch.nn.Parameter(torch.randn(3 * 4, 5, generator=g))
        self.w2 = torch.nn.Parameter(torch.randn(1, 3, 4, 5, generator=g))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [3, n, 5]
        gate_up = torch.cat([self.w1.view(3, 4, 5).transpose(1, 2), self.v1.view(3, 4, 5).transpose(1, 2)], dim=2)
        hidden = torch.bmm(x, gate_up)  # [3, n, 8]
        return torch.bmm(hidden[..., :4] * hidden[..., 4:], self.w2.squeeze(0))  # [3, n, 5]


class SharedWeight(torch.nn.Module):
    """A weight read as it is and through a view: the view stays an op (one stored copy). Larger
    than constant folding's small-weight limit (4096 elements), which copies small ones."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(128, 64, generator=torch.Generator().manual_seed(1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [n, 64]
        return x @ self.w.T + self.w.view(64, 128)[0]


def _layout_nodes_on_weights(program: onnxport.ONNXProgram) -> list[str]:
    return [n.op_type for n in program.model.graph if n.op_type in LAYOUT and n.inputs[0].is_initializer()]


def test_viewed_transposed_and_joined_weights_are_folded() -> None:
    model = StackedExperts().eval()
    x = torch.randn(3, 7, 5, generator=torch.Generator().manual_seed(2))
    program = onnxport.export(model, (x,))
    assert _layout_nodes_on_weights(program) == []
    inits = program.model.graph.initializers
    assert set(inits) >= {"(w1.view.T+v1.view.T)", "w2.view"}
    assert not {"w1", "v1", "w2"} & set(inits)  # each weight stored once, in its new layout
    joined = inits["(w1.view.T+v1.view.T)"].const_value
    assert isinstance(joined, ir.LazyTensor) and tuple(joined.shape) == (3, 5, 8)  # not read during export
    with torch.no_grad():
        want = torch.cat([model.w1.view(3, 4, 5).transpose(1, 2), model.v1.view(3, 4, 5).transpose(1, 2)], dim=2)
        np.testing.assert_array_equal(joined.numpy(), want.numpy())
        torch.testing.assert_close(program(x)[0], model(x), rtol=1e-5, atol=1e-5)


def test_a_weight_read_elsewhere_keeps_its_view() -> None:
    model = SharedWeight().eval()
    x = torch.randn(6, 64, generator=torch.Generator().manual_seed(3))
    program = onnxport.export(model, (x,))
    inits = program.model.graph.initializers
    assert "w" in inits and "w.view" not in inits
    assert "Reshape" in _layout_nodes_on_weights(program)
    with torch.no_grad():
        torch.testing.assert_close(program(x)[0], model(x), rtol=1e-5, atol=1e-5)


def _graph(ops: list[tuple[str, list[str], dict]], inits: dict[str, np.ndarray], out_shape: list[int]) -> ir.Model:
    nodes = [oh.make_node(op, inputs, [f"t{i}"], **attrs) for i, (op, inputs, attrs) in enumerate(ops)]
    nodes.append(oh.make_node("Add", ["x", f"t{len(ops) - 1}"], ["y"]))
    graph = oh.make_graph(
        nodes, "g", [oh.make_tensor_value_info("x", TensorProto.FLOAT, out_shape)],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(a, n) for n, a in inits.items()],
    )  # fmt: skip
    return ir.serde.deserialize_model(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21)], ir_version=10))


def _run(model: ir.Model, x: np.ndarray) -> np.ndarray:
    proto = ir.serde.serialize_model(model)
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_view_shapes_follow_the_onnx_spec() -> None:
    """Reshape's 0 (copy) and -1 (inferred), Squeeze without axes, Unsqueeze at negative axes, in
    one chain: the folded initializer equals what onnxruntime computes from the ops."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((2, 1, 12)).astype(np.float32)
    inits = {"w": w, "s": np.array([0, -1, 3], np.int64), "ax": np.array([-1, 0], np.int64)}
    ops = [
        ("Squeeze", ["w"], {}),  # [2, 12]
        ("Reshape", ["t0", "s"], {}),  # [2, 4, 3]
        ("Unsqueeze", ["t1", "ax"], {}),  # [1, 2, 4, 3, 1]
        ("Transpose", ["t2"], {"perm": [0, 4, 3, 1, 2]}),  # [1, 1, 3, 2, 4]
    ]
    model = _graph(ops, inits, [1, 1, 3, 2, 4])
    x = rng.standard_normal((1, 1, 3, 2, 4)).astype(np.float32)
    want = _run(model, x)
    assert WeightLayoutPass()(model).modified
    assert [n.op_type for n in model.graph] == ["Add"]
    (name,) = [n for n, v in model.graph.initializers.items() if v.uses()]
    assert name == "w.view.T" and list(model.graph.initializers[name].shape) == [1, 1, 3, 2, 4]
    np.testing.assert_array_equal(_run(model, x), want)
