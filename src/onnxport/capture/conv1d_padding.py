"""Audio-codec convolutions whose padding is computed from tensor buffers (transformers'
``EncodecConv1d``, ``MimiConv1d``, ``PocketTTSAudioTokenizerConv1d``).

Each keeps its stride, effective kernel size and total padding as 0-d int64 buffers and computes
the extra right padding that completes the last frame with tensor arithmetic
(``torch.ceil((length - kernel + padding_total) / stride + 1) - 1``, "See `pad_for_conv1d`" in
``modeling_encodec.py``). ``F.pad`` then reads those tensors as Python ints: under torch.export
every pad becomes a data-dependent size (an unbacked symbol), the guards on them cannot be
decided (``if length <= max_pad``), and the captured waveform length is fixed or the capture
fails. During capture the replacement runs each ``forward`` with the three values as Python ints
taken from the wrapped ``conv`` (``stride[0]``, ``(kernel_size[0] - 1) * dilation[0] + 1``, their
difference) and the extra padding in integer arithmetic,
``ceil((length - kernel + padding_total) / stride) * stride + kernel - padding_total - length``,
the same value with ``ceil(a / b) = -(-a // b)``: symbolic in the length, no unbacked sizes.
Their ``_pad1d`` (reflect padding of short inputs) runs without its branch on the length (:func:`pad1d`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import torch

_SIZES = ("stride", "kernel_size", "padding_total")


def conv1d_padding_patches(modules: list[tuple[str, Any]]) -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(class, method name, replacement)`` for the classes of ``modules`` (the imported
    ``transformers.models.*`` modules, by name) that define ``_get_extra_padding_for_conv1d`` and
    whose ``forward`` reads ``padding_total``."""
    patches: list[tuple[Any, str, Callable[..., Any]]] = []
    for module_name, module in modules:
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != module_name:
                continue
            members = vars(cls)
            forward = members.get("forward")
            code = getattr(forward, "__code__", None)
            if forward is not None and "_get_extra_padding_for_conv1d" in members and code is not None \
                    and "padding_total" in code.co_names:
                patches.append((cls, "forward", integer_sizes(forward)))
                patches.append((cls, "_get_extra_padding_for_conv1d", integer_extra_padding(members["_get_extra_padding_for_conv1d"])))
                if isinstance(members.get("_pad1d"), staticmethod):
                    patches.append((cls, "_pad1d", staticmethod(pad1d)))
    return patches


def integer_sizes(forward: Callable[..., Any]) -> Callable[..., Any]:
    """``forward`` run with the module's size buffers as Python ints (:func:`_python_sizes`);
    unchanged for a module without them."""

    @functools.wraps(forward)
    def run(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        if not all(isinstance(self._buffers.get(name), torch.Tensor) for name in _SIZES):
            return forward(self, *args, **kwargs)
        with _python_sizes(self):
            return forward(self, *args, **kwargs)

    return run


def integer_extra_padding(original: Callable[..., Any]) -> Callable[..., Any]:
    """The extra right padding that completes the last frame, in integer arithmetic when the
    sizes are Python ints (inside :func:`integer_sizes`), else ``original``."""

    @functools.wraps(original)
    def extra(self: torch.nn.Module, hidden_states: torch.Tensor) -> Any:
        stride, kernel, total = (getattr(self, name) for name in _SIZES)
        if isinstance(stride, torch.Tensor):
            return original(self, hidden_states)
        length = hidden_states.shape[-1]
        frames = -((kernel - total - length) // stride)  # ceil((length - kernel + total) / stride)
        return frames * stride + kernel - total - length

    return extra


def pad1d(hidden_states: torch.Tensor, paddings: tuple[Any, Any], mode: str = "zero", value: float = 0.0) -> torch.Tensor:
    """``F.pad`` of the last axis; in ``"reflect"`` mode an input no longer than the largest pad is
    first extended with zeros to one past it and the extension cut after, as the classes'
    ``_pad1d`` does under ``if length <= max_pad``, here without the branch: the extension is
    ``max(max_pad - length + 1, 0)`` (``torch.sym_max``), zero for a long input. The branch made the
    capture keep the example's side and the graph fail on short waveforms (onnxruntime's Pad:
    "pre-pad exceeds maximum allowed")."""
    if mode != "reflect":
        return torch.nn.functional.pad(hidden_states, paddings, mode, value)
    length = hidden_states.shape[-1]
    extra = torch.sym_max(torch.sym_max(*paddings) - length + 1, 0)
    padded = torch.nn.functional.pad(torch.nn.functional.pad(hidden_states, (0, extra)), paddings, mode, value)
    return padded[..., : padded.shape[-1] - extra]


@contextlib.contextmanager
def _python_sizes(module: torch.nn.Module) -> Iterator[None]:
    """The ``stride``, ``kernel_size`` and ``padding_total`` buffers of ``module`` replaced by the
    Python ints of its ``conv`` (and ``padding_left`` / ``padding_right``, tensors derived from
    them in ``MimiConv1d.__init__``, by ``total - total // 2`` and ``total // 2``); restored on exit."""
    conv: Any = module.conv
    stride = int(conv.stride[0])
    kernel = (int(conv.kernel_size[0]) - 1) * int(conv.dilation[0]) + 1
    values = {"stride": stride, "kernel_size": kernel, "padding_total": kernel - stride}
    derived = {"padding_right": (kernel - stride) // 2, "padding_left": kernel - stride - (kernel - stride) // 2}
    saved = dict(module._buffers)
    for name in _SIZES:
        del module._buffers[name]
    tensors = {name: module.__dict__[name] for name in derived if isinstance(module.__dict__.get(name), torch.Tensor)}
    try:
        module.__dict__.update(values)
        module.__dict__.update({name: derived[name] for name in tensors})
        yield
    finally:
        for name in values:
            module.__dict__.pop(name, None)
        module._buffers.clear()
        module._buffers.update(saved)  # in their order
        module.__dict__.update(tensors)
