"""Whether a decoder's cache is one ``key_value`` tensor per layer (multi-query GPT-BigCode).

Optimum exports a multi-query GPT-BigCode (StarCoder, SantaCoder) with one
``past_key_values.{i}.key_value`` input per layer, ``(batch_size, past_sequence_length, 2 *
head_dim)``, and transformers.js feeds it so (``getKeyValueNames`` with
``normalized_config.multi_query``): the standard export does the same. onnxruntime-genai has no
such input (``past_key_names`` / ``past_value_names`` in genai_config.json) and
GroupQueryAttention's in-place buffers are one key and one value per layer, so the onnxruntime
target (:func:`separate_key_values`, entered by :func:`onnxport.hf.export.export`) keeps them apart:
``past_key_values.{i}.key`` / ``.value``, ``(batch_size, 1, past_sequence_length, head_dim)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# process-wide, not per thread: the streamed path validates in a worker thread of the export
_apart = [False]


def fused_key_value(config: Any) -> bool:
    """Whether the decoder of ``config`` exports one ``key_value`` cache tensor per layer: a
    multi-query GPT-BigCode outside :func:`separate_key_values` (module docstring)."""
    multi_query = getattr(config, "model_type", None) == "gpt_bigcode" and bool(getattr(config, "multi_query", False))
    return multi_query and not _apart[0]


@contextlib.contextmanager
def separate_key_values(apart: bool = True) -> Iterator[None]:
    """Within the block (process-wide: the export's worker threads too), with ``apart``, every
    decoder exports its keys and values as separate cache tensors."""
    before = _apart[0]
    _apart[0] = apart
    try:
        yield
    finally:
        _apart[0] = before
