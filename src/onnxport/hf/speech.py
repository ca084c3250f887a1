"""text-to-audio: VITS (MMS-TTS) text → waveform, the graph transformers.js's text-to-audio
pipeline runs (``VitsModel``: ``input_ids`` → ``waveform``).

VITS draws noise at inference (its stochastic duration predictor and prior, scaled by the
config's ``noise_scale_duration`` and ``noise_scale``): the graph keeps the draws as ONNX
``RandomNormalLike`` ops, and validation compares it with eager at the draws' mean
(:mod:`onnxport.draws`). The waveform's length comes from the predicted durations, a size known
only at run time (``num_samples``).
"""

from __future__ import annotations

from typing import Any

import torch

from onnxport.errors import HFError
from onnxport.hf import cache as wrappers
from onnxport.hf.dims import SEQUENCE
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, token_ids
from onnxport.hf.parts import generator as _generator


def waveform_component(loaded: LoadedModel) -> Component:
    """``input_ids`` / ``attention_mask`` ``[1, sequence_length]`` (INT64) → ``waveform``
    ``[1, num_samples]`` (float32, at ``config.sampling_rate``) and ``spectrogram``
    ``[1, flow_size, frames]``. One text a graph run: VITS' convolutions guard a batch of 1 under
    torch.export, and transformers.js's pipeline synthesizes one text at a time.

    Raises:
        HFError: The model is not VITS (Bark, MusicGen and the other text-to-waveform models
            generate with a decoder loop: export their parts with onnxport.export).
    """
    model = loaded.model
    if getattr(model.config, "model_type", None) != "vits":
        raise HFError(
            f"text-to-audio exports VITS (MMS-TTS) models; {type(model).__name__} generates its audio another way "
            "(a decoder loop, a codec). Export its parts with onnxport.export and their inputs."
        )
    config = model.config

    def make(sizes: Sizes) -> dict[str, Any]:
        ids = token_ids(config, 1, sizes.sequence, _generator(sizes))
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    axes = {1: SEQUENCE}
    outputs = list(loaded.task.outputs)
    module = wrappers.TextModel(model, outputs, None)
    return Component("model", module, make, {"input_ids": axes, "attention_mask": dict(axes)}, None, outputs)
