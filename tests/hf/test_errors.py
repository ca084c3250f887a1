"""Acceptance: a broken model folder gets a clear HFError (an InputError) and no output folder."""

from __future__ import annotations

import json
import pathlib
import types

import onnx
import pytest
import torch
from typer.testing import CliRunner

import onnxport.hf
from onnxport.cli import app
from onnxport.errors import HFError, InputError
from onnxport.hf import cache, encoders
from onnxport.hf.inputs import modality
from onnxport.hf.loading import LoadedModel
from onnxport.hf.tasks import TASKS, infer_task

BERT = {
    "model_type": "bert",
    "architectures": ["BertModel"],
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 4,
    "intermediate_size": 37,
}


def _folder(tmp_path: pathlib.Path, config: str | None, weights: bool = True) -> pathlib.Path:
    folder = tmp_path / "model"
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config)
    if weights:
        (folder / "model.safetensors").write_bytes(b"not really")
    return folder


CASES = {
    "missing config": (None, True, "has no config.json"),
    "malformed config": ('{"model_type": "bert",', True, "is not valid JSON"),
    "config without model_type": ('{"hidden_size": 3}', True, 'no "model_type"'),
    "unknown model type": (
        '{"model_type": "frobnicator"}',
        True,
        "model_type 'frobnicator' is unknown",
    ),
    "unknown architecture": (
        json.dumps({**BERT, "architectures": ["BertForTimeTravel"]}),
        True,
        "architecture 'BertForTimeTravel' is unknown",
    ),
    "missing weights": (json.dumps(BERT), False, "has no weights"),
    "corrupt weights": (json.dumps(BERT), True, "could not load"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_folder(case: str, tmp_path: pathlib.Path) -> None:
    config, weights, message = CASES[case]
    folder = _folder(tmp_path, config, weights)
    out = tmp_path / "out"
    with pytest.raises(HFError, match=message) as info:
        onnxport.hf.export(folder, output_dir=out)
    assert isinstance(info.value, InputError)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no staging folder left


def test_cli_bad_folder_exit_2_no_output(tmp_path: pathlib.Path) -> None:
    folder = _folder(tmp_path, json.dumps(BERT), weights=False)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["export", "--hf", str(folder), "-o", str(out)])
    assert result.exit_code == 2
    assert "has no weights" in result.output
    assert not out.exists()


def test_unknown_task_and_nonempty_output(tmp_path: pathlib.Path) -> None:
    folder = _folder(tmp_path, json.dumps(BERT))
    with pytest.raises(HFError, match="Unknown task 'summarize'. Known tasks: feature-extraction"):
        onnxport.hf.export(folder, "summarize")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("x")
    with pytest.raises(HFError, match="exists and is not empty"):
        onnxport.hf.export(folder, output_dir=busy)
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize(
    ("arch", "extra", "task"),
    [
        ("BertModel", {}, "feature-extraction"),
        ("BertForMaskedLM", {}, "fill-mask"),
        ("RobertaForSequenceClassification", {}, "text-classification"),
        ("DistilBertForTokenClassification", {}, "token-classification"),
        ("ElectraForQuestionAnswering", {}, "question-answering"),
        ("ViTForImageClassification", {}, "image-classification"),
        ("GPT2LMHeadModel", {}, "text-generation"),
        ("LlamaForCausalLM", {}, "text-generation"),
        ("T5ForConditionalGeneration", {}, "text2text-generation"),
        ("WhisperForConditionalGeneration", {"num_mel_bins": 80}, "automatic-speech-recognition"),
    ],
)
def test_infer_task(arch: str, extra: dict, task: str) -> None:
    class Config:
        architectures = [arch]

    for key, value in extra.items():
        setattr(Config, key, value)
    assert infer_task(Config()).name == task


def test_model_that_fails_in_eager_gets_hf_error_with_its_source_line(tmp_path: pathlib.Path) -> None:
    """A model that cannot run eagerly (here its attention raises) stops with an HFError naming
    the exception and the user's line, not the dependency's exception; nothing is written."""
    from onnxport.testing.tiny_models import build

    model = build("llama")

    def broken_attention(*args: object, **kwargs: object) -> None:
        raise ValueError("heads do not divide the hidden size")

    model.model.layers[0].self_attn.forward = broken_attention
    out = tmp_path / "out"
    with pytest.raises(HFError, match="raised ValueError in eager PyTorch on a probe input") as info:
        onnxport.hf.export(model, output_dir=out)
    assert "heads do not divide the hidden size" in str(info.value)
    assert "test_errors.py" in str(info.value) and "in broken_attention" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert not out.exists()


def test_onnxruntime_refusal_in_validation_names_the_node_and_source_line(tmp_path: pathlib.Path) -> None:
    """The streamed path validates the saved file: a kernel refusal there names onnxruntime's reason,
    the ONNX node and the source line stamped on it, instead of a raw onnxruntime exception."""
    from onnx import TensorProto, helper

    from onnxport.hf.validate import refusal
    from onnxport.metadata import KEY_STACK_TRACE

    node = helper.make_node("Add", ["a", "b"], ["c"], name="node_Add_7")
    node.metadata_props.add(key=KEY_STACK_TRACE, value='File "model.py", line 12, in forward\n    x = x + self.pos')
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "ab"],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph), path)
    error = RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Add node. "
                         "Name:'node_Add_7' Status Message: Attempting to broadcast an axis by a dimension other than 1. 5 by 6")
    message = str(refusal(path, error, "model", "pixel_values 3x3x72x72"))
    assert message.startswith("onnxruntime refused to run model on fresh inputs (pixel_values 3x3x72x72)")
    assert "5 by 6" in message and "ONNX node: node_Add_7 (Add)" in message
    assert 'File "model.py", line 12, in forward' in message and "x = x + self.pos" in message
    assert "No file was written" in message


def test_a_spectrogram_model_on_no_candidate_layout_is_an_hf_error() -> None:
    """A speech model that runs on none of the spectrograms its config suggests (here a layer of
    8 features, a config of 16 mel bins: 16, 32, 64, frames first or last): an HFError naming the
    sizes tried, not the layer's RuntimeError."""
    import types

    import torch

    from onnxport.hf.encoders import _feature_layout

    class Speech(torch.nn.Module):
        config = types.SimpleNamespace(num_mel_bins=16)

        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 4)

        def forward(self, input_features: torch.Tensor) -> torch.Tensor:
            return self.proj(input_features)

    model = Speech()
    with pytest.raises(HFError, match=r"Speech takes input_features.*feature sizes its config suggests \(16, 32, 64\)"):
        _feature_layout(model, model, lambda layout: {"input_features": torch.zeros(1, 9, layout[0])})


def test_a_list_main_input_name_takes_its_first_entry() -> None:
    """OneFormer's ``main_input_name`` is ``["pixel_values", "task_inputs"]``: the modality is the
    first entry's (an image model), not a ``TypeError`` escaping ``onnxport.hf.export``."""
    model = types.SimpleNamespace(main_input_name=["pixel_values", "task_inputs"])
    assert modality(LoadedModel(model, TASKS["feature-extraction"], None, None)) == "vision"
    model.main_input_name = []
    assert modality(LoadedModel(model, TASKS["feature-extraction"], None, None)) == "text"


def test_a_vision_tower_saved_alone_names_its_inputs_and_the_vlm_export(tmp_path: pathlib.Path) -> None:
    """A vision-language model's tower saved as its own folder (Idefics3's vision transformer: no
    vocab_size, forward(pixel_values, patch_attention_mask)) infers feature-extraction; onnxport
    names what forward takes and where the tower is exported, and writes no folder."""
    transformers = pytest.importorskip("transformers")
    config = transformers.Idefics3VisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                               num_attention_heads=2, image_size=32, patch_size=8)
    transformers.Idefics3VisionTransformer(config).save_pretrained(tmp_path / "tower")
    with pytest.raises(HFError) as caught:
        onnxport.hf.export(tmp_path / "tower", output_dir=tmp_path / "out")
    message = str(caught.value)
    assert "Idefics3VisionTransformer.forward takes pixel_values, patch_attention_mask" in message
    assert "not input_ids" in message and "vision_encoder.onnx" in message
    assert not (tmp_path / "out").exists()


def test_qwen2_audio_loads_by_its_architecture_and_names_what_it_lacks(tmp_path: pathlib.Path) -> None:
    """Qwen2-Audio infers audio-text-to-text, whose auto class (speech seq2seq) does not list it: it
    loads by its architecture, and the error names the missing ``get_audio_features`` (its tower
    reads a feature mask) instead of saying the task is not available."""
    transformers = pytest.importorskip("transformers")
    text = {"vocab_size": 120, "hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 2}
    audio = {"num_mel_bins": 16, "encoder_layers": 1, "encoder_attention_heads": 2, "encoder_ffn_dim": 32,
             "d_model": 16, "max_source_positions": 50}
    config = transformers.Qwen2AudioConfig(text_config=text, audio_config=audio, audio_token_index=100)
    transformers.Qwen2AudioForConditionalGeneration(config).save_pretrained(tmp_path / "src")
    with pytest.raises(HFError, match="Qwen2AudioForConditionalGeneration has no get_audio_features"):
        onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_task_output_the_model_lacks_fails_at_once_not_after_probing_sizes() -> None:
    """An image model whose output lacks the task's outputs (PP-OCRv5's detector under
    object-detection returns last_hidden_state only) raised KeyError in every size probe, taken as
    "does not run at this size": minutes of probing up to 1536 px. It is an HFError naming the
    outputs the model has, from the first probe."""
    class Detector(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)

        def forward(self, pixel_values: torch.Tensor) -> dict:
            return {"last_hidden_state": self.conv(pixel_values)}

    probe = cache.VisionModel(Detector(), ["logits", "pred_boxes"])
    with pytest.raises(HFError, match="Detector returns last_hidden_state, not logits"):
        encoders._runs(probe, {"pixel_values": torch.randn(1, 3, 16, 16)})
