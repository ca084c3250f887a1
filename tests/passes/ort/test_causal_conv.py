"""The short causal convolution over ``Concat(past_conv, x)`` becomes com.microsoft.CausalConvWithState:
the same outputs and conv states as the standard graph on prompts, one-token steps from random
states and prompts continued from them (LFM2 without activation, Qwen3.5 with SiLU), the graph's
inputs and outputs unchanged; a convolution without a cached state stays."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import pytest
import torch

import onnxport
import onnxport.hf
from onnxport.passes.ort.causal_conv import CausalConvPass
from onnxport.passes.ort.kernels import has_kernel
from onnxport.testing.tiny_models import _make

from ._models import assert_outputs_kept, op_counts, past_states, standard_outputs

pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not has_kernel("CausalConvWithState"), reason="onnxruntime without the CausalConvWithState CPU kernel")

TINY = dict(vocab_size=99, hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
            intermediate_size=32, bos_token_id=1, eos_token_id=2, pad_token_id=0, max_position_embeddings=64)  # fmt: skip
FAMILIES = {
    "lfm2": ("Lfm2Config", "Lfm2ForCausalLM", dict(layer_types=["conv", "conv", "full_attention"], conv_L_cache=3)),
    "qwen3.5": ("Qwen3_5TextConfig", "Qwen3_5ForCausalLM",
                dict(layer_types=["linear_attention", "linear_attention", "full_attention"], linear_num_key_heads=2,
                     linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4)),
}  # fmt: skip


def _model(name: str) -> Any:
    config, cls, extra = FAMILIES[name]
    return _make(config, cls, **TINY, **extra, num_hidden_layers=3)(initializer_range=0.2)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_causal_conv_equals_the_standard_graph(name: str) -> None:
    model = _model(name)
    program, feeds, before = standard_outputs(model)
    conv_states = past_states(feeds, 0, 0)
    assert conv_states and all(s.ndim == 3 and np.abs(s[..., 0]).max() > 0 for s in conv_states)  # k columns, random
    signature = [(str(v.name), str(v.shape)) for v in [*program.model.graph.inputs, *program.model.graph.outputs]]
    assert op_counts(program.model)["Conv"] == 2
    assert CausalConvPass()(program.model).modified
    ir.passes.common.RemoveUnusedNodesPass()(program.model)
    ops = op_counts(program.model)
    assert ops["CausalConvWithState"] == 2 and "Conv" not in ops
    assert [(str(v.name), str(v.shape)) for v in [*program.model.graph.inputs, *program.model.graph.outputs]] == signature
    assert_outputs_kept(program, feeds, before)


def test_a_convolution_without_a_cached_state_stays() -> None:
    conv = torch.nn.Conv1d(8, 8, 3, groups=8, padding=2)
    program = onnxport.export(conv, (torch.randn(1, 8, 5),))
    assert op_counts(program.model)["Conv"] == 1
    assert not CausalConvPass()(program.model).modified
