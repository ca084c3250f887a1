"""The onnxruntime target on decoder families that differ from Llama: greedy generation (20
tokens, batch 2, row 0 left-padded) through the fused graph equals transformers.

- mistral with a 4-token sliding window (a full-length cache, the window in the mask → GQA
  ``attention_bias`` and ``local_window_size``),
- qwen3 (per-head q/k RMSNorm before the rotary),
- smollm3 (every other layer without RoPE),
- mixtral (sparse mixture-of-experts MLP: the experts a Loop, the router's TopK in the graph),
- gpt2 (learned positions, no rotary, packed c_attn with biases, ``gelu_new``'s written-out tanh
  GELU → FastGelu, LayerNorm → SkipLayerNormalization),
- GPT-J and CodeGen (legacy eager attention dividing the scores, interleaved partial rotary left
  in the graph), MPT and Falcon with ALiBi (attention stays standard).
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest
import torch

import onnxport.hf
from _generation import assert_genai_equals_transformers, assert_greedy_equals_transformers
from onnxport.errors import HFError
from onnxport.testing.tiny_models import DECODER, _make

pytest.importorskip("transformers")

BASE = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
FAMILIES: dict[str, Any] = {
    "mistral-sliding": _make("MistralConfig", "MistralForCausalLM", **BASE, sliding_window=4),
    "qwen3": _make("Qwen3Config", "Qwen3ForCausalLM", **BASE, head_dim=16),
    "smollm3": _make(
        "SmolLM3Config",
        "SmolLM3ForCausalLM",
        **BASE,
        no_rope_layer_interval=2,
        initializer_range=0.2,
    ),
    "mixtral": _make(
        "MixtralConfig",
        "MixtralForCausalLM",
        **BASE,
        num_local_experts=4,
        num_experts_per_tok=2,
        experts_implementation="eager",
    ),
    "mixtral-grouped-mm": _make(  # transformers' default experts implementation
        "MixtralConfig", "MixtralForCausalLM", **BASE, num_local_experts=4, num_experts_per_tok=2
    ),
}


@pytest.mark.slow  # one export + validation + 20 generate() steps per family (~20 s each idle)
@pytest.mark.parametrize("name", list(FAMILIES))
def test_greedy_20_tokens_equal_transformers(name: str, tmp_path: Path) -> None:
    model = FAMILIES[name]()
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    program = result.programs["model"]
    ops = collections.Counter(n.op_type for n in program.model.graph)
    layers = BASE["num_hidden_layers"]
    assert ops["GroupQueryAttention"] == layers, ops
    packed = [
        n
        for n in program.model.graph
        if n.op_type in ("MatMul", "FusedMatMul") and "+" in n.inputs[1].name
    ]
    assert len(packed) >= layers, ops  # q/k/v packed in every layer
    windows = [
        n.attributes["local_window_size"].as_int()
        for n in program.model.graph
        if n.op_type == "GroupQueryAttention" and "local_window_size" in n.attributes
    ]
    assert windows == ([4] * layers if name == "mistral-sliding" else []), windows
    assert_greedy_equals_transformers(model, program)


@pytest.mark.slow  # one export + validation + 20 generate() steps (~20 s idle)
def test_gpt2_greedy_20_tokens_equal_transformers() -> None:
    model = _make(
        "GPT2Config",
        "GPT2LMHeadModel",
        vocab_size=DECODER["vocab_size"],
        n_embd=64,
        n_layer=2,
        n_head=4,  # head size 16, as GroupQueryAttention's CPU kernel needs
        n_positions=64,
        initializer_range=0.2,  # std 0.02 weights decode a single repeated token
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )()
    assert model.config.activation_function == "gelu_new"  # the tanh approximation
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    program = result.programs["model"]
    ops = collections.Counter(n.op_type for n in program.model.graph)
    assert ops["GroupQueryAttention"] == 2 and ops["FastGelu"] == 2, ops
    assert ops["Tanh"] == ops["Pow"] == ops["Gelu"] == 0, ops  # gelu_new's arithmetic is gone
    assert ops["SkipLayerNormalization"] >= 2, ops
    assert_greedy_equals_transformers(model, program)


def _mpt() -> Any:
    return _make(
        "MptConfig", "MptForCausalLM", vocab_size=DECODER["vocab_size"], d_model=64, n_heads=4, n_layers=2,
        max_seq_len=64, bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )(initializer_range=0.2)  # fmt: skip


def test_mpt_exports_with_its_kv_cache() -> None:
    """MPT's ALiBi slice (``max(0, 1 - query_length)`` rows) captures because the export declares
    ``sequence_length >= 1`` (``onnxport.capture.bounds``); validated against eager with a past. Its
    ALiBi attention has no GroupQueryAttention form: the onnxruntime target keeps it standard and
    refuses the shared buffer."""
    model = _mpt()
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    program = result.programs["model"]
    assert [i.name for i in program.model.graph.inputs][-1] == "past_key_values.1.value"
    assert collections.Counter(n.op_type for n in program.model.graph)["GroupQueryAttention"] == 0
    with pytest.raises(HFError, match="kv_cache='concat'"):
        onnxport.hf.export(model, target="onnxruntime", kv_cache="shared")


def test_mpt_folder_export_writes_its_genai_config(tmp_path: Path) -> None:
    """MPT's config.json spells the heads ``n_heads`` and the context ``max_seq_len``: the folder
    export (what ``onnxport export --hf`` runs) failed writing genai_config.json ("lacks
    num_attention_heads")."""
    _mpt().save_pretrained(tmp_path / "mpt")
    result = onnxport.hf.export(tmp_path / "mpt", output_dir=tmp_path / "out", stream=True)
    assert result.passed
    decoder = json.loads((tmp_path / "out" / "genai_config.json").read_text())["model"]["decoder"]
    assert (decoder["num_attention_heads"], decoder["head_size"], decoder["num_hidden_layers"]) == (4, 16, 2)
    assert json.loads((tmp_path / "out" / "genai_config.json").read_text())["model"]["context_length"] == 64


@pytest.mark.parametrize("name", ["mpt", "gptj", "codegen"])  # ~3 s each
def test_legacy_families_greedy_20_tokens_equal_transformers(name: str) -> None:
    common = dict(vocab_size=DECODER["vocab_size"], n_embd=64, n_head=4, n_layer=2, rotary_dim=8, n_positions=64,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)  # fmt: skip
    model = {
        "mpt": _mpt,
        "gptj": lambda: _make("GPTJConfig", "GPTJForCausalLM", **common)(initializer_range=0.2),
        "codegen": lambda: _make("CodeGenConfig", "CodeGenForCausalLM", **common, n_ctx=64)(initializer_range=0.2),
    }[name]()
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    program = result.programs["model"]
    fused = collections.Counter(n.op_type for n in program.model.graph)["GroupQueryAttention"]
    assert fused == (0 if name == "mpt" else 2)
    assert_greedy_equals_transformers(model, program)


def test_falcon_alibi_mask_keeps_attention_standard() -> None:
    """Falcon with ``alibi=True`` adds its ALiBi to the float mask (``masked_fill(alibi / √d,
    hidden, finfo.min)``, ``[B, heads, S, T]``) and runs sdpa. Before session 35 the attention was
    fused with the mask as GroupQueryAttention's ``attention_bias`` and its left-padded rows
    zeroed, so validation failed (logits 0.2 apart). A mask that differs between heads now keeps
    the attention standard (the kernel with a per-head bias was slower than the standard ops), the
    other fusions still apply, and the shared buffer is refused by name."""
    model = _make(
        "FalconConfig", "FalconForCausalLM", vocab_size=DECODER["vocab_size"], hidden_size=64, num_attention_heads=4,
        num_hidden_layers=2, alibi=True, new_decoder_architecture=False, multi_query=False,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )(initializer_range=0.2)  # fmt: skip
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    program = result.programs["model"]
    ops = collections.Counter(n.op_type for n in program.model.graph)
    assert ops["GroupQueryAttention"] == 0 and ops["Attention"] == 2 and ops["SkipLayerNormalization"] > 0, ops
    assert_greedy_equals_transformers(model, program)
    with pytest.raises(HFError, match="per-head bias, such as ALiBi"):
        onnxport.hf.export(model, target="onnxruntime", kv_cache="shared", validate=False)


def test_doge_mask_computed_from_the_cache_keeps_attention_standard() -> None:
    """Doge's dynamic mask is computed from the value cache (``dt_proj`` of the concatenated
    values) and added to the attention scores with ``torch.finfo.min`` for hidden keys. The
    rewrite to GroupQueryAttention would feed the kernel's own ``present`` into its mask (a cycle
    onnxruntime refuses): the attention stays ONNX ``Attention``, and left-padded rows (every key
    at the lowest float) equal eager's."""
    model = _make("DogeConfig", "DogeForCausalLM", **BASE)(initializer_range=0.2)
    for target in (None, "onnxruntime"):
        result = onnxport.hf.export(model, target=target)
        assert result.passed
        ops = collections.Counter(n.op_type for n in result.programs["model"].model.graph)
        assert ops["GroupQueryAttention"] == 0 and ops["Attention"] == BASE["num_hidden_layers"], ops


def test_config_window_without_a_window_mask_is_not_a_local_window() -> None:
    """Moshi's config has ``sliding_window`` (so transformers types its layers
    "sliding_attention") but its model builds a plain causal mask: GroupQueryAttention gets no
    ``local_window_size`` and the fused graph equals eager with a past longer than the window."""
    model = _make("MoshiConfig", "MoshiForCausalLM", **BASE, sliding_window=4)(initializer_range=0.2)
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    gqa = [n for n in result.programs["model"].model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == BASE["num_hidden_layers"] and not any("local_window_size" in n.attributes for n in gqa)


def _bigcode() -> Any:
    return _make(
        "GPTBigCodeConfig", "GPTBigCodeForCausalLM", vocab_size=DECODER["vocab_size"], n_embd=64, n_layer=2, n_head=4,
        n_positions=64, multi_query=True, bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )(initializer_range=0.2)  # fmt: skip


def test_multi_query_gpt_bigcode_cache_is_one_key_value_per_layer() -> None:
    """A multi-query GPT-BigCode (StarCoder) caches ``past_key_values.{i}.key_value``
    (``(batch_size, past_sequence_length, 2 * head_dim)``), the layout Optimum exports and
    transformers.js feeds; validated against eager, greedy generation equals transformers."""
    model = _bigcode()
    result = onnxport.hf.export(model)
    assert result.passed
    program = result.programs["model"]
    inputs = {str(v.name): [str(d) for d in v.shape] for v in program.model.graph.inputs}
    assert list(inputs)[3:] == ["past_key_values.0.key_value", "past_key_values.1.key_value"]
    assert inputs["past_key_values.0.key_value"] == ["batch_size", "past_sequence_length", "32"]
    outputs = [str(v.name) for v in program.model.graph.outputs]
    assert outputs == ["logits", "present.0.key_value", "present.1.key_value"]
    assert_greedy_equals_transformers(model, program)


@pytest.mark.parametrize("kv_cache", ["concat", "shared"])
def test_gpt_bigcode_onnxruntime_target_keeps_keys_and_values_apart(kv_cache: str, tmp_path: Path) -> None:
    """The onnxruntime target caches the one key head and the one value head apart
    (``past_key_values.{i}.key`` / ``.value``, ``(batch_size, 1, past_sequence_length, head_dim)``:
    onnxruntime-genai has no ``key_value`` input and GroupQueryAttention's in-place buffers are a
    key and a value), fuses every layer and writes a genai_config; the shared-buffer folder
    generates transformers' tokens in onnxruntime-genai (before: "not fused", no genai_config)."""
    model = _bigcode()
    result = onnxport.hf.export(model, output_dir=tmp_path / "out", target="onnxruntime", kv_cache=kv_cache)
    assert result.passed
    program = result.programs["model"]
    inputs = {str(v.name): [str(d) for d in v.shape] for v in program.model.graph.inputs}
    assert list(inputs)[3:] == [f"past_key_values.{i}.{kind}" for i in range(2) for kind in ("key", "value")]
    if kv_cache == "concat":
        assert inputs["past_key_values.0.key"] == ["batch_size", "1", "past_sequence_length", "16"]
        assert_greedy_equals_transformers(model, program)
    gqa = collections.Counter(n.op_type for n in program.model.graph)["GroupQueryAttention"]
    assert gqa == 2 and (tmp_path / "out" / "genai_config.json").is_file()
    if kv_cache == "shared":
        og = pytest.importorskip("onnxruntime_genai")
        assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)


def _gemma4(**extra: Any) -> Any:
    return _make(
        "Gemma4TextConfig", "Gemma4ForCausalLM", vocab_size=DECODER["vocab_size"], hidden_size=64, intermediate_size=64,
        num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        vocab_size_per_layer_input=DECODER["vocab_size"], hidden_size_per_layer_input=8, sliding_window=4,
        max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0, **extra,
    )  # fmt: skip


def test_gemma4_kv_shared_layers_keep_standard_attention(tmp_path: Path) -> None:
    """Gemma 4 with ``num_kv_shared_layers=2``: the last two layers attend over the cache of the
    last earlier layer of their type, so one Concat feeds two attentions. GroupQueryAttention
    appends its own new keys to its past, so the shared layers' attentions stay standard (fused,
    they gave logits 0.33 off eager) and read the present of the owner's GroupQueryAttention; every
    layer with a cache of its own is fused, the owners too."""
    types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
             "full_attention"]  # fmt: skip
    model = _gemma4(layer_types=types, num_kv_shared_layers=2, per_layer_config={"2": {"head_dim": 32}, "5": {"head_dim": 32}})()
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    ops = collections.Counter(n.op_type for n in result.programs["model"].model.graph)
    # layers 0-3 (2 and 3 own the caches layers 5 and 4 reuse); the shared layers 4 and 5 standard
    assert ops["GroupQueryAttention"] == 4 and ops["Attention"] == 2, ops
    assert_greedy_equals_transformers(model, result.programs["model"])


def test_gemma4_int4_folder_validates_a_slice_of_the_float_model(tmp_path: Path) -> None:
    """Gemma 4's per-layer embedding tables are sized by the layer count: the 2-layer slice the
    quantized export validates takes their first 2 layers' columns (rows of the projection),
    ``hf/checkpoint.sliced``; the int4 model itself then runs whole."""
    _gemma4(layer_types=["sliding_attention"] * 5 + ["full_attention"], per_layer_config={"5": {"head_dim": 32}})().save_pretrained(tmp_path / "ckpt")
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out", target="onnxruntime", quantize="int4", stream=True)
    assert result.passed
    assert result.streamed.validation == "slice (2 of 6 layers), before quantization; the int4 model ran"
    assert any(c.component == "model (slice, before quantization)" for c in result.checks)
    assert any("int4, runs" in c.component for c in result.checks)


def test_values_wider_than_keys_keep_standard_attention() -> None:
    """MiMo-V2-Flash: values 32 wide, queries and keys 16; GroupQueryAttention has one head size,
    so its attention stays standard and the export validates (before: fused, and onnxruntime
    refused the output Reshape in validation)."""
    model = _make(
        "MiMoV2FlashConfig", "MiMoV2FlashForCausalLM", **BASE, head_dim=16, v_head_dim=32, n_routed_experts=4,
        num_experts_per_tok=2, n_group=1, topk_group=1, moe_intermediate_size=64, sliding_window=8,
        layer_types=["full_attention", "sliding_attention"],
    )(initializer_range=0.2)  # fmt: skip
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    program = result.programs["model"]
    ops = collections.Counter(n.op_type for n in program.model.graph)
    assert ops["GroupQueryAttention"] == 0, ops
    assert_greedy_equals_transformers(model, program)


def test_sinks_as_a_scale_become_head_sink() -> None:
    """GraniteSWA scales the attention output by ``sigmoid(logsumexp(scores) - sinks)`` (a sink
    logit in the softmax's denominator): GroupQueryAttention's ``head_sink``, and the graph no
    longer computes the scores a second time for the logsumexp (it did before, session 33)."""
    model = _make(
        "GraniteSWAConfig", "GraniteSWAForCausalLM", **BASE, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"],
    )(initializer_range=0.2)  # fmt: skip
    with torch.no_grad():  # sinks of both signs, as trained (they are initialized to zero)
        for layer in model.model.layers:
            layer.self_attn.sinks.copy_(torch.randn(layer.self_attn.sinks.shape) * 2)
    result = onnxport.hf.export(model, target="onnxruntime")
    assert result.passed
    program = result.programs["model"]
    ops = collections.Counter(n.op_type for n in program.model.graph)
    attention = [n for n in program.model.graph if n.op_type == "GroupQueryAttention"]
    assert len(attention) == 2 and all(len(n.inputs) == 12 and n.inputs[11] is not None for n in attention), ops
    assert ops["Exp"] == ops["ReduceSum"] == ops["ReduceMax"] == 0, ops  # the logsumexp is gone
    assert_greedy_equals_transformers(model, program)


def _fuses_and_generates(model: Any, kv_cache: str, tmp_path: Path) -> None:
    """Both attention layers of ``model`` fuse into GroupQueryAttention and the export validates;
    greedy generation through the concatenating graph equals transformers, onnxruntime-genai's
    through the shared-buffer folder too (a right-padded batch)."""
    result = onnxport.hf.export(model, output_dir=tmp_path / "out", target="onnxruntime", kv_cache=kv_cache)
    assert result.passed
    program = result.programs["model"]
    assert collections.Counter(n.op_type for n in program.model.graph)["GroupQueryAttention"] == 2
    if kv_cache == "concat":
        assert_greedy_equals_transformers(model, program)
    else:
        og = pytest.importorskip("onnxruntime_genai")
        assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)


@pytest.mark.parametrize("kv_cache", ["concat", "shared"])
def test_xglm_batched_attention_fuses(kv_cache: str, tmp_path: Path) -> None:
    """XGLM's attention over ``[B * heads, S, T]`` batches (``torch.bmm``, a clamp at the float32
    lowest, the query scaled before) fuses into GroupQueryAttention (before: standard ops, and the
    shared-buffer export failed "not fused"); validated against eager (left-padded rows included),
    greedy generation equals transformers, and onnxruntime-genai generates transformers' tokens
    from the shared-buffer folder."""
    model = _make("XGLMConfig", "XGLMForCausalLM", vocab_size=DECODER["vocab_size"], d_model=64, ffn_dim=96,
                  num_layers=2, attention_heads=4, max_position_embeddings=64, bos_token_id=1, eos_token_id=2,
                  pad_token_id=0, decoder_start_token_id=2, tie_word_embeddings=False)(init_std=0.2)  # fmt: skip
    _fuses_and_generates(model, kv_cache, tmp_path)


@pytest.mark.parametrize("kv_cache", ["concat", "shared"])
def test_gpt_neox_japanese_baddbmm_attention_fuses(kv_cache: str, tmp_path: Path) -> None:
    """GPT-NeoX-Japanese's scores, ``torch.baddbmm`` of ``[B * heads, S, head_size]`` batches onto
    zeros with ``alpha = 1 / √head_size`` (``_attn`` in ``modeling_gpt_neox_japanese.py``), fuse
    into GroupQueryAttention (before: standard ops, and the shared-buffer export failed "not
    fused"); validated against eager (left-padded rows included), greedy generation equals
    transformers, and onnxruntime-genai generates transformers' tokens from the shared folder."""
    model = _make("GPTNeoXJapaneseConfig", "GPTNeoXJapaneseForCausalLM", vocab_size=DECODER["vocab_size"], hidden_size=64,
                  num_hidden_layers=2, num_attention_heads=4, intermediate_multiple_size=2, max_position_embeddings=64,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)(initializer_range=0.2)  # fmt: skip
    _fuses_and_generates(model, kv_cache, tmp_path)
