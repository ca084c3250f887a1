"""Multi-head latent attention (DeepSeek-V2/V3) on the onnxruntime target: absorbed into
multi-query attention over the cached latent (:mod:`onnxport.hf.mla`).

- the absorbed form in eager equals transformers' own (logits, greedy tokens), with and without
  a low-rank query (V3, V2 with its complex rotary); the class's forward is restored after;
- ``target="onnxruntime", kv_cache="shared"`` fuses every layer into GroupQueryAttention with one
  key head of ``kv_lora_rank + qk_rope_head_dim``, validates, and onnxruntime-genai generates
  transformers' tokens for a right-padded batch (before: "not fused", the value head differs
  from the key head);
- in memory too; the standard export keeps transformers' cache (key: the latent, value: the
  rotated key part).
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
import torch

import onnxport.hf
from _generation import assert_genai_equals_transformers
from onnxport.hf import mla

transformers = pytest.importorskip("transformers")

RANK, ROPE, NOPE, V_HEAD, HEADS = 40, 8, 16, 16, 4  # the latent's width RANK + ROPE: 48, a multiple of 16


def _mla(model_type: str, **overrides: Any) -> Any:
    fields = dict(
        vocab_size=128, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=HEADS, num_key_value_heads=HEADS, head_dim=ROPE, kv_lora_rank=RANK, q_lora_rank=48,
        qk_rope_head_dim=ROPE, qk_nope_head_dim=NOPE, v_head_dim=V_HEAD, n_routed_experts=4, n_shared_experts=1,
        num_experts_per_tok=2, first_k_dense_replace=1, n_group=1, topk_group=1, max_position_embeddings=64,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, initializer_range=0.2,
    )  # fmt: skip
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(model_type, **{**fields, **overrides})
    if model_type == "mistral4":  # its causal LM is not an AutoModelForCausalLM (Mistral 4 ships as a VLM)
        from transformers.models.mistral4.modeling_mistral4 import Mistral4ForCausalLM

        return Mistral4ForCausalLM(config).eval()
    return transformers.AutoModelForCausalLM.from_config(config).eval()


MISTRAL4_ROPE = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 4,
                 "llama_4_scaling_beta": 0.1, "mscale": 1.0, "mscale_all_dim": 1.0, "beta_fast": 32.0, "beta_slow": 1.0}
LONGCAT = {"num_layers": 1, "ffn_hidden_size": 96, "expert_ffn_hidden_size": 32, "zero_expert_num": 2}
ABSORBED = [("deepseek_v3", {}), ("deepseek_v2", {"q_lora_rank": None}), ("minicpm3", {"tie_word_embeddings": False}),
            ("mistral4", {"rope_parameters": MISTRAL4_ROPE}),  # Llama 4's query scale grows past position 4
            ("axk1", {}), ("longcat_flash", LONGCAT)]  # LongCat-Flash: LoRA scales, two attentions per layer


@pytest.mark.parametrize("model_type, overrides", ABSORBED)
def test_absorbed_form_equals_transformers(model_type: str, overrides: dict[str, Any]) -> None:
    model = _mla(model_type, **overrides)
    cls = next(type(m) for m in model.modules() if type(m).__name__ == mla.ABSORBABLE[model_type].class_name)
    forward = cls.__dict__["forward"]
    ids = torch.tensor([[5, 17, 42, 9, 33, 71]])
    with torch.no_grad():
        want = model(ids).logits
        tokens = model.generate(input_ids=ids, max_new_tokens=12, do_sample=False)
        with mla.absorbed_latent_attention([model_type]) as swapped:
            got = model(ids).logits
            absorbed_tokens = model.generate(input_ids=ids, max_new_tokens=12, do_sample=False)
    assert swapped and cls.__dict__["forward"] is forward
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch.equal(absorbed_tokens, tokens) and len(set(tokens[0, 6:].tolist())) > 3


def test_other_model_types_are_left_alone() -> None:
    with mla.absorbed_latent_attention(["llama", "mistral"]) as swapped:
        assert not swapped


def _gqa(program: Any) -> list[Any]:
    return [n for n in program.model.graph if n.op_type == "GroupQueryAttention"]


def test_shared_buffer_export_generates_like_transformers_in_genai(tmp_path: pathlib.Path) -> None:
    og = pytest.importorskip("onnxruntime_genai")
    model = _mla("deepseek_v3")
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out", stream=True,
                                target="onnxruntime", kv_cache="shared")  # fmt: skip
    assert result.passed
    gqa = _gqa(result.programs["model"])
    assert len(gqa) == 2
    assert {(n.attributes["num_heads"].as_int(), n.attributes["kv_num_heads"].as_int()) for n in gqa} == {(HEADS, 1)}
    decoder = json.loads((tmp_path / "out" / "genai_config.json").read_text())["model"]["decoder"]
    assert (decoder["head_size"], decoder["num_key_value_heads"]) == (RANK + ROPE, 1)
    assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)


def test_in_memory_export_fuses_and_the_standard_export_keeps_the_cache() -> None:
    model = _mla("deepseek_v2", q_lora_rank=None)
    fused = onnxport.hf.export(model, target="onnxruntime", kv_cache="shared")
    assert fused.passed and len(_gqa(fused.programs["model"])) == 2
    standard = onnxport.hf.export(model)
    assert standard.passed and not _gqa(standard.programs["model"])
    inputs = {str(v.name): v.shape for v in standard.programs["model"].model.graph.inputs}
    key, value = inputs["past_key_values.0.key"], inputs["past_key_values.0.value"]
    assert (key[1], key[3], value[1], value[3]) == (1, RANK, 1, ROPE)
    fused_inputs = {str(v.name): v.shape for v in fused.programs["model"].model.graph.inputs}
    key, value = fused_inputs["past_key_values.0.key"], fused_inputs["past_key_values.0.value"]
    assert (key[1], key[3], value[1], value[3]) == (1, RANK + ROPE, 1, RANK + ROPE)
