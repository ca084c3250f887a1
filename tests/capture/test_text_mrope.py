"""Qwen3-VL / Qwen3.5 text rotary with the rows of one expanded position tensor: the plain rotary
table, bit for bit equal to transformers' interleaved recomposition; distinct rows keep it."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest
import torch

from onnxport.capture.text_mrope import TEXT_MROPE_CLASSES, text_positions

transformers = pytest.importorskip("transformers")


def _source(function: object) -> str:
    return re.sub(r"\s+|#.*", "", inspect.getsource(function))  # type: ignore[arg-type]


def test_the_listed_classes_share_qwen3_vl_text_rotary() -> None:
    """The patch's equivalence is argued on Qwen3-VL's forward and recomposition: every listed
    class has the same code (a transformers change shows here)."""
    reference = transformers.models.qwen3_vl.modeling_qwen3_vl.Qwen3VLTextRotaryEmbedding
    for module, name in TEXT_MROPE_CLASSES:
        cls = getattr(importlib.import_module(module), name)
        assert _source(cls.forward) == _source(reference.forward), name
        assert _source(cls.recomposition_frequencies) == _source(reference.recomposition_frequencies), name


@pytest.mark.parametrize("scaling", [1.0, 0.7])
def test_expanded_rows_give_the_plain_table_bit_for_bit(scaling: float) -> None:
    config = transformers.Qwen3_5TextConfig(hidden_size=64, num_attention_heads=2, head_dim=32,
                                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                             "mrope_section": [2, 1, 1], "mrope_interleaved": True,
                                                             "partial_rotary_factor": 0.5})  # fmt: skip
    rotary = transformers.models.qwen3_5.modeling_qwen3_5.Qwen3_5TextRotaryEmbedding(config)
    rotary.attention_scaling = scaling
    original = type(rotary).forward
    positions = torch.randint(0, 5000, (2, 7), generator=torch.Generator().manual_seed(0))
    rows = positions[None].expand(4, 2, -1)[1:]  # as Qwen3_5TextModel hands them
    assert rows.stride(0) == 0
    x = torch.zeros(2, 7, 64)
    want = original(rotary, x, rows)

    def recomposed(freq: torch.Tensor) -> torch.Tensor:
        raise AssertionError("the plain table needs no recomposition")

    rotary.recomposition_frequencies = recomposed  # type: ignore[method-assign]
    got = text_positions(original)(rotary, x, rows)
    del rotary.recomposition_frequencies
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape == (2, 7, 16) and g.dtype == torch.float32
        assert torch.equal(g, w)
    distinct = torch.stack([positions, positions + 3, positions * 2])  # multimodal rows: the original
    for g, w in zip(text_positions(original)(rotary, x, distinct), original(rotary, x, distinct), strict=True):
        assert torch.equal(g, w)
    assert not torch.equal(original(rotary, x, distinct)[0], want[0])
