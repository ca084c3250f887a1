"""The output folder: hub layout by default, ``--layout flat``, the how-to-load summary, and the
dim renaming and ``genai_config.json`` helpers on small graphs."""

from __future__ import annotations

import pathlib

import onnx_ir as ir
import pytest
from typer.testing import CliRunner

import onnxport.hf
from onnxport.cli import app
from onnxport.errors import HFError
from onnxport.hf.dims import TOTAL_SEQUENCE, name_total_sequence
from onnxport.hf.genai_config import config_dict, genai_config, genai_runs, genai_type
from onnxport.hf.layout import find_model, model_path, usage_lines

from .zoo import BY_NAME, save

pytest.importorskip("transformers")


def test_cli_flat_layout_and_usage_lines(tmp_path: pathlib.Path) -> None:
    folder = save(BY_NAME["distilbert"], tmp_path)
    out = tmp_path / "flat"
    result = CliRunner().invoke(
        app, ["export", "--hf", str(folder), "-o", str(out), "--layout", "flat"]
    )
    assert result.exit_code == 0, result.output
    assert (out / "model.onnx").is_file() and (out / "config.json").is_file()
    assert not (out / "onnx").exists() and not (out / "genai_config.json").exists()
    assert find_model(out) == out / "model.onnx"
    assert "Load it:" in result.output
    assert f"onnxruntime.InferenceSession('{out / 'model.onnx'}')" in result.output
    assert "needs the hub layout" in result.output


def test_hub_layout_paths_and_unknown_layout(tmp_path: pathlib.Path) -> None:
    assert model_path("decoder_model", "hub") == pathlib.Path("onnx/decoder_model_merged.onnx")
    assert model_path("encoder_model", "flat") == pathlib.Path("encoder_model.onnx")
    with pytest.raises(HFError, match="Unknown layout 'nested'"):
        onnxport.hf.export(tmp_path, layout="nested")
    result = CliRunner().invoke(
        app, ["export", "--hf", str(tmp_path), "-o", str(tmp_path / "o"), "--layout", "nested"]
    )
    assert result.exit_code == 2 and "Unknown layout" in result.output
    with pytest.raises(HFError, match="has no model.onnx"):
        find_model(tmp_path)


def _decoder_graph(total: str) -> ir.Model:
    past = ir.Value(
        name="past_key_values.0.key",
        shape=ir.Shape(["batch_size", 2, "past_sequence_length", 8]),
        type=ir.TensorType(ir.DataType.FLOAT),
    )
    ids = ir.Value(
        name="input_ids",
        shape=ir.Shape(["batch_size", "sequence_length"]),
        type=ir.TensorType(ir.DataType.INT64),
    )
    node = ir.Node("", "Identity", [past])
    node.outputs[0].name = "present.0.key"
    node.outputs[0].shape = ir.Shape(["batch_size", 2, total, 8])
    graph = ir.Graph([ids, past], [node.outputs[0]], nodes=[node], opset_imports={"": 18})
    return ir.Model(graph, ir_version=10)


def test_name_total_sequence() -> None:
    model = _decoder_graph("past_sequence_length + sequence_length")
    assert name_total_sequence(model) == 1
    assert list(model.graph.outputs[0].shape) == ["batch_size", 2, TOTAL_SEQUENCE, 8]
    assert name_total_sequence(_decoder_graph("other")) == 0


def test_genai_config_from_graph_and_errors() -> None:
    config = {
        "model_type": "gpt2",
        "vocab_size": 99,
        "n_embd": 32,
        "n_head": 4,
        "n_positions": 64,
        "eos_token_id": 2,
    }
    content = genai_config(
        _decoder_graph(TOTAL_SEQUENCE), config, {"pad_token_id": None, "top_k": 5}, "model.onnx"
    )
    decoder = content["model"]["decoder"]
    assert (
        decoder["hidden_size"],
        decoder["num_attention_heads"],
        decoder["num_key_value_heads"],
    ) == (32, 4, 2)
    assert decoder["inputs"] == {
        "input_ids": "input_ids",
        "past_key_names": "past_key_values.%d.key",
        "past_value_names": "past_key_values.%d.value",
    }
    assert content["model"]["type"] == "decoder" and genai_type("qwen2") == "qwen2"
    assert content["model"]["pad_token_id"] == 2  # falls back to eos
    assert content["search"]["top_k"] == 5 and content["search"]["max_length"] == 64
    with pytest.raises(HFError, match="lacks vocab_size"):
        genai_config(_decoder_graph(TOTAL_SEQUENCE), {"n_embd": 32, "n_head": 4}, None, "m.onnx")
    # BartForCausalLM's config keeps the encoder-decoder names (d_model, decoder_attention_heads)
    bart = {"model_type": "bart", "vocab_size": 99, "d_model": 32, "decoder_attention_heads": 4, "encoder_attention_heads": 8}
    decoder = genai_config(_decoder_graph(TOTAL_SEQUENCE), bart, None, "m.onnx")["model"]["decoder"]
    assert (decoder["hidden_size"], decoder["num_attention_heads"]) == (32, 4)
    no_past = _decoder_graph(TOTAL_SEQUENCE)
    no_past.graph.inputs.pop()
    with pytest.raises(HFError, match="needs a decoder graph"):
        genai_config(no_past, config, None, "m.onnx")


def test_usage_lines_follow_the_files_and_the_task(tmp_path: pathlib.Path) -> None:
    """A CTC model's folder has one graph, a ViT's feature-extraction is an image pipeline, and
    transformers.js has no multiple-choice pipeline."""
    ctc = tmp_path / "ctc"
    (ctc / "onnx").mkdir(parents=True)
    (ctc / "onnx" / "model.onnx").write_bytes(b"")
    lines = usage_lines(ctc, "automatic-speech-recognition", "hub", False)
    assert f"InferenceSession({str(ctc / 'onnx' / 'model.onnx')!r})" in lines[1]
    assert "pipeline('automatic-speech-recognition', 'ctc'" in lines[-1]
    vit = tmp_path / "vit"
    vit.mkdir()
    (vit / "config.json").write_text('{"model_type": "vit", "image_size": 224}')
    lines = usage_lines(vit, "feature-extraction", "hub", False)
    assert not any("encode(" in line for line in lines)  # no tokenizer: not a sentence encoder
    assert "pipeline('image-feature-extraction', 'vit'" in lines[-1]
    assert "no pipeline for multiple-choice" in usage_lines(vit, "multiple-choice", "hub", False)[-1]
    assert "pipeline('image-segmentation'" in usage_lines(vit, "semantic-segmentation", "hub", False)[-1]


def test_pipeline_usage_lines_name_the_denoiser(tmp_path: pathlib.Path) -> None:
    """A Flux export has a transformer, not a UNet; Optimum's ORTDiffusionPipeline loads any of them."""
    for name in ("text_encoder", "text_encoder_2", "transformer", "vae_decoder"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.onnx").write_bytes(b"")
    lines = usage_lines(tmp_path, "text-to-image", "pipeline", False)
    assert f"InferenceSession({str(tmp_path / 'transformer' / 'model.onnx')!r}), and text_encoder/, text_encoder_2/, vae_decoder/ alike" in lines[1]
    assert "ORTDiffusionPipeline.from_pretrained" in lines[2]


def test_config_dict_adds_mapped_names_only_where_no_alias_is_set() -> None:
    """XGLM's head count is only under its own name (``attribute_map``); a Bart CLM keeps its
    decoder's heads (the ``decoder_attention_heads`` alias), not the encoder's ``attribute_map``
    target."""
    transformers = pytest.importorskip("transformers")
    assert config_dict(transformers.XGLMConfig(attention_heads=4))["num_attention_heads"] == 4
    bart = config_dict(transformers.BartConfig(encoder_attention_heads=8, decoder_attention_heads=4))
    assert "num_attention_heads" not in bart and bart["decoder_attention_heads"] == 4


def test_genai_runs_only_with_the_present_names_the_config_declares() -> None:
    """genai_config.json names ``present.%d.key``; a graph without that output (a DeepSeek-V4 cache
    whose keys are its values came out as ``present.0.value`` and ``present.0.value_2``) gets no
    config: onnxruntime-genai refused the folder ("Invalid output name: present.0.key")."""
    assert genai_runs(_decoder_graph(TOTAL_SEQUENCE))
    renamed = _decoder_graph(TOTAL_SEQUENCE)
    renamed.graph.outputs[0].name = "present.0.value_2"
    assert not genai_runs(renamed)


def _hybrid_graph(layers: dict[int, list[tuple[str, list[int | str]]]]) -> ir.Model:
    """A graph passing each past input through to its present output: ``layers`` maps a layer
    index to its ``(input name, shape)`` pairs."""
    ids = ir.Value(name="input_ids", shape=ir.Shape(["batch_size", "sequence_length"]), type=ir.TensorType(ir.DataType.INT64))
    inputs, nodes = [ids], []
    for entries in layers.values():
        for name, shape in entries:
            past = ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(ir.DataType.FLOAT))
            node = ir.Node("", "Identity", [past])
            node.outputs[0].name = name.replace("past_key_values.", "present.").replace("past_", "present_")
            node.outputs[0].shape = ir.Shape(shape)
            inputs.append(past)
            nodes.append(node)
    graph = ir.Graph(inputs, [n.outputs[0] for n in nodes], nodes=nodes, opset_imports={"": 18})
    return ir.Model(graph, ir_version=10)


def _kv(i: int) -> list[tuple[str, list[int | str]]]:
    return [(f"past_key_values.{i}.{kind}", ["batch_size", 2, "past_sequence_length", 8]) for kind in ("key", "value")]


def test_genai_config_of_a_hybrid_names_its_states_and_layer_types() -> None:
    """Qwen3.5's layout: a gated delta rule layer (convolution and recurrent states) before an
    attention layer; onnxruntime-genai feeds the states by the names the config gives."""
    linear = [("past_conv.0", ["batch_size", 96, 4]), ("past_recurrent.0", ["batch_size", 4, 16, 16])]
    model = _hybrid_graph({0: linear, 1: _kv(1), 2: [(n.replace(".0", ".2"), s) for n, s in linear], 3: _kv(3)})
    assert genai_runs(model)
    config = {"vocab_size": 512, "hidden_size": 64, "num_attention_heads": 4, "model_type": "qwen3_5_text"}
    decoder = genai_config(model, config, None, "onnx/model.onnx")["model"]["decoder"]
    assert decoder["layer_types"] == ["linear_attention", "full_attention", "linear_attention", "full_attention"]
    assert decoder["num_hidden_layers"] == 4 and decoder["num_key_value_heads"] == 2 and decoder["head_size"] == 8
    assert decoder["inputs"]["past_conv_names"] == "past_conv.%d"
    assert decoder["inputs"]["past_recurrent_names"] == "past_recurrent.%d"
    assert decoder["outputs"]["present_conv_names"] == "present_conv.%d"
    assert decoder["outputs"]["present_recurrent_names"] == "present_recurrent.%d"
    # LFM2: convolution layers only, a Mamba model's state is past_ssm.{i}
    lfm2 = _hybrid_graph({0: [("past_conv.0", ["batch_size", 64, 3])], 1: _kv(1)})
    decoder = genai_config(lfm2, config, None, "m.onnx")["model"]["decoder"]
    assert decoder["layer_types"] == ["conv", "full_attention"] and "past_recurrent_names" not in decoder["inputs"]
    mamba = _hybrid_graph({0: _kv(0), 1: [("past_conv.1", ["batch_size", 64, 4]), ("past_ssm.1", ["batch_size", 4, 16, 16])]})
    assert genai_config(mamba, config, None, "m.onnx")["model"]["decoder"]["inputs"]["past_recurrent_names"] == "past_ssm.%d"
    # a plain decoder's config has no layer_types
    assert "layer_types" not in genai_config(_decoder_graph(TOTAL_SEQUENCE), config, None, "m.onnx")["model"]["decoder"]


def test_genai_runs_refuses_hybrid_layouts_it_cannot_feed() -> None:
    conv = ("past_conv.0", ["batch_size", 64, 3])
    assert not genai_runs(_hybrid_graph({0: [conv, *_kv(0)]}))  # Falcon-H1: keys and a state in one layer
    assert not genai_runs(_hybrid_graph({0: [("past_conv.0", ["batch_size", "channels", 3])], 1: _kv(1)}))
    assert not genai_runs(_hybrid_graph({0: [conv], 2: _kv(2)}))  # a layer without any cache
    both = [("past_recurrent.0", ["batch_size", 4, 8, 8]), ("past_ssm.0", ["batch_size", 4, 8, 8])]
    assert not genai_runs(_hybrid_graph({0: both, 1: _kv(1)}))
    assert not genai_runs(_hybrid_graph({0: [conv]}))  # no attention layer: no head size for genai
    assert genai_runs(_hybrid_graph({0: [conv], 1: _kv(1)}))
