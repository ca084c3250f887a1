"""Capture-time replacements that let Swin-family models take any image size.

transformers' Swin, Swin V2, Donut-Swin, MaskFormer-Swin, CLAP's audio Swin, Swin2SR and FocalNet
pad their maps with ``maybe_pad`` methods that branch on the symbolic sizes: the patch embedding
pads the image to a multiple of the patch (``if width % patch != 0``), the patch merging pads odd
maps (``if height % 2 == 1``), and each window layer crops its padding back only ``if
pad_values[3] > 0 or pad_values[5] > 0``. torch.export records each branch taken at the example
under a guard, so a graph captured at one image size held that size's padding path (a
``DynamicShapesError`` at the others). Zero padding and cropping to the unpadded size are the
identity when nothing needs padding, so the replacements take the padding path at every size:

- patch embeddings: pad width and height to the next multiple of ``patch_size`` (right and
  bottom, zeros, as the originals do), by ``(-size) % patch``, which is 0 for a multiple;
- patch merging: pad ``(batch, height, width, channels)`` maps by ``height % 2``, ``width % 2``;
- window layers: pad to the next multiple of ``window_size`` (the originals' own formula, which is
  not a branch), and report the pads as :data:`CROP`, which compares greater than 0, so that the
  forward always crops back to ``[:height, :width]``.

Swin's layers also drop their shift where the input's grid is no larger than the window
(``set_shift_and_window_size``, on every forward, a branch on the grid; a grid smaller than the
window fails in eager anyway: the attention's position bias is sized for the window). During
capture a shifted layer computes the shifted path (roll and mask) and selects, with
``torch.where`` on a 0-d condition from the symbolic grid, between it and the unshifted map with a
zero mask (adding zeros to the scores is exact), which is what eager computes at a grid no larger
than the window. transformers keeps the dropped shift on the module afterwards, so eager's result
at one size depends on the sizes it ran at before; onnxport's eager references run from the
model's current state each time (:func:`onnxport.verify.ties.kept_state`).

Each replacement runs the original when the sizes are plain ints (a static capture).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 (the torch convention)


class _Crop(int):
    """A pad amount that reads as positive: the window layers' forward compares its pads with 0
    only to decide whether to crop the padding back, and cropping an unpadded map to its own
    size is the identity."""

    def __gt__(self, other: object) -> bool:
        return True


#: The pad amount the window layers report during capture (the forward always crops).
CROP = _Crop(0)


def _symbolic(*sizes: Any) -> bool:
    return any(isinstance(size, torch.SymInt) for size in sizes)


def _pad_to_patches(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def maybe_pad(self: Any, pixel_values: torch.Tensor, height: Any, width: Any) -> torch.Tensor:
        if not _symbolic(height, width):
            return original(self, pixel_values, height, width)
        patch_h, patch_w = self.patch_size
        return F.pad(pixel_values, (0, (-width) % patch_w, 0, (-height) % patch_h))

    return maybe_pad


def _pad_to_even(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def maybe_pad(self: Any, input_feature: torch.Tensor, height: Any, width: Any) -> torch.Tensor:
        if not _symbolic(height, width):
            return original(self, input_feature, height, width)
        return F.pad(input_feature, (0, 0, 0, width % 2, 0, height % 2))

    return maybe_pad


def _pad_to_windows(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def maybe_pad(self: Any, hidden_states: torch.Tensor, height: Any, width: Any) -> tuple[torch.Tensor, tuple[int, ...]]:
        if not _symbolic(height, width):
            return original(self, hidden_states, height, width)  # type: ignore[no-any-return]
        window = self.window_size
        pad_right = (window - width % window) % window
        pad_bottom = (window - height % window) % window
        hidden_states = F.pad(hidden_states, (0, 0, 0, pad_right, 0, pad_bottom))
        return hidden_states, (0, 0, 0, CROP, 0, CROP)

    return maybe_pad


# Swin layers whose shift depends on the input's grid during the current forward: layer → 0-d
# bool tensor, true where the grid is larger than the window (eager's shifted path)
_SHIFTED: dict[Any, torch.Tensor] = {}


def _shift_by_grid(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def set_shift_and_window_size(self: Any, input_resolution: tuple[Any, Any]) -> None:
        if not _symbolic(*input_resolution):
            original(self, input_resolution)
        elif self.shift_size > 0:  # eager drops the shift where the grid is no larger than the window
            _SHIFTED[self] = torch.scalar_tensor(torch.sym_min(*input_resolution)) > self.window_size

    return set_shift_and_window_size


def _shift_where_shifted(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def cyclic_shift(self: Any, hidden_states: torch.Tensor, reverse: bool = False) -> torch.Tensor:
        shifted = original(self, hidden_states, reverse)
        condition = _SHIFTED.get(self)
        return shifted if condition is None else torch.where(condition, shifted, hidden_states)

    return cyclic_shift


def _mask_where_shifted(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get_attn_mask(self: Any, *args: Any, **kwargs: Any) -> torch.Tensor | None:
        mask = original(self, *args, **kwargs)
        condition = _SHIFTED.get(self)
        return mask if mask is None or condition is None else torch.where(condition, mask, torch.zeros_like(mask))

    return get_attn_mask


def _forgetting_shift(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            _SHIFTED.pop(self, None)

    return forward


# (class name suffix, method, replacement factory): the patch embeddings' ``maybe_pad`` pads
# NCHW images to patches; the patch merging's pads NHWC maps to even sides; the layers' pads to
# windows; the shift methods are replaced together, in layers that have all four ("Shifted")
_METHODS: tuple[tuple[str, str, Callable[[Callable[..., Any]], Callable[..., Any]]], ...] = (
    ("PatchEmbeddings", "maybe_pad", _pad_to_patches),
    ("PatchMerging", "maybe_pad", _pad_to_even),
    ("Layer", "maybe_pad", _pad_to_windows),
    ("Shifted", "set_shift_and_window_size", _shift_by_grid),
    ("Shifted", "cyclic_shift", _shift_where_shifted),
    ("Shifted", "get_attn_mask", _mask_where_shifted),
    ("Shifted", "forward", _forgetting_shift),
)
_SHIFT_METHODS = ("set_shift_and_window_size", "cyclic_shift", "get_attn_mask", "forward")


def window_patches(modules: list[tuple[str, Any]]) -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(class, method name, replacement)`` for the ``maybe_pad`` methods of the classes named
    ``*PatchEmbeddings``, ``*PatchMerging`` and ``*Layer`` of ``modules`` (the imported
    ``transformers.models.*`` modules, by name: Swin, Swin V2, Donut-Swin, MaskFormer-Swin, CLAP,
    Swin2SR, FocalNet), and for the shift methods of the ``*Layer`` classes that set their shift
    per forward in ``set_shift_and_window_size`` and apply it in ``cyclic_shift`` and
    ``get_attn_mask`` (Swin; Donut-Swin and CLAP roll inline in their forward: their shift stays
    as the example's grid sets it). A ``*Layer`` is patched only if its ``maybe_pad`` pads to
    ``window_size`` by the remainder (DiNAT's pads maps smaller than its kernel up to it, with
    ``max``: left alone)."""
    patches: list[tuple[Any, str, Callable[..., Any]]] = []
    for module_name, module in modules:
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != module_name:
                continue
            shifted = cls.__name__.endswith("Layer") and all(callable(vars(cls).get(m)) for m in _SHIFT_METHODS)
            for suffix, name, replacement in _METHODS:
                method = vars(cls).get(name)
                named = shifted if suffix == "Shifted" else cls.__name__.endswith(suffix)
                if named and callable(method) and _pads_like(suffix, method):
                    patches.append((cls, name, replacement(method)))
    return patches


def any_size(model: torch.nn.Module) -> bool:
    """Whether ``model`` pads any image to its patches and windows (a module with ``maybe_pad``:
    Swin, Swin V2, FocalNet, MaskFormer-Swin) in a way these replacements take at every size: not
    when a layer sets its shift per forward and rolls inline (Donut-Swin, CLAP: a grid no larger
    than the window drops the shift there, a branch the capture holds one side of)."""
    modules = list(model.modules())
    inline_shift = any(callable(getattr(m, "set_shift_and_window_size", None))
                       and not all(callable(getattr(m, name, None)) for name in _SHIFT_METHODS) for m in modules)
    return not inline_shift and any(callable(getattr(m, "maybe_pad", None)) for m in modules)


def _pads_like(suffix: str, method: Callable[..., Any]) -> bool:
    """Whether ``method`` reads what its replacement assumes (``patch_size`` for the patch
    embeddings, ``window_size`` for the layers)."""
    names = getattr(getattr(method, "__code__", None), "co_names", ())
    if suffix == "Layer" and "max" in names:  # DiNAT: pads maps smaller than its kernel up to it
        return False
    wanted = {"PatchEmbeddings": "patch_size", "Layer": "window_size"}.get(suffix)
    return wanted is None or wanted in names
