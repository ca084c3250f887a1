"""GroupQueryAttention fusion: the fused decoder equals the standard graph (and eager) on fresh
inputs with left padding and a past; a head size the CPU kernel refuses keeps the standard ops."""

from __future__ import annotations

import collections
import importlib

import numpy as np
import pytest

import onnxport.hf
from _generation import assert_greedy_equals_transformers
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.loading import from_model

from ._models import GQA_DECODER, llama

hf_export = importlib.import_module("onnxport.hf.export")
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
    assert ops["Expand"] < _ops(standard)["Expand"]  # repeat_kv is gone
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
