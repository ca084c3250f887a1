"""Residual Add + RMSNormalization/LayerNormalization → Skip(Simplified)LayerNormalization: the
fused graph equals the standard one in onnxruntime; a broadcasting Add is left alone."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest

from onnxport.passes.ort.skip_norm import SkipNormalizationPass

HIDDEN = 32


def _value(name: str, shape: list) -> ir.Value:
    return ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(ir.DataType.FLOAT))


def _model(norm: str, skip_shape: list, last: bool = False) -> ir.Model:
    """``y = norm(a + b) * 2``, ``z = (a + b) + y``: the sum is also the next residual (``last``:
    no ``z``, the norm reads the sum alone, as a decoder's final norm does)."""
    a, b = _value("a", ["batch", "sequence", HIDDEN]), _value("b", skip_shape)
    rng = np.random.default_rng(0)
    scale = ir.Value(
        name="scale",
        shape=ir.Shape([HIDDEN]),
        type=ir.TensorType(ir.DataType.FLOAT),
        const_value=ir.tensor(
            (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32), name="scale"
        ),
    )
    bias = ir.Value(
        name="bias",
        shape=ir.Shape([HIDDEN]),
        type=ir.TensorType(ir.DataType.FLOAT),
        const_value=ir.tensor((0.1 * rng.standard_normal(HIDDEN)).astype(np.float32), name="bias"),
    )
    add = ir.node("Add", [a, b])
    total = add.outputs[0]
    total.name, total.dtype, total.shape = (
        "sum",
        ir.DataType.FLOAT,
        ir.Shape(["batch", "sequence", HIDDEN]),
    )
    params = [scale] if norm == "RMSNormalization" else [scale, bias]
    normed = ir.node(norm, [total, *params], {"axis": -1, "epsilon": 1e-5})
    n = normed.outputs[0]
    n.name, n.dtype, n.shape = "n", ir.DataType.FLOAT, total.shape
    two = ir.Value(
        name="two",
        shape=ir.Shape([]),
        type=ir.TensorType(ir.DataType.FLOAT),
        const_value=ir.tensor(np.array(2.0, np.float32), name="two"),
    )
    mul = ir.node("Mul", [n, two])
    y = mul.outputs[0]
    y.name, y.dtype, y.shape = "y", ir.DataType.FLOAT, total.shape
    outputs, nodes = [y], [add, normed, mul]
    if not last:
        res = ir.node("Add", [total, y])
        z = res.outputs[0]
        z.name, z.dtype, z.shape = "z", ir.DataType.FLOAT, total.shape
        outputs.append(z)
        nodes.append(res)
    graph = ir.Graph(
        [a, b],
        outputs,
        nodes=nodes,
        name="g",
        initializers=[*params, two],
        opset_imports={"": 23},
    )
    return ir.Model(graph, ir_version=10)


def _run(model: ir.Model, feeds: dict) -> list[np.ndarray]:
    data = ir.to_proto(model).SerializeToString()
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize(
    ("norm", "fused"),
    [
        ("RMSNormalization", "SkipSimplifiedLayerNormalization"),
        ("LayerNormalization", "SkipLayerNormalization"),
    ],
)
def test_fused_equals_standard(norm: str, fused: str) -> None:
    rng = np.random.default_rng(1)
    feeds = {k: rng.standard_normal((2, 5, HIDDEN)).astype(np.float32) for k in ("a", "b")}
    want = _run(_model(norm, ["batch", "sequence", HIDDEN]), feeds)
    model = _model(norm, ["batch", "sequence", HIDDEN])
    assert SkipNormalizationPass()(model).modified
    assert [(n.op_type, n.domain) for n in model.graph] == [
        (fused, "com.microsoft"),
        ("Mul", ""),
        ("Add", ""),
    ]
    got = _run(model, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_broadcasting_skip_is_not_fused() -> None:
    model = _model("RMSNormalization", [HIDDEN])  # b broadcasts: not a residual of the same shape
    assert not SkipNormalizationPass()(model).modified
    assert [n.op_type for n in model.graph] == ["Add", "RMSNormalization", "Mul", "Add"]


def test_unread_outputs_stay_unnamed() -> None:
    """The mean and inverse standard deviation are never named; the residual sum only when
    something besides the norm reads it (onnxruntime's kernel writes output 3 only when named)."""
    rng = np.random.default_rng(2)
    feeds = {k: rng.standard_normal((2, 5, HIDDEN)).astype(np.float32) for k in ("a", "b")}
    for last, outputs in ((False, ["n", "", "", "sum"]), (True, ["n"])):
        want = _run(_model("RMSNormalization", ["batch", "sequence", HIDDEN], last), feeds)
        model = _model("RMSNormalization", ["batch", "sequence", HIDDEN], last)
        assert SkipNormalizationPass()(model).modified
        fused = ir.to_proto(model).graph.node[0]
        assert (fused.op_type, list(fused.output)) == ("SkipSimplifiedLayerNormalization", outputs)
        for g, w in zip(_run(model, feeds), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
