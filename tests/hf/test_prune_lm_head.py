"""``prune_lm_head`` (CLI ``--prune-lm-head``): a decoder graph returning the last position's logits.

- the logits are ``[batch_size, 1, vocab_size]`` with a static 1 (what onnxruntime-genai's
  ``Model::IsPruned`` reads), the LM head's MatMul takes one row, and the values equal the last
  row of the unpruned graph's logits on the same inputs (prompt and decode step);
- with right padding (how onnxruntime-genai pads a batch) each row's logits are those of its last
  real token, not of a pad (the model builder's ``prune_lm_head=true`` takes the last position);
- greedy generation with left padding equals transformers; onnxruntime-genai with the shared
  buffer generates transformers' tokens from the streamed ``--prune-lm-head`` folder, for prompts
  of one length and of different lengths;
- a model whose head is not its output embeddings gets its full logits' rows taken (same contract);
- the option is refused where there is no decoder step, and for a SPEC.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import onnx
import pytest
import torch
from typer.testing import CliRunner

import onnxport.hf
from _checkpoints import llama_checkpoint
from _generation import assert_genai_equals_transformers, assert_greedy_equals_transformers
from onnxport.cli import app
from onnxport.errors import HFError
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.layout import find_model
from onnxport.hf.right_padding import last_real_positions
from onnxport.testing.tiny_models import DECODER, _make

transformers = pytest.importorskip("transformers")


def _llama() -> Any:
    return _make("LlamaConfig", "LlamaForCausalLM", **DECODER)()


@pytest.fixture(scope="module")
def exports() -> tuple[Any, Any, Any]:
    """(model, pruned export, full export) of a tiny Llama, standard ONNX."""
    model = _llama()
    return model, onnxport.hf.export(model, prune_lm_head=True), onnxport.hf.export(model)


def test_logits_are_the_last_row_of_the_full_graphs(exports) -> None:
    model, pruned, full = exports
    assert pruned.passed
    graph = pruned.programs["model"].model.graph
    logits = graph.outputs[0]
    assert logits.name == "logits"
    assert [str(d) for d in logits.shape] == ["batch_size", "1", str(model.config.vocab_size)]
    head = next(n for n in graph if n.op_type == "MatMul" and "lm_head" in n.inputs[1].name)
    assert head.inputs[0].shape[1] == 1  # the LM head runs on one row, not sequence_length
    part = hf_inputs.components(onnxport.hf.loading.from_model(model, "text-generation"))[0]
    for sizes in (hf_inputs.Sizes(2, 6, 0, seed=1), hf_inputs.Sizes(3, 1, 5, seed=2)):
        feeds = part.make_inputs(sizes)
        got, want = (np.asarray(export.programs["model"](**feeds)[0]) for export in (pruned, full))
        assert got.shape == (sizes.batch, 1, model.config.vocab_size) and got.dtype == np.float32
        np.testing.assert_allclose(got, want[:, -1:], rtol=1e-5, atol=1e-6)


def test_pruned_graph_generates_like_transformers_with_left_padding(exports) -> None:
    model, pruned, _ = exports
    assert_greedy_equals_transformers(model, pruned.programs["model"])


def test_right_padded_rows_get_their_last_real_tokens_logits(exports) -> None:
    model, pruned, full = exports
    part = hf_inputs.components(onnxport.hf.loading.from_model(model, "text-generation"))[0]
    feeds = part.make_inputs(hf_inputs.Sizes(3, 6, 0, seed=3))
    feeds["attention_mask"] = torch.ones(3, 6, dtype=torch.int64)
    feeds["attention_mask"][1, 2:] = 0  # row 1: 2 real tokens, then 4 pads
    feeds["attention_mask"][2, 5:] = 0  # row 2: 5 real tokens, then 1 pad
    got, want = (np.asarray(export.programs["model"](**feeds)[0]) for export in (pruned, full))
    assert got.shape == (3, 1, model.config.vocab_size)
    np.testing.assert_allclose(got[:, 0], want[[0, 1, 2], [5, 1, 4]], rtol=1e-5, atol=1e-6)
    assert np.abs(got[1, 0] - want[1, 5]).max() > 1e-3  # the last position (a pad's) would differ


@pytest.mark.parametrize(
    ("mask", "sequence", "expected"),
    [([[1, 1, 1, 1]], 4, [3]),  # no padding
     ([[0, 0, 1, 1], [1, 1, 1, 1]], 4, [3, 3]),  # left padding: the last position
     ([[1, 1, 0, 0], [1, 1, 1, 0]], 4, [1, 2]),  # right padding: before the pads
     ([[1, 1, 0, 0, 1], [1, 1, 1, 1, 1]], 1, [0, 0]),  # a decode step after right padding
     ([[1, 0, 1, 1, 0], [1, 1, 1, 0, 0]], 3, [1, 0]),  # a second chunk of a right-padded batch
     ([[1, 1, 0, 0]], 2, [0])],  # no real token in the step: 0
)  # fmt: skip
def test_last_real_positions(mask, sequence, expected) -> None:
    got = last_real_positions(torch.tensor(mask), sequence)
    assert got.dtype == torch.int64 and got.tolist() == expected


def test_a_model_whose_head_is_not_its_output_embeddings_gets_its_logits_rows(exports, monkeypatch) -> None:
    model, _, full = exports
    other = type(model)(model.config).eval()
    other.load_state_dict(model.state_dict())
    monkeypatch.setattr(other, "get_output_embeddings", lambda: None)
    pruned = onnxport.hf.export(other, "text-generation", prune_lm_head=True)
    assert pruned.passed
    assert pruned.programs["model"].model.graph.outputs[0].shape[1] == 1
    part = hf_inputs.components(onnxport.hf.loading.from_model(model, "text-generation"))[0]
    feeds = part.make_inputs(hf_inputs.Sizes(2, 4, 3, seed=5))
    feeds["attention_mask"][1, -1] = 0  # row 1's last token is a pad
    got, want = (np.asarray(export.programs["model"](**feeds)[0]) for export in (pruned, full))
    assert got.shape == (2, 1, model.config.vocab_size)
    np.testing.assert_allclose(got[:, 0], want[[0, 1], [3, 2]], rtol=1e-5, atol=1e-6)


def test_cli_streamed_shared_buffer_pruned_folder_runs_in_genai(tmp_path: pathlib.Path) -> None:
    og = pytest.importorskip("onnxruntime_genai")
    model = llama_checkpoint(tmp_path / "ckpt", tied=False)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["export", "--hf", str(tmp_path / "ckpt"), "-o", str(out), "--target", "onnxruntime",
              "--kv-cache", "shared", "--prune-lm-head"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    logits = next(o for o in onnx.load(find_model(out), load_external_data=False).graph.output if o.name == "logits")
    assert logits.type.tensor_type.shape.dim[1].dim_value == 1
    assert json.loads((out / "genai_config.json").read_text())["search"]["past_present_share_buffer"] is True
    assert_genai_equals_transformers(og, model, out)
    assert_genai_equals_transformers(og, model, out, padded=True)


def test_refused_without_a_decoder_step() -> None:
    bert = _make("BertConfig", "BertModel", hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=37, vocab_size=99)()  # fmt: skip
    with pytest.raises(HFError, match="prune_lm_head"):
        onnxport.hf.export(bert, "feature-extraction", prune_lm_head=True)


def test_cli_refuses_it_for_a_spec(tmp_path: pathlib.Path) -> None:
    spec = tmp_path / "m.py"
    spec.write_text("import torch\ndef make():\n    return torch.nn.Linear(2, 2), (torch.zeros(1, 2),)\n")
    result = CliRunner().invoke(app, ["export", f"{spec}:make", "-o", str(tmp_path / "m.onnx"), "--prune-lm-head"])
    assert result.exit_code == 2
    assert "--prune-lm-head" in result.output and not (tmp_path / "m.onnx").exists()
