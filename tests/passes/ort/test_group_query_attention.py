"""GroupQueryAttention fusion: the fused decoder equals the standard graph (and eager) on fresh
inputs with left padding and a past; a head size the CPU kernel refuses keeps the standard ops."""

from __future__ import annotations

import collections
import importlib

import numpy as np
import onnx_ir as ir
import pytest

import onnxport.hf
from _generation import assert_greedy_equals_transformers
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.loading import from_model
from onnxport.passes.fusions import producer
from onnxport.passes.ort import attention_match, kernels
from onnxport.testing.tiny_models import _make

from ._models import GQA_DECODER, llama

hf_export = importlib.import_module("onnxport.hf.export")
gqa_module = importlib.import_module("onnxport.passes.ort.group_query_attention")
pytest.importorskip("transformers")

# onnxruntime's GQA refuses batch > 1 with several new tokens and a past ("batch_size must be 1
# when sequence_length > 1 and past context is given"); generation never feeds that.
SIZES = [*hf_inputs.CHECK_SIZES, hf_inputs.Sizes(1, 8, 3, seed=4), hf_inputs.Sizes(2, 1, 9, seed=5)]


@pytest.fixture(scope="module")
def exported():
    model = llama()
    fused = onnxport.hf.export(model, target="onnxruntime").programs["model"]  # validated vs eager
    standard = onnxport.hf.export(model, validate=False).programs["model"]
    return model, fused, standard


def _ops(program) -> collections.Counter:
    return collections.Counter(n.op_type for n in program.model.graph)


def _repeated(value) -> bool:
    """Whether ``value`` is ``Reshape(Expand(...))``, transformers' ``repeat_kv``."""
    reshape = producer(value, "Reshape")
    return reshape is not None and producer(reshape.inputs[0], "Expand") is not None


def _compare(model, fused, standard) -> None:
    part = hf_inputs.components(from_model(model, None))[0]
    for sizes in SIZES:
        feeds = part.make_inputs(sizes)
        got, want = fused(**feeds), standard(**feeds)
        assert len(got) == len(want)
        for name, a, b in zip(part.output_names, got, want, strict=True):
            a, b = np.asarray(a), np.asarray(b)
            assert a.shape == b.shape and a.dtype == b.dtype, name
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5, err_msg=f"{name} {sizes}")


def test_fused_equals_standard_graph(exported) -> None:
    model, fused, standard = exported
    ops = _ops(fused)
    layers = GQA_DECODER["num_hidden_layers"]
    assert ops["GroupQueryAttention"] == layers and ops["Attention"] == 0
    assert _ops(standard)["Attention"] == layers
    # repeat_kv is gone from both: the standard Attention reads the KV heads (RepeatKVPass)
    for program in (fused, standard):
        attentions = [n for n in program.model.graph if n.op_type in ("Attention", "GroupQueryAttention")]
        assert not any(_repeated(v) for n in attentions for v in n.inputs[1:3])
    # rotate_half became com.microsoft.RotaryEmbedding on the packed q and k (positions from
    # position_ids, so left padding stays exact); no Transpose is left between the projections
    # and GroupQueryAttention
    assert ops["RotaryEmbedding"] == 2 * layers and ops["Neg"] == 0
    for node in fused.model.graph:
        if node.op_type == "RotaryEmbedding":
            assert node.inputs[1].name == "position_ids" and node.inputs[0].producer().op_type in ("MatMul", "Split")
        if node.op_type == "GroupQueryAttention":
            assert all(v.producer().op_type != "Transpose" for v in node.inputs[:3])
    for node in fused.model.graph:
        if node.op_type == "GroupQueryAttention":
            assert node.domain == "com.microsoft"
            assert node.attributes["num_heads"].as_int() == 4
            assert node.attributes["kv_num_heads"].as_int() == 2
            assert node.inputs[10] is not None  # the mask as attention_bias
    _compare(model, fused, standard)


def test_rows_hiding_every_key_are_zero_with_or_without_a_mul(exported, monkeypatch) -> None:
    """onnxruntime 1.31's kernel outputs 0 for a query row whose bias hides every key (left
    padding), as ONNX Attention does: the probe says so, and no Mul follows the fused attention.
    Where the probe says no, the fusion zeroes those rows with a Mul; both graphs equal the
    standard one with left padding and a past."""
    model, fused, standard = exported
    assert kernels.gqa_zeroes_hidden_rows()

    def consumers(program) -> list[str]:
        return [
            use.node.op_type
            for node in program.model.graph
            if node.op_type == "GroupQueryAttention"
            for use in node.outputs[0].uses()
        ]

    assert "Mul" not in consumers(fused)
    monkeypatch.setattr(gqa_module, "gqa_zeroes_hidden_rows", lambda: False)
    zeroed = onnxport.hf.export(model, target="onnxruntime").programs["model"]  # validated vs eager
    assert consumers(zeroed) == ["Mul"] * GQA_DECODER["num_hidden_layers"]
    _compare(model, zeroed, standard)


def test_head_size_the_kernel_refuses_keeps_attention() -> None:
    model = llama(
        hidden_size=32, num_hidden_layers=1
    )  # head size 8: onnxruntime's CPU GQA needs a multiple of 16
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    ops = _ops(result.programs["model"])
    assert ops["GroupQueryAttention"] == 0 and ops["Attention"] == 1


@pytest.mark.slow  # 20 generate() steps in eager and in onnxruntime
def test_greedy_generation_equals_transformers(exported) -> None:
    model, program, _ = exported
    assert_greedy_equals_transformers(model, program)


def _gqa_session(heads: int, kv_heads: int, sink: bool, **attributes: float):
    """One GroupQueryAttention node in a session: inputs q, k, v, pk, pv, sk (seqlens_k), tot
    (total length), bias (attention_bias) [and sink (head_sink)]; outputs o, pko, pvo."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    names = ["q", "k", "v", "pk", "pv", "sk", "tot", "bias", *(["sink"] if sink else [])]
    node = helper.make_node(
        "GroupQueryAttention", [*names[:7], "", "", "", *names[7:]], ["o", "pko", "pvo"],
        domain="com.microsoft", num_heads=heads, kv_num_heads=kv_heads, **attributes,
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, TensorProto.INT32 if n in ("sk", "tot") else TensorProto.FLOAT, None) for n in names],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("o", "pko", "pvo")],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_kernel_softcaps_before_adding_the_bias() -> None:
    """onnxruntime's GroupQueryAttention applies ``softcap`` to the scaled scores before adding
    ``attention_bias`` — transformers' order (Gemma 2's ``eager_attention_forward``), which the
    eager-form fusion (:mod:`onnxport.passes.ort.attention_match`) relies on."""
    heads, kv_heads, size, past, cap = 4, 2, 16, 6, 5.0
    session = _gqa_session(heads, kv_heads, sink=False, softcap=cap, scale=1.0)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 1, heads * size)).astype(np.float32) * 8
    k = rng.standard_normal((1, 1, kv_heads * size)).astype(np.float32) * 8
    v = rng.standard_normal((1, 1, kv_heads * size)).astype(np.float32)
    pk = rng.standard_normal((1, kv_heads, past, size)).astype(np.float32) * 8
    pv = rng.standard_normal((1, kv_heads, past, size)).astype(np.float32)
    bias = np.zeros((1, 1, 1, past + 1), np.float32)
    bias[..., :2], bias[..., 3] = np.finfo(np.float32).min, -3.0
    feeds = dict(q=q, k=k, v=v, pk=pk, pv=pv, sk=np.array([past], np.int32), tot=np.array(past + 1, np.int32), bias=bias)
    got = session.run(None, feeds)[0].reshape(1, 1, heads, size).transpose(0, 2, 1, 3)
    keys = np.repeat(np.concatenate([pk, k.reshape(1, kv_heads, 1, size)], 2), heads // kv_heads, 1)
    values = np.repeat(np.concatenate([pv, v.reshape(1, kv_heads, 1, size)], 2), heads // kv_heads, 1)
    scores = q.reshape(1, heads, 1, size) @ keys.transpose(0, 1, 3, 2)

    def attend(logits: np.ndarray) -> np.ndarray:
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return (e / e.sum(-1, keepdims=True)) @ values

    np.testing.assert_allclose(got, attend(cap * np.tanh(scores / cap) + bias), atol=1e-5)
    assert np.abs(got - attend(cap * np.tanh((scores + bias) / cap))).max() > 0.1  # the other order


def test_eager_softcap_attention_fuses_in_both_graphs() -> None:
    """Gemma 2's eager attention (logit softcapping) becomes GroupQueryAttention with ``softcap``.
    In the concatenating graph a left-padded query row (its mask hides every key) gets the mean of
    all of V, as eager's softmax gives it (the kernel would average only its causal prefix):
    equal to the standard graph with left padding and a past; validated vs eager in both."""
    model = _make("Gemma2Config", "Gemma2ForCausalLM", **GQA_DECODER, sliding_window=4, head_dim=16)()
    assert model.config._attn_implementation == "eager"
    for kv_cache in ("concat", "shared"):
        result = onnxport.hf.export(model, target="onnxruntime", kv_cache=kv_cache)
        assert result.passed
        program = result.programs["model"]
        gqa = [n for n in program.model.graph if n.op_type == "GroupQueryAttention"]
        assert len(gqa) == 2 and all(n.attributes["softcap"].as_float() == 50.0 for n in gqa)
        assert _ops(program)["Tanh"] == 1  # only the final logit softcapping is left
        # concat: each output goes through Where(row attends to something, out, mean of V)
        readers = [{u.node.op_type for u in n.outputs[0].uses()} for n in gqa]
        assert readers == [{"Where"}] * 2 if kv_cache == "concat" else all("Where" not in r for r in readers)
    standard = onnxport.hf.export(model, validate=False).programs["model"]
    _compare(model, onnxport.hf.export(model, target="onnxruntime").programs["model"], standard)


def test_kernel_head_sink_is_gpt_oss_sink_softmax() -> None:
    """``head_sink`` joins each head's softmax denominator and is dropped from the weights: gpt-oss's
    ``softmax(concat([scores + mask, sink]))[..., :-1] @ V``. A left-padded query row attending to
    nothing gives 0 in both (the sink takes all the weight), which makes the fusion exact with
    padding."""
    batch, seq, heads, kv_heads, size = 2, 5, 4, 2, 16
    session = _gqa_session(heads, kv_heads, sink=True)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((batch, seq, heads * size)).astype(np.float32)
    k = rng.standard_normal((batch, seq, kv_heads * size)).astype(np.float32)
    v = rng.standard_normal((batch, seq, kv_heads * size)).astype(np.float32)
    empty = np.zeros((batch, kv_heads, 0, size), np.float32)
    sink = (2 * rng.standard_normal(heads)).astype(np.float32)
    attended = np.tril(np.ones((seq, seq), bool))[None] & np.array([[0, 0, 1, 1, 1], [1] * 5], bool)[:, None]
    bias = np.where(attended, 0, np.finfo(np.float32).min).astype(np.float32)[:, None]
    feeds = dict(q=q, k=k, v=v, pk=empty, pv=empty, sk=np.full(batch, seq - 1, np.int32),
                 tot=np.array(seq, np.int32), bias=bias, sink=sink)  # fmt: skip
    got = session.run(None, feeds)[0]
    split = lambda x, n: x.reshape(batch, seq, n, size).transpose(0, 2, 1, 3)  # noqa: E731
    keys = np.repeat(split(k, kv_heads), heads // kv_heads, 1)
    values = np.repeat(split(v, kv_heads), heads // kv_heads, 1)
    scores = split(q, heads) @ keys.transpose(0, 1, 3, 2) / np.sqrt(size) + bias
    logits = np.concatenate([scores, np.broadcast_to(sink[None, :, None, None], (batch, heads, seq, 1))], -1)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    want = ((e / e.sum(-1, keepdims=True))[..., :-1] @ values).transpose(0, 2, 1, 3).reshape(got.shape)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.all(got[0, :2] == 0) and np.abs(got[1, :2]).min() > 0  # padded rows give exactly 0


def test_gpt_oss_sink_attention_fuses_with_head_sink_and_equals_the_standard_graph() -> None:
    """gpt-oss's eager attention with sinks (sliding and full layers) becomes GroupQueryAttention
    with the sinks as ``head_sink`` in the concatenating graph too: equal to the standard graph
    with left padding and a past."""
    model = _make(
        "GptOssConfig", "GptOssForCausalLM", **GQA_DECODER, num_local_experts=4, num_experts_per_tok=2,
        head_dim=16, sliding_window=4,
    )(initializer_range=0.2)  # fmt: skip
    assert model.config._attn_implementation == "eager"
    fused = onnxport.hf.export(model, target="onnxruntime")
    assert fused.passed
    program = fused.programs["model"]
    gqa = [n for n in program.model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == 2 and _ops(program)["Softmax"] == 0  # the routers' softmax: the MoE kernel's own
    for layer, node in enumerate(gqa):
        sink = node.inputs[11]
        assert sink is not None and sink.is_initializer() and list(sink.shape) == [4]
        want = model.model.layers[layer].self_attn.sinks.detach().numpy()
        np.testing.assert_array_equal(sink.const_value.numpy(), want)
    standard = onnxport.hf.export(model, validate=False).programs["model"]
    _compare(model, program, standard)


@pytest.mark.parametrize(
    ("config", "cls"),
    [("GPTJConfig", "GPTJForCausalLM"), ("CodeGenConfig", "CodeGenForCausalLM")],
)
def test_legacy_eager_attention_with_divided_scores_fuses(config: str, cls: str) -> None:
    """GPT-J's ``q·Kᵀ / √d + mask`` and CodeGen's ``(q·Kᵀ + mask) / √d`` (``_attn`` in
    ``modeling_gptj.py`` / ``modeling_codegen.py``) become GroupQueryAttention with ``scale =
    1/√d`` (CodeGen's mask scaled too): equal to the standard graph with left padding and a past,
    in the concatenating and the shared-buffer graphs (both validated against eager)."""
    extra = {"n_ctx": 64} if config == "CodeGenConfig" else {}
    model = _make(
        config, cls, vocab_size=GQA_DECODER["vocab_size"], n_embd=64, n_head=4, n_layer=2,
        rotary_dim=8, n_positions=64, **extra,
    )(initializer_range=0.2)  # fmt: skip
    for kv_cache in ("concat", "shared"):
        result = onnxport.hf.export(model, target="onnxruntime", kv_cache=kv_cache)
        assert result.passed
        gqa = [n for n in result.programs["model"].model.graph if n.op_type == "GroupQueryAttention"]
        assert len(gqa) == 2
        assert all(n.attributes["scale"].as_float() == pytest.approx(0.25) for n in gqa)
        assert _ops(result.programs["model"])["Softmax"] == 0
    standard = onnxport.hf.export(model, validate=False).programs["model"]
    _compare(model, onnxport.hf.export(model, target="onnxruntime").programs["model"], standard)


def _attention_over(mask_dtype: ir.DataType, fill: float | None) -> ir.Node:
    """``Attention(q, Concat(past_k, k), Concat(past_v, v), mask)`` in a graph: the mask a graph
    input, or with ``fill`` the translation's ``Where(Equal(mask, lowest), fill, mask)`` of it."""
    def value(name: str, dtype: ir.DataType, shape: list) -> ir.Value:
        return ir.Value(name=name, type=ir.TensorType(dtype), shape=ir.Shape(shape))

    f = ir.DataType.FLOAT
    q, k, v = (value(n, f, [1, 4, "S", 16]) for n in ("q", "k", "v"))
    past_k, past_v = value("past_k", f, [1, 4, "P", 16]), value("past_v", f, [1, 4, "P", 16])
    mask = value("mask", mask_dtype, [1, 1, "S", "T"])
    concat_k = ir.node("Concat", [past_k, k], {"axis": 2})
    concat_v = ir.node("Concat", [past_v, v], {"axis": 2})
    nodes = [concat_k, concat_v]
    fed = mask
    if fill is not None:
        lowest = float(np.finfo(np.float32).min)
        low = ir.Value(name="low", const_value=ir.tensor(np.array(lowest, np.float32)))
        filler = ir.Value(name="fill", const_value=ir.tensor(np.array(fill, np.float32)))
        equal = ir.node("Equal", [mask, low])
        where = ir.node("Where", [equal.outputs[0], filler, mask])
        where.outputs[0].type = ir.TensorType(f)
        nodes += [equal, where]
        fed = where.outputs[0]
    attention = ir.node("Attention", [q, concat_k.outputs[0], concat_v.outputs[0], fed])
    ir.Graph([q, k, v, past_k, past_v, mask], attention.outputs, nodes=[*nodes, attention], opset_imports={"": 23})
    return attention


def test_a_float_mask_with_its_lowest_entries_halved_gives_mean_rows() -> None:
    """The translation of a float sdpa mask that may hold ``finfo.min`` halves those entries
    (``ops/nn/attention._lowest_not_minus_inf``): ONNX Attention then gives a row hiding every key
    the mean of all of V, as torch does, not the 0 of a boolean mask, and the match says so
    (Falcon's ALiBi mask was fused with its hidden rows zeroed before session 35)."""
    lowest = float(np.finfo(np.float32).min)
    rows = {
        (dtype, fill): attention_match.match_attention(_attention_over(dtype, fill)).empty_row
        for dtype, fill in [(ir.DataType.FLOAT, lowest / 2), (ir.DataType.FLOAT, 0.0), (ir.DataType.BOOL, None)]
    }
    assert rows == {
        (ir.DataType.FLOAT, lowest / 2): attention_match.EMPTY_ROW_MEAN,
        (ir.DataType.FLOAT, 0.0): attention_match.EMPTY_ROW_ZERO,
        (ir.DataType.BOOL, None): attention_match.EMPTY_ROW_ZERO,
    }
