"""Tiny decoders whose head size (16) onnxruntime's GroupQueryAttention CPU kernel accepts, and
the standard graph's outputs a fusion pass must keep."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import onnx_ir as ir

import onnxport.hf
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.loading import from_model
from onnxport.testing.tiny_models import DECODER, _make

GQA_DECODER = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}


def llama(**overrides: Any) -> Any:
    return _make("LlamaConfig", "LlamaForCausalLM", **GQA_DECODER)(**overrides)


def standard_outputs(model: Any) -> tuple[Any, list[dict[str, Any]], list[list[np.ndarray]]]:
    """The standard export of a transformers decoder (not validated), the validation's feeds (a
    prompt from zero states, then prompts and one-token steps from random states:
    ``hf.inputs.EXPORT_SIZES`` and ``CHECK_SIZES``) and the graph's outputs on them."""
    program = onnxport.hf.export(model, validate=False).programs["model"]
    part = hf_inputs.components(from_model(model, None))[0]
    feeds = [part.make_inputs(s) for s in [hf_inputs.EXPORT_SIZES, *hf_inputs.CHECK_SIZES]]
    program.release()
    return program, feeds, [[np.asarray(t) for t in program(**f)] for f in feeds]


def assert_outputs_kept(program: Any, feeds: list[dict[str, Any]], before: list[list[np.ndarray]],
                        rtol: float = 1e-3, atol: float = 1e-4) -> None:
    """``program`` (rewritten since :func:`standard_outputs`) gives ``before`` on ``feeds``: shapes,
    float32 dtypes, values within ``rtol``/``atol`` (default: ``verify.compare``'s float32 row)."""
    program.release()
    after = [[np.asarray(t) for t in program(**f)] for f in feeds]
    for got_set, want_set in zip(after, before, strict=True):
        for got, want in zip(got_set, want_set, strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def op_counts(model: ir.Model) -> collections.Counter:
    """How many nodes of each op type the main graph has."""
    return collections.Counter(n.op_type for n in model.graph)


def past_states(feeds: list[dict[str, Any]], layer: int, part: int) -> list[np.ndarray]:
    """State ``part`` of cache layer ``layer`` (LFM2 / Qwen3.5: 0 the convolution, 1 the recurrence)
    in each of ``feeds`` that continues a past (``attention_mask`` longer than ``input_ids``)."""
    return [np.asarray(f["past_key_values"][layer][part]) for f in feeds if f["attention_mask"].shape[1] > f["input_ids"].shape[1]]
