"""The gated delta rule's chunked Scan becomes com.microsoft.LinearAttention: the same outputs and
recurrent states as the standard graph on prompts, one-token steps from random states and prompts
continued from them (Qwen3.5, and Qwen3-Next with fewer key heads than value heads); generation
through onnxruntime-genai equals transformers; another Scan (Mamba2's) stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx_ir as ir
import pytest

import onnxport.hf
from _generation import assert_genai_equals_transformers
from onnxport.passes.ort.kernels import has_kernel
from onnxport.passes.ort.linear_attention import LinearAttentionPass
from onnxport.testing.tiny_models import _make

from ._models import assert_outputs_kept, op_counts, past_states, standard_outputs

pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not has_kernel("LinearAttention"), reason="onnxruntime without the LinearAttention CPU kernel")

TINY = dict(vocab_size=99, hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
            intermediate_size=32, bos_token_id=1, eos_token_id=2, pad_token_id=0, max_position_embeddings=64,
            linear_conv_kernel_dim=4, linear_key_head_dim=8, linear_value_head_dim=8)  # fmt: skip
LINEAR = ["linear_attention", "linear_attention", "full_attention"]
FAMILIES = {
    "qwen3.5": ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM", dict(linear_num_key_heads=4, linear_num_value_heads=4)),
    "qwen3-next": ("Qwen3NextConfig", "Qwen3NextForCausalLM",  # value heads repeat the key heads
                   dict(linear_num_key_heads=2, linear_num_value_heads=4, num_experts=4, num_experts_per_tok=2,
                        moe_intermediate_size=16, shared_expert_intermediate_size=16)),
}  # fmt: skip


def _model(name: str, **changes: Any) -> Any:
    config, cls, extra = FAMILIES[name]
    fields = {**TINY, **extra, "num_hidden_layers": 3, "layer_types": LINEAR, **changes}
    return _make(config, cls, **fields)(initializer_range=0.2)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_linear_attention_equals_the_standard_graph(name: str) -> None:
    model = _model(name)
    program, feeds, before = standard_outputs(model)
    # a prompt from zero states, then one-token steps and a 5-token continuation from random states
    assert any(f["input_ids"].shape[1] == 1 for f in feeds) and any(f["input_ids"].shape[1] > 1 for f in feeds)
    states = past_states(feeds, 0, 1)
    assert states and all(s.ndim == 4 and np.abs(s).max() > 0 for s in states)  # [B, H, Dk, Dv], random
    assert op_counts(program.model)["Scan"] == 2
    assert LinearAttentionPass()(program.model).modified
    ops = op_counts(program.model)
    assert ops["LinearAttention"] == 2
    ir.passes.common.RemoveUnusedNodesPass()(program.model)
    assert "Scan" not in op_counts(program.model)
    fused = [n for n in program.model.graph if n.op_type == "LinearAttention"]
    assert all(n.attributes["q_num_heads"].value == n.attributes["kv_num_heads"].value == 4 for n in fused)
    names = [str(v.name) for v in program.model.graph.outputs]
    assert names[:4] == ["logits", "present_conv.0", "present_recurrent.0", "present_conv.1"]
    # the state is the kernel's own output, not a copy of it
    assert program.model.graph.outputs[2].producer().op_type == "LinearAttention"
    assert_outputs_kept(program, feeds, before)


def test_target_export_fuses_and_generates_as_transformers(tmp_path: Path) -> None:
    og = pytest.importorskip("onnxruntime_genai")
    model = _model("qwen3.5", head_dim=64)  # a quarter of it rotated: 8 cache columns, as the kernel wants
    result = onnxport.hf.export(model, output_dir=tmp_path / "out", target="onnxruntime", kv_cache="shared")
    assert result.passed
    ops = op_counts(result.programs["model"].model)
    assert ops["LinearAttention"] == 2 and "Scan" not in ops and ops["GroupQueryAttention"] == 1
    # the text positions' rotary (capture/text_mrope) folds into the kernel: no multimodal recomposition left
    assert "ScatterND" not in ops and "Cos" not in ops
    attention = next(n for n in result.programs["model"].model.graph if n.op_type == "GroupQueryAttention")
    assert attention.attributes["do_rotary"].value == 1
    assert_genai_equals_transformers(og, model, tmp_path / "out")
    assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)


def test_a_mamba2_scan_stays() -> None:
    model = _make("Mamba2Config", "Mamba2ForCausalLM", vocab_size=99, hidden_size=32, num_hidden_layers=1, num_heads=8,
                  head_dim=8, n_groups=1, state_size=8, conv_kernel=4, expand=2, chunk_size=4)()  # fmt: skip
    program = onnxport.hf.export(model, validate=False).programs["model"]
    assert op_counts(program.model)["Scan"] == 1
    assert not LinearAttentionPass()(program.model).modified
