"""Packed MatMuls (q/k/v → one MatMul + Split; a gated MLP's gate and up stay two): the packed decoder equals the standard
graph in onnxruntime; packed int4/int8 bytes equal the separate quantizations side by side; biases
are packed; MatMuls with another input, another K or a dynamic weight stay as they are; no weight
is read at pass time."""

from __future__ import annotations

import collections

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch

import onnxport.hf
from onnxport import weights
from onnxport.errors import InputError
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.loading import from_model
from onnxport.passes.ort import QuantizeOptions, blockwise
from onnxport.passes.ort.matmul_nbits import MatMulNBitsPass
from onnxport.passes.ort.packed_matmul import PackedMatMulPass
from onnxport.testing.tiny_models import _make

from ._models import GQA_DECODER, llama

pytest.importorskip("transformers")

SIZES = [hf_inputs.EXPORT_SIZES, *hf_inputs.CHECK_SIZES]


def _ops(model: ir.Model) -> collections.Counter:
    return collections.Counter(n.op_type for n in model.graph)


def _outputs(program, feeds_list) -> list[list[np.ndarray]]:
    program.release()
    return [[np.asarray(t) for t in program(**feeds)] for feeds in feeds_list]


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_packed_decoder_equals_standard_graph(family: str) -> None:
    """Llama (no biases) and Qwen2 (q/k/v biases): 7 → 4 MatMuls per layer, same outputs."""
    if family == "llama":
        model = llama()
    else:
        model = _make("Qwen2Config", "Qwen2ForCausalLM", **GQA_DECODER)()
    program = onnxport.hf.export(model, validate=False).programs["model"]
    part = hf_inputs.components(from_model(model, None))[0]
    feeds = [part.make_inputs(s) for s in SIZES]
    before, ops_before = _outputs(program, feeds), _ops(program.model)
    result = PackedMatMulPass()(program.model)
    assert result.modified
    after, ops = _outputs(program, feeds), _ops(program.model)
    layers = GQA_DECODER["num_hidden_layers"]
    assert ops_before["MatMul"] == 7 * layers + 1
    # q|k|v packed; gate and up stay two MatMuls (their outputs meet in one Mul)
    assert ops["MatMul"] == 5 * layers + 1 and ops["Split"] == layers
    if family == "qwen2":  # the three q/k/v bias Adds became one per layer
        assert ops_before["Add"] - ops["Add"] == 2 * layers
        packed = [v for n, v in program.model.graph.initializers.items() if n.endswith("v_proj.bias")]
        assert len(packed) == layers and packed[0].shape == ir.Shape([64 + 2 * 32])
    for got_set, want_set in zip(after, before, strict=True):
        for got, want in zip(got_set, want_set, strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("config", "model_class", "per_layer", "extra"), [
    # q, k, v, dense; fc1 reads the same normed input; fc2 (rotary on 16 of 32 dims: fused)
    ("PhiConfig", "PhiForCausalLM", 6, {"hidden_size": 128, "partial_rotary_factor": 0.5}),
    ("CohereConfig", "CohereForCausalLM", 7, {}),  # q, k, v, o; gate and up read the same input; down
])  # fmt: skip
def test_parallel_block_packs_its_attention_apart(config: str, model_class: str, per_layer: int, extra: dict) -> None:
    """Attention and MLP reading one input: q|k|v packed and fed whole to the attention in every
    layer (the MLP's output reaches the next layer's attention only through its own projections),
    the MLP's projections left as they are; equal to the standard graph."""
    model = _make(config, model_class, **{**GQA_DECODER, "num_hidden_layers": 3, **extra})()
    part = hf_inputs.components(from_model(model, None))[0]
    feeds = [part.make_inputs(s) for s in SIZES]
    program = onnxport.hf.export(model, validate=False).programs["model"]
    before, ops_before = _outputs(program, feeds), _ops(program.model)
    assert PackedMatMulPass()(program.model).modified
    after, ops = _outputs(program, feeds), _ops(program.model)
    assert ops_before["MatMul"] == per_layer * 3 + 1 and ops["MatMul"] == (per_layer - 2) * 3 + 1
    splits = [n for n in program.model.graph if n.op_type == "Split"]
    assert len(splits) == ops_before["Split"] + 3 and all(len(n.outputs) in (2, 3) for n in splits)
    for got_set, want_set in zip(after, before, strict=True):
        for got, want in zip(got_set, want_set, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    shared = onnxport.hf.export(model, validate=False, target="onnxruntime", kv_cache="shared").programs["model"]
    gqa = [n for n in shared.model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == 3 and all(n.inputs[0].producer().op_type in ("MatMul", "Add") and n.inputs[1] is None for n in gqa)
    assert _ops(shared.model)["Split"] == 0


def _value(name: str, shape: list, dtype: ir.DataType = ir.DataType.FLOAT) -> ir.Value:
    return ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(dtype))


def _init(graph: ir.Graph, name: str, array: np.ndarray) -> ir.Value:
    value = ir.Value(
        name=name,
        shape=ir.Shape(array.shape),
        type=ir.TensorType(ir.DataType.FLOAT),
        const_value=ir.tensor(array, name=name),
    )
    graph.register_initializer(value)
    return value


def _matmul_model(columns: dict[str, tuple[str, int, int]], seed: int = 0):
    """``y_name = MatMul(input, W_name)`` for each ``name: (input, K, N)``; inputs ``x`` [B, S, 64],
    ``x2`` [B, S, 64], ``x3`` [B, S, 32] and a dynamic weight ``w_dyn`` [64, 16]."""
    rng = np.random.default_rng(seed)
    inputs = {
        "x": _value("x", ["batch", "sequence", 64]),
        "x2": _value("x2", ["batch", "sequence", 64]),
        "x3": _value("x3", ["batch", "sequence", 32]),
        "w_dyn": _value("w_dyn", [64, 16]),
    }
    graph = ir.Graph(list(inputs.values()), [], nodes=[], opset_imports={"": 21}, name="g")
    arrays = {}
    for name, (source, k, n) in columns.items():
        if name == "dyn":
            weight = inputs["w_dyn"]
        else:
            arrays[name] = (0.1 * rng.standard_normal((k, n))).astype(np.float32)
            weight = _init(graph, f"layer.{name}.weight", arrays[name])
        node = ir.node("MatMul", [inputs[source], weight], name=f"mm_{name}")
        node.outputs[0].name = f"y_{name}"
        node.outputs[0].dtype = ir.DataType.FLOAT
        node.outputs[0].shape = ir.Shape(["batch", "sequence", n])
        graph.append(node)
        graph.outputs.append(node.outputs[0])
    return ir.Model(graph, ir_version=10), arrays


def _run(model: ir.Model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    proto = ir.serde.serialize_model(model)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _feeds(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((2, 5, 64)).astype(np.float32),
        "x2": rng.standard_normal((2, 5, 64)).astype(np.float32),
        "x3": rng.standard_normal((2, 5, 32)).astype(np.float32),
        "w_dyn": rng.standard_normal((64, 16)).astype(np.float32),
    }


QKV = {"q": ("x", 64, 96), "k": ("x", 64, 32), "v": ("x", 64, 32)}


@pytest.mark.parametrize(("bits", "symmetric"), [(4, True), (4, False), (8, True)])
def test_quantized_packed_bytes_equal_separate_quantizations(bits: int, symmetric: bool) -> None:
    model, arrays = _matmul_model(QKV)
    PackedMatMulPass()(model)
    options = QuantizeOptions(bits=bits, block_size=32, symmetric=symmetric)
    MatMulNBitsPass(options)(model)
    nodes = [n for n in model.graph if n.op_type == "MatMulNBits"]
    assert len(nodes) == 1 and nodes[0].attributes["N"].as_int() == 160
    separate = [blockwise.quantize_numpy(arrays[k], bits, 32, symmetric) for k in "qkv"]
    packed, scales, *zeros = (v.const_value.numpy() for v in nodes[0].inputs[1:])  # type: ignore[union-attr]
    np.testing.assert_array_equal(packed, np.concatenate([q.packed for q in separate]))
    np.testing.assert_array_equal(scales, np.concatenate([q.scales for q in separate]))
    if not symmetric:
        np.testing.assert_array_equal(zeros[0], np.concatenate([q.zero_points for q in separate]))
    # The packed quantized MatMul computes x @ dequantized weights, column block by column block.
    feeds = _feeds()
    got = _run(model, feeds)
    for name, out, q in zip("qkv", got, separate, strict=True):
        want = feeds["x"] @ blockwise.dequantize(q, 64, bits, 32)
        assert out.shape == (2, 5, arrays[name].shape[1])
        np.testing.assert_allclose(out, want, rtol=2e-2, atol=5e-2 * np.abs(want).max())


def test_fp32_packed_equals_separate_and_negative_cases_unpacked() -> None:
    columns = {
        **QKV,
        "other_input": ("x2", 64, 16),  # another first input: alone in its group
        "other_k": ("x3", 32, 16),  # another K (and input)
        "dyn": ("x", 64, 16),  # a dynamic weight (graph input) on the same x
    }
    model, _ = _matmul_model(columns)
    feeds = _feeds()
    want = _run(model, feeds)
    assert PackedMatMulPass()(model).modified
    ops = _ops(model)
    assert ops["MatMul"] == 4 and ops["Split"] == 1
    names = {n.name: n for n in model.graph}
    for kept in ("mm_other_input", "mm_other_k", "mm_dyn"):
        assert names[kept].op_type == "MatMul"
    got = _run(model, feeds)
    assert [o.name for o in model.graph.outputs] == [f"y_{c}" for c in columns]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_different_k_on_one_input_and_single_matmul_unpacked() -> None:
    model, _ = _matmul_model({"a": ("x", 64, 32), "b": ("x3", 32, 32)})
    assert not PackedMatMulPass()(model).modified
    assert _ops(model)["MatMul"] == 2


def test_old_opset_unpacked() -> None:
    model, _ = _matmul_model(QKV)
    model.opset_imports[""] = 11  # Split's sizes are an attribute before opset 13
    assert not PackedMatMulPass()(model).modified


def test_pass_reads_no_weight() -> None:
    """Weights without data yet (a meta/fake export) pack into a lazy concatenation."""
    model, arrays = _matmul_model(QKV)
    slots = {}
    for name in "qkv":
        value = model.graph.initializers[f"layer.{name}.weight"]
        slot = weights.tensor.missing_slot(value.name, ir.DataType.FLOAT, arrays[name].shape)
        slots[name] = slot
        value.const_value = weights.WeightTensor.root(slot)
    PackedMatMulPass()(model)
    (packed,) = [v for v in model.graph.initializers.values() if (v.name or "").endswith("+v.weight")]
    tensor = packed.const_value
    assert weights.is_weight(tensor) and not weights.has_data(tensor)
    assert tuple(tensor.shape) == (64, 160)
    for name in "qkv":  # the data arrives later (apply_weights) and flows through the concat
        slots[name].source = weights.sources.TorchSource(torch.from_numpy(arrays[name]))
    np.testing.assert_array_equal(tensor.numpy(), np.concatenate([arrays[k] for k in "qkv"], axis=1))


def test_concatenated_refuses_shapes_that_differ_off_axis() -> None:
    a = ir.tensor(np.zeros((4, 3), np.float32), name="a")
    b = ir.tensor(np.zeros((5, 3), np.float32), name="b")
    with pytest.raises(InputError, match="differ off axis 1"):
        weights.concatenated([a, b], 1, "ab")
    assert tuple(weights.concatenated([a, b], 0, "ab").shape) == (9, 3)
