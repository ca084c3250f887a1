"""The names of the dynamic dimensions of every Hugging Face export, in one place.

They follow the convention of Optimum's ONNX configs and transformers.js (which builds the empty
first-step KV cache from the graph's input metadata and resolves only a dim called
``batch_size``; every other symbolic dim of a ``past_key_values.*`` input becomes 0), and of
onnxruntime-genai's builder (``total_sequence_length`` for the attention mask and ``present.*``).
Source: transformers.js 4.3.1 ``src/models/modeling_utils.js`` (``addPastKeyValues``), Optimum
``exporters/onnx/config.py`` (``TextDecoderOnnxConfig``), onnxruntime-genai
``src/python/py/models/builders/base.py``.
"""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import torch

from onnxport.capture.dynamic_shapes import DimName

# Batches and token sequences hold at least one item (captured as Dim.DYNAMIC(min=1)); the past of
# a KV cache is empty on the first step (min 0).
BATCH = DimName("batch_size", min=1)
SEQUENCE = DimName("sequence_length", min=1)
PAST_SEQUENCE = "past_sequence_length"
TOTAL_SEQUENCE = DimName("total_sequence_length", min=1)  # past_sequence_length + sequence_length
ENCODER_SEQUENCE = DimName("encoder_sequence_length", min=1)
# The cross-attention cache's length (Optimum's name; empty when transformers.js feeds the first step).
ENCODER_SEQUENCE_OUT = "encoder_sequence_length_out"
NUM_CHANNELS = (
    "num_channels"  # Optimum's name; onnxport keeps the channel count fixed (conv weights)
)
NUM_CHOICES = DimName("num_choices", min=1)  # multiple-choice inputs, axis 1
TEXT_BATCH = DimName("text_batch_size", min=1)  # CLIP-style: texts and images batched apart
IMAGE_BATCH = DimName("image_batch_size", min=1)
IMAGES = DimName("num_images", min=1)  # images per row: Idefics3 / SmolVLM's splits (onnxport.hf.vision_language)
AUDIOS = DimName("num_audios", min=1)  # audio clips of a batch (Gemma 4: onnxport.hf.image_audio_text)
HEIGHT = DimName("height", min=1)
WIDTH = DimName("width", min=1)


def image_sides(scale: int, smallest: int = 1) -> dict[int, Any]:
    """Dynamic shapes of an NCHW image: batch, and height/width as multiples of ``scale``
    (``scale * Dim("height")``, so the graph dims read ``8*height``). A VAE's
    down-sampling stages need sides divisible by 2 per stage, SD3's patch embedding by ``patch_size``, a detector whose feature pyramid
    adds maps upsampled 2x by 32 (RT-DETR, D-FINE); a plain dim would make torch.export guard on
    the remainder. Sides are at least ``smallest`` pixels (rounded up to the multiple)."""
    if scale == 1:
        return {0: BATCH, 2: DimName(HEIGHT, min=smallest), 3: DimName(WIDTH, min=smallest)}
    side = {name: torch.export.Dim(name, min=-(-smallest // scale)) for name in (str(HEIGHT), str(WIDTH))}
    return {0: BATCH, 2: scale * side[str(HEIGHT)], 3: scale * side[str(WIDTH)]}


# How torch.export spells the grown cache length of ``present.*`` (a sympy sum of the two dims).
_TOTAL_SPELLINGS = frozenset({f"{PAST_SEQUENCE} + {SEQUENCE}", f"{SEQUENCE} + {PAST_SEQUENCE}"})


def name_total_sequence(model: ir.Model) -> int:
    """Rename the symbolic dim ``past_sequence_length + sequence_length`` to
    ``total_sequence_length`` on the graph's inputs, outputs and intermediate values.

    torch.export names the length of the concatenated cache by its formula; onnxruntime-genai's
    graphs and the attention mask use ``total_sequence_length`` for that length.

    Args:
        model: The ONNX model, changed in place.

    Returns:
        The number of dims renamed.
    """
    renamed = 0
    values = [*model.graph.inputs, *model.graph.outputs]
    values += [out for node in model.graph.all_nodes() for out in node.outputs]
    for value in values:
        shape = value.shape
        if shape is None or not any(str(d) in _TOTAL_SPELLINGS for d in shape.dims):
            continue
        value.shape = ir.Shape(
            [TOTAL_SEQUENCE if str(d) in _TOTAL_SPELLINGS else d for d in shape.dims]
        )
        renamed += 1
    return renamed
