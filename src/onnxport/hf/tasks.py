"""Tasks: what onnxport.hf exports for each, and the task inferred from a config's architecture."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from onnxport.errors import HFError
from onnxport.hf.cache import cache_argument


@dataclasses.dataclass(frozen=True)
class Task:
    """One export task.

    Attributes:
        name: The task name (Optimum's spelling).
        auto_class: The ``transformers`` auto class that loads the model for this task.
        kind: How inputs and components are built: ``"text"`` (``input_ids``; feature-extraction
            of an image or audio model goes by its ``main_input_name``: :func:`modality`),
            ``"multiple-choice"``, ``"vision"`` (``pixel_values``), ``"video"`` (``pixel_values`` clips:
            :mod:`onnxport.hf.video`), ``"audio"`` (``input_values``),
            ``"text-vision"`` (CLIP-style: ``input_ids`` + ``pixel_values``), ``"causal-lm"``,
            ``"seq2seq"``, ``"speech-seq2seq"``, ``"vision-seq2seq"`` (``VisionEncoderDecoderModel``)
            ``"vision-language"`` (LLaVA-style: :mod:`onnxport.hf.vision_language`),
            ``"audio-language"`` (Voxtral-style: :mod:`onnxport.hf.audio_language`),
            ``"text-to-waveform"`` (VITS: :mod:`onnxport.hf.speech`), ``"mask-generation"``
            (Segment Anything: :mod:`onnxport.hf.segment_anything`), ``"time-series"`` (PatchTST:
            :mod:`onnxport.hf.time_series`) or ``"trajectory"`` (Decision Transformer:
            :mod:`onnxport.hf.trajectory`).
        outputs: Graph output names of the (first) exported component.
    """

    name: str
    auto_class: str
    kind: str
    outputs: tuple[str, ...]


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("feature-extraction", "AutoModel", "text", ("last_hidden_state",)),
        Task("fill-mask", "AutoModelForMaskedLM", "text", ("logits",)),
        Task("text-classification", "AutoModelForSequenceClassification", "text", ("logits",)),
        Task("token-classification", "AutoModelForTokenClassification", "text", ("logits",)),
        Task(
            "question-answering",
            "AutoModelForQuestionAnswering",
            "text",
            ("start_logits", "end_logits"),
        ),
        Task("multiple-choice", "AutoModelForMultipleChoice", "multiple-choice", ("logits",)),
        Task("image-classification", "AutoModelForImageClassification", "vision", ("logits",)),
        # VideoMAE, TimeSformer, ViViT: one clip [batch, frames, channels, height, width] (hf/video.py)
        Task("video-classification", "AutoModelForVideoClassification", "video", ("logits",)),
        Task("object-detection", "AutoModelForObjectDetection", "vision", ("logits", "pred_boxes")),
        Task("semantic-segmentation", "AutoModelForSemanticSegmentation", "vision", ("logits",)),
        Task("depth-estimation", "AutoModelForDepthEstimation", "vision", ("predicted_depth",)),
        # mask classification (MaskFormer, Mask2Former, EoMT), as transformers.js's image-segmentation
        # pipeline reads it; DETR's panoptic head has its own (encoders.PANOPTIC_OUTPUTS)
        Task(
            "image-segmentation",
            "AutoModelForUniversalSegmentation",
            "vision",
            ("class_queries_logits", "masks_queries_logits"),
        ),
        Task("image-to-image", "AutoModelForImageToImage", "vision", ("reconstruction",)),  # Swin2SR
        # ViT, DeiT, Swin masked image modeling: the image reconstructed (no bool_masked_pos input)
        Task("masked-im", "AutoModelForMaskedImageModeling", "vision", ("reconstruction",)),
        # ViTPose: per-keypoint heatmaps of the person crops (Optimum's VitPoseOnnxConfig)
        Task("keypoint-detection", "AutoModelForPoseEstimation", "vision", ("heatmaps",)),
        # PatchTST, PatchTSMixer point forecasts (onnxport.hf.time_series); transformers' auto class
        # lists neither, so they load by their architecture (loading.load)
        Task(
            "time-series-forecasting",
            "AutoModelForTimeSeriesPrediction",
            "time-series",
            ("prediction_outputs",),
        ),
        # Decision Transformer: a trajectory → next state, action and return (onnxport.hf.trajectory)
        Task(
            "reinforcement-learning",
            "AutoModel",
            "trajectory",
            ("state_preds", "action_preds", "return_preds", "last_hidden_state"),
        ),
        # SAM: an image encoder and a prompt encoder + mask decoder (onnxport.hf.segment_anything)
        Task(
            "mask-generation",
            "AutoModelForMaskGeneration",
            "mask-generation",
            ("image_embeddings", "image_positional_embeddings"),
        ),
        Task(
            "zero-shot-image-classification",
            "AutoModelForZeroShotImageClassification",
            "text-vision",
            ("logits_per_image", "logits_per_text", "text_embeds", "image_embeds"),
        ),
        # OWL-ViT, OWLv2: the text queries of one image (Optimum's OwlViTOnnxConfig outputs)
        Task(
            "zero-shot-object-detection",
            "AutoModelForZeroShotObjectDetection",
            "text-vision",
            ("logits", "pred_boxes", "text_embeds", "image_embeds"),
        ),
        Task("audio-classification", "AutoModelForAudioClassification", "audio", ("logits",)),
        Task("text-to-audio", "AutoModelForTextToWaveform", "text-to-waveform", ("waveform", "spectrogram")),
        Task("text-generation", "AutoModelForCausalLM", "causal-lm", ("logits",)),
        Task("text2text-generation", "AutoModelForSeq2SeqLM", "seq2seq", ("last_hidden_state",)),
        Task("image-to-text", "AutoModelForImageTextToText", "vision-seq2seq", ("last_hidden_state",)),
        Task("image-text-to-text", "AutoModelForImageTextToText", "vision-language", ("logits",)),
        # Voxtral, Granite Speech: audio features at audio tokens of a decoder-only LM (hf/audio_language.py)
        Task("audio-text-to-text", "AutoModelForSpeechSeq2Seq", "audio-language", ("logits",)),
        Task(
            "automatic-speech-recognition",
            "AutoModelForSpeechSeq2Seq",
            "speech-seq2seq",
            ("last_hidden_state",),
        ),
    )
}
# Connectionist temporal classification (wav2vec2, HuBERT, WavLM): the same task name as Whisper's
# (Optimum's), one graph from ``input_values`` to per-frame ``logits``.
CTC = Task("automatic-speech-recognition", "AutoModelForCTC", "audio", ("logits",))

# A dual encoder's feature-extraction (CLIP, SigLIP, GroupViT: AutoModel) gives what Optimum's
# CLIPOnnxConfig gives for it, the zero-shot outputs; GroupViT is in no zero-shot auto class.
DUAL_ENCODER = Task(
    "feature-extraction",
    "AutoModel",
    "text-vision",
    ("logits_per_image", "logits_per_text", "text_embeds", "image_embeds"),
)

ALIASES = {
    "text2text": "text2text-generation",
    "sequence-classification": "text-classification",
    "causal-lm": "text-generation",
    "text-generation-with-past": "text-generation",  # Optimum's name for onnxport's default
    "masked-lm": "fill-mask",
    "asr": "automatic-speech-recognition",
    "speech2seq-lm": "automatic-speech-recognition",
}

# Architecture class-name suffix → task, most specific first.
_SUFFIXES = (
    ("ForMaskedLM", "fill-mask"),
    ("ForSequenceClassification", "text-classification"),
    ("ForTokenClassification", "token-classification"),
    ("ForQuestionAnswering", "question-answering"),
    ("ForImageClassification", "image-classification"),
    ("ForImageClassificationWithTeacher", "image-classification"),
    ("ForCTC", "automatic-speech-recognition"),
    ("ForAudioClassification", "audio-classification"),
    ("ForVideoClassification", "video-classification"),
    ("ForMultipleChoice", "multiple-choice"),
    ("ForObjectDetection", "object-detection"),
    ("ForSemanticSegmentation", "semantic-segmentation"),
    ("ForDepthEstimation", "depth-estimation"),
    ("ForPrediction", "time-series-forecasting"),  # PatchTSTForPrediction, PatchTSMixerForPrediction
    ("ForCausalLM", "text-generation"),
    ("LMHeadModel", "text-generation"),
    ("ForSpeechSeq2Seq", "automatic-speech-recognition"),
    ("ForConditionalGeneration", "text2text-generation"),
    ("Model", "feature-extraction"),
    ("Encoder", "feature-extraction"),  # DPRContextEncoder (DPRQuestionEncoder is AutoModel's)
)


# transformers' auto-class mappings (``transformers/models/auto/modeling_auto.py``) → task, most
# specific first: an architecture listed in one of them has that task whatever its name's suffix
# (``MarianMTModel`` is a seq2seq LM, ``CLIPModel`` a zero-shot image classifier).
_MAPPINGS = (
    ("MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "automatic-speech-recognition"),
    ("MODEL_FOR_CTC_MAPPING_NAMES", "automatic-speech-recognition"),
    ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "text2text-generation"),
    ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "image-text-to-text"),
    ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "text-generation"),
    ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "fill-mask"),
    ("MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "audio-classification"),
    ("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "image-classification"),
    ("MODEL_FOR_VIDEO_CLASSIFICATION_MAPPING_NAMES", "video-classification"),
    ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "text-classification"),
    ("MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "token-classification"),
    ("MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES", "question-answering"),
    ("MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES", "multiple-choice"),
    ("MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES", "object-detection"),
    ("MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES", "semantic-segmentation"),
    ("MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES", "depth-estimation"),
    ("MODEL_FOR_UNIVERSAL_SEGMENTATION_MAPPING_NAMES", "image-segmentation"),
    ("MODEL_FOR_IMAGE_TO_IMAGE_MAPPING_NAMES", "image-to-image"),
    ("MODEL_FOR_MASK_GENERATION_MAPPING_NAMES", "mask-generation"),
    ("MODEL_FOR_POSE_ESTIMATION_MAPPING_NAMES", "keypoint-detection"),
    ("MODEL_FOR_MASKED_IMAGE_MODELING_MAPPING_NAMES", "masked-im"),
    ("MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES", "zero-shot-image-classification"),
    ("MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES", "zero-shot-object-detection"),
    ("MODEL_FOR_TEXT_TO_WAVEFORM_MAPPING_NAMES", "text-to-audio"),  # VITS (onnxport.hf.speech)
    ("MODEL_MAPPING_NAMES", "feature-extraction"),
)


# Mappings of tasks onnxport.hf does not export (their models combine parts it has no component
# for: a vocoder), named in the error.
_UNSUPPORTED = (("MODEL_FOR_TEXT_TO_SPECTROGRAM_MAPPING_NAMES", "text-to-audio"),)


def _mapped_task(arch: str, mappings: tuple[tuple[str, str], ...] = _MAPPINGS) -> str | None:
    """The task of the first of ``mappings`` that lists ``arch``, else ``None``."""
    # transformers is a heavy optional dependency: imported only for Hugging Face configs
    from transformers.models.auto import modeling_auto

    for mapping, task in mappings:
        for names in getattr(modeling_auto, mapping, {}).values():
            if arch == names or (isinstance(names, (tuple, list)) and arch in names):
                return task
    return None


_MASKED = (("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "fill-mask"),)


def _takes_cache(arch: str) -> bool:
    """Whether transformers' class ``arch`` takes a cache in ``forward``
    (:func:`onnxport.hf.cache.cache_argument`; ``True`` when the class cannot be found)."""
    import transformers  # heavy optional dependency: imported only for Hugging Face configs

    cls = getattr(transformers, arch, None)
    return cls is None or cache_argument(cls.forward) is not None


def _is_ctc(config: Any) -> bool:
    """A config whose model type has a CTC head and no speech seq2seq model (wav2vec2, not Whisper)."""
    # transformers is a heavy optional dependency: imported only for Hugging Face configs
    from transformers.models.auto import modeling_auto

    model_type = getattr(config, "model_type", None)
    return (
        model_type in modeling_auto.MODEL_FOR_CTC_MAPPING_NAMES
        and model_type not in modeling_auto.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES
    )


def model_class(transformers: Any, auto_class: str, config: Any) -> Any:
    """The class whose ``from_pretrained``/``from_config`` builds ``config`` for ``auto_class``: the
    auto class itself, or, for a forecaster no auto class lists (``PatchTSTForPrediction``,
    ``PatchTSMixerForPrediction`` under ``AutoModelForTimeSeriesPrediction``, which lists TimesFM
    only), or for audio-text-to-text of a model the speech seq2seq mapping does not list
    (Qwen2-Audio), its architecture's class; for ``text-generation`` of a vision-language checkpoint that
    ``AutoModelForCausalLM`` does not list (Qwen3-VL, Qwen2.5-VL), ``AutoModelForImageTextToText``,
    whose decoder the task exports from ``input_ids`` as it does for the loaded model."""
    arch = (getattr(config, "architectures", None) or [""])[0]
    if auto_class == "AutoModelForTimeSeriesPrediction" and arch.endswith("ForPrediction") and hasattr(transformers, arch):
        return getattr(transformers, arch)
    model_type = getattr(config, "model_type", None)
    mappings = transformers.models.auto.modeling_auto
    if (auto_class == "AutoModelForSpeechSeq2Seq" and model_type not in mappings.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES
            and hasattr(transformers, arch)):
        return getattr(transformers, arch)  # audio-text-to-text of Qwen2-Audio: listed as seq2seq LM only
    if (auto_class == "AutoModelForCausalLM" and model_type not in mappings.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            and model_type in mappings.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES):
        return transformers.AutoModelForImageTextToText
    return getattr(transformers, auto_class)


def _is_dual_encoder(config: Any) -> bool:
    """Whether ``config``'s base model (``AutoModel``) is a CLIP-style dual encoder: text and vision
    configs, and a forward that returns ``logits_per_image``."""
    if getattr(config, "text_config", None) is None or getattr(config, "vision_config", None) is None:
        return False
    import transformers  # heavy optional dependency: imported only for Hugging Face configs
    from transformers.models.auto import modeling_auto  # heavy optional dependency, as above

    name = modeling_auto.MODEL_MAPPING_NAMES.get(getattr(config, "model_type", None) or "")
    cls = getattr(transformers, name, None) if isinstance(name, str) else None
    return cls is not None and forward_reads(cls, "logits_per_image")


def audio_token_id(config: Any) -> int | None:
    """The config's audio placeholder token (``audio_token_id``, or ``audio_token_index``)."""
    value = getattr(config, "audio_token_id", None)
    return value if value is not None else getattr(config, "audio_token_index", None)


def is_audio_language(config: Any) -> bool:
    """Whether ``config`` is a decoder-only language model fed audio features at audio tokens
    (an audio sub-config, a text sub-config and an audio token; not an encoder-decoder):
    audio-text-to-text (:mod:`onnxport.hf.audio_language`)."""
    return (getattr(config, "audio_config", None) is not None and getattr(config, "text_config", None) is not None
            and audio_token_id(config) is not None and not getattr(config, "is_encoder_decoder", False))


def forward_reads(cls: type, text: str) -> bool:
    """Whether the source of ``cls.forward`` contains ``text`` (``False`` when the source is not
    available)."""
    try:
        return text in inspect.getsource(cls.forward)  # type: ignore[attr-defined]
    except (OSError, TypeError):
        return False


def get_task(name: str, config: Any = None) -> Task:
    """The :class:`Task` called ``name`` (or an alias such as ``text2text``);
    automatic-speech-recognition of a CTC model (``config``: wav2vec2, HuBERT) is :data:`CTC`, of a
    decoder-only audio-language model (Voxtral) audio-text-to-text,
    feature-extraction of a CLIP-style dual encoder :data:`DUAL_ENCODER`.

    Raises:
        HFError: Unknown task; the message lists the known ones.
    """
    task = TASKS.get(ALIASES.get(name, name))
    if task is None:
        raise HFError(f"Unknown task {name!r}. Known tasks: {', '.join(TASKS)}.")
    if task.name == CTC.name and config is not None and _is_ctc(config):
        return CTC
    if task.name in (CTC.name, "text2text-generation") and config is not None and is_audio_language(config):
        return TASKS["audio-text-to-text"]  # listed as speech seq2seq (Voxtral) or seq2seq (Qwen2-Audio): decoder-only
    if task.name == DUAL_ENCODER.name and config is not None and _is_dual_encoder(config):
        return DUAL_ENCODER
    if task.name == "feature-extraction" and getattr(config, "model_type", None) == "decision_transformer":
        return TASKS["reinforcement-learning"]  # Optimum: the same graph for both tasks
    return task


def task_from_model_type(model_type: str | None) -> str:
    """The task for a config without ``architectures``, from transformers' auto-class mappings
    (``transformers/models/auto/modeling_auto.py``): a speech seq2seq model type is
    automatic-speech-recognition, a seq2seq one text2text-generation, an encoder with a masked-LM
    head (BERT: also listed for causal LM) feature-extraction, a decoder in the causal-LM mapping
    (``llama``, ``gpt2``) text-generation; anything else feature-extraction.
    """
    # transformers is a heavy optional dependency: imported only for Hugging Face configs
    from transformers.models.auto import modeling_auto

    if not model_type:
        return "feature-extraction"
    if model_type in modeling_auto.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES:
        return "automatic-speech-recognition"
    if model_type in modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "text2text-generation"
    if model_type in modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "feature-extraction"
    if model_type in modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "text-generation"
    return "feature-extraction"


def infer_task(config: Any) -> Task:
    """The task of a config's first ``architectures`` entry (``BertForMaskedLM`` → fill-mask): the
    transformers auto-class mapping that lists it (:data:`_MAPPINGS`), else its name's suffix.

    Whisper-style ``*ForConditionalGeneration`` models (a config with ``num_mel_bins``) are
    automatic-speech-recognition; a config without ``architectures`` (one saved from
    ``LlamaConfig`` directly) gets its task from ``model_type`` (:func:`task_from_model_type`).

    Raises:
        HFError: The architecture's name matches no task.
    """
    architectures = getattr(config, "architectures", None) or []
    if not architectures and is_audio_language(config):
        return TASKS["audio-text-to-text"]
    if not architectures:
        return TASKS[task_from_model_type(getattr(config, "model_type", None))]
    arch = architectures[0]
    if getattr(config, "model_type", None) == "vision-encoder-decoder":  # TrOCR, Donut
        return TASKS["image-to-text"]
    mapped = _mapped_task(arch)
    if mapped == "text-generation" and not _takes_cache(arch) and _mapped_task(arch, _MASKED) is not None:
        mapped = "fill-mask"  # XLMWithLMHeadModel: listed as both, and it keeps no cache
    if mapped is not None:
        return get_task(mapped, config)
    unsupported = _mapped_task(arch, _UNSUPPORTED)
    if unsupported is not None:
        raise HFError(
            f"{arch} is {'an' if unsupported[0] in 'aeiou' else 'a'} {unsupported} model that predicts a "
            "spectrogram for a separate vocoder, which onnxport.hf does not export (its text-to-audio task "
            "exports VITS, text to waveform in one graph). Export its parts with onnxport.export (a module and "
            f"example inputs: the acoustic model, the vocoder), or pass --task with one of: {', '.join(TASKS)}."
        )
    for suffix, task in _SUFFIXES:
        if arch.endswith(suffix):
            if task == "text2text-generation" and getattr(config, "num_mel_bins", None):
                task = "automatic-speech-recognition"
            return get_task(task, config)
    raise HFError(
        f"Cannot infer the task of architecture {arch!r}; pass task= (--task) with one of: "
        f"{', '.join(TASKS)}."
    )
