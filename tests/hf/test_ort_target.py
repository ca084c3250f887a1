"""``onnxport export --hf FOLDER --target onnxruntime --quantize int4``: a folder whose model uses
GroupQueryAttention, SkipSimplifiedLayerNormalization and MatMulNBits, runs in onnxruntime close
to eager, and carries the per-weight quantization report."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from typer.testing import CliRunner

from onnxport.cli import app
from onnxport.hf.layout import find_model
from onnxport.testing.tiny_models import DECODER, _make

pytest.importorskip("transformers")


def _folder(tmp_path: Path) -> tuple[torch.nn.Module, Path]:
    config = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    model = _make("LlamaConfig", "LlamaForCausalLM", **config)()
    model.save_pretrained(tmp_path / "llama")
    return model, tmp_path / "llama"


@pytest.mark.slow  # two exports' worth of capture, validation and quantization (~15 s idle)
def test_cli_target_onnxruntime_int4(tmp_path: Path) -> None:
    model, folder = _folder(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["export", "--hf", str(folder), "-o", str(out), "--target", "onnxruntime",
         "--quantize", "int4", "--block-size", "16", "--asymmetric"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Weights: streamed from the checkpoint" in result.output  # a safetensors folder
    proto = onnx.load(str(find_model(out)))
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    assert ops["GroupQueryAttention"] == 2 and ops["SkipSimplifiedLayerNormalization"] == 4
    assert ops["MatMulNBits"] == 2 * 5 + 1 and ops["MatMul"] == 0  # packed q|k|v, o, gate, up, down; lm_head too
    nbits = next(n for n in proto.graph.node if n.op_type == "MatMulNBits")
    attrs = {a.name: a.i for a in nbits.attribute}
    assert (attrs["bits"], attrs["block_size"], attrs["accuracy_level"]) == (4, 16, 4)
    assert len(nbits.input) == 4  # asymmetric: zero points stored
    report = json.loads((out / "quantization_report.json").read_text())
    assert report["options"]["block_size"] == 16 and report["options"]["symmetric"] is False
    assert len(report["weights"]) == 2 * 5 + 1
    assert all(0 < w["rel_l2"] < 0.1 for w in report["weights"].values())

    session = ort.InferenceSession(str(find_model(out)), providers=["CPUExecutionProvider"])
    ids = torch.randint(3, 99, (1, 6), generator=torch.Generator().manual_seed(0))
    feeds = {
        "input_ids": ids.numpy(),
        "attention_mask": np.ones((1, 6), np.int64),
        "position_ids": np.arange(6, dtype=np.int64)[None],
    }
    for i in range(2):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = np.zeros((1, 2, 0, 16), np.float32)
    logits = session.run(["logits"], feeds)[0]
    with torch.no_grad():
        expected = model(input_ids=ids).logits.numpy()
    error = np.linalg.norm(logits - expected) / np.linalg.norm(expected)
    # int4 weights (block 16) and int8 activations (accuracy_level 4) on a 64-wide random model;
    # the exact arithmetic is checked in tests/passes/ort/test_matmul_nbits.py
    assert 0 < error < 0.3, error


@pytest.mark.parametrize("tied", [False, True])
def test_float32_projections_are_matmuls_over_weights_written_transposed(tmp_path: Path, tied: bool) -> None:
    """The onnxruntime target's float32 projections are standard ``MatMul`` over ``[K, N]`` weights
    written transposed at save time (onnxruntime-genai's builder's layout): on this machine
    ``FusedMatMul(transB=1)`` over the stored ``[N, K]`` weight ran 1.12-1.21x slower at 1-4 rows
    (session 34). A tied head reads ``Transpose(table)``, which onnxruntime folds when the session
    loads, as in the builder's graph; the table is written once."""
    config = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    model = _make("LlamaConfig", "LlamaForCausalLM", **config, tie_word_embeddings=tied)()
    model.save_pretrained(tmp_path / "llama")
    result = CliRunner().invoke(app, ["export", "--hf", str(tmp_path / "llama"), "-o", str(tmp_path / "out"),
                                      "--target", "onnxruntime"])  # fmt: skip
    assert result.exit_code == 0, result.output
    proto = onnx.load(str(find_model(tmp_path / "out")))
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    assert ops["FusedMatMul"] == 0 and ops["MatMul"] == 2 * 5 + 1  # packed q|k|v, o, gate, up, down; lm_head
    shapes = {t.name: list(t.dims) for t in proto.graph.initializer}
    o_proj = shapes["model.layers.0.self_attn.o_proj.weight.T"]
    assert o_proj == [64, 64] and "model.layers.0.self_attn.o_proj.weight" not in shapes
    assert shapes["model.layers.0.mlp.down_proj.weight.T"] == [config["intermediate_size"], 64]
    head = next(n for n in proto.graph.node if n.op_type == "MatMul" and n.output[0] == "logits")
    if tied:
        assert ops["Transpose"] == 1 and "lm_head.weight.T" not in shapes
        assert [n.op_type for n in proto.graph.node if n.output[0] == head.input[1]] == ["Transpose"]
    else:
        assert ops["Transpose"] == 0 and shapes[head.input[1]] == [64, config["vocab_size"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--quantize", "int3"], "int4 or int8"), (["--quantize", "int4", "--block-size", "48"], "block_size"),
     (["--target", "tensorrt"], "target")],
)  # fmt: skip
def test_cli_bad_target_or_quantization(tmp_path: Path, args: list[str], message: str) -> None:
    folder = tmp_path / "missing-is-not-reached"
    folder.mkdir()
    result = CliRunner().invoke(
        app, ["export", "--hf", str(folder), "-o", str(tmp_path / "o"), *args]
    )
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cli_summary_names_the_contrib_ops(tmp_path: Path, dtype: str) -> None:
    """The summary of a ``--target onnxruntime`` export lists the graph's ``com.microsoft`` ops
    with their counts, or says that none applied and why (a float16 graph: the fusions match
    float32 graphs only), so a user sees what the target did."""
    config = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    _make("LlamaConfig", "LlamaForCausalLM", **config)().save_pretrained(tmp_path / "llama")
    result = CliRunner().invoke(app, ["export", "--hf", str(tmp_path / "llama"), "-o", str(tmp_path / "out"),
                                      "--target", "onnxruntime", "--dtype", dtype])  # fmt: skip
    assert result.exit_code == 0, result.output
    proto = onnx.load(str(find_model(tmp_path / "out")))
    contrib = collections.Counter(n.op_type for n in proto.graph.node if n.domain == "com.microsoft")
    line = next(line for line in result.output.splitlines() if line.startswith("  onnxruntime target: "))
    if dtype == "float32":
        assert contrib["GroupQueryAttention"] == config["num_hidden_layers"]
        assert line == "  onnxruntime target: " + ", ".join(f"{op} {n}" for op, n in sorted(contrib.items()))
    else:
        assert not contrib
        assert line == ("  onnxruntime target: no contrib op, standard ONNX only (the fusions match float32 "
                        "graphs only and this one is float16)")
