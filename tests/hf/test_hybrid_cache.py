"""Decoders whose cache is more than keys and values: Mamba2 and its hybrids (conv + SSM state), short
convolutions (LFM2), gated delta rules (Qwen3-Next), sparse attention's indexer keys (DeepSeek-V3.2).
Each export is validated against eager (including a one-token decode step from random states) and
20 greedy tokens through the graph, starting from zero states, equal transformers' ``generate``."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf
import onnxport.inference
from _generation import assert_genai_equals_transformers, assert_greedy_equals_transformers
from onnxport.capture.chunk_scan import chunk_scan
from onnxport.testing.tiny_models import _make

transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=32, bos_token_id=1, eos_token_id=2, pad_token_id=0, max_position_embeddings=64)  # fmt: skip
MAMBA2 = dict(mamba_n_heads=8, mamba_d_head=8, mamba_n_groups=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
              mamba_chunk_size=4)  # fmt: skip
FAMILIES: dict[str, tuple[str, str, dict[str, Any], list[str]]] = {
    "bamba": ("BambaConfig", "BambaForCausalLM", dict(MAMBA2, attn_layer_indices=[1]),
              ["past_conv.0", "past_ssm.0", "past_key_values.1.key", "past_key_values.1.value"]),
    "falcon-h1": ("FalconH1Config", "FalconH1ForCausalLM", dict(MAMBA2, head_dim=8, mamba_d_ssm=64),
                  ["past_key_values.0.key", "past_key_values.0.value", "past_conv.0", "past_ssm.0",
                   "past_key_values.1.key", "past_key_values.1.value", "past_conv.1", "past_ssm.1"]),
    "nemotron-h": ("NemotronHConfig", "NemotronHForCausalLM",  # an MLP layer (no cache), dt clamped in prefill only
                   dict(num_hidden_layers=3, mamba_num_heads=8, mamba_head_dim=8, n_groups=1, ssm_state_size=8,
                        conv_kernel=4, expand=2, chunk_size=4, layers_block_type=["mamba", "mlp", "attention"],
                        time_step_min=0.5),
                   ["past_conv.0", "past_ssm.0", "past_key_values.2.key", "past_key_values.2.value"]),
    "mamba2": ("Mamba2Config", "Mamba2ForCausalLM",
               dict(num_heads=8, head_dim=8, n_groups=1, state_size=8, conv_kernel=4, expand=2, chunk_size=4),
               ["past_conv.0", "past_ssm.0", "past_conv.1", "past_ssm.1"]),
    "lfm2": ("Lfm2Config", "Lfm2ForCausalLM", dict(layer_types=["conv", "full_attention"], conv_L_cache=3),
             ["past_conv.0", "past_key_values.1.key", "past_key_values.1.value"]),
    "qwen3-next": ("Qwen3NextConfig", "Qwen3NextForCausalLM",
                   dict(layer_types=["linear_attention", "full_attention"], head_dim=16, linear_num_value_heads=4,
                        linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
                        linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
                        shared_expert_intermediate_size=16),
                   ["past_conv.0", "past_recurrent.0", "past_key_values.1.key", "past_key_values.1.value"]),
    "qwen3.5": ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM",  # interleaved multimodal rotary: decomposes
                dict(layer_types=["linear_attention", "full_attention"], head_dim=16, linear_num_value_heads=4,
                     linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
                     linear_conv_kernel_dim=4),
                ["past_conv.0", "past_recurrent.0", "past_key_values.1.key", "past_key_values.1.value"]),
    "deepseek-v3.2": ("DeepseekV32Config", "DeepseekV32ForCausalLM",
                      dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, kv_lora_rank=16,
                           q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, n_group=1,
                           topk_group=1, first_k_dense_replace=1, num_key_value_heads=4, index_head_dim=16,
                           index_n_heads=2),
                      [f"past_key_values.{i}.{k}" for i in range(2) for k in ("key", "value", "indexer_key")]),
}  # fmt: skip


# the layer_types of the families whose folder gets a genai_config.json
GENAI_LAYERS = {
    "bamba": ["linear_attention", "full_attention"], "lfm2": ["conv", "full_attention"],
    "qwen3-next": ["linear_attention", "full_attention"], "qwen3.5": ["linear_attention", "full_attention"],
}  # fmt: skip


def _model(name: str) -> Any:
    config, cls, extra, _ = FAMILIES[name]
    return _make(config, cls, **{**TINY, **extra})(initializer_range=0.2)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_cache_states_are_inputs_and_generation_equals_transformers(name: str, tmp_path: Path) -> None:
    model = _model(name)
    result = onnxport.hf.export(model, output_dir=tmp_path / "out")
    assert result.passed
    program = result.programs["model"]
    inputs = [str(v.name) for v in program.model.graph.inputs]
    assert inputs[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert inputs[3:] == FAMILIES[name][3]
    outputs = [str(v.name) for v in program.model.graph.outputs]
    assert outputs[1:] == [n.replace("past_key_values.", "present.").replace("past_", "present_") for n in inputs[3:]]
    for value in program.model.graph.inputs[3:]:  # states: fixed but the batch; caches: batch and past
        dims = [d if isinstance(d, int) else str(d) for d in value.shape]
        assert dims[0] == "batch_size"
        assert ("past_sequence_length" in dims) == str(value.name).startswith("past_key_values.")
    config = tmp_path / "out" / "genai_config.json"
    if name not in GENAI_LAYERS:  # keys and a state in one layer, a layer without cache, no attention
        assert not config.exists()
    else:  # onnxruntime-genai feeds the states of the layers that are not attention
        assert json.loads(config.read_text())["model"]["decoder"]["layer_types"] == GENAI_LAYERS[name]
    if name in ("bamba", "falcon-h1", "mamba2", "nemotron-h"):  # one Scan node per Mamba2 layer
        layers = inputs.count("past_ssm.0") + inputs.count("past_ssm.1")
        assert collections.Counter(n.op_type for n in program.model.graph)["Scan"] == layers
    assert_greedy_equals_transformers(model, program)
    if name in GENAI_LAYERS:
        og = pytest.importorskip("onnxruntime_genai")
        assert_genai_equals_transformers(og, model, tmp_path / "out")
    if name == "lfm2":  # the user runtime feeds the states too (zeros, then each present_*)
        ids = torch.randint(3, 99, (2, 6), generator=torch.Generator().manual_seed(3))
        mask = torch.ones_like(ids)
        got = onnxport.inference.load(tmp_path / "out").generate_ids(ids.numpy(), mask.numpy(), 8)
        with torch.no_grad():
            want = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
        assert got.tolist() == want.tolist()


@pytest.mark.parametrize("name", ["falcon-h1", "lfm2"])
def test_shared_kv_buffer_keeps_recurrent_states_whole(name: str, tmp_path: Path) -> None:
    """``kv_cache="shared"`` on a hybrid: the attention caches become fixed buffers, the conv / SSM
    states stay as they are. Validation feeds only the keys and values as buffers (it indexed a
    3-D conv state as one before: IndexError), and generation through the folder equals transformers."""
    config, cls, extra, _ = FAMILIES[name]
    model = _make(config, cls, **{**TINY, **extra, "head_dim": 16, "num_attention_heads": 2,
                                  "num_key_value_heads": 1})(initializer_range=0.2)  # fmt: skip
    result = onnxport.hf.export(model, output_dir=tmp_path / "out", target="onnxruntime", kv_cache="shared")
    assert result.passed
    graph = result.programs["model"].model.graph
    assert collections.Counter(n.op_type for n in graph)["GroupQueryAttention"] == (2 if name == "falcon-h1" else 1)
    checked = {c.output for c in result.checks}
    assert "present_conv.0" in checked and "present.1.key" in checked
    ids = torch.randint(3, 99, (1, 6), generator=torch.Generator().manual_seed(3))
    got = onnxport.inference.load(tmp_path / "out").generate_ids(ids.numpy(), max_new_tokens=12)
    with torch.no_grad():
        want = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False)
    assert got.tolist() == want.tolist()
    assert len(set(got[0, 6:].tolist())) > 3, "degenerate decoding proves little"


def test_mamba_v1_cache_is_left_out_with_the_reason() -> None:
    """Jamba's Mamba (v1) layers restart their scan for every input of several tokens, so no graph
    serves prompt and steps with a cache: the model is exported without it (hf/inputs.components)."""
    model = _make(
        "JambaConfig", "JambaForCausalLM", **TINY, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
        expert_layer_offset=1, num_experts=4, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4,
        use_mamba_kernels=False,
    )(initializer_range=0.2)  # fmt: skip
    with pytest.warns(UserWarning, match=r"Mamba \(v1\) layers \(JambaMambaMixer\) restart the selective scan"):
        result = onnxport.hf.export(model)
    assert result.passed
    graph = result.programs["model"].model.graph
    assert [i.name for i in graph.inputs] == ["input_ids", "attention_mask", "position_ids"]
    assert [o.name for o in graph.outputs] == ["logits"]
    # greedy decoding feeds the whole sequence at every step
    assert_greedy_equals_transformers(model, result.programs["model"])


def _scan_inputs(length: int, with_state: bool) -> tuple[tuple[torch.Tensor, ...], dict[str, Any]]:
    gen = torch.Generator().manual_seed(length)
    batch, heads, head_dim, groups, state = 2, 4, 3, 2, 5
    args = (
        torch.randn(batch, length, heads, head_dim, generator=gen),
        torch.randn(batch, length, heads, generator=gen),
        -torch.rand(heads, generator=gen) - 0.1,
        torch.randn(batch, length, groups, state, generator=gen),
        torch.randn(batch, length, groups, state, generator=gen),
    )
    kwargs = dict(
        chunk_size=4, D=torch.randn(heads, generator=gen), dt_bias=torch.randn(heads, generator=gen),
        initial_states=torch.randn(batch, heads, head_dim, state, generator=gen) if with_state else None,
        dt_softplus=True, dt_limit=(0.5, 1.5), return_final_states=True,
    )  # fmt: skip
    return args, kwargs


@pytest.mark.parametrize("length", [2, 4, 7])
@pytest.mark.parametrize("with_state", [False, True])
def test_chunk_scan_equals_transformers_chunked_form(length: int, with_state: bool) -> None:
    """The sequential recurrence gives transformers' chunked SSD (chunk 4, padding when the
    length is not a multiple; dt clamped to dt_limit) values and final state, from zeros or from
    a given state."""
    from transformers.models.bamba.modeling_bamba import mamba2_chunk_scan

    args, kwargs = _scan_inputs(length, with_state)
    want_y, want_state = mamba2_chunk_scan(*args, **kwargs)
    got_y, got_state = chunk_scan(*args, **kwargs)
    assert got_y.shape == want_y.shape == (2, length, 4, 3) and got_y.dtype == torch.float32
    assert got_state.shape == want_state.shape == (2, 4, 3, 5)
    np.testing.assert_allclose(got_y.numpy(), want_y.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state.numpy(), want_state.numpy(), rtol=1e-4, atol=1e-5)


def test_chunk_scan_one_position_equals_transformers_step() -> None:
    """One position from a state is transformers' one-token step (``mamba2_selective_state_update``,
    which does not clamp dt to dt_limit)."""
    from transformers.models.bamba.modeling_bamba import mamba2_selective_state_update

    args, kwargs = _scan_inputs(1, True)
    x, dt, a, b, c = args
    heads, head_dim = x.shape[2], x.shape[3]
    state = kwargs["initial_states"].clone()
    want_y = mamba2_selective_state_update(
        state, x[:, 0], dt[:, 0, :, None].expand(-1, -1, head_dim), a[:, None, None].expand(-1, head_dim, 5),
        b[:, 0], c[:, 0], kwargs["D"][:, None].expand(-1, head_dim), z=None,
        dt_bias=kwargs["dt_bias"][:, None].expand(-1, head_dim), dt_softplus=True,
    )  # fmt: skip
    got_y, got_state = chunk_scan(*args, **kwargs)
    assert got_y.shape == (2, 1, heads, head_dim)
    np.testing.assert_allclose(got_y[:, 0].numpy(), want_y.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state.numpy(), state.numpy(), rtol=1e-4, atol=1e-5)  # updated in place


def test_cache_of_its_own_is_named_and_the_model_exported_without_it() -> None:
    """RWKV's forward takes its recurrent state as ``state``, not a transformers Cache: the export
    goes on without the cache (a warning names why), its loop over the sequence captured as a
    ``scan`` (capture/wkv.py; before, the loop fixed the length and the export stopped with a
    DynamicShapesError). tests/hf/test_no_cache.py checks its logits at several lengths."""
    model = _make(
        "RwkvConfig", "RwkvForCausalLM", vocab_size=99, hidden_size=32, num_hidden_layers=2, attention_hidden_size=32,
        intermediate_size=64, context_length=64,
    )()  # fmt: skip
    with pytest.warns(UserWarning, match="takes neither past_key_values nor cache_params"):
        result = onnxport.hf.export(model)
    assert result.passed
    session = ort.InferenceSession(result.programs["model"].model_proto.SerializeToString())
    assert [(i.name, i.shape) for i in session.get_inputs()] == [
        ("input_ids", ["batch_size", "sequence_length"]), ("attention_mask", ["batch_size", "sequence_length"]),
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["qwen3-next", "qwen3.5"])
def test_gated_delta_rule_prompt_of_several_chunks_equals_eager(name: str) -> None:
    """A prompt of 150 tokens (three chunks of 64; the capture saw one) and a one-token step after
    it, from zero states, equal eager. transformers' loop over the chunks used to fix their number:
    the graph failed in onnxruntime on any prompt over 64 tokens. Neither export needs
    run_decompositions: Qwen3-Next's in-place cache updates are made out-of-place
    (capture/inplace.py), and Qwen3.5's rotary, which wrote its multimodal recomposition into a
    view (and so was re-traced, capture/decomp.py, which must not fix the chunk count either), is
    the plain table on text positions (capture/text_mrope.py, session 45)."""
    config, cls, extra, _ = FAMILIES[name]
    model = _make(config, cls, **{**TINY, **extra, "max_position_embeddings": 256})(initializer_range=0.2)
    program = onnxport.hf.export(model).programs["model"]
    assert not program.status.decomposed
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    ids = torch.randint(3, 99, (1, 151), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        want = model(input_ids=ids).logits[0].numpy()
    feeds: dict[str, np.ndarray] = {}
    for value in session.get_inputs()[3:]:  # zero states, empty caches
        shape = [1 if d == "batch_size" else 0 if d == "past_sequence_length" else d for d in value.shape]
        feeds[value.name] = np.zeros(shape, np.float32)
    names = [o.name for o in session.get_outputs()]
    got = []
    for start, stop in ((0, 150), (150, 151)):
        feeds.update(input_ids=ids[:, start:stop].numpy(), attention_mask=np.ones((1, stop), np.int64),
                     position_ids=np.arange(start, stop)[None])  # fmt: skip
        outputs = dict(zip(names, session.run(None, feeds)))
        got.append(outputs["logits"][0])
        feeds.update({n.replace("present", "past_key_values", 1) if n.startswith("present.") else
                      n.replace("present_", "past_"): v for n, v in outputs.items() if n != "logits"})  # fmt: skip
    got_all = np.concatenate(got)
    assert got_all.shape == want.shape == (151, 99)
    np.testing.assert_allclose(got_all, want, rtol=1e-3, atol=1e-4)


def _prefill(session: ort.InferenceSession, ids: list[list[int]], mask: list[list[int]]) -> dict[str, np.ndarray]:
    """One step of ``session`` from empty caches and zero states (positions from the mask)."""
    feeds: dict[str, np.ndarray] = {"input_ids": np.array(ids, np.int64), "attention_mask": np.array(mask, np.int64)}
    feeds["position_ids"] = np.maximum(np.cumsum(feeds["attention_mask"], 1) - 1, 0)
    for value in session.get_inputs():
        if value.name.startswith("past"):
            shape = [len(ids) if d == "batch_size" else 0 if isinstance(d, str) else d for d in value.shape]
            feeds[value.name] = np.zeros(shape, np.float32)
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds), strict=True))


@pytest.mark.parametrize("name", ["lfm2", "qwen3.5", "bamba"])
def test_right_padded_rows_keep_the_states_of_their_real_tokens(name: str, tmp_path: Path) -> None:
    """onnxruntime-genai pads a batch of prompts on the right; a state layer must not run over the
    pads (hf/padded_states.py): before, the short row's convolution state held the pads and the
    gated delta rule / Mamba2 state decayed over them (LFM2 generated other tokens for that row)."""
    model = _model(name)
    assert onnxport.hf.export(model, output_dir=tmp_path / "out").passed
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    short, long = [5, 17, 42], [8, 3, 61, 27, 90, 14]
    padded = _prefill(session, [long, short + [0, 0, 0]], [[1] * 6, [1, 1, 1, 0, 0, 0]])
    alone = {"short": _prefill(session, [short], [[1] * 3]), "long": _prefill(session, [long], [[1] * 6])}
    states = [n for n in padded if n.startswith("present_")]
    assert states
    for state in states:
        assert padded[state].shape[0] == 2 and padded[state].dtype == np.float32
        np.testing.assert_allclose(padded[state][1], alone["short"][state][0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(padded[state][0], alone["long"][state][0], rtol=1e-5, atol=1e-6)
    og = pytest.importorskip("onnxruntime_genai")
    assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)
