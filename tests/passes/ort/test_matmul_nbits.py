"""MatMulNBits weight-only quantization: bytes equal a plain numpy loop and onnxruntime's MLAS
quantizer; the rewritten MatMul runs in onnxruntime and equals x @ dequantized weight."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch

import onnxport
from onnxport.passes.ort import QuantizeOptions, blockwise
from onnxport.passes.ort.matmul_nbits import MatMulNBitsPass


def reference(weight: np.ndarray, bits: int, block: int, symmetric: bool):
    """One block at a time, as docs/ContribOperators.md (MatMulNBits) describes the layout."""
    k, n = weight.shape
    blocks = -(-k // block)
    qmax = (1 << bits) - 1
    per_byte = 8 // bits
    packed = np.zeros((n, blocks, block // per_byte), np.uint8)
    scales = np.zeros((n, blocks), np.float32)
    zeros = np.zeros((n, blocks), np.uint8)
    for col in range(n):
        for b in range(blocks):
            values = np.zeros(block, np.float32)
            chunk = weight[b * block : (b + 1) * block, col]
            values[: len(chunk)] = chunk
            lo, hi = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
            if symmetric:
                extreme = np.float32(hi if abs(hi) > abs(lo) else lo)
                scale = np.float32(extreme / np.float32(-(1 << (bits - 1))))
                zero = 1 << (bits - 1)
            else:
                scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(qmax))
                zero_fp = -np.float32(lo) / scale if scale != 0 else np.float32(lo)
                zero = int(min(max(np.floor(zero_fp + np.float32(0.5)), 0), qmax))
            inverse = np.float32(1) / scale if scale != 0 else np.float32(0)
            q = []
            for v in values:
                x = np.float32(v * inverse + np.float32(zero))
                r = np.floor(abs(x) + np.float32(0.5)) * (1 if x >= 0 else -1)
                q.append(int(min(max(r, 0), qmax)) if b * block + len(q) < k else 0)
            for i in range(0, block, per_byte):
                byte = 0
                for j in range(per_byte):
                    byte |= q[i + j] << (bits * j)
                packed[col, b, i // per_byte] = byte
            scales[col, b], zeros[col, b] = scale, zero
    if bits == 4:
        padded = np.concatenate([zeros, np.full((n, blocks % 2), 8, np.uint8)], axis=1)
        zeros = (padded[:, 0::2] | (padded[:, 1::2] << 4)).astype(np.uint8)
    return packed, scales, None if symmetric else zeros


def _weight(k: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = (0.05 * rng.standard_normal((k, n))).astype(np.float32)
    w[:16, 0] = 0.0  # an all-zero block (scale 0)
    w[:, 1] = np.abs(w[:, 1])  # a one-signed column
    w[3, 2] = 0.5  # an outlier
    return w


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("k", "block"), [(64, 16), (96, 32), (80, 32), (256, 128)])
@pytest.mark.parametrize("implementation", [blockwise.quantize, blockwise.quantize_numpy])
def test_bytes_equal_numpy_loop(
    bits: int, symmetric: bool, k: int, block: int, implementation
) -> None:
    weight = _weight(k, 6)
    got = implementation(weight, bits, block, symmetric)
    packed, scales, zeros = reference(weight, bits, block, symmetric)
    np.testing.assert_array_equal(got.packed, packed)
    np.testing.assert_array_equal(got.scales.view(np.uint32), scales.view(np.uint32))
    if symmetric:
        assert got.zero_points is None
    else:
        np.testing.assert_array_equal(got.zero_points, zeros)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
def test_bytes_equal_onnxruntime_mlas(bits: int, symmetric: bool) -> None:
    from onnxruntime.capi import _pybind_state as C

    k, n, block = 256, 48, 32
    weight = _weight(k, n, seed=3)
    blocks = k // block
    packed = np.zeros((n, blocks, block * bits // 8), np.uint8)
    zeros = np.zeros((n, -(-blocks * bits // 8)), np.uint8)
    scales = np.zeros((n, blocks), np.float32)
    quantize = C.quantize_matmul_4bits if bits == 4 else C.quantize_matmul_8bits
    quantize(packed, weight, scales, zeros, block, n, k, symmetric)
    got = blockwise.quantize_numpy(weight, bits, block, symmetric)
    np.testing.assert_array_equal(got.packed, packed)
    np.testing.assert_array_equal(got.scales, scales)
    if not symmetric:
        np.testing.assert_array_equal(got.zero_points, zeros)


def _matmul_model(k: int, n: int, weight: np.ndarray | None) -> ir.Model:
    x = ir.Value(name="x", shape=ir.Shape(["batch", 3, k]), type=ir.TensorType(ir.DataType.FLOAT))
    if weight is None:
        w = ir.Value(name="w", shape=ir.Shape([k, n]), type=ir.TensorType(ir.DataType.FLOAT))
        inputs = [x, w]
    else:
        w = ir.Value(
            name="w",
            shape=ir.Shape([k, n]),
            type=ir.TensorType(ir.DataType.FLOAT),
            const_value=ir.tensor(weight, name="w"),
        )
        inputs = [x]
    node = ir.node("MatMul", [x, w])
    hidden = node.outputs[0]
    hidden.name, hidden.dtype, hidden.shape = "h", ir.DataType.FLOAT, ir.Shape(["batch", 3, n])
    relu = ir.node("Relu", [hidden])
    y = relu.outputs[0]
    y.name, y.dtype, y.shape = "y", ir.DataType.FLOAT, ir.Shape(["batch", 3, n])
    graph = ir.Graph(
        inputs,
        [y, hidden],
        nodes=[node, relu],
        name="g",
        initializers=[] if weight is None else [w],
        opset_imports={"": 21},
    )
    return ir.Model(graph, ir_version=10)


def _run(model: ir.Model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    data = ir.to_proto(model).SerializeToString()
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize(
    ("bits", "symmetric", "block"), [(4, True, 32), (4, False, 16), (8, True, 64), (8, False, 32)]
)
def test_matmul_nbits_runs_and_equals_dequantized(bits: int, symmetric: bool, block: int) -> None:
    k, n = 128, 40
    weight = _weight(k, n, seed=5)
    model = _matmul_model(k, n, weight)
    report: dict = {}
    options = QuantizeOptions(bits=bits, block_size=block, symmetric=symmetric, accuracy_level=0)
    assert MatMulNBitsPass(options, report)(model).modified
    node = next(n_ for n_ in model.graph if n_.op_type == "MatMulNBits")
    assert node.domain == "com.microsoft"
    assert {a: node.attributes[a].as_int() for a in ("K", "N", "bits", "block_size")} == {
        "K": k,
        "N": n,
        "bits": bits,
        "block_size": block,
    }
    assert "w" not in model.graph.initializers  # the float weight is gone
    x = np.random.default_rng(1).standard_normal((2, 3, k)).astype(np.float32)
    y, hidden = _run(model, {"x": x})
    packed, scales, zeros = reference(weight, bits, block, symmetric)
    assert node.inputs[1].const_value is not None
    np.testing.assert_array_equal(node.inputs[1].const_value.numpy(), packed)
    np.testing.assert_array_equal(node.inputs[2].const_value.numpy(), scales)
    if not symmetric:
        np.testing.assert_array_equal(node.inputs[3].const_value.numpy(), zeros)
    dequantized = blockwise.dequantize(blockwise.Quantized(packed, scales, zeros), k, bits, block)
    np.testing.assert_allclose(hidden, x @ dequantized, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y, np.maximum(x @ dequantized, 0), rtol=1e-4, atol=1e-5)
    assert abs(float(np.abs(hidden - x @ weight).max())) > 0  # really quantized
    assert set(report) == {"w"} and 0 < report["w"]["rel_l2"] < (0.2 if bits == 4 else 0.02)


def test_lm_head_excluded_and_non_constant_weight_kept() -> None:
    k, n = 64, 8
    model = _matmul_model(k, n, _weight(k, n))  # its MatMul output "h" is a graph output
    assert not MatMulNBitsPass(QuantizeOptions(lm_head=False))(model).modified
    assert [n_.op_type for n_ in model.graph] == ["MatMul", "Relu"]
    dynamic = _matmul_model(k, n, None)
    assert not MatMulNBitsPass(QuantizeOptions())(dynamic).modified
    assert [n_.op_type for n_ in dynamic.graph] == ["MatMul", "Relu"]


@pytest.mark.parametrize("kwargs", [{"bits": 3}, {"block_size": 48}, {"accuracy_level": 7}])
def test_bad_options(kwargs: dict) -> None:
    from onnxport.errors import OnnxportError

    with pytest.raises(OnnxportError, match=next(iter(kwargs))):
        QuantizeOptions(**kwargs)


def _float(name: str, shape: list) -> ir.Value:
    return ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(ir.DataType.FLOAT))


def _initializer(name: str, array: np.ndarray) -> ir.Value:
    value = _float(name, list(array.shape))
    value.const_value = ir.tensor(array, name=name)
    return value


def _model(inputs: list[ir.Value], nodes: list[ir.Node], outputs: list[ir.Value], initializers: list[ir.Value]) -> ir.Model:
    graph = ir.Graph(inputs, outputs, nodes=nodes, initializers=initializers, name="g", opset_imports={"": 21})
    return ir.Model(graph, ir_version=10)


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("symmetric", [True, False])
def test_gemm_with_bias_becomes_matmul_nbits_with_its_bias(trans_b: int, symmetric: bool) -> None:
    """``aten.addmm`` (GPT-2's Conv1D, OPT's MLP rows) is ``Gemm(x, W, bias)``: quantized like a
    MatMul, the bias in MatMulNBits' input 5, equal to ``x @ dequantized + bias``."""
    k, n = 96, 24
    weight = _weight(k, n, seed=3)  # [K, N]
    bias = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    x = _float("x", ["rows", k])
    w = _initializer("w", weight.T.copy() if trans_b else weight)
    b = _initializer("b", bias)
    gemm = ir.node("Gemm", [x, w, b], {"transB": trans_b})
    gemm.outputs[0].name, gemm.outputs[0].dtype, gemm.outputs[0].shape = "h", ir.DataType.FLOAT, ir.Shape(["rows", n])
    relu = ir.node("Relu", gemm.outputs)
    relu.outputs[0].name, relu.outputs[0].dtype = "y", ir.DataType.FLOAT
    model = _model([x], [gemm, relu], [relu.outputs[0]], [w, b])
    report: dict = {}
    assert MatMulNBitsPass(QuantizeOptions(block_size=32, symmetric=symmetric, accuracy_level=0), report)(model).modified
    [node] = [n_ for n_ in model.graph if n_.op_type == "MatMulNBits"]
    assert len(node.inputs) == 6 and node.inputs[5] is b
    assert [n_.op_type for n_ in model.graph] == ["MatMulNBits", "Relu"]
    assert "w" not in model.graph.initializers
    packed, scales, zeros = reference(weight, 4, 32, symmetric)
    np.testing.assert_array_equal(node.inputs[1].const_value.numpy(), packed)
    np.testing.assert_array_equal(node.inputs[2].const_value.numpy(), scales)
    assert set(report) == {"w.T" if trans_b else "w"}  # recorded when the weight is quantized
    dequantized = blockwise.dequantize(blockwise.Quantized(packed, scales, zeros), k, 4, 32)
    rows = np.random.default_rng(5).standard_normal((5, k)).astype(np.float32)
    [y] = _run(model, {"x": rows})
    assert y.shape == (5, n) and y.dtype == np.float32
    np.testing.assert_allclose(y, np.maximum(rows @ dequantized + bias, 0), rtol=1e-4, atol=1e-5)


def test_gemm_that_is_not_a_plain_projection_stays() -> None:
    k, n = 64, 8
    x = _float("x", ["rows", k])
    w = _initializer("w", _weight(k, n))
    scaled = ir.node("Gemm", [x, w], {"alpha": 0.5})
    scaled.outputs[0].name, scaled.outputs[0].dtype = "y", ir.DataType.FLOAT
    model = _model([x], [scaled], [scaled.outputs[0]], [w])
    assert not MatMulNBitsPass(QuantizeOptions())(model).modified
    assert [n_.op_type for n_ in model.graph] == ["Gemm"]


def test_tied_lm_head_through_transpose_is_quantized_and_the_table_kept() -> None:
    """A tied LM head reads the embedding table ``[V, K]`` through ``Transpose``: the head is
    quantized from the table's transpose, the Transpose removed, the table kept for the Gather."""
    vocab, k = 40, 64
    table = _weight(k, vocab, seed=8).T.copy()  # [V, K]
    ids = ir.Value(name="ids", shape=ir.Shape(["batch", 3]), type=ir.TensorType(ir.DataType.INT64))
    t = _initializer("embed.weight", table)
    gather = ir.node("Gather", [t, ids])
    gather.outputs[0].name, gather.outputs[0].dtype = "embedded", ir.DataType.FLOAT
    gather.outputs[0].shape = ir.Shape(["batch", 3, k])
    transpose = ir.node("Transpose", [t], {"perm": [1, 0]})
    head = ir.node("MatMul", [gather.outputs[0], transpose.outputs[0]])
    head.outputs[0].name, head.outputs[0].dtype = "logits", ir.DataType.FLOAT
    model = _model([ids], [gather, transpose, head], [head.outputs[0]], [t])
    report: dict = {}
    assert MatMulNBitsPass(QuantizeOptions(accuracy_level=0), report)(model).modified
    assert [n_.op_type for n_ in model.graph] == ["Gather", "MatMulNBits"]
    assert "embed.weight" in model.graph.initializers
    packed, scales, _ = reference(table.T, 4, 32, True)
    node = model.graph.node(1)
    np.testing.assert_array_equal(node.inputs[1].const_value.numpy(), packed)
    assert set(report) == {"embed.weight.T"}
    dequantized = blockwise.dequantize(blockwise.Quantized(packed, scales, None), k, 4, 32)
    tokens = np.array([[0, 5, 39], [7, 7, 1]], dtype=np.int64)
    [logits] = _run(model, {"ids": tokens})
    assert logits.shape == (2, 3, vocab) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, table[tokens] @ dequantized, rtol=1e-4, atol=1e-5)


def test_weight_read_by_two_matmuls_is_quantized_once() -> None:
    """One weight, two MatMuls (Gemma 3n's AltUp router, HRM's repeated blocks): both become
    MatMulNBits over the same packed initializers (before: the second rewrite registered them again
    and the pass failed)."""
    class TwoUses(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(64, 32, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.proj(x) * self.proj(torch.tanh(x))

    torch.manual_seed(0)
    model = TwoUses().eval()
    x = torch.randn(3, 64)
    program = onnxport.export(model, (x,))
    report: dict = {}
    assert MatMulNBitsPass(QuantizeOptions(bits=4, block_size=32, accuracy_level=0), report)(program.model).modified
    nodes = [n for n in program.model.graph if n.op_type == "MatMulNBits"]
    assert len(nodes) == 2 and nodes[0].inputs[1] is nodes[1].inputs[1] and nodes[0].inputs[2] is nodes[1].inputs[2]
    weight = model.proj.weight.detach().numpy().T
    packed, scales, zeros = reference(weight, 4, 32, True)
    np.testing.assert_array_equal(nodes[0].inputs[1].const_value.numpy(), packed)
    assert len(report) == 1  # one weight quantized (when its parts are first read)
    dequantized = blockwise.dequantize(blockwise.Quantized(packed, scales, zeros), 64, 4, 32)
    session = ort.InferenceSession(ir.serde.serialize_model(program.model).SerializeToString())
    (y,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    expected = (x.numpy() @ dequantized) * (np.tanh(x.numpy()) @ dequantized)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
