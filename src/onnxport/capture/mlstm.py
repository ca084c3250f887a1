"""xLSTM's mLSTM cell in inference mode as a ``scan`` higher-order op, so torch.export keeps the
sequence dynamic.

transformers' ``xLSTMBackend.forward`` (modeling_xlstm.py) in ``inference`` mode calls
``wrap_chunkwise_arbitrary_sequence_length``: chunks of ``chunk_size`` tokens through the chunkwise
kernel, the remainder through ``mlstm_recurrent_sequence_native`` (``for t in range(sequence_length)``),
one token through ``mlstm_recurrent_step_native``. Both the chunk count and the loop depend on the
sequence length, which torch.export then fixes ("specialized it to be a constant").

During a capture with a symbolic sequence length, :func:`recurrent_inference` runs the module's own
``mlstm_recurrent_step_native`` for every position, the loop a ``torch._higher_order_ops.scan.scan``
over the sequence axis (one ONNX ``Scan``, as :mod:`onnxport.capture.selective_scan` for Mamba). The
recurrence (Beck et al. 2024, "xLSTM", eq. 16-27, in its max-stabilized form) is the one eager
computes for sequences shorter than ``chunk_size`` (64 by default); longer ones eager splits into
chunks computed in parallel, the same function evaluated in another order, so the graph matches
eager there up to rounding (a 2-block float32 model: max abs diff 1.1e-6 at 100 tokens). The states start
at zeros unless given, as in transformers. Eager runs, and a static capture, use the original.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch._higher_order_ops.scan import scan


def recurrent_inference(forward: Callable[..., Any]) -> Callable[..., Any]:
    """``xLSTMBackend.forward`` computing inference mode as a scan of the backend's step kernel
    (``step_kernel_fn``) when the sequence length is symbolic (module docstring); the original
    otherwise, or for a backend without a step kernel."""

    @functools.wraps(forward)
    def wrapper(self: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, igate: torch.Tensor,
                fgate: torch.Tensor, *, c_initial: torch.Tensor | None = None, n_initial: torch.Tensor | None = None,
                m_initial: torch.Tensor | None = None, **kwargs: Any) -> Any:  # fmt: skip
        # transformers' xLSTMLayer passes every argument by keyword; kwargs: return_last_states, mode
        inference = "inference" in (kwargs.get("mode") or self.config.mode)
        step_kernel = getattr(self, "step_kernel_fn", None)
        if not inference or step_kernel is None or not isinstance(query.shape[2], torch.SymInt):
            return forward(self, query, key, value, igate, fgate, c_initial=c_initial, n_initial=n_initial,
                           m_initial=m_initial, **kwargs)  # fmt: skip
        batch, heads, _, dhqk = key.shape
        dhv = value.shape[-1]
        zeros = functools.partial(torch.zeros, device=key.device, dtype=torch.float32)
        initial = (
            c_initial if c_initial is not None else zeros(batch, heads, dhqk, dhv),
            n_initial if n_initial is not None else zeros(batch, heads, dhqk),
            m_initial if m_initial is not None else zeros(batch, heads, 1),
        )
        eps = getattr(self.config, "eps", 1e-6)
        state_dtype = getattr(torch, getattr(self.config, "inference_state_dtype", "float32"))

        def step(carry: tuple[torch.Tensor, ...], xs: tuple[torch.Tensor, ...]) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
            q, k, v, i, f = xs
            h, states = step_kernel(query=q, key=k, value=v, igate=i[..., None], fgate=f[..., None],
                                    cstate=carry[0], nstate=carry[1], mstate=carry[2], eps=eps,
                                    dtype_state=state_dtype)  # fmt: skip
            return tuple(states), h

        sequence_first = (query.permute(2, 0, 1, 3), key.permute(2, 0, 1, 3), value.permute(2, 0, 1, 3),
                          igate.permute(2, 0, 1), fgate.permute(2, 0, 1))  # fmt: skip
        last, outputs = scan(step, initial, sequence_first)
        return outputs.permute(1, 2, 0, 3), tuple(last)  # inference mode always returns the states

    return wrapper
