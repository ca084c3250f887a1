"""The streamed ``--hf`` path with the onnxruntime target, int4 quantization and ``--dtype``.

A tiny 3-layer Llama checkpoint (safetensors shards with an index) is exported by the streamed
path (meta-device model, weights streamed from the checkpoint through their transforms) and by the
in-memory path (model loaded by transformers) with the same options: the graphs must be the same
node for node, and every initializer the same bytes (names aside: the streamed path names weights
by the model's own state_dict keys, the in-memory path by the export wrapper's). ``--dtype
float16`` must run in onnxruntime and match eager float32 within the float16 tolerance. Peak
memory is not asserted (``bench/large_model.py`` measures it).
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Any

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper
from typer.testing import CliRunner

import onnxport.hf
from _checkpoints import LAYERS, llama_checkpoint
from _generation import assert_genai_equals_transformers
from onnxport.cli import app
from onnxport.errors import HFError, InputError
from onnxport.hf import streamed
from onnxport.hf.inputs import CHECK_SIZES
from onnxport.hf.layout import find_model
from onnxport.verify.compare import TOLERANCES

transformers = pytest.importorskip("transformers")




def _signature(folder: pathlib.Path) -> list[tuple[Any, ...]]:
    """The graph node by node (op, domain, attributes, inputs, outputs), every initializer input
    replaced by its dtype, shape and the SHA-256 of its bytes (read from external data), other
    values by their order of appearance (graph inputs and outputs keep their names)."""
    proto = onnx.load(str(find_model(folder)))
    io = {v.name for v in [*proto.graph.input, *proto.graph.output]}
    values: dict[str, str] = {}

    def value(name: str) -> str:
        return name if name in io or not name else values.setdefault(name, f"v{len(values)}")

    weights = {}
    for tensor in proto.graph.initializer:
        array = numpy_helper.to_array(tensor)
        digest = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
        weights[tensor.name] = (tensor.data_type, tuple(array.shape), digest)
    nodes = []
    for node in proto.graph.node:
        attributes = tuple(
            sorted((a.name, str(onnx.helper.get_attribute_value(a))) for a in node.attribute)
        )
        inputs = tuple(weights.get(name) or value(name) for name in node.input)
        nodes.append(
            (node.op_type, node.domain, attributes, inputs, tuple(value(n) for n in node.output))
        )
    return nodes


def _external_bytes(folder: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in find_model(folder).parent.glob("*.data*"))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, pathlib.Path]:
    root = tmp_path_factory.mktemp("streamort")
    return llama_checkpoint(root / "ckpt", tied=False), root / "ckpt"


@pytest.fixture(scope="module")
def cli_int4(checkpoint: tuple[Any, pathlib.Path]) -> tuple[pathlib.Path, Any]:
    """``onnxport export --hf CKPT -o OUT --target onnxruntime --quantize int4``."""
    out = checkpoint[1].parent / "cli-int4"
    result = CliRunner().invoke(
        app,
        [
            "export",
            "--hf",
            str(checkpoint[1]),
            "-o",
            str(out),
            "--target",
            "onnxruntime",
            "--quantize",
            "int4",
        ],
    )
    assert result.exit_code == 0, result.output
    return out, result


def test_cli_target_onnxruntime_int4_takes_the_streamed_path(
    cli_int4: tuple[pathlib.Path, Any],
) -> None:
    out, result = cli_int4
    assert "Weights: streamed from the checkpoint" in result.output
    # 3 layers > 2: the graph before quantization is validated on the 2-layer slice, then the
    # quantized files run (the model fits in memory)
    assert (
        f"validation: slice (2 of {LAYERS} layers), before quantization; the int4 model ran"
        in result.output
    )
    assert "FAIL" not in result.output
    report = json.loads((out / streamed.QUANTIZATION_REPORT).read_text())
    assert report["options"]["bits"] == 4 and report["options"]["block_size"] == 32
    assert len(report["weights"]) == LAYERS * 5 + 1  # q/k/v packed, o, gate, up, down per layer; the LM head
    assert all(0 < w["rel_l2"] < 0.2 for w in report["weights"].values())
    assert "quantization_report.json" in result.output  # listed among the files written


def test_streamed_int4_equals_in_memory(
    checkpoint: tuple[Any, pathlib.Path], cli_int4: tuple[pathlib.Path, Any], tmp_path: pathlib.Path
) -> None:
    memory = onnxport.hf.export(
        checkpoint[1],
        output_dir=tmp_path / "memory",
        target="onnxruntime",
        quantize="int4",
        validate=False,
    )
    assert memory.streamed is None
    signature = _signature(cli_int4[0])
    assert signature == _signature(tmp_path / "memory")
    ops = [node[0] for node in signature]
    assert ops.count("MatMulNBits") == LAYERS * 5 + 1 and "MatMul" not in ops
    assert ops.count("GroupQueryAttention") == LAYERS
    # The quantization report is the same too (computed as each weight was written).
    streamed_report = json.loads((cli_int4[0] / streamed.QUANTIZATION_REPORT).read_text())[
        "weights"
    ]
    assert sorted(streamed_report.values(), key=str) == sorted(
        memory.quantization.values(), key=str
    )


def test_streamed_ort_target_equals_in_memory(
    checkpoint: tuple[Any, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    result = onnxport.hf.export(
        checkpoint[1], output_dir=tmp_path / "streamed", stream=True, target="onnxruntime"
    )
    assert result.streamed is not None and result.streamed.validation == "full" and result.passed
    assert len(result.checks) == len(CHECK_SIZES) * (1 + 2 * LAYERS)  # input sets x (logits + presents)
    memory = onnxport.hf.export(
        checkpoint[1], output_dir=tmp_path / "memory", target="onnxruntime", validate=False
    )
    signature = _signature(tmp_path / "streamed")
    assert signature == _signature(tmp_path / "memory")
    ops = [node[0] for node in signature]
    assert (
        ops.count("GroupQueryAttention") == LAYERS
        and ops.count("SkipSimplifiedLayerNormalization") == 2 * LAYERS
    )
    assert memory.streamed is None and _external_bytes(tmp_path / "streamed") > 0


def test_streamed_shared_kv_cache_equals_in_memory(
    checkpoint: tuple[Any, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    # kv_cache="shared" streams too: the same graph and bytes as the in-memory export, validated
    # on unpadded inputs with the past in fixed buffers (hf.shared_cache)
    result = onnxport.hf.export(
        checkpoint[1], output_dir=tmp_path / "streamed", stream=True, target="onnxruntime", kv_cache="shared"
    )
    assert result.streamed is not None and result.streamed.validation == "full" and result.passed
    assert len(result.checks) == len(CHECK_SIZES) * (1 + 2 * LAYERS) and all("buffer" in c.inputs for c in result.checks)
    memory = onnxport.hf.export(
        checkpoint[1], output_dir=tmp_path / "memory", target="onnxruntime", kv_cache="shared", validate=False
    )
    assert memory.streamed is None
    signature = _signature(tmp_path / "streamed")
    assert signature == _signature(tmp_path / "memory")
    ops = [node[0] for node in signature]
    assert ops.count("GroupQueryAttention") == LAYERS and "Concat" not in ops and "Split" not in ops
    for folder in ("streamed", "memory"):
        config = json.loads((tmp_path / folder / "genai_config.json").read_text())
        assert config["search"]["past_present_share_buffer"] is True


def test_cli_shared_kv_cache_int4_streams(checkpoint: tuple[Any, pathlib.Path], tmp_path: pathlib.Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["export", "--hf", str(checkpoint[1]), "-o", str(out), "--target", "onnxruntime",
         "--quantize", "int4", "--kv-cache", "shared"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Weights: streamed from the checkpoint" in result.output
    assert f"validation: slice (2 of {LAYERS} layers), before quantization; the int4 model ran" in result.output
    assert "FAIL" not in result.output
    ops = [node[0] for node in _signature(out)]
    assert ops.count("MatMulNBits") == LAYERS * 5 + 1 and ops.count("GroupQueryAttention") == LAYERS
    assert json.loads((out / "genai_config.json").read_text())["search"]["past_present_share_buffer"] is True


def test_streamed_float16_runs_and_matches_eager_float32(
    checkpoint: tuple[Any, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    model, folder = checkpoint
    result = onnxport.hf.export(folder, output_dir=tmp_path / "fp16", stream=True, dtype="float16")
    assert result.streamed is not None and result.streamed.dtype == torch.float16
    assert result.passed and result.streamed.validation == "full"
    rtol, atol = TOLERANCES[torch.float16]
    assert all(
        (c.comparison.rtol, c.comparison.atol) == (rtol, atol)
        for c in result.checks
        if c.comparison
    )
    proto = onnx.load(str(find_model(tmp_path / "fp16")), load_external_data=False)
    weights = {t.name: t.data_type for t in proto.graph.initializer}
    assert weights["model.layers.0.self_attn.q_proj.weight.T"] == onnx.TensorProto.FLOAT16
    assert weights["lm_head.weight.T"] == onnx.TensorProto.FLOAT16
    fp32_bytes = sum(t.nbytes for t in model.state_dict().values())
    assert _external_bytes(tmp_path / "fp16") < 0.6 * fp32_bytes  # cast as written: half the bytes

    # Our own run in onnxruntime, independent of the export's validation.
    session = streamed.session(find_model(tmp_path / "fp16"))
    ids = torch.randint(3, 100, (2, 5), generator=torch.Generator().manual_seed(1))
    feeds = {
        "input_ids": ids.numpy(),
        "attention_mask": np.ones((2, 5), np.int64),
        "position_ids": np.tile(np.arange(5), (2, 1)),
    }
    for value in session.get_inputs()[3:]:
        feeds[value.name] = np.zeros((2, 2, 0, 16), np.float16)
    logits = session.run(["logits"], feeds)[0]
    assert logits.dtype == np.float16 and logits.shape == (2, 5, 100)
    with torch.no_grad():
        expected = model(input_ids=ids).logits.numpy()
    np.testing.assert_allclose(logits.astype(np.float32), expected, rtol=rtol, atol=atol)


def test_quantize_needs_a_float32_graph(
    checkpoint: tuple[Any, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    with pytest.raises(HFError, match="dtype='float32'"):
        onnxport.hf.export(
            checkpoint[1], output_dir=tmp_path / "o", stream=True, dtype="float16", quantize="int4"
        )
    with pytest.raises(HFError, match="stream=True"):
        onnxport.hf.export(checkpoint[1], output_dir=tmp_path / "o", dtype="float16")
    with pytest.raises(HFError, match="float16, bfloat16 or float32"):
        onnxport.hf.export(checkpoint[1], output_dir=tmp_path / "o", stream=True, dtype="int8")
    assert not (tmp_path / "o").exists()


def test_quantize_of_a_half_checkpoint_builds_a_float32_graph(tmp_path: pathlib.Path) -> None:
    """Most checkpoints are bfloat16: ``quantize`` alone exports the float32 graph MatMulNBits takes
    (weights cast as they stream); a loaded half-precision model gets a clear error instead of an
    unquantized graph."""
    from onnxport.testing.tiny_models import DECODER, _make

    model = _make("LlamaConfig", "LlamaForCausalLM", **{**DECODER, "hidden_size": 64, "num_attention_heads": 4})()
    model.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    result = onnxport.hf.export(tmp_path / "bf16", output_dir=tmp_path / "out", stream=True, quantize="int4")
    assert result.passed and result.streamed is not None and result.streamed.dtype == torch.float32
    ops = [n.op_type for n in result.programs["model"].model.graph]
    assert ops.count("MatMulNBits") == 2 * 5 + 1 and "MatMul" not in ops  # 2 layers: qkv, o, gate, up, down; head
    with pytest.raises(HFError, match=r"torch.bfloat16: convert it with model.float\(\)"):
        onnxport.hf.export(model, output_dir=tmp_path / "in-memory", quantize="int4")
    assert not (tmp_path / "in-memory").exists()


def test_onnxruntime_target_of_a_half_checkpoint_builds_a_float32_graph(tmp_path: pathlib.Path) -> None:
    """``target="onnxruntime"`` on a bfloat16 checkpoint without ``dtype`` exports float32, whose
    attention fuses: the shared-buffer graph (it failed before, no attention fused in bfloat16) and
    its genai folder generate the float32 model's tokens (the CLI summary names both dtypes);
    ``dtype="bfloat16"`` keeps the
    checkpoint's dtype and the standard ops; the folder exported in memory is loaded in float32; a
    loaded bfloat16 model's shared export is told to export in float32."""
    from onnxport.testing.tiny_models import DECODER, _make

    og = pytest.importorskip("onnxruntime_genai")
    model = _make("LlamaConfig", "LlamaForCausalLM", **{**DECODER, "hidden_size": 64, "num_attention_heads": 4,
                                                        "num_key_value_heads": 2, "initializer_range": 0.2})()  # fmt: skip
    model.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    result = onnxport.hf.export(tmp_path / "bf16", output_dir=tmp_path / "out", stream=True, target="onnxruntime",
                                kv_cache="shared")  # fmt: skip
    assert result.passed and result.streamed is not None and result.streamed.dtype == torch.float32
    ops = [n.op_type for n in result.programs["model"].model.graph]
    assert ops.count("GroupQueryAttention") == DECODER["num_hidden_layers"] == 2
    reference = _make("LlamaConfig", "LlamaForCausalLM", **{**DECODER, "hidden_size": 64, "num_attention_heads": 4,
                                                            "num_key_value_heads": 2})()  # fmt: skip
    reference.load_state_dict(model.to(torch.bfloat16).float().state_dict())  # the checkpoint's values, in float32
    assert_genai_equals_transformers(og, reference.eval(), tmp_path / "out")
    kept = onnxport.hf.export(tmp_path / "bf16", output_dir=tmp_path / "kept", stream=True, target="onnxruntime",
                              dtype="bfloat16", validate=False)  # fmt: skip
    assert kept.streamed is not None and kept.streamed.dtype == torch.bfloat16
    assert "GroupQueryAttention" not in [n.op_type for n in kept.programs["model"].model.graph]
    assert result.streamed.checkpoint_dtype == torch.bfloat16
    cli = CliRunner().invoke(app, ["export", "--hf", str(tmp_path / "bf16"), "-o", str(tmp_path / "cli"), "--target",
                                   "onnxruntime", "--no-validate"])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert "graph in float32, checkpoint" in cli.output and "in bfloat16); validation" in cli.output
    loaded = onnxport.hf.export(tmp_path / "bf16", target="onnxruntime", kv_cache="shared")  # in memory: loaded in float32
    assert loaded.passed and [n.op_type for n in loaded.programs["model"].model.graph].count("GroupQueryAttention") == 2
    with pytest.raises(InputError, match="the graph is bfloat16: export it in float32"):
        onnxport.hf.export(model.to(torch.bfloat16), target="onnxruntime", kv_cache="shared", validate=False)


def test_quantize_of_a_half_gemma_checkpoint_validates(tmp_path: pathlib.Path) -> None:
    """Gemma 3 scales its embeddings by √hidden, a buffer computed when the model is built. The
    float32 graph of a bfloat16 checkpoint is built in float32 (√40 = 6.3246); the eager reference
    is too (it was built in bfloat16, 6.3125, then upcast: every embedding 0.19% off, a failed
    validation of a correct graph)."""
    from onnxport.testing.tiny_models import DECODER, _make

    model = _make("Gemma3TextConfig", "Gemma3ForCausalLM", **{**DECODER, "hidden_size": 40, "num_attention_heads": 2,
                                                              "num_key_value_heads": 1, "head_dim": 16})()
    model.to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    result = onnxport.hf.export(tmp_path / "bf16", output_dir=tmp_path / "out", stream=True, quantize="int4")
    assert result.passed and result.streamed is not None and result.streamed.dtype == torch.float32
    assert [c.component for c in result.checks if c.output == "logits"][0] == "model (whole, before quantization)"
    assert max(c.max_abs_diff for c in result.checks if "before quantization" in c.component) < 1e-4


def test_cli_int4_tied_embeddings_share_the_heads_quantized_bytes(tmp_path: pathlib.Path) -> None:
    """A tied checkpoint (Qwen2 with ``tie_word_embeddings``): the embedding lookup reads the int4
    LM head's bytes (GatherBlockQuantized), the float table is not written, the folder is smaller
    than with ``--quantize-embeddings none`` and runs (the streamed path runs the int4 files)."""
    from onnxport.testing.tiny_models import DECODER, _make

    base = {**DECODER, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 512}
    _make("Qwen2Config", "Qwen2ForCausalLM", **base, tie_word_embeddings=True)().save_pretrained(tmp_path / "src")
    sizes = {}
    for mode in ("tied", "none"):
        out = tmp_path / mode
        args = ["export", "--hf", str(tmp_path / "src"), "-o", str(out), "--target", "onnxruntime",
                "--quantize", "int4", "--quantize-embeddings", mode]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "the int4 model ran" in result.output
        proto = onnx.load(str(find_model(out)), load_external_data=False)
        ops = [n.op_type for n in proto.graph.node]
        names = {t.name for t in proto.graph.initializer}
        assert ("GatherBlockQuantized" in ops) == (mode == "tied")
        assert ("model.embed_tokens.weight" in names) == (mode == "none")
        sizes[mode] = sum(f.stat().st_size for f in (out / "onnx").iterdir())
    assert sizes["tied"] < sizes["none"] - 512 * 64 * 4 * 0.9  # the float table's bytes are gone
    bad = CliRunner().invoke(app, ["export", "--hf", str(tmp_path / "src"), "-o", str(tmp_path / "x"),
                                   "--target", "onnxruntime", "--quantize", "int4", "--quantize-embeddings", "some"])  # fmt: skip
    assert bad.exit_code == 2 and "embeddings must be one of" in bad.output
