"""Sliding-window decoders: the standard export validates (full-length cache, the window in the
mask), the fused graph's GroupQueryAttention carries ``local_window_size = sliding_window`` and
equals the standard graph with a past longer than the window, with and without the mask's bias;
a failing runtime check is an onnxport error, never onnxruntime's."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch

import onnxport.hf
from onnxport import runtime
from onnxport.errors import OnnxportError
from onnxport.hf import cache as hf_cache
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.loading import from_model
from onnxport.testing.tiny_models import _make

from ._models import GQA_DECODER

pytest.importorskip("transformers")

WINDOW = 4
mistral = _make("MistralConfig", "MistralForCausalLM", **GQA_DECODER, sliding_window=WINDOW)
# Past longer than the window, a prefill longer than the window, a first step.
SIZES = [hf_inputs.Sizes(1, 1, 9, seed=5), hf_inputs.Sizes(1, 8, 3, seed=4), hf_inputs.Sizes(2, 12, 0, seed=3)]


@pytest.fixture(scope="module")
def exported():
    model = mistral()
    fused = onnxport.hf.export(model, target="onnxruntime")  # validated against eager
    standard = onnxport.hf.export(model, validate=False)
    assert fused.passed
    return model, fused.programs["model"], standard.programs["model"]


def _run(model: ir.Model, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(
        ir.serde.serialize_model(model).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, runtime.feeds([i.name for i in session.get_inputs()], (), feeds))


@pytest.mark.parametrize("bias", [True, False])
def test_local_window_equals_standard_graph(exported, bias: bool) -> None:
    """Without the bias only the attribute windows the keys: it must equal the mask's window
    (inputs unpadded then, the bias also carrying the padding)."""
    model, fused, standard = exported
    gqa = [n for n in fused.model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == GQA_DECODER["num_hidden_layers"]
    assert all(n.attributes["local_window_size"].as_int() == WINDOW for n in gqa)
    graph = ir.from_proto(ir.serde.serialize_model(fused.model))
    if not bias:
        for node in graph.graph:
            if node.op_type == "GroupQueryAttention":
                node.replace_input_with(10, None)
    part = hf_inputs.components(from_model(model, None))[0]
    for sizes in SIZES:
        feeds = part.make_inputs(sizes)
        if not bias:
            feeds["attention_mask"] = torch.ones_like(feeds["attention_mask"])
            feeds["position_ids"] = hf_inputs.position_ids_from_mask(feeds["attention_mask"], sizes.sequence)
        got, want = _run(graph, feeds), _run(standard.model, feeds)
        for a, b in zip(got, want, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype == np.float32
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5, err_msg=str(sizes))
    # The cache is full length (past + new), as onnxruntime-genai's buffer: present 0 is [B, kv, T, D].
    assert want[1].shape == (2, GQA_DECODER["num_key_value_heads"], 12, 16)


def test_sliding_windows_from_config() -> None:
    assert hf_cache.sliding_windows(mistral().config) == {0: WINDOW, 1: WINDOW}
    llama = _make("LlamaConfig", "LlamaForCausalLM", **GQA_DECODER)()
    assert hf_cache.sliding_windows(llama.config) == {}
    from transformers import Gemma2Config  # heavy: only for its hybrid layer types

    gemma = Gemma2Config(num_hidden_layers=4, sliding_window=8, vocab_size=32)
    assert hf_cache.sliding_windows(gemma) == {0: 8, 2: 8}  # local, global, local, global


@pytest.mark.slow  # a whole export up to its failing runtime check (~20 s idle)
def test_truncating_cache_fails_as_onnxport_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers' own sliding cache (present truncated to the window) makes a graph whose mask
    disagrees with its past: the export must stop with onnxport's error, not onnxruntime's."""
    from transformers import DynamicCache  # heavy: the cache the fix replaces

    monkeypatch.setattr(hf_cache, "new_cache", lambda config: DynamicCache(config=config))
    with pytest.raises(OnnxportError):
        onnxport.hf.export(mistral())
