"""Capture-time replacement that lets diffusers' UNets take latents of any height and width.

diffusers' ``UNet2DConditionModel`` (and its 3-D, motion, spatio-temporal and I2VGen-XL
variants) decides once per forward whether its up-sampling blocks resize to a given size::

    default_overall_up_factor = 2**self.num_upsamplers
    for dim in sample.shape[-2:]:
        if dim % default_overall_up_factor != 0:
            forward_upsample_size = True

With ``forward_upsample_size`` each ``Upsample2D`` interpolates to the size of the skip connection
it is concatenated with (``F.interpolate(size=...)``); without it, by ``scale_factor=2``. A latent
that is a multiple of ``2**num_upsamplers`` (64x64 for Stable Diffusion) takes the second path
under a guard, ``Eq(Mod(height, 8), 0)``, so the graph ran only at multiples of 8: the odd latents
of a 520-pixel image failed (torch.onnx's traced graphs and Optimum's have the same limit).

The first path is exact at every size: nearest interpolation to twice the input's size reads
source pixel ``floor(i * in / out) = floor(i / 2)``, what ``scale_factor=2`` reads (PyTorch's
``interpolate`` nearest rule, ``aten/src/ATen/native/UpSample.h`` ``nearest_idx``). During capture
each such forward therefore runs with ``num_upsamplers`` set to :data:`ANY_SIZE`, for which
``2 ** ANY_SIZE`` is itself and ``dim % ANY_SIZE`` is 1: the loop takes the resizing path with no
guard. A non-UNet use of the attribute is not expected (diffusers 0.30-0.42 read it in that line
only), and the real value is restored when the forward returns.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import torch


class _AnySize:
    """``2 ** ANY_SIZE`` is ``ANY_SIZE`` and ``size % ANY_SIZE`` is 1 for an int or a SymInt."""

    def __rpow__(self, base: Any) -> _AnySize:
        return self

    def __rmod__(self, size: Any) -> int:
        return 1

    def __repr__(self) -> str:
        return "onnxport.capture.upsampling.ANY_SIZE"


ANY_SIZE = _AnySize()


def always_resizing(forward: Callable[..., Any]) -> Callable[..., Any]:
    """``forward`` of a diffusers UNet run with ``num_upsamplers`` = :data:`ANY_SIZE` when its
    sample has symbolic sizes (module docstring); the original forward otherwise."""

    @functools.wraps(forward)
    def wrapper(self: Any, sample: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        sizes = sample.shape[-2:]
        if not any(isinstance(size, torch.SymInt) for size in sizes):
            return forward(self, sample, *args, **kwargs)
        count = self.num_upsamplers
        self.num_upsamplers = ANY_SIZE
        try:
            return forward(self, sample, *args, **kwargs)
        finally:
            self.num_upsamplers = count

    return wrapper


def upsampling_patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(class, "forward", replacement)`` for every class of the imported ``diffusers`` modules
    whose ``forward`` (unwrapped) reads ``self.num_upsamplers``."""
    patches: list[tuple[Any, str, Callable[..., Any]]] = []
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("diffusers.") or module is None:
            continue
        for cls in list(vars(module).values()):
            forward = vars(cls).get("forward") if isinstance(cls, type) and cls.__module__ == module_name else None
            if not callable(forward):
                continue
            # diffusers wraps the forward (``apply_lora_scale``); the body is the innermost function
            code = getattr(inspect.unwrap(forward), "__code__", None)
            if code is not None and "num_upsamplers" in code.co_names:
                patches.append((cls, "forward", always_resizing(forward)))
    return patches
