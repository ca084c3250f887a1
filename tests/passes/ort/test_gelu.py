"""Bias Add + ONNX Gelu (or the tanh GELU written out) → com.microsoft.FastGelu (tanh) / BiasGelu
(exact): the fused graph equals the standard one and eager PyTorch in onnxruntime, run with graph optimizations off (so onnxruntime's own
BiasGelu/FastGelu session fusions cannot hide a wrong rewrite); what does not match stays."""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch

import onnxport
from onnxport.passes.ort.gelu import GeluPass

HIDDEN = 24


def _const(name: str, array: np.ndarray) -> ir.Value:
    return ir.Value(
        name=name,
        shape=ir.Shape(array.shape),
        type=ir.TensorType(ir.DataType.FLOAT),
        const_value=ir.tensor(array, name=name),
    )


def _model(
    approximate: str, bias_shape: tuple[int, ...] | None, bias_first: bool = False
) -> ir.Model:
    """``y = Gelu(x @ W (+ b))`` over ``x: [batch, sequence, 16]``."""
    rng = np.random.default_rng(0)
    x = ir.Value(
        name="x", shape=ir.Shape(["batch", "sequence", 16]), type=ir.TensorType(ir.DataType.FLOAT)
    )
    weight = _const("W", rng.standard_normal((16, HIDDEN)).astype(np.float32))
    nodes = [ir.node("MatMul", [x, weight])]
    h = nodes[-1].outputs[0]
    h.dtype, h.shape = ir.DataType.FLOAT, ir.Shape(["batch", "sequence", HIDDEN])
    initializers = [weight]
    if bias_shape is not None:
        bias = _const("b", rng.standard_normal(bias_shape).astype(np.float32))
        initializers.append(bias)
        nodes.append(ir.node("Add", [bias, h] if bias_first else [h, bias]))
        h = nodes[-1].outputs[0]
        h.dtype, h.shape = ir.DataType.FLOAT, ir.Shape(["batch", "sequence", HIDDEN])
    nodes.append(ir.node("Gelu", [h], {"approximate": approximate}))
    y = nodes[-1].outputs[0]
    y.name, y.dtype, y.shape = "y", ir.DataType.FLOAT, h.shape
    graph = ir.Graph(
        [x], [y], nodes=nodes, name="g", initializers=initializers, opset_imports={"": 23}
    )
    return ir.Model(graph, ir_version=10)


def _run(model: ir.Model, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = ir.to_proto(model).SerializeToString()
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize(
    ("approximate", "bias_shape", "bias_first", "fused"),
    [
        ("tanh", (HIDDEN,), False, ["MatMul", "FastGelu"]),
        ("tanh", (HIDDEN,), True, ["MatMul", "FastGelu"]),
        ("tanh", None, False, ["MatMul", "FastGelu"]),
        ("none", (HIDDEN,), False, ["MatMul", "BiasGelu"]),
        ("none", (HIDDEN,), True, ["MatMul", "BiasGelu"]),
    ],
)
def test_fused_equals_standard_and_torch(
    approximate: str, bias_shape: tuple[int, ...] | None, bias_first: bool, fused: list[str]
) -> None:
    x = np.random.default_rng(1).standard_normal((2, 5, 16)).astype(np.float32) * 2
    want = _run(_model(approximate, bias_shape, bias_first), x)
    model = _model(approximate, bias_shape, bias_first)
    assert GeluPass()(model).modified
    assert [n.op_type for n in model.graph] == fused
    assert model.graph.node(1).domain == "com.microsoft"
    assert model.graph.outputs[0].name == "y" and model.graph.outputs[0].shape == ir.Shape(
        ["batch", "sequence", HIDDEN]
    )
    got = _run(model, x)
    assert got.shape == (2, 5, HIDDEN) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # and eager PyTorch's gelu of the same pre-activation
    weights = {v.name: v.const_value.numpy() for v in model.graph.initializers.values()}
    pre = torch.from_numpy(x @ weights["W"] + weights.get("b", 0))
    eager = torch.nn.functional.gelu(pre, approximate=approximate).numpy()
    np.testing.assert_allclose(got, eager, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("approximate", "bias_shape"),
    [
        ("none", None),  # a lone exact GELU stays ONNX Gelu (onnxruntime runs it natively)
        ("none", (5, HIDDEN)),  # a 2-D addend is not a bias
        ("none", (1,)),  # a broadcast scalar is not a per-channel bias
    ],
)
def test_not_fused(approximate: str, bias_shape: tuple[int, ...] | None) -> None:
    model = _model(approximate, bias_shape)
    before = [n.op_type for n in model.graph]
    assert not GeluPass()(model).modified
    assert [n.op_type for n in model.graph] == before


def test_tanh_without_a_bias_keeps_the_add() -> None:
    model = _model("tanh", (5, HIDDEN))  # a 2-D addend: FastGelu without bias after the Add
    assert GeluPass()(model).modified
    assert [n.op_type for n in model.graph] == ["MatMul", "Add", "FastGelu"]


def test_shared_bias_sum_is_not_fused() -> None:
    """The Add's sum also feeds another node: fusing would drop it."""
    model = _model("tanh", (HIDDEN,))
    add = next(n for n in model.graph if n.op_type == "Add")
    extra = ir.node("Neg", [add.outputs[0]])
    extra.outputs[0].name = "z"
    model.graph.append(extra)
    model.graph.outputs.append(extra.outputs[0])
    assert GeluPass()(model).modified  # the Gelu still fuses, without the bias
    assert [n.op_type for n in model.graph] == ["MatMul", "Add", "FastGelu", "Neg"]


class _Mlp(torch.nn.Module):
    """Linear (3-D input: MatMul + bias Add) then a tanh GELU written in one of its forms."""

    def __init__(self, form: str) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, HIDDEN)
        self.form = form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        if self.form == "gelu_new":  # transformers' NewGELUActivation, as GPT-2 writes it
            inner = math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))
            return 0.5 * h * (1.0 + torch.tanh(inner))
        return torch.nn.functional.gelu(h, approximate="tanh")


@pytest.mark.parametrize(("form", "opset"), [("gelu_new", 23), ("torch", 18)])
def test_written_out_tanh_gelu_becomes_fast_gelu(form: str, opset: int) -> None:
    """gelu_new's arithmetic, and onnxport's own translation of gelu(approximate="tanh") below
    opset 20, fold into one FastGelu with the Linear's bias; values equal eager."""
    torch.manual_seed(0)
    module = _Mlp(form).eval()
    x = torch.randn(2, 5, 16) * 2
    program = onnxport.export(
        module, (x,), dynamic_shapes=({0: "batch", 1: "sequence"},), opset_version=opset
    )
    model = program.model
    assert "Tanh" in [n.op_type for n in model.graph]
    assert GeluPass()(model).modified
    ops = [n.op_type for n in model.graph]
    assert ops.count("FastGelu") == 1 and "Tanh" not in ops and "Add" not in ops, ops
    fused = next(n for n in model.graph if n.op_type == "FastGelu")
    assert len(fused.inputs) == 2 and fused.inputs[1].const_value is not None  # fc's bias
    for shape in ((2, 5, 16), (3, 7, 16)):
        sample = torch.randn(shape) * 2
        got = _run(model, sample.numpy())
        with torch.no_grad():
            want = module(sample).numpy()
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_formula_with_another_constant_is_not_fused() -> None:
    """0.5·h·(1 + tanh(0.7·(h + 0.044715·h³))) is not GELU: left alone."""

    class Other(torch.nn.Module):
        def forward(self, h: torch.Tensor) -> torch.Tensor:
            return 0.5 * h * (1.0 + torch.tanh(0.7 * (h + 0.044715 * torch.pow(h, 3.0))))

    program = onnxport.export(Other(), (torch.randn(2, 3),))
    before = [n.op_type for n in program.model.graph]
    assert not GeluPass()(program.model).modified
    assert [n.op_type for n in program.model.graph] == before


def test_matching_reads_no_weight() -> None:
    """A Tanh over ``x · w`` (``w`` a weight without data, fake mode) is looked at, not read:
    reading it would raise MissingWeightsError (and on the streamed path read the checkpoint)."""

    class ScaledTanh(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(16))

        def forward(self, h: torch.Tensor) -> torch.Tensor:
            return 0.5 * h * (1.0 + torch.tanh(self.w * (h + 0.044715 * torch.pow(h, 3.0))))

    with onnxport.enable_fake_mode():
        module = ScaledTanh()
    program = onnxport.export(module, (torch.randn(2, 16),))
    assert program.missing_weights == ["w"]
    before = [n.op_type for n in program.model.graph]
    assert not GeluPass()(program.model).modified
    assert [n.op_type for n in program.model.graph] == before
