"""Mamba2's state-space scan as a ``scan`` higher-order op, so torch.export keeps the sequence
dynamic and a past state can be continued.

transformers' torch path of ``mamba2_chunk_scan`` (the same function in modeling_mamba2.py,
modeling_bamba.py, modeling_granitemoehybrid.py, modeling_nemotron_h.py, modeling_zamba2.py,
modeling_falcon_h1.py) computes the SSD recurrence of Mamba2 in chunks (Dao & Gu 2024, "Transformers
are SSMs", section 7: the block decomposition of the semiseparable matrix). It pads the sequence to
a multiple of ``chunk_size`` and cuts it back under ``if pad_size > 0:``; torch.export records that
branch for the example's length only (a DynamicShapesError: ``Mod(4 - Mod(s, 4), 4) <= 0``).
:func:`chunk_scan` computes the same recurrence one position at a time,

    h_t = exp(dt_t · A) · h_{t-1} + dt_t · x_t ⊗ B_t,    y_t = h_t · C_t + D · x_t,

from ``initial_states`` (else zeros), as a ``torch._higher_order_ops.scan.scan`` over the sequence
axis, which onnxport translates to one ONNX ``Scan`` (ops/control/control_flow.py): the chunked and
the sequential forms are the same sums in another order (float32; they agree to rounding), and
one-position decode steps are what transformers' ``mamba2_selective_state_update`` computes.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch._higher_order_ops.scan import scan


def chunk_scan(
    hidden_states: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,  # noqa: N803 -- the paper's and transformers' names
    B: torch.Tensor,  # noqa: N803
    C: torch.Tensor,  # noqa: N803
    *,  # transformers passes the rest by keyword
    chunk_size: int,
    D: torch.Tensor | None = None,  # noqa: N803
    dt_bias: torch.Tensor | None = None,
    initial_states: torch.Tensor | None = None,
    dt_softplus: bool = False,
    dt_limit: tuple[float, float] = (0.0, float("inf")),
    return_final_states: bool = False,
    **_: Any,
) -> Any:
    """transformers' ``mamba2_chunk_scan`` (torch path) with the sequence as a ``scan`` op.

    Args:
        hidden_states: (batch, seq_len, heads, head_dim) input ``x``.
        dt: (batch, seq_len, heads) time steps before ``dt_bias`` / softplus / ``dt_limit``.
        A: (heads,) state decay (negative).
        B: (batch, seq_len, groups, state) input projection; heads share a group's.
        C: (batch, seq_len, groups, state) output projection.
        chunk_size: transformers' block length; the sequential form has none (unused).
        D: (heads,) skip connection, optional.
        dt_bias: (heads,) added to ``dt``, optional.
        initial_states: (batch, heads, head_dim, state) state before the first position, optional
            (zeros).
        dt_softplus: Apply softplus to ``dt``.
        dt_limit: ``dt`` is clamped to this range for inputs of several positions; a one-position
            input is not clamped, as transformers' (and mamba_ssm's) one-token step does not.
        return_final_states: Also return the state after the last position.
        _: transformers' other keywords (``z=None``, kernel options), ignored.

    Returns:
        (batch, seq_len, heads, head_dim) float32 ``y``, and the (batch, heads, head_dim, state)
        float32 final state when ``return_final_states``.
    """
    del chunk_size
    heads, groups = hidden_states.shape[2], B.shape[2]
    if dt_bias is not None:
        dt = dt + dt_bias.to(dt.dtype)
    if dt_softplus:
        dt = F.softplus(dt)
    if tuple(dt_limit) != (0.0, float("inf")):
        # transformers clamps dt to dt_limit in the chunked form only; its one-token step
        # (mamba2_selective_state_update, as mamba_ssm's) does not (NemotronH: time_step_min).
        # The sequence length as a tensor, so the choice is an op, not a guard on the length.
        one_token = torch.ones_like(dt[:1, :, :1]).sum() == 1
        dt = torch.where(one_token, dt, torch.clamp(dt, min=dt_limit[0], max=dt_limit[1]))
    dt = dt.float()
    x = hidden_states.float()
    B = B.float().repeat_interleave(heads // groups, dim=2, output_size=heads)  # noqa: N806
    C = C.float().repeat_interleave(heads // groups, dim=2, output_size=heads)  # noqa: N806
    decay = torch.exp(A.float() * dt)  # (batch, seq_len, heads)
    inputs = (x * dt[..., None])[..., None] * B[:, :, :, None, :]  # (batch, seq_len, heads, head_dim, state)

    def step(state: torch.Tensor, xs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        a, u, c = xs  # (batch, heads), (batch, heads, head_dim, state), (batch, heads, state)
        state = a[..., None, None] * state + u
        return state, torch.matmul(state, c[..., None])[..., 0]

    if initial_states is None:
        initial = torch.zeros_like(inputs[:, 0])
    else:
        initial = initial_states.float() + torch.zeros_like(inputs[:, 0])  # a fresh tensor: scan's carry
    final, outputs = scan(step, initial, (decay.transpose(0, 1), inputs.transpose(0, 1), C.transpose(0, 1)))
    y = outputs.transpose(0, 1)  # (seq_len, batch, heads, head_dim) -> (batch, seq_len, heads, head_dim)
    if D is not None:
        y = y + D[..., None] * x
    if return_final_states:
        return y, final
    return y
