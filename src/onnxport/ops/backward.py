"""The backward ops of the Core ATen set (gradients of pooling, convolution and normalization),
translated from their closed-form derivatives."""

from __future__ import annotations
