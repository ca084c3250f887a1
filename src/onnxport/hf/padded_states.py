"""A hybrid decoder's linear-attention states over the step's real tokens only.

onnxruntime-genai pads a batch of prompts of different lengths on the right (``PadInputs``,
``src/models/model.cpp``). transformers' linear-attention layers zero the pads' inputs
(``apply_mask_to_padding_states``) but still run over them: a gated delta rule decays its state
at every pad (``g = -exp(A_log) * softplus(a + dt_bias)`` is negative for a zero input) and writes
the short convolution's tails (the first pads' keys and values mix the last real inputs), and a
convolution state keeps the last ``L`` inputs of the step, the pads. A shorter row then continued
from other states than its prompt alone gives (LFM2: the shorter row of a 6- and a 3-token batch
generated other tokens through onnxruntime-genai, with onnxport's folder and with the model
builder's own).

Within :func:`states_over_real_tokens`, where a loaded transformers modeling module defines them
(transformers' own functions in eager runs, :mod:`onnxport.capture.delta_rule`'s and
:mod:`onnxport.capture.chunk_scan`'s scans while capturing):

- the gated delta rule (``torch_chunk_gated_delta_rule``) gets ``g = 0`` and ``beta = 0`` at the
  step's pad positions, where its update is then the identity (the state times ``exp(0)``, nothing
  written), as for the padding of its last chunk;
- Mamba2's scan (``mamba2_chunk_scan``) gets its time step ``dt`` already biased, softplus'ed and
  clamped (``dt_limit``; not for a one-token step, as :mod:`onnxport.capture.chunk_scan`) and 0 at
  the pads, where its update ``h = exp(dt·A)·h + dt·x⊗B`` is then the identity;
- each convolution state the cache stores (``Cache.update_conv_state``, wrapped on the cache
  instance) is the ``L`` columns of ``concat(past, new)`` ending at the row's last real token of
  the step (:func:`~onnxport.hf.right_padding.last_real_positions`), not the last ``L``.

A row whose step ends with a real token (unpadded, left-padded with an empty past, every one-token
step) gets transformers' states; a right-padded row gets the states of its real tokens, the ones
its prompt alone gives.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from onnxport.capture.patches import replaced
from onnxport.hf.right_padding import last_real_positions

_GATED_DELTA_RULE = "torch_chunk_gated_delta_rule"
_MAMBA2_SCAN = "mamba2_chunk_scan"


def _masked_rule(rule: Callable[..., Any], real: Callable[[], torch.Tensor]) -> Callable[..., Any]:
    """``rule`` with ``g`` and ``beta`` (``[batch, sequence, heads]``, by keyword or after the
    query, key and value) zero where ``real()`` (``[batch, sequence]``, 1 = a real token) is 0."""

    def masked(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        rest = list(args)
        for index, name in enumerate(("g", "beta")):
            if name in kwargs:
                kwargs[name] = kwargs[name] * real()[..., None].to(kwargs[name].dtype)
            elif index < len(rest):
                rest[index] = rest[index] * real()[..., None].to(rest[index].dtype)
        return rule(query, key, value, *rest, **kwargs)

    return masked


def _masked_scan(scan: Callable[..., Any], real: Callable[[], torch.Tensor]) -> Callable[..., Any]:
    """``scan`` (transformers' ``mamba2_chunk_scan`` signature) fed the final time step, 0 where
    ``real()`` is 0 (module docstring)."""

    def masked(hidden_states: torch.Tensor, dt: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        bias = kwargs.pop("dt_bias", None)
        if bias is not None:
            dt = dt + bias.to(dt.dtype)
        if kwargs.pop("dt_softplus", False):
            dt = torch.nn.functional.softplus(dt)
        low, high = kwargs.pop("dt_limit", (0.0, float("inf")))
        if (low, high) != (0.0, float("inf")):  # the length as a tensor: an op, not a guard
            one_token = torch.ones_like(dt[:1, :, :1]).sum() == 1
            dt = torch.where(one_token, dt, torch.clamp(dt, min=low, max=high))
        return scan(hidden_states, dt * real()[..., None].to(dt.dtype), *args, **kwargs)

    return masked


def _realigned_conv_states(cache: Any, positions: Callable[[], torch.Tensor]) -> Callable[..., Any]:
    """``cache.update_conv_state`` storing each row's ``L`` columns ending at its last real token
    (``positions()``: ``[batch]`` int64 within the step) of the ``concat(past, new)`` it returns; a
    model's own cache class with another signature or layers (Zamba2's) is called as it is."""
    update = cache.update_conv_state

    def realigned(conv_states: Any, layer_idx: Any, *args: Any, **kwargs: Any) -> Any:
        state_idx = args[0] if args else kwargs.get("state_idx", 0)
        layer = cache.layers[layer_idx] if isinstance(layer_idx, int) and layer_idx < len(cache.layers) else None
        previous = getattr(layer, "has_previous_state", None)  # transformers' LinearAttentionLayer
        continued = (
            isinstance(conv_states, torch.Tensor) and previous is not None and bool(previous[state_idx])
            and not getattr(layer, "record_past", False)
        )  # fmt: skip
        full = update(conv_states, layer_idx, *args, **kwargs)
        if continued and layer is not None:  # full = concat(past, new): the past's L columns, then the step's
            width = layer.conv_states[state_idx].shape[-1]
            columns = positions()[:, None] + 1 + torch.arange(width, device=full.device)[None, :]
            index = columns[:, None, :].expand(full.shape[0], full.shape[1], width)
            layer.conv_states[state_idx] = full.gather(-1, index)
        return full

    return realigned


@contextlib.contextmanager
def states_over_real_tokens(cache: Any, attention_mask: torch.Tensor, length: int | torch.SymInt) -> Iterator[None]:
    """Within the block, the gated delta rules and Mamba2 scans of the loaded transformers modeling
    modules and ``cache``'s convolution states skip the step's pad tokens (module docstring).

    Args:
        cache: The step's transformers ``Cache`` (its ``update_conv_state`` is wrapped; a cache
            without one is left as it is).
        attention_mask: ``[batch_size, past_sequence_length + sequence_length]``, 1 = a real token.
        length: The step's token count (``sequence_length``).
    """
    # computed at the first use only: a decoder without such layers traces nothing more
    real = functools.cache(lambda: attention_mask[:, attention_mask.shape[1] - length :] != 0)
    wrappers = {_GATED_DELTA_RULE: _masked_rule, _MAMBA2_SCAN: _masked_scan}
    functions = [
        (module, attribute, wrappers[attribute](vars(module)[attribute], real))
        for name, module in list(sys.modules.items()) if name.startswith("transformers.models.") and module is not None
        for attribute in wrappers if callable(vars(module).get(attribute))
    ]  # fmt: skip
    convolutions = callable(getattr(cache, "update_conv_state", None)) and hasattr(cache, "layers")
    if convolutions:
        cache.update_conv_state = _realigned_conv_states(cache, functools.cache(lambda: last_real_positions(attention_mask, length)))
    try:
        with replaced(functions):
            yield
    finally:
        if convolutions:
            del cache.update_conv_state
