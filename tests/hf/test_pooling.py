"""Sentence-transformers folders with CLS, max and last-token pooling (BGE, GTE, decoder
embedders) get a ``sentence_embedding`` output equal to the pooling computed with numpy from
eager PyTorch's token states (sentence_transformers/models/Pooling.py)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf

from .zoo import BY_NAME, save

pytest.importorskip("transformers")

FLAGS = {"cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens", "lasttoken": "pooling_mode_lasttoken"}


def reference(hidden: np.ndarray, mask: np.ndarray, mode: str, normalize: bool) -> np.ndarray:
    if mode == "cls":
        pooled = hidden[:, 0]
    elif mode == "max":
        pooled = np.where(mask[..., None] == 1, hidden, -1e9).max(axis=1)
    else:
        last = np.array([np.nonzero(row)[0].max() for row in mask])
        pooled = hidden[np.arange(len(hidden)), last]
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True) if normalize else pooled


@pytest.mark.parametrize(("mode", "normalize"), [("cls", True), ("max", False), ("lasttoken", True)])
def test_pooling_mode_in_the_graph(mode: str, normalize: bool, tmp_path: pathlib.Path) -> None:
    folder = save(BY_NAME["bert"], tmp_path)
    (folder / "1_Pooling").mkdir()
    flags = {flag: flag == FLAGS[mode] for flag in ["pooling_mode_mean_tokens", *FLAGS.values()]}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **flags}))
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (folder / "modules.json").write_text(json.dumps(modules))
    result = onnxport.hf.export(folder, "feature-extraction", output_dir=tmp_path / "out")
    assert result.passed

    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    assert [o.name for o in session.get_outputs()] == ["last_hidden_state", "sentence_embedding"]
    ids = torch.randint(3, 99, (3, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[0, 6:] = 0  # right padding
    mask[2, :2] = 0  # left padding
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    feeds = {i.name: feeds.get(i.name, np.zeros_like(ids.numpy())) for i in session.get_inputs()}
    hidden, embedding = session.run(None, feeds)
    with torch.no_grad():
        eager = result.model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
    np.testing.assert_allclose(hidden, eager, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(embedding, reference(eager, mask.numpy(), mode, normalize), rtol=1e-4, atol=1e-5)
