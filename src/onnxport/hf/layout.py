"""Where the files of a Hugging Face export go, and how a user loads the folder.

``hub`` (the default) is the Hugging Face hub layout that transformers.js and Optimum expect:
``config.json``, ``generation_config.json``, the tokenizer and preprocessor files (and
``genai_config.json`` for onnxruntime-genai) at the root, the graphs and their external data under
``onnx/``. ``flat`` puts everything in one folder. The graph file names are the ones
transformers.js looks for (``src/models/session_config.js`` of transformers.js 4.3.1):
``model.onnx`` for encoder-only and decoder-only models, ``encoder_model.onnx`` and
``decoder_model_merged.onnx`` for encoder-decoders ("merged": one decoder runs the first step,
with an empty past, and the later ones), ``encoder_model.onnx`` and ``decoder_model.onnx`` for an
audio codec (``DacModel``, ``MimiModel``: ``src/models/classes/DacPreTrainedModel.js``).
"""

from __future__ import annotations

import json
from pathlib import Path

from onnxport.errors import HFError

LAYOUTS = ("hub", "flat")
DEFAULT_LAYOUT = "hub"
ONNX_FOLDER = "onnx"
# Component name (onnxport.hf.inputs.Component.name) -> file name.
FILE_NAMES = {
    "model": "model.onnx",
    "encoder_model": "encoder_model.onnx",
    "decoder_model": "decoder_model_merged.onnx",
    "codes_decoder": "decoder_model.onnx",  # an audio codec's (onnxport.hf.codec): no cache to merge
    "vision_encoder": "vision_encoder.onnx",
    "embed_tokens": "embed_tokens.onnx",
}


def check_layout(layout: str) -> str:
    """``layout`` if it is ``hub`` or ``flat``.

    Raises:
        HFError: Any other value.
    """
    if layout not in LAYOUTS:
        raise HFError(f"Unknown layout {layout!r}; use one of: {', '.join(LAYOUTS)}.")
    return layout


# A diffusers pipeline's folder (onnxport.hf.diffusion): one folder per component, as Optimum lays
# it out; set by the export, not a --layout choice.
PIPELINE = "pipeline"


def model_path(component: str, layout: str) -> Path:
    """The graph file of ``component`` relative to the export folder (``onnx/model.onnx``;
    ``unet/model.onnx`` in a pipeline)."""
    if layout == PIPELINE:
        return Path(component) / "model.onnx"
    name = FILE_NAMES.get(component, f"{component}.onnx")
    return Path(ONNX_FOLDER) / name if check_layout(layout) == "hub" else Path(name)


# Model types whose hub config.json keeps the language model's fields at the top level (written by
# transformers 4), where transformers.js 4.3.1 reads them (src/configs.js getNormalizedConfig reads
# `qwen2_vl` flat and has no case for `qwen3_5`, so it reads the top level too); transformers 5
# nests them in `text_config`.
_FLAT_TEXT_CONFIGS = frozenset({"qwen2_vl", "qwen3_5", "qwen3_5_moe"})


def flatten_text_config(path: Path) -> None:
    """Copy the ``text_config`` fields to the top level of the ``config.json`` at ``path`` for the
    model types of :data:`_FLAT_TEXT_CONFIGS` (fields already there are kept), so transformers.js
    finds the layer and head counts of the cache it feeds; transformers reads either form."""
    config = json.loads(path.read_text())
    text = config.get("text_config")
    if config.get("model_type") not in _FLAT_TEXT_CONFIGS or not isinstance(text, dict):
        return
    flat = {**{k: v for k, v in text.items() if k not in ("model_type", "architectures")}, **config}
    path.write_text(json.dumps(flat, indent=2, sort_keys=True) + "\n")


def find_model(folder: Path, component: str = "model") -> Path:
    """The graph file of ``component`` in an export folder of either layout.

    Raises:
        HFError: Neither ``onnx/<file>`` nor ``<file>`` exists.
    """
    for layout in LAYOUTS:
        path = folder / model_path(component, layout)
        if path.is_file():
            return path
    raise HFError(
        f"{folder} has no {FILE_NAMES.get(component, component)} (looked in {ONNX_FOLDER}/ and at "
        "the root); give a folder written by onnxport.hf.export / onnxport export --hf."
    )


# Task → transformers.js 4.3.1 pipeline name (``src/pipelines.js``, ``SUPPORTED_TASKS``) where it
# differs; ``None``: no pipeline takes the task.
# transformers.js 4.3.1 loads these without a pipeline (src/pipelines/ has none for them)
_JS_MODEL_CLASSES = {"mask-generation": "SamModel", "image-text-to-text": "AutoModelForImageTextToText",
                     "audio-text-to-text": "AutoModelForAudioTextToText"}
_JS_PIPELINES: dict[str, str | None] = {"semantic-segmentation": "image-segmentation", "multiple-choice": None,
                                       "mask-generation": None, "keypoint-detection": None, "time-series-forecasting": None,
                                       "reinforcement-learning": None,
                                       "video-classification": None}


def vision_features(folder: Path) -> bool:
    """Whether the folder's model reads images (a ``preprocessor_config.json`` with an image
    processor, or a config with ``image_size`` and no ``vocab_size``)."""
    processor = folder / "preprocessor_config.json"
    if processor.is_file() and "image" in processor.read_text(encoding="utf-8", errors="replace").lower():
        return True
    config = folder / "config.json"
    if not config.is_file():
        return False
    try:
        values = json.loads(config.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(values, dict) and "image_size" in values and "vocab_size" not in values


def usage_lines(folder: Path, task: str, layout: str, genai: bool) -> list[str]:
    """How to load ``folder`` in Python (onnxport.inference, onnxruntime), node (transformers.js)
    and onnxruntime-genai; one string per line, for the CLI summary."""
    if layout == PIPELINE:
        denoiser = "unet" if (folder / model_path("unet", layout)).is_file() else "transformer"
        others = sorted(p.parent.name for p in folder.glob("*/model.onnx") if p.parent.name != denoiser)
        return [
            "Load it:",
            f"  Python (onnxruntime): onnxruntime.InferenceSession({str(folder / model_path(denoiser, layout))!r}), "
            f"and {', '.join(f'{name}/' for name in others)} alike",
            # optimum.onnxruntime's ORTDiffusionPipeline picks the pipeline class from model_index.json
            f"  Python (Optimum): optimum.onnxruntime.ORTDiffusionPipeline.from_pretrained({str(folder)!r})",
        ]
    seq2seq = (folder / model_path("encoder_model", layout)).is_file() or task == "text2text-generation"
    graph = folder / model_path("encoder_model" if seq2seq else "model", layout)
    codec = (folder / model_path("codes_decoder", layout)).is_file()
    lines = ["Load it:", f"  Python (onnxruntime): onnxruntime.InferenceSession({str(graph)!r})"]
    if task == "mask-generation":  # onnxport.hf.segment_anything
        lines[1] = (f"  Python (onnxruntime): onnxruntime.InferenceSession(...) on "
                    f"{', '.join(str(folder / model_path(n, layout)) for n in ('vision_encoder', 'prompt_encoder_mask_decoder'))}: "
                    "the image embeddings once, then any prompts (input_points, input_labels)")
    elif (folder / model_path("vision_encoder", layout)).is_file() and seq2seq:  # Florence-2
        lines[1] = (f"  Python (onnxruntime): onnxruntime.InferenceSession(...) on "
                    f"{', '.join(str(folder / model_path(n, layout)) for n in ('vision_encoder', 'embed_tokens', 'encoder_model', 'decoder_model'))}: "
                    "image_features go before the prompt's inputs_embeds (onnxport.hf.generate.greedy_image_text_seq2seq)")
    elif (folder / model_path("audio_encoder", layout)).is_file():  # onnxport.hf.audio_language
        lines[1] = (f"  Python (onnxruntime): onnxruntime.InferenceSession(...) on "
                    f"{', '.join(str(folder / model_path(n, layout)) for n in ('audio_encoder', 'embed_tokens', 'decoder_model'))}: "
                    "audio_features are written at the audio tokens of inputs_embeds (onnxport.hf.generate.greedy_audio_text)")
    elif codec:  # onnxport.hf.codec
        lines[1] = (f"  Python (onnxruntime): onnxruntime.InferenceSession(...) on "
                    f"{', '.join(str(folder / model_path(n, layout)) for n in ('encoder_model', 'codes_decoder'))}: "
                    "input_values → audio codes, codes → audio_values")
    elif (folder / model_path("vision_encoder", layout)).is_file():  # onnxport.hf.vision_language
        lines[1] = (f"  Python (onnxruntime): onnxruntime.InferenceSession(...) on "
                    f"{', '.join(str(folder / model_path(n, layout)) for n in ('vision_encoder', 'embed_tokens', 'decoder_model'))}: "
                    "image_features are written at the image tokens of inputs_embeds (onnxport.hf.vision_language.merge)")
    tokenizer = any((folder / name).is_file() for name in ("tokenizer.json", "vocab.txt"))
    if task == "feature-extraction" and tokenizer:
        lines.append(
            f"  Python (onnxport): onnxport.inference.load({str(folder)!r}).encode(['a sentence'])"
        )
    elif task == "text-generation":
        lines.append(
            f"  Python (onnxport): onnxport.inference.load({str(folder)!r}).generate('Hello', max_new_tokens=20)"
        )
    pipeline = _JS_PIPELINES.get(task, task)
    if vision_features(folder) and task == "feature-extraction":
        pipeline = "image-feature-extraction"
    model_class = _JS_MODEL_CLASSES.get(task)  # tasks transformers.js has no pipeline for
    if codec and layout == "hub":  # DacModel, MimiModel: encode and decode, no pipeline
        lines.append(
            "  node (transformers.js): import { env, AutoModel } from '@huggingface/transformers'; "
            f"env.localModelPath = {str(folder.resolve().parent) + '/'!r}; env.allowRemoteModels = false; "
            f"const model = await AutoModel.from_pretrained({folder.name!r}, {{ dtype: 'fp32' }}); "
            "const codes = await model.encode({ input_values }); const { audio_values } = await model.decode(codes);"
        )
    elif model_class is not None and layout == "hub":
        lines.append(
            f"  node (transformers.js): import {{ env, {model_class}, AutoProcessor }} from '@huggingface/transformers'; "
            f"env.localModelPath = {str(folder.resolve().parent) + '/'!r}; env.allowRemoteModels = false; "
            f"const model = await {model_class}.from_pretrained({folder.name!r}, {{ dtype: 'fp32' }});"
        )
    elif pipeline is None:
        lines.append(f"  node (transformers.js): no pipeline for {task}; load the graph with onnxruntime-node")
    elif layout == "hub":
        parent, name = folder.resolve().parent, folder.name
        lines.append(
            "  node (transformers.js): import { env, pipeline } from '@huggingface/transformers'; "
            f"env.localModelPath = {str(parent) + '/'!r}; env.allowRemoteModels = false; "
            f"const pipe = await pipeline({pipeline!r}, {name!r}, {{ dtype: 'fp32' }});"
        )
    else:
        lines.append("  node (transformers.js): needs the hub layout (export with --layout hub)")
    if genai:
        lines.append(
            f"  onnxruntime-genai: model = og.Model({str(folder)!r}); "
            "generator = og.Generator(model, og.GeneratorParams(model))"
        )
    return lines
