"""Experts modules that loop over the experts a batch hits in Python (DBRX's ``DbrxExperts``): the
loop over ``nonzero()`` cannot be captured, so they compute the same sums through transformers'
``grouped_mm`` (standard target, :func:`onnxport.capture.expert_loops.dbrx_experts`) or
``com.microsoft.MoE`` (onnxruntime target, :func:`onnxport.hf.moe.fused_looped_experts`); the
experts' viewed and joined parameters are folded into initializers
(:mod:`onnxport.passes.weight_layout`), and greedy generation equals transformers."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import torch

import onnxport.hf
from _generation import assert_genai_equals_transformers, assert_greedy_equals_transformers
from onnxport.capture.expert_loops import dbrx_experts
from onnxport.hf import moe
from onnxport.testing.tiny_models import _make

pytest.importorskip("transformers")

DBRX = _make(
    "DbrxConfig", "DbrxForCausalLM", d_model=64, n_heads=4, n_layers=2, max_seq_len=256, vocab_size=128,
    attn_config={"kv_n_heads": 2, "clip_qkv": 8.0, "rope_theta": 10000.0},
    ffn_config={"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2},
    bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=0.2,
)  # fmt: skip
LAYOUT_OPS = {"Reshape", "Transpose", "Concat"}


def test_replaced_forward_equals_the_loop() -> None:
    experts = DBRX().transformer.blocks[0].ffn.experts
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(2, 5, 64, generator=g)
    index = torch.stack([torch.randperm(4, generator=g)[:2] for _ in range(10)])
    weights = torch.rand(10, 2, generator=g)
    with torch.no_grad():
        want = experts(hidden, index, weights)
        grouped = dbrx_experts(type(experts).forward)(experts, hidden, index, weights)
        torch.testing.assert_close(grouped, want, rtol=1e-5, atol=1e-6)
        with moe.fused_looped_experts(experts) as count:
            fused = experts(hidden, index, weights)
        assert count == 1
        torch.testing.assert_close(fused, want, rtol=1e-5, atol=1e-6)
    assert "forward" not in vars(experts)  # the module's own forward is back


@pytest.mark.parametrize("target", [None, "onnxruntime"])
def test_dbrx_exports_and_generates_as_transformers(target: str | None) -> None:
    model = DBRX()
    result = onnxport.hf.export(model, target=target)  # validated against eager (left padding, past)
    assert result.passed
    program = result.programs["model"]
    graph = program.model.graph
    ops = collections.Counter(n.op_type for n in graph)
    if target is None:  # a Loop per grouped matmul (gate|up, down), 2 layers
        assert ops["Loop"] == 4 and ops["MoE"] == 0
    else:
        assert ops["MoE"] == 2 and ops["Loop"] == 0 and ops["GroupQueryAttention"] == 2
    # the experts' views, transposes and joins are weights written so, not ops run at every step
    for node in graph:
        if node.op_type in LAYOUT_OPS:
            assert not any(v is not None and v.is_initializer() and v.name.endswith(("w1", "v1", "w2")) for v in node.inputs)
    names = set(graph.initializers)
    assert not any(n.endswith(("mlp.w1", "mlp.v1", "mlp.w2")) for n in names)
    assert "forward" not in vars(model.transformer.blocks[0].ffn.experts)
    assert_greedy_equals_transformers(model, program)


def test_dbrx_runs_in_onnxruntime_genai_with_the_shared_buffer(tmp_path: Path) -> None:
    """DBRX is not a model type of onnxruntime-genai's builder; its export folder runs there as it is."""
    og = pytest.importorskip("onnxruntime_genai")
    model = DBRX()
    result = onnxport.hf.export(model, output_dir=tmp_path / "out", target="onnxruntime", kv_cache="shared")
    assert result.passed
    assert_genai_equals_transformers(og, model, tmp_path / "out")


LONGCAT = _make(
    "LongcatFlashConfig", "LongcatFlashForCausalLM", vocab_size=128, hidden_size=64, num_layers=1, num_attention_heads=4,
    num_key_value_heads=4, head_dim=8, kv_lora_rank=40, q_lora_rank=48, qk_rope_head_dim=8, qk_nope_head_dim=16,
    v_head_dim=16, ffn_hidden_size=96,
    expert_ffn_hidden_size=32, n_routed_experts=4, zero_expert_num=2, moe_topk=2, max_position_embeddings=64,
    bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=0.2,
)  # fmt: skip


def test_longcat_identity_experts_replaced_forward_equals_the_loop() -> None:
    """LongCat-Flash's experts loop adds identity ("zero-computation") experts, indices 4 and 5
    here: the replacement (grouped_mm over the routed ones plus the token times its identity
    weights) equals the loop, with pairs routed to both kinds and to identity experts only."""
    from onnxport.capture.expert_loops import longcat_experts

    experts = LONGCAT().model.layers[0].mlp.experts
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(10, 64, generator=g)
    index = torch.stack([torch.randperm(6, generator=g)[:2] for _ in range(10)])
    index[0] = torch.tensor([4, 5])  # identity experts only
    weights = torch.rand(10, 2, generator=g)
    with torch.no_grad():
        want = experts(hidden, index, weights)
        got = longcat_experts(type(experts).forward)(experts, hidden, index, weights)
    assert (index >= 4).any(dim=1).sum() > 2
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_longcat_exports_and_generates_as_transformers() -> None:
    """Before: the cache probe failed on the loop's ``nonzero`` (GuardOnDataDependentSymNode)."""
    model = LONGCAT()
    result = onnxport.hf.export(model)  # validated against eager (left padding, past)
    assert result.passed
    assert collections.Counter(n.op_type for n in result.programs["model"].model.graph)["Loop"] == 2
    assert_greedy_equals_transformers(model, result.programs["model"])
