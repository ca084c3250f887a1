"""Tasks: what onnxport.hf exports for each, and the task inferred from a config's architecture."""

from __future__ import annotations

import dataclasses
from typing import Any

from onnxport.errors import HFError


@dataclasses.dataclass(frozen=True)
class Task:
    """One export task.

    Attributes:
        name: The task name (Optimum's spelling).
        auto_class: The ``transformers`` auto class that loads the model for this task.
        kind: How inputs and components are built: ``"text"``, ``"vision"``, ``"causal-lm"``,
            ``"seq2seq"`` or ``"speech-seq2seq"``.
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
        Task("image-classification", "AutoModelForImageClassification", "vision", ("logits",)),
        Task("text-generation", "AutoModelForCausalLM", "causal-lm", ("logits",)),
        Task("text2text-generation", "AutoModelForSeq2SeqLM", "seq2seq", ("last_hidden_state",)),
        Task(
            "automatic-speech-recognition",
            "AutoModelForSpeechSeq2Seq",
            "speech-seq2seq",
            ("last_hidden_state",),
        ),
    )
}
ALIASES = {
    "text2text": "text2text-generation",
    "sequence-classification": "text-classification",
    "causal-lm": "text-generation",
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
    ("ForCausalLM", "text-generation"),
    ("LMHeadModel", "text-generation"),
    ("ForSpeechSeq2Seq", "automatic-speech-recognition"),
    ("ForConditionalGeneration", "text2text-generation"),
    ("Model", "feature-extraction"),
)


def get_task(name: str) -> Task:
    """The :class:`Task` called ``name`` (or an alias such as ``text2text``).

    Raises:
        HFError: Unknown task; the message lists the known ones.
    """
    task = TASKS.get(ALIASES.get(name, name))
    if task is None:
        raise HFError(f"Unknown task {name!r}. Known tasks: {', '.join(TASKS)}.")
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
    """The task of a config's first ``architectures`` entry (``BertForMaskedLM`` → fill-mask).

    Whisper-style ``*ForConditionalGeneration`` models (a config with ``num_mel_bins``) are
    automatic-speech-recognition; a config without ``architectures`` (one saved from
    ``LlamaConfig`` directly) gets its task from ``model_type`` (:func:`task_from_model_type`).

    Raises:
        HFError: The architecture's name matches no task.
    """
    architectures = getattr(config, "architectures", None) or []
    if not architectures:
        return TASKS[task_from_model_type(getattr(config, "model_type", None))]
    arch = architectures[0]
    for suffix, task in _SUFFIXES:
        if arch.endswith(suffix):
            if task == "text2text-generation" and getattr(config, "num_mel_bins", None):
                task = "automatic-speech-recognition"
            return TASKS[task]
    raise HFError(
        f"Cannot infer the task of architecture {arch!r}; pass task= (--task) with one of: "
        f"{', '.join(TASKS)}."
    )
