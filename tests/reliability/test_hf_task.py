"""A Hugging Face config without ``architectures`` gets its task from ``model_type``."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from onnxport.hf.tasks import infer_task  # noqa: E402


@pytest.mark.parametrize(
    ("config_class", "task"),
    [
        ("LlamaConfig", "text-generation"),
        ("GPT2Config", "text-generation"),
        ("BertConfig", "feature-extraction"),
        ("T5Config", "text2text-generation"),
        ("WhisperConfig", "automatic-speech-recognition"),
    ],
)
def test_config_without_architectures(config_class, task) -> None:  # type: ignore[no-untyped-def]
    config = getattr(transformers, config_class)()
    assert not getattr(config, "architectures", None)
    assert infer_task(config).name == task


def test_architectures_still_win() -> None:
    config = transformers.LlamaConfig(architectures=["LlamaForSequenceClassification"])
    assert infer_task(config).name == "text-classification"
