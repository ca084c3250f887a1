"""Mixture-of-experts layers on the onnxruntime target: ``com.microsoft.MoE`` fed the router's
result equals eager for every routing (Mixtral renormalized top-k, OLMoE/Qwen3-MoE without
renormalization, Qwen2-MoE with a shared expert), the SwiGLU interleave is a weight transform, and
``QMoE`` computes exactly the MoE over the block-dequantized weights."""

from __future__ import annotations

import collections
import importlib
import pathlib

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

import onnxport.hf
from onnxport.hf import inputs as hf_inputs
from onnxport.hf import moe
from onnxport.hf.inputs import CHECK_SIZES
from onnxport.hf.loading import from_model
from onnxport.ops.nn.moe import clamped_swiglu_experts, moe_experts
from onnxport.passes.ort import QuantizeOptions, blockwise
from onnxport.passes.ort.moe import QMoEPass
from onnxport.testing.tiny_models import DECODER, _make

transformers = pytest.importorskip("transformers")
moe_integration = importlib.import_module("transformers.integrations.moe")

BASE = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
FAMILIES = {
    "mixtral": _make("MixtralConfig", "MixtralForCausalLM", **BASE, num_local_experts=4, num_experts_per_tok=2),
    "olmoe": _make("OlmoeConfig", "OlmoeForCausalLM", **BASE, num_experts=4, num_experts_per_tok=2),
    "qwen2-moe": _make(
        "Qwen2MoeConfig", "Qwen2MoeForCausalLM", **BASE, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, shared_expert_intermediate_size=32,
    ),  # fmt: skip
    # input-major experts (is_transposed: gate_up_proj [E, H, 2I]) with a shared expert
    "aria": _make(
        "AriaTextConfig", "AriaTextForCausalLM", **BASE, moe_num_experts=4, moe_topk=2, moe_num_shared_experts=1,
    ),  # fmt: skip
    # act_fn = F.silu (a function, not a module); short-convolution layers between attention ones
    "lfm2-moe": _make(
        "Lfm2MoeConfig", "Lfm2MoeForCausalLM", **BASE, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, num_dense_layers=0, layer_types=["full_attention", "full_attention"],
    ),  # fmt: skip
}


def _ops(program) -> collections.Counter:
    return collections.Counter(n.op_type for n in program.model.graph)


def test_moe_experts_op_equals_transformers_experts() -> None:
    model = FAMILIES["mixtral"]()
    experts = model.model.layers[0].mlp.experts
    assert moe.qualifies(experts)
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(7, 64, generator=g)
    index = torch.stack([torch.randperm(4, generator=g)[:2] for _ in range(7)])
    weights = torch.rand(7, 2, generator=g)
    with torch.no_grad():
        want = moe_integration.grouped_mm_experts_forward(experts, hidden, index, weights)
        got = moe_experts(hidden, index, weights, experts.gate_up_proj, experts.down_proj)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_experts_that_differ_are_not_fused() -> None:
    experts = FAMILIES["mixtral"]().model.layers[0].mlp.experts
    experts.has_bias = True  # e.g. gpt-oss: biases, clamped SwiGLU
    assert not moe.qualifies(experts)
    experts.has_bias = False
    experts.act_fn = torch.nn.GELU()
    assert not moe.qualifies(experts)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_fused_moe_equals_eager(name: str) -> None:
    model = FAMILIES[name]()
    layers = model.config.num_hidden_layers
    result = onnxport.hf.export(model, target="onnxruntime")  # validated against eager (left padding, past)
    assert result.passed and len(result.checks) == len(CHECK_SIZES) * (1 + 2 * layers)
    ops = _ops(result.programs["model"])
    assert ops["MoE"] == layers and ops["Loop"] == 0 and ops["GroupQueryAttention"] == layers
    graph = result.programs["model"].model.graph
    names = set(graph.initializers)
    # the SwiGLU interleave (Reshape, Transpose, Reshape; after a Transpose for input-major
    # experts) is a weight written so, the original gate_up_proj is not kept
    layout = ".T.view.T.view" if name == "aria" else ".view.T.view"
    prefix = "model.model.layers.{}.mlp.experts.gate_up_proj" if name != "lfm2-moe" else "model.model.layers.{}.feed_forward.experts.gate_up_proj"
    assert all(prefix.format(i) + layout in names for i in range(layers))
    assert not any(
        n.inputs[0].is_initializer() and "experts" in n.inputs[0].name for n in graph if n.op_type in ("Reshape", "Transpose")
    )
    assert not any(n.endswith("experts.gate_up_proj") for n in names)
    assert moe.fused_count(model) == layers
    assert model.config._experts_implementation != moe.EXPERTS_IMPLEMENTATION  # restored after capture


def test_standard_target_keeps_the_standard_graph() -> None:
    program = onnxport.hf.export(FAMILIES["mixtral"](), validate=False).programs["model"]
    ops = _ops(program)
    # transformers' grouped_mm experts: a Loop per grouped matmul (gate_up, down), 2 layers
    assert ops["MoE"] == 0 and ops["Loop"] == 4 and all(n.domain in ("", "ai.onnx") for n in program.model.graph)


def _moe_model(op: str, inits: dict[str, np.ndarray], inputs: list[str], **attrs) -> ir.Model:
    attrs = {"activation_alpha": 1.0, "activation_beta": 0.0, **attrs}
    node = oh.make_node(
        op, ["x", "router", *inputs], ["y"], domain="com.microsoft", k=2, activation_type="swiglu",
        swiglu_fusion=1, normalize_routing_weights=1, **attrs,
    )  # fmt: skip
    graph = oh.make_graph(
        [node], "moe",
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64]),
         oh.make_tensor_value_info("router", TensorProto.FLOAT, [None, 4])],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, [None, 64])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    proto = oh.make_model(graph, ir_version=10, opset_imports=[oh.make_opsetid("", 21), oh.make_opsetid("com.microsoft", 1)])
    return ir.serde.deserialize_model(proto)


def _run(model: ir.Model, feeds: dict[str, np.ndarray]) -> np.ndarray:
    proto = ir.serde.serialize_model(model)
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("symmetric", [True, False])
def test_qmoe_equals_moe_over_dequantized_weights(symmetric: bool) -> None:
    rng = np.random.default_rng(0)
    fc1 = (0.2 * rng.standard_normal((4, 64, 64))).astype(np.float32)  # E, 2I (interleaved), H
    fc2 = (0.2 * rng.standard_normal((4, 64, 32))).astype(np.float32)  # E, H, I
    options = QuantizeOptions(bits=4, block_size=32, symmetric=symmetric, accuracy_level=0)
    report: dict[str, dict[str, float]] = {}
    quantized = _moe_model("MoE", {"fc1": fc1, "fc2": fc2}, ["fc1", "", "fc2"])
    assert QMoEPass(options, report)(quantized).modified
    assert [n.op_type for n in quantized.graph] == ["QMoE"]

    def dequantized(w: np.ndarray) -> np.ndarray:
        out = []
        for expert in w:
            q = blockwise.quantize_numpy(np.ascontiguousarray(expert.T), 4, 32, symmetric)
            out.append(blockwise.dequantize(q, expert.shape[1], 4, 32).T)
        return np.stack(out).astype(np.float32)

    reference = _moe_model("MoE", {"fc1": dequantized(fc1), "fc2": dequantized(fc2)}, ["fc1", "", "fc2"])
    feeds = {"x": rng.standard_normal((9, 64)).astype(np.float32), "router": rng.standard_normal((9, 4)).astype(np.float32)}
    got, want = _run(quantized, feeds), _run(reference, feeds)
    assert got.shape == (9, 64) and got.dtype == np.float32 and np.abs(want).max() > 0.5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)
    assert set(report) == {"fc1", "fc2"} and all(0 < r["rel_l2"] < 0.2 for r in report.values())


def test_kernel_clamped_swiglu_is_gpt_oss_experts() -> None:
    """``MoE(activation_alpha=1.702, activation_beta=1, swiglu_limit=7)`` with both biases is gpt-oss's
    experts (``GptOssExperts._apply_gate``), through :func:`clamped_swiglu_experts` and the kernel;
    ``QMoE`` keeps the biases and the clamp: it equals the MoE over the dequantized weights."""
    rng = np.random.default_rng(1)
    tokens, experts, hidden, inter = 9, 4, 64, 32
    gate_up = (0.3 * rng.standard_normal((experts, hidden, 2 * inter))).astype(np.float32)
    gate_up_bias = rng.standard_normal((experts, 2 * inter)).astype(np.float32)
    down = (0.3 * rng.standard_normal((experts, inter, hidden))).astype(np.float32)
    down_bias = rng.standard_normal((experts, hidden)).astype(np.float32)
    x = rng.standard_normal((tokens, hidden)).astype(np.float32)
    index = np.stack([rng.permutation(experts)[:2] for _ in range(tokens)])
    weights = rng.dirichlet([1, 1], tokens).astype(np.float32)
    with torch.no_grad():
        want = clamped_swiglu_experts(
            *(torch.from_numpy(a) for a in (x, index, weights, gate_up, gate_up_bias, down, down_bias)), 1.702, 7.0
        ).numpy()
    gate_up_out = np.einsum("th,ehn->ten", x, gate_up) + gate_up_bias  # every expert, to see the clamp bite
    assert gate_up_out[..., ::2].max() > 7 and np.abs(gate_up_out[..., 1::2]).max() > 7
    router = np.full((tokens, experts), -np.inf, np.float32)
    np.put_along_axis(router, index, np.log(weights), 1)
    inits = {"fc1": gate_up.transpose(0, 2, 1).copy(), "b1": gate_up_bias, "fc2": down.transpose(0, 2, 1).copy(), "b2": down_bias}
    attrs = {"activation_alpha": 1.702, "activation_beta": 1.0, "swiglu_limit": 7.0}
    model = _moe_model("MoE", inits, ["fc1", "b1", "fc2", "b2"], **attrs)
    got = _run(model, {"x": x, "router": router})
    assert got.shape == (tokens, hidden) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    options = QuantizeOptions(bits=4, block_size=32, accuracy_level=0)
    assert QMoEPass(options)(model).modified
    [node] = list(model.graph)
    assert node.op_type == "QMoE" and node.inputs[4].name == "b1" and node.inputs[7].name == "b2"
    assert node.attributes["swiglu_limit"].as_float() == 7.0
    dequantized = {}
    for name in ("fc1", "fc2"):
        blocks = [blockwise.quantize_numpy(np.ascontiguousarray(e.T), 4, 32, True) for e in inits[name]]
        dequantized[name] = np.stack([blockwise.dequantize(q, e.shape[1], 4, 32).T for q, e in zip(blocks, inits[name])])
    reference = _moe_model("MoE", {**inits, **dequantized}, ["fc1", "b1", "fc2", "b2"], **attrs)
    np.testing.assert_allclose(
        _run(model, {"x": x, "router": router}), _run(reference, {"x": x, "router": router}), rtol=1e-5, atol=1e-4
    )


def test_gpt_oss_experts_fuse_and_equal_eager() -> None:
    model = _make(
        "GptOssConfig", "GptOssForCausalLM", **BASE, num_local_experts=4, num_experts_per_tok=2, head_dim=16,
        sliding_window=4, initializer_range=0.2,
    )()  # fmt: skip
    experts = model.model.layers[0].mlp.experts
    assert moe.clamped_qualifies(experts) and not moe.qualifies(experts)
    result = onnxport.hf.export(model, target="onnxruntime")  # validated against eager
    assert result.passed
    ops = _ops(result.programs["model"])
    assert ops["MoE"] == 2 and ops["Loop"] == 0 and ops["GroupQueryAttention"] == 2
    # the router's softmax of its top-k logits is the kernel's: it reads the logits (no TopK, no scatter)
    assert ops["TopK"] == ops["ScatterElements"] == ops["Softmax"] == 0
    for node in result.programs["model"].model.graph:
        if node.op_type == "MoE":
            assert node.inputs[1].producer().op_type in ("Gemm", "MatMul", "Add")
            assert node.attributes["swiglu_limit"].as_float() == 7.0
            assert node.attributes["activation_alpha"].as_float() == pytest.approx(1.702)
    quantized = onnxport.hf.export(model, target="onnxruntime", quantize="int4", validate=False)
    assert _ops(quantized.programs["model"])["QMoE"] == 2


def test_int4_moe_export_runs_close_to_float(tmp_path: pathlib.Path) -> None:
    model = FAMILIES["mixtral"]()
    result = onnxport.hf.export(model, output_dir=tmp_path / "out", target="onnxruntime", quantize="int4")
    program = result.programs["model"]
    ops = _ops(program)
    assert ops["QMoE"] == 2 and ops["MoE"] == 0 and ops["MatMulNBits"] >= 5
    assert sum("experts" in name for name in result.quantization) == 4  # gate_up and down, 2 layers
    part = hf_inputs.components(from_model(model, None))[0]
    feeds = part.make_inputs(hf_inputs.CHECK_SIZES[0])
    logits = np.asarray(program(**feeds)[0])
    with torch.no_grad():
        eager = part.module(**feeds)[0].numpy()
    assert logits.shape == eager.shape and np.isfinite(logits).all()
    # The program runs the int4 graph (until session 38 a session kept from the validation ran the
    # float graph here, ~1e-6 off): its error is of the order of its weights' own int4 rounding
    # (relative L2 ~0.08 each, `result.quantization`), accumulated over two layers and the head.
    weight_errors = [e["rel_l2"] for e in result.quantization.values()]
    error = np.linalg.norm(logits - eager) / np.linalg.norm(eager)
    assert min(weight_errors) / 10 < error < 3 * max(weight_errors), (error, weight_errors)
    # without validation the program runs the same int4 graph
    unvalidated = onnxport.hf.export(model, target="onnxruntime", quantize="int4", validate=False).programs["model"]
    np.testing.assert_allclose(np.asarray(unvalidated(**feeds)[0]), logits, rtol=1e-5, atol=1e-5)



@pytest.mark.parametrize(("target", "quantize"), [("onnxruntime", None), ("onnxruntime", "int4"), (None, None)])
def test_streamed_moe_export_equals_in_memory(tmp_path: pathlib.Path, target: str | None, quantize: str | None) -> None:
    # save_pretrained writes every expert's gate/up/down weights separately; the streamed path
    # stacks and concatenates them as transformers' loader does (hf.checkpoint.Merge), when written.
    # The meta-device capture (layers grown from two) fuses the experts the same way.
    model = FAMILIES["olmoe"](num_hidden_layers=3)
    model.save_pretrained(tmp_path / "src")
    kwargs = {"target": target, "quantize": quantize}
    streamed = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "streamed", stream=True, **kwargs)
    assert streamed.streamed is not None and streamed.passed and streamed.checks
    memory = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "memory", validate=False, **kwargs)
    a, b = (r.programs["model"].model.graph for r in (streamed, memory))
    assert [n.op_type for n in a] == [n.op_type for n in b]
    fused = "QMoE" if quantize else "MoE" if target else "Loop"  # standard: a Loop per grouped matmul
    assert _ops(streamed.programs["model"])[fused] == (3 if target else 6)
    part = hf_inputs.components(from_model(model, None))[0]
    feeds = part.make_inputs(hf_inputs.CHECK_SIZES[1])
    for x, y in zip(streamed.programs["model"](**feeds), memory.programs["model"](**feeds), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
