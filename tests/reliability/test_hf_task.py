"""A Hugging Face config without ``architectures`` gets its task from ``model_type``."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from onnxport.errors import HFError  # noqa: E402
from onnxport.hf.tasks import get_task, infer_task  # noqa: E402


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


@pytest.mark.parametrize(
    ("config_class", "architecture", "task"),
    [
        ("XLMConfig", "XLMWithLMHeadModel", "fill-mask"),  # a causal and a masked LM; it keeps no cache
        ("GPT2Config", "GPT2LMHeadModel", "text-generation"),
        ("BertConfig", "BertLMHeadModel", "text-generation"),
    ],
)
def test_causal_lm_without_a_cache_that_is_also_a_masked_lm(config_class, architecture, task) -> None:  # type: ignore[no-untyped-def]
    assert infer_task(getattr(transformers, config_class)(architectures=[architecture])).name == task


def test_architectures_still_win() -> None:
    config = transformers.LlamaConfig(architectures=["LlamaForSequenceClassification"])
    assert infer_task(config).name == "text-classification"


@pytest.mark.parametrize(
    ("config_class", "arch", "task", "kind"),
    [
        ("MarianConfig", "MarianMTModel", "text2text-generation", "seq2seq"),  # no task in its name
        ("Wav2Vec2Config", "Wav2Vec2ForCTC", "automatic-speech-recognition", "audio"),
        ("WhisperConfig", "WhisperForConditionalGeneration", "automatic-speech-recognition", "speech-seq2seq"),
        ("Wav2Vec2Config", "Wav2Vec2ForSequenceClassification", "audio-classification", "audio"),
        ("CLIPConfig", "CLIPModel", "zero-shot-image-classification", "text-vision"),
        ("DetrConfig", "DetrForObjectDetection", "object-detection", "vision"),
        ("SegformerConfig", "SegformerForSemanticSegmentation", "semantic-segmentation", "vision"),
        ("BertConfig", "BertForMultipleChoice", "multiple-choice", "multiple-choice"),
        ("ViTConfig", "ViTModel", "feature-extraction", "text"),  # its modality comes from the model
    ],
)
def test_architecture_from_transformers_mappings(config_class, arch, task, kind) -> None:  # type: ignore[no-untyped-def]
    """transformers' auto-class mappings decide the task; automatic-speech-recognition of a CTC
    model is one graph (kind ``audio``), of Whisper an encoder and a decoder."""
    config = getattr(transformers, config_class)(architectures=[arch])
    resolved = infer_task(config)
    assert (resolved.name, resolved.kind) == (task, kind)


def test_explicit_asr_task_of_a_ctc_model_is_ctc() -> None:
    assert get_task("automatic-speech-recognition", transformers.Wav2Vec2Config()).auto_class == "AutoModelForCTC"
    assert get_task("asr", transformers.WhisperConfig()).auto_class == "AutoModelForSpeechSeq2Seq"


def test_unsupported_task_is_named() -> None:
    config = transformers.SpeechT5Config(architectures=["SpeechT5ForTextToSpeech"])
    with pytest.raises(HFError, match="SpeechT5ForTextToSpeech is a text-to-audio model.*onnxport.export"):
        infer_task(config)


def test_llava_is_image_text_to_text() -> None:
    config = transformers.LlavaConfig(architectures=["LlavaForConditionalGeneration"])
    assert (infer_task(config).name, infer_task(config).kind) == ("image-text-to-text", "vision-language")


def test_vision_encoder_decoder_is_image_to_text() -> None:
    """TrOCR / Donut (``VisionEncoderDecoderModel``, listed with the image-text-to-text models)
    export as an image encoder and a merged decoder."""
    config = transformers.VisionEncoderDecoderConfig.from_encoder_decoder_configs(
        transformers.ViTConfig(), transformers.TrOCRConfig()
    )
    config.architectures = ["VisionEncoderDecoderModel"]
    assert (infer_task(config).name, infer_task(config).kind) == ("image-to-text", "vision-seq2seq")
