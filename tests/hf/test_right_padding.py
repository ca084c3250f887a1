"""A batch padded on the right (onnxruntime-genai's ``PadInputs``) through the standard decoder graph.

After a right-padded prompt genai appends each new token after the pads, so the shorter row's
cache holds pad slots between its prompt and its new tokens. A sliding window counted in cache
slots (transformers' ``sliding_window_overlay``) would cover fewer real tokens than the model
attends to on that prompt alone; onnxport counts it in real tokens
(:func:`onnxport.hf.right_padding.windows_over_real_tokens`):

- a decode step whose mask has a hole of pads longer than the window gives the logits of the
  same row without the hole, and an unpadded step gives transformers' logits unchanged;
- onnxruntime-genai generates transformers' tokens, prompt by prompt, from the standard folder of
  a sliding-window Mistral for prompts of 8 and 3 tokens.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest
import torch

import onnxport.hf
from _generation import assert_genai_equals_transformers
from onnxport.hf.cache import EmbedsLMWithCache
from onnxport.testing import tiny_models
from onnxport.testing.tiny_models import DECODER, _make

transformers = pytest.importorskip("transformers")

WINDOW = 4


def _mistral() -> Any:
    fields = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    return _make("MistralConfig", "MistralForCausalLM", **fields, sliding_window=WINDOW, initializer_range=0.2)()


@pytest.fixture(scope="module")
def mistral() -> tuple[Any, Any]:
    model = _mistral()
    export = onnxport.hf.export(model)
    assert export.passed
    return model, export.programs["model"]


def _feeds(ids: list[int], mask: list[int], positions: list[int], past: list[Any]) -> dict[str, Any]:
    """The standard graph's feeds for one row, as ``Component.make_inputs`` builds them."""
    return {"input_ids": torch.tensor([ids]), "attention_mask": torch.tensor([mask]),
            "position_ids": torch.tensor([positions]), "past_key_values": list(zip(past[::2], past[1::2], strict=True))}  # fmt: skip


def test_a_hole_of_pads_does_not_narrow_the_window(mistral) -> None:
    model, program = mistral
    prompt, pads, step = [5, 17, 42], 6, [9]
    empty = [torch.zeros(1, 2, 0, 16)] * (2 * model.config.num_hidden_layers)
    # The prompt with its pads, as genai runs it: the graph's cache holds 3 real slots, then 6 pads.
    first = program(**_feeds(prompt + [0] * pads, [1] * 3 + [0] * pads, list(range(3 + pads)), empty))
    past = [torch.from_numpy(np.asarray(t)) for t in first[1:]]
    assert past[0].shape == (1, 2, 3 + pads, 16)
    got = program(**_feeds(step, [1] * 3 + [0] * pads + [1], [3], past))[0]
    with torch.no_grad():
        alone = model(input_ids=torch.tensor([prompt]), use_cache=True)
        expected = model(input_ids=torch.tensor([step]), past_key_values=alone.past_key_values, use_cache=True).logits
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-4, atol=1e-5)


def test_unpadded_steps_keep_transformers_window(mistral) -> None:
    model, program = mistral
    ids = [5, 17, 42, 9, 33, 71, 12]  # longer than the window
    with torch.no_grad():
        expected = model(input_ids=torch.tensor([ids])).logits
    empty = [torch.zeros(1, 2, 0, 16)] * (2 * model.config.num_hidden_layers)
    got = program(**_feeds(ids, [1] * len(ids), list(range(len(ids))), empty))[0]
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-4, atol=1e-5)


def test_genai_generates_like_transformers_from_a_sliding_window_standard_folder(tmp_path: pathlib.Path) -> None:
    og = pytest.importorskip("onnxruntime_genai")
    model = _mistral()
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert result.passed
    assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)


def test_gemma3_vision_language_decoder_counts_its_window_in_real_tokens() -> None:
    """Gemma 3's vision-language decoder builds its sliding mask with the ``sliding_window_overlay``
    name imported into ``modeling_gemma3`` (``and_mask_function`` of ``create_causal_mask``): a
    decode step after a hole of 9 pads (window 8) gives the row's logits without the hole (before:
    the window in cache slots left the prompt out)."""
    model = tiny_models.build("gemma3-vlm")
    step = EmbedsLMWithCache(model).eval()
    embed = model.get_input_embeddings()
    layers = model.config.text_config.num_hidden_layers
    empty = [(torch.zeros(1, 2, 0, 16),) * 2] * layers

    def run(ids: list[int], mask: list[int], positions: list[int], past: Any) -> tuple[torch.Tensor, ...]:
        with torch.no_grad():
            return step(embed(torch.tensor([ids])), torch.zeros(1, len(ids), dtype=torch.int64),
                        attention_mask=torch.tensor([mask]), position_ids=torch.tensor([positions]), past_key_values=past)  # fmt: skip

    def pairs(out: tuple[torch.Tensor, ...]) -> list[tuple[torch.Tensor, ...]]:
        return list(zip(out[1::2], out[2::2], strict=True))

    prompt, pads = [5, 17, 42], 9
    holed = run(prompt + [0] * pads, [1] * 3 + [0] * pads, list(range(3 + pads)), empty)
    got = run([9], [1] * 3 + [0] * pads + [1], [3], pairs(holed))[0]
    alone = run(prompt, [1] * 3, [0, 1, 2], empty)
    expected = run([9], [1] * 4, [3], pairs(alone))[0]
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
