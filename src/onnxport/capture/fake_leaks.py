"""Attributes a capture left holding fake tensors, put back as they were.

torch.export's non-strict capture runs the model's Python code on fake tensors. A model that caches
a tensor it computes on its first call in a plain attribute keeps the fake one: diffusers' Z-Image
(0.42) builds its complex rotary tables on the first forward and stores them in
``model.rope_embedder.freqs_cis``, an attribute of a plain object (not a module) of the model.
Exported before any eager run, the model kept three ``FakeTensor`` tables, and every later eager run
-- the user's, and onnxport's own verification -- indexed them and returned other values (max abs
difference 0.64 on outputs of magnitude 2), without an error.

:func:`fake_tensors_undone` records the attributes of the model's modules and of the plain
objects they hold, and on exit puts back every attribute that now holds a fake tensor (directly or
in a list, tuple or dict): its value from before (a dict or list the code filled in place gets its
entries from before back: LeViT's ``attention_bias_cache`` after an hf probe), or no attribute
when it had none. The modules' parameters, buffers and submodules are not touched (torch.export
restores them itself).
"""

from __future__ import annotations

import contextlib
import inspect
import types
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor

# nn.Module's own bookkeeping, which torch.export leaves as it found it
_MODULE_STATE = frozenset({"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"})
_DEPTH = 3  # nesting of lists/tuples/dicts searched for a fake tensor


def holds_fake(value: Any, depth: int = _DEPTH) -> bool:
    """Whether ``value`` is a ``FakeTensor`` or a list, tuple or dict holding one (``depth`` levels)."""
    if isinstance(value, FakeTensor):
        return True
    if depth == 0:
        return False
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (list, tuple)) and any(holds_fake(v, depth - 1) for v in value)


def _owners(model: torch.nn.Module) -> list[Any]:
    """The model's modules and the plain objects (with a ``__dict__``) their attributes hold."""
    owners: list[Any] = []
    seen: set[int] = set()
    for module in model.modules():
        for candidate in (module, *vars(module).values()):
            plain = (
                hasattr(candidate, "__dict__")
                and not isinstance(candidate, (torch.nn.Module, torch.Tensor, type, types.ModuleType))
                and not inspect.isroutine(candidate)
            )
            if (candidate is module or plain) and id(candidate) not in seen:
                seen.add(id(candidate))
                owners.append(candidate)
    return owners


@contextlib.contextmanager
def fake_tensors_undone(model: Any) -> Iterator[None]:
    """Within the block anything goes; on exit, every attribute of ``model``'s modules (and of the
    plain objects they hold) that holds a fake tensor is put back (module docstring)."""
    if not isinstance(model, torch.nn.Module):
        yield
        return
    saved = [
        (owner, {name: (value, _contents(value)) for name, value in vars(owner).items() if name not in _MODULE_STATE})
        for owner in _owners(model)
    ]
    try:
        yield
    finally:
        for owner, before in saved:
            state = vars(owner)
            for name in [n for n, v in state.items() if n not in _MODULE_STATE and holds_fake(v)]:
                value, contents = before.get(name, (None, None))
                if contents is not None and state[name] is value:  # a cache filled in place
                    _refill(value, contents)
                elif name in before and not holds_fake(value):
                    state[name] = value
                else:
                    del state[name]


def _contents(value: Any) -> Any:
    """A shallow copy of a dict or list (a cache filled in place keeps its identity), else ``None``."""
    if isinstance(value, dict):
        return dict(value)
    return list(value) if isinstance(value, list) else None


def _refill(container: Any, contents: Any) -> None:
    """``container`` (a dict or list) holding ``contents`` again."""
    container.clear()
    if isinstance(container, dict):
        container.update(contents)
    else:
        container.extend(contents)


__all__ = ["fake_tensors_undone", "holds_fake"]
