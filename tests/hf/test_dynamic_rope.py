"""Dynamic NTK rotary embeddings (``rope_type: "dynamic"``): transformers recomputes the
frequencies in Python once the positions pass ``max_position_embeddings`` (a branch on data that
made the export fail with ``GuardOnDataDependentSymNode``); onnxport computes them from the step's
positions in the graph (:mod:`onnxport.hf.rope`).

- a tiny Llama with ``max_position_embeddings`` 8 exports (in memory and streamed from a folder),
  validates, and greedy generation past the 8th position equals transformers';
- the frequencies change past 8 (the graph's logits differ from the same model's with default
  RoPE there, and equal them before);
- the model's rotary module is left as it was (its forward and ``inv_freq``);
- the onnxruntime target's shared-buffer graph keeps the rotation out of GroupQueryAttention.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest
import torch

import onnxport.hf
from _generation import assert_greedy_equals_transformers
from onnxport.hf import inputs as hf_inputs
from onnxport.testing.tiny_models import DECODER, _make

transformers = pytest.importorskip("transformers")

DYNAMIC = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0}


def _llama(rope: dict[str, Any]) -> Any:
    fields = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 8, "rope_parameters": rope, "initializer_range": 0.2}
    return _make("LlamaConfig", "LlamaForCausalLM", **fields)()


def test_dynamic_rope_generates_like_transformers_past_the_original_length() -> None:
    model = _llama(DYNAMIC)
    rotary = model.model.rotary_emb
    inv_freq, forward = rotary.inv_freq.clone(), rotary.forward
    export = onnxport.hf.export(model)
    assert export.passed
    assert torch.equal(rotary.inv_freq, inv_freq) and rotary.forward == forward and "forward" not in vars(rotary)
    assert_greedy_equals_transformers(model, export.programs["model"], new_tokens=20)  # 7 prompt tokens + 20 > 8


def test_the_frequencies_follow_the_positions() -> None:
    dynamic = _llama(DYNAMIC)
    default = _llama({"rope_type": "default", "rope_theta": 10000.0})
    default.load_state_dict(dynamic.state_dict())
    program = onnxport.hf.export(dynamic).programs["model"]
    part = hf_inputs.components(onnxport.hf.loading.from_model(dynamic, "text-generation"))[0]
    for length, same in ((6, True), (12, False)):
        ids = torch.arange(3, 3 + length).view(1, -1)
        feeds = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "position_ids": torch.arange(length).view(1, -1),
                 "past_key_values": [(torch.zeros(1, 2, 0, 16),) * 2] * len(part.output_names[1::2])}  # fmt: skip
        got = np.asarray(program(**feeds)[0])
        with torch.no_grad():
            want, other = (m(input_ids=ids).logits.numpy() for m in (dynamic, default))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        assert np.allclose(got, other, rtol=1e-4, atol=1e-5) == same


def test_streamed_folder_with_dynamic_rope_validates(tmp_path: pathlib.Path) -> None:
    model = _llama(DYNAMIC)
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out", stream=True)
    assert result.passed and result.streamed is not None
    assert_greedy_equals_transformers(model, result.programs["model"], new_tokens=12)


def test_shared_buffer_graph_keeps_the_rotation_outside_the_kernel() -> None:
    """GroupQueryAttention's fused rotation reads fixed cos/sin tables; dynamic frequencies stay
    in the graph (``do_rotary`` 0) and the shared-buffer graph validates past position 8 (the
    validation's ``past 6`` + 4 tokens)."""
    result = onnxport.hf.export(_llama(DYNAMIC), target="onnxruntime", kv_cache="shared")
    assert result.passed
    gqa = [n for n in result.programs["model"].model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == 2 and all(n.attributes["do_rotary"].as_int() == 0 for n in gqa)
    assert any(c.output == "logits" and "past 6" in c.inputs for c in result.checks)
