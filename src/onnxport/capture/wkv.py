"""RWKV's WKV linear attention as a ``scan`` higher-order op, so torch.export keeps the sequence
dynamic.

transformers' ``rwkv_linear_attention_cpu`` (modeling_rwkv.py, the path it takes off CUDA) runs the
RWKV-4 time-mixing recurrence (Peng et al. 2023, "RWKV: Reinventing RNNs for the Transformer Era",
eq. 14-16) in its numerically stable form, with ``w = -exp(time_decay)`` and ``u = time_first``,
per channel::

    m_out = max(m, k_t + u)
    wkv_t = (e^(m - m_out) a + e^(k_t + u - m_out) v_t) / (e^(m - m_out) b + e^(k_t + u - m_out))
    m'    = max(m + w, k_t)
    a'    = e^(m + w - m') a + e^(k_t - m') v_t,    b' = e^(m + w - m') b + e^(k_t - m')

(``a``, ``b``, ``m``: the numerator, denominator and max states; zeros, zeros and -1e38 without a
state) in a Python loop, ``for current_index in range(seq_length)``, which torch.export unrolls for
the example's length (the sequence length was then fixed: "specialized it to be a constant").
:func:`wkv_scan` computes the same values with the same float operations in the same order, the
loop a ``torch._higher_order_ops.scan.scan`` over the sequence axis, which onnxport translates to
one ONNX ``Scan`` (as :mod:`onnxport.capture.selective_scan` does for Mamba).
"""

from __future__ import annotations

import torch
from torch._higher_order_ops.scan import scan

State = list[torch.Tensor] | tuple[torch.Tensor, ...]


def wkv_scan(
    time_decay: torch.Tensor,
    time_first: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    state: State | None = None,
    return_state: bool = False,
) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """transformers' ``rwkv_linear_attention`` (CPU path) with the sequence loop as a ``scan`` op.

    Args:
        time_decay: (attention_hidden,) ``log(-w)``: the decay is ``w = -exp(time_decay)``.
        time_first: (attention_hidden,) ``u``, the bonus of the current token.
        key: (batch, seq_len, attention_hidden) keys.
        value: (batch, seq_len, attention_hidden) values.
        state: ``[num, den, max]`` states of (batch, attention_hidden) each, or ``None``.
        return_state: Return the last states also when no state was given.

    Returns:
        The (batch, seq_len, attention_hidden) output in ``key``'s dtype, and the last
        ``[num, den, max]`` states (float32 like transformers' own) when a state was given or
        ``return_state``, else ``None``.
    """
    if state is None:
        zeros = torch.zeros_like(key[:, 0], dtype=torch.float32)
        initial = (zeros, zeros.clone(), zeros - 1e38)
    else:
        initial = tuple(state)  # type: ignore[assignment]
    decay = -torch.exp(time_decay)
    dtype = key.dtype

    def step(
        carry: tuple[torch.Tensor, torch.Tensor, torch.Tensor], xs: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
        num_state, den_state, max_state = carry
        current_key, current_value = xs[0].float(), xs[1]
        max_for_output = torch.maximum(max_state, current_key + time_first)
        e1 = torch.exp(max_state - max_for_output)
        e2 = torch.exp(current_key + time_first - max_for_output)
        output = ((e1 * num_state + e2 * current_value) / (e1 * den_state + e2)).to(dtype)
        max_for_state = torch.maximum(max_state + decay, current_key)
        e1 = torch.exp(max_state + decay - max_for_state)
        e2 = torch.exp(current_key - max_for_state)
        return (e1 * num_state + e2 * current_value, e1 * den_state + e2, max_for_state), output

    last, outputs = scan(step, initial, (key.transpose(0, 1), value.transpose(0, 1)))
    output = outputs.transpose(0, 1)
    if return_state or state is not None:
        return output, list(last)
    return output, None
