"""Audio-language models (``audio-text-to-text``: Voxtral, Granite Speech and the models built like
them) as the three graphs transformers.js runs for them (``src/models/ultravox/modeling_ultravox.js``,
``UltravoxModel``; ``AudioTextToText`` sessions in ``src/models/session_config.js``):

- ``audio_encoder.onnx``: the processor's log-mel features ``[num_chunks, mel_bins, frames]``
  (named ``audio_values`` for Voxtral and Ultravox, whose transformers.js processors call them so;
  ``input_features`` otherwise) → ``audio_features`` ``[audio_tokens, hidden]`` (the audio tower
  and projector, transformers' ``get_audio_features``);
- ``embed_tokens.onnx``: ``input_ids`` → ``inputs_embeds``;
- ``decoder_model_merged.onnx``: the language model from ``inputs_embeds`` with the KV cache
  (:func:`onnxport.hf.inputs.causal_lm_component` with ``embeds=True``).

The caller writes the feature rows at the audio tokens (``audio_token_id``) of the embeddings,
as transformers' ``masked_scatter`` does (:func:`onnxport.hf.vision_language.merge`), then decodes.
"""

from __future__ import annotations

from typing import Any, cast

import torch

from onnxport.errors import HFError
from onnxport.hf import cache as wrappers
from onnxport.hf.dims import BATCH, SEQUENCE, DimName
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes, token_ids
from onnxport.hf.parts import generator as _generator

AUDIO_FEATURES = "audio_features"
CHUNKS = DimName("num_chunks", min=1)  # the audio's fixed-length chunks (Whisper-style towers: 30 s each)
# transformers.js' processors name the features audio_values for these model types
_AUDIO_VALUES = frozenset({"voxtral", "ultravox"})


class AudioFeatures(torch.nn.Module):
    """``input_features`` ``[chunks, mel_bins, frames]`` → ``audio_features`` ``[tokens, hidden]``:
    the audio tower and projector (``get_audio_features``) whose rows replace the audio tokens'
    embeddings, all chunks' rows in order."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_features: torch.Tensor) -> torch.Tensor:
        out = cast(Any, self.model).get_audio_features(input_features)
        features = getattr(out, "pooler_output", out)
        if isinstance(features, (list, tuple)):
            features = torch.cat(list(features))
        return features.reshape(-1, features.shape[-1])


def _mel_shape(model: torch.nn.Module) -> tuple[int, int]:
    """(mel bins, frames) of one chunk: the audio config's ``num_mel_bins`` and, for a Whisper-style
    tower with positions for ``max_source_positions`` frames after its stride-2 convolution,
    twice that (transformers' Whisper encoder checks the length)."""
    audio = cast(Any, model.config).audio_config
    bins, positions = getattr(audio, "num_mel_bins", None), getattr(audio, "max_source_positions", None)
    if not isinstance(bins, int) or not isinstance(positions, int):
        raise HFError(
            f"{type(model).__name__}'s audio config has no num_mel_bins/max_source_positions: audio-text-to-text "
            "exports models with a Whisper-style audio tower on fixed-length chunks (Voxtral, Granite Speech). "
            "Export its parts with onnxport.export."
        )
    return bins, 2 * positions


def components(loaded: LoadedModel) -> list[Component]:
    """The ``audio_encoder`` and ``embed_tokens`` components (module doc); the decoder is
    :func:`onnxport.hf.inputs.causal_lm_component` with ``embeds=True``.

    Raises:
        HFError: No ``get_audio_features`` or no fixed chunk shape in the audio config.
    """
    model = loaded.model
    if not hasattr(model, "get_audio_features"):
        raise HFError(f"{type(model).__name__} has no get_audio_features(input_features): audio-text-to-text exports "
                      "models whose audio features replace audio tokens (Voxtral). Export its parts with onnxport.export.")
    bins, frames = _mel_shape(model)
    name = "audio_values" if getattr(model.config, "model_type", None) in _AUDIO_VALUES else "input_features"
    text_config = cast(Any, model.config).get_text_config()

    def audio(sizes: Sizes) -> dict[str, Any]:
        chunks = 1 + (sizes.seed + 1) % 3  # 2, 3, 1, 2: several chunks, and one
        return {"input_features": torch.randn(chunks, bins, frames, generator=_generator(sizes))}

    def tokens(sizes: Sizes) -> dict[str, Any]:
        return {"input_ids": token_ids(text_config, sizes.batch, sizes.sequence, _generator(sizes))}

    return [
        Component("audio_encoder", AudioFeatures(model), audio, {"input_features": {0: CHUNKS}}, [name],
                  [AUDIO_FEATURES]),
        Component("embed_tokens", wrappers.TokenEmbeddings(model), tokens, {"input_ids": {0: BATCH, 1: SEQUENCE}},
                  ["input_ids"], ["inputs_embeds"]),
    ]


__all__ = ["AUDIO_FEATURES", "AudioFeatures", "components"]
