"""RecurrentGemma's RG-LRU linear recurrence as a ``scan`` higher-order op, so torch.export keeps
the sequence dynamic.

transformers' ``RecurrentGemmaRglru._rnn_scan`` (modeling_recurrent_gemma.py) runs

    h_t = a_t * h_{t-1} + x_t    (h_0 the given state, or 0),    a_t = recurrent_gate_t * ~reset_t

(Botev et al. 2024, "RecurrentGemma", the RG-LRU of Griffin, De et al. 2024) in a Python loop,
``for t in range(hidden_states.shape[1])``, which torch.export unrolls for the example's length
(a ``DynamicShapesError`` naming the loop). :func:`rnn_scan` computes the same values with the same
float operations in the same order, the loop a ``torch._higher_order_ops.scan.scan`` over the
sequence axis, which onnxport translates to one ONNX ``Scan`` (as :mod:`onnxport.capture.selective_scan`
does for Mamba). transformers' one-token branch (``if hidden_states.shape[1] == 1``, a decode step
with a state) is the same recurrence for one step, so the scan serves it too; the capture's only
branch is then the scan.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._higher_order_ops.scan import scan


def rnn_scan(
    self: Any,
    hidden_states: torch.Tensor,
    recurrent_gate: torch.Tensor,
    reset: torch.Tensor,
    recurrent_states: torch.Tensor | None,
    acc_dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' ``_rnn_scan`` with the sequence loop as a ``scan`` op.

    Args:
        hidden_states: (batch, seq_len, lru_width) ``x``.
        recurrent_gate: (batch, seq_len, lru_width) ``a`` before the reset.
        reset: (batch, seq_len, 1) bool, true where a segment starts.
        recurrent_states: (batch, lru_width) initial state, or ``None`` (zeros).
        acc_dtype: The accumulation dtype.

    Returns:
        The (batch, seq_len, lru_width) outputs in ``hidden_states``' dtype and the last state in
        ``acc_dtype``.
    """
    gate = (recurrent_gate * ~reset).type(acc_dtype)
    if recurrent_states is None:
        initial = torch.zeros(hidden_states[:, 0].shape, dtype=acc_dtype, device=hidden_states.device)
    else:
        initial = recurrent_states.to(device=gate.device, dtype=acc_dtype)

    def step(state: torch.Tensor, xs: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        a, x = xs
        state = a * state + x.type(acc_dtype)
        return state, state.to(hidden_states.dtype, copy=True)  # a copy: scan refuses a carry aliased by an output

    last, outputs = scan(step, initial, (gate.transpose(0, 1), hidden_states.transpose(0, 1)))
    return outputs.transpose(0, 1), last
