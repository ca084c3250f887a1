"""Capture-time replacements for library functions that stop torch.export on dynamic sizes.

Like torch.onnx's ``_capture_strategies.py`` (``_patch_dynamo_unsupported_functions``), each patch
swaps a function for an equivalent one for the duration of the capture only, and only in modules
the user already imported (no library is imported here).

- transformers MobileNetV1/V2 ``apply_tf_padding`` (TensorFlow "SAME" padding from the input's
  H/W): it reads the sizes with ``int(features.shape[-2])``, which specializes a dynamic H/W to the
  example's value (DynamicShapesError), and branches on ``H % stride == 0``. The replacement
  computes the same pads with symbolic arithmetic and no branch:
  ``pad = max(kernel - ((H - 1) % stride + 1), 0)``, since ``(H - 1) % stride + 1`` is ``stride``
  when ``H % stride == 0`` and ``H % stride`` otherwise (TensorFlow's formula,
  https://www.tensorflow.org/api_docs/python/tf/nn#notes_on_padding_2).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch


def tf_same_padding(features: torch.Tensor, conv_layer: torch.nn.Conv2d, *, dilate: bool) -> torch.Tensor:
    """transformers' ``apply_tf_padding`` without ``int()`` on sizes or a branch on them.

    Args:
        features: (N, C, H, W) input of ``conv_layer``.
        conv_layer: The convolution whose stride, kernel size (and dilation) set the padding.
        dilate: Multiply the pads by the dilation (MobileNetV2's version; V1's does not).

    Returns:
        ``features`` zero-padded (left, right, top, bottom) as TensorFlow's "SAME" padding.
    """
    pads = []
    for size, stride, kernel in zip(features.shape[-2:], conv_layer.stride, conv_layer.kernel_size):
        remainder = (size - 1) % stride + 1
        pads.append(torch.sym_max(kernel - remainder, 0))
    (pad_h, pad_w), (dil_h, dil_w) = pads, (conv_layer.dilation if dilate else (1, 1))
    padding = (pad_w // 2 * dil_w, (pad_w - pad_w // 2) * dil_w, pad_h // 2 * dil_h, (pad_h - pad_h // 2) * dil_h)
    return torch.nn.functional.pad(features, padding, "constant", 0.0)


#: (module name, attribute, replacement) applied while capturing, when the module is imported.
PATCHES: tuple[tuple[str, str, Callable[..., Any]], ...] = (
    ("transformers.models.mobilenet_v2.modeling_mobilenet_v2", "apply_tf_padding",
     functools.partial(tf_same_padding, dilate=True)),
    ("transformers.models.mobilenet_v1.modeling_mobilenet_v1", "apply_tf_padding",
     functools.partial(tf_same_padding, dilate=False)),
)


@contextlib.contextmanager
def library_patches() -> Iterator[None]:
    """Apply :data:`PATCHES` to the modules already imported; restore them on exit."""
    saved = []
    try:
        for module_name, attribute, replacement in PATCHES:
            module = sys.modules.get(module_name)
            if module is not None and hasattr(module, attribute):
                saved.append((module, attribute, getattr(module, attribute)))
                setattr(module, attribute, replacement)
        yield
    finally:
        for module, attribute, original in reversed(saved):
            setattr(module, attribute, original)
