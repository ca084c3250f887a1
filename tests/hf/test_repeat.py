"""``hf/repeat.py``: which decoders are captured with two layers and grown, and that the grown
streamed export of several families equals eager (hf.export's own full validation) with the
copied layers really present."""

from __future__ import annotations

import pathlib
from typing import Any

import onnx
import pytest
import torch

import onnxport.hf
from onnxport.hf import repeat
from onnxport.passes.repeat_layers import KEY_REPEATED_FROM

transformers = pytest.importorskip("transformers")

SMALL = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
         "vocab_size": 100, "num_hidden_layers": 4}


def _model(config_class: str, model_class: str, **extra: Any) -> torch.nn.Module:
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**{**SMALL, **extra})
    return getattr(transformers, model_class)(config).eval()


def test_uniform_llama_qualifies_with_its_layer_list() -> None:
    model = _model("LlamaConfig", "LlamaForCausalLM")
    names = repeat.repeatable(model, model.config, "causal-lm")
    assert names is not None
    assert (names.layer_class, names.weights) == ("LlamaDecoderLayer", "model.layers")


@pytest.mark.parametrize(
    "case",
    ["two layers", "not a decoder", "one layer differs", "mixed layer_types", "mixed no_rope_layers"],
)
def test_models_whose_layers_differ_are_captured_whole(case: str) -> None:
    kind = "causal-lm"
    if case == "two layers":
        model = _model("LlamaConfig", "LlamaForCausalLM", num_hidden_layers=2)
    elif case == "not a decoder":
        model, kind = _model("LlamaConfig", "LlamaForCausalLM"), "text"
    elif case == "one layer differs":
        model = _model("LlamaConfig", "LlamaForCausalLM")
        model.model.layers[3].self_attn.scaling = 0.5
    elif case == "mixed layer_types":
        model = _model("Qwen3Config", "Qwen3ForCausalLM", head_dim=16, use_sliding_window=True, sliding_window=8,
                       max_window_layers=2)
        assert len(set(model.config.layer_types)) == 2
    else:
        model = _model("SmolLM3Config", "SmolLM3ForCausalLM", no_rope_layers=[1, 1, 1, 0], pad_token_id=0, bos_token_id=1,
                       eos_token_id=2)
    assert repeat.repeatable(model, model.config, kind) is None


@pytest.mark.parametrize(
    ("config_class", "model_class", "extra"),
    [
        ("Qwen2Config", "Qwen2ForCausalLM", {}),  # q/k/v biases
        ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 16}),  # q/k RMSNorm
        ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 16}),  # scaled embeddings, GELU MLP
    ],
)
def test_grown_streamed_export_equals_eager(config_class: str, model_class: str, extra: dict, tmp_path: pathlib.Path) -> None:
    model = _model(config_class, model_class, **extra)
    model.config.architectures = [model_class]
    model.save_pretrained(tmp_path / "ckpt")
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out", stream=True)  # validates in full
    assert result.checks and all(c.comparison.passed for c in result.checks)
    graph = onnx.load(str(tmp_path / "out" / "onnx" / "model.onnx"), load_external_data=False).graph
    copied = {p.value for n in graph.node for p in n.metadata_props if p.key == KEY_REPEATED_FROM}
    assert copied == {"1"}  # layers 2 and 3 were copied from layer 1
    assert [o.name for o in graph.output] == ["logits", *(f"present.{i}.{kv}" for i in range(4) for kv in ("key", "value"))]


def test_a_grown_export_probes_the_two_layer_copy_only(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The KV cache's per-layer shapes of a decoder whose layers repeat come from one eager probe
    of the two-layer copy, not of every layer of the whole model; the folder is the same as with
    the whole model probed (its inputs and outputs: four layers' past and present)."""
    model = _model("LlamaConfig", "LlamaForCausalLM")
    model.config.architectures = ["LlamaForCausalLM"]
    model.save_pretrained(tmp_path / "ckpt")
    probed: list[int] = []
    original = onnxport.hf.inputs.cache_layers_of

    def counting(probed_model: torch.nn.Module) -> Any:
        probed.append(probed_model.config.num_hidden_layers)
        return original(probed_model)

    monkeypatch.setattr(onnxport.hf.inputs, "cache_layers_of", counting)
    onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "grown", stream=True, validate=False)
    assert probed == [2]
    monkeypatch.setattr(repeat, "repeatable", lambda *args: None)  # the whole model, probed
    onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "whole", stream=True, validate=False)
    assert probed == [2, 4]
    graphs = [onnx.load(str(tmp_path / out / "onnx" / "model.onnx"), load_external_data=False).graph
              for out in ("grown", "whole")]
    inputs, outputs = ([[(v.name, str(v.type)) for v in getattr(g, side)] for g in graphs] for side in ("input", "output"))
    assert inputs[0] == inputs[1] and outputs[0] == outputs[1]
    assert "past_key_values.3.value" in [name for name, _ in inputs[0]]
