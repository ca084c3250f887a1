"""A half-precision checkpoint exported as a float32 graph (onnxport.passes.half_tables): tables
only looked up keep the checkpoint's dtype, each Gather followed by a Cast to float32; the
graph's numbers are the same as with the table converted whole."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import pytest
import torch

import onnxport.hf
from _checkpoints import llama_checkpoint
from onnxport.hf import streamed
from onnxport.hf.layout import find_model

pytest.importorskip("transformers")


def _initializers(path: pathlib.Path) -> dict[str, onnx.TensorProto]:
    return {t.name: t for t in onnx.load(str(path), load_external_data=False).graph.initializer}


@pytest.mark.parametrize("tied", [False, True])
def test_lookup_tables_stay_bfloat16_in_a_float32_export(tied: bool, tmp_path: pathlib.Path) -> None:
    model = llama_checkpoint(tmp_path / "ckpt", torch.bfloat16, tied=tied)
    out = tmp_path / "onnx"
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=out, stream=True, dtype="float32")
    assert result.passed
    path = find_model(out)
    inits = _initializers(path)
    table = inits["model.embed_tokens.weight"]
    # untied: only Gather reads it, stored as the checkpoint's bfloat16; tied: the LM head's MatMul
    # reads it too, so it is float32 like every other weight
    assert table.data_type == (onnx.TensorProto.FLOAT if tied else onnx.TensorProto.BFLOAT16)
    assert inits["model.layers.0.input_layernorm.weight"].data_type == onnx.TensorProto.FLOAT
    graph = onnx.load(str(path), load_external_data=False).graph
    gather = next(n for n in graph.node if n.op_type == "Gather" and n.input[0] == "model.embed_tokens.weight")
    users = [n for n in graph.node if gather.output[0] in n.input]
    if not tied:
        assert [n.op_type for n in users] == ["Cast"]
    ids = torch.randint(3, 100, (2, 5), generator=torch.Generator().manual_seed(1))
    feeds = {"input_ids": ids.numpy(), "attention_mask": np.ones((2, 5), np.int64),
             "position_ids": np.arange(5)[None].repeat(2, 0)}
    session = streamed.session(path)
    for value in session.get_inputs()[3:]:
        feeds[value.name] = np.zeros([2 if d == "batch_size" else 0 if d == "past_sequence_length" else d
                                      for d in value.shape], np.float32)
    logits = session.run(["logits"], feeds)[0]
    with torch.no_grad():
        expected = model.float()(input_ids=ids).logits.numpy()  # the bfloat16 weights, computed in float32
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)
