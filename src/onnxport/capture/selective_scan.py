"""Mamba's selective scan as a ``scan`` higher-order op, so torch.export keeps the sequence dynamic.

transformers' torch path of ``mamba_selective_scan`` (modeling_mamba.py; the same function in
modeling_jamba.py, modeling_falcon_mamba.py, modeling_zamba.py) runs the recurrence

    h_t = exp(A * dt_t) * h_{t-1} + (dt_t * B_t) * x_t,    y_t = C_t · h_t    (h_0 = 0)

(Gu & Dao 2023, "Mamba", Algorithm 2) in a Python loop, ``for index in range(seq_len)``, which
torch.export unrolls: the graph then holds ``seq_len`` copies of the step and the sequence length
is fixed (DynamicShapesError). Its ``associative_scan`` alternative is disabled under export.
:func:`selective_scan` computes the same values with the same float operations in the same order,
with the loop as ``torch._higher_order_ops.scan.scan`` over the sequence axis, which onnxport
translates to one ONNX ``Scan`` (ops/control/control_flow.py) -- the standard form of a recurrence
with a dynamic trip count, as the ONNX LSTM/GRU ops are for ``nn.LSTM``/``nn.GRU``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch._higher_order_ops.scan import scan


def selective_scan(
    hidden_states: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,  # noqa: N803 -- the paper's and transformers' names
    B: torch.Tensor,  # noqa: N803
    C: torch.Tensor,  # noqa: N803
    *,  # transformers passes the rest by keyword
    D: torch.Tensor | None = None,  # noqa: N803
    z: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
    return_last_state: bool = False,
    **_: Any,
) -> Any:
    """transformers' ``mamba_selective_scan`` (torch path, zero initial state) with the sequence
    loop as a ``scan`` op.

    Args:
        hidden_states: (batch, intermediate, seq_len) input ``x``, float.
        dt: (batch, intermediate, seq_len) time steps before ``delta_bias`` / softplus.
        A: (intermediate, state) state matrix (negative; float32).
        B: (batch, state, seq_len) input projection.
        C: (batch, state, seq_len) output projection.
        D: (intermediate,) skip connection, optional.
        z: (batch, intermediate, seq_len) gate (``y * silu(z)``), optional.
        delta_bias: (intermediate,) added to ``dt``, optional.
        delta_softplus: Apply softplus to ``dt``.
        return_last_state: Also return the final state (batch, intermediate, state).
        _: transformers' other keywords (``use_mambapy``, ``use_associative_scan``): alternative
            implementations of the same recurrence, ignored.

    Returns:
        (batch, intermediate, seq_len) ``y`` in the dtype transformers returns (float32 for
        float32 inputs), and the last state when ``return_last_state``.
    """
    input_dtype = hidden_states.dtype
    if delta_bias is not None:
        dt = dt + delta_bias.to(dt.dtype)[..., None]
    if delta_softplus:
        dt = F.softplus(dt)
    B, C = B.transpose(1, 2), C.transpose(1, 2)  # noqa: N806 -- (batch, seq_len, state)
    discrete_A = torch.exp(A[None, :, None, :] * dt[:, :, :, None])  # noqa: N806
    discrete_B = dt[:, :, :, None] * B[:, None, :, :].float()  # noqa: N806
    deltaB_u = discrete_B * hidden_states[:, :, :, None].float()  # noqa: N806

    def step(state: torch.Tensor, xs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        a, bu, c = xs  # (batch, intermediate, state) x2, (batch, state)
        state = a * state + bu
        return state, torch.matmul(state.to(input_dtype), c.unsqueeze(-1))[..., 0]

    # the state's dtype after transformers' first step (its zeros are input_dtype, the sum float32)
    initial = torch.zeros_like(deltaB_u[:, :, 0])
    sequence_first = (discrete_A.permute(2, 0, 1, 3), deltaB_u.permute(2, 0, 1, 3), C.transpose(0, 1))
    ssm_state, outputs = scan(step, initial, sequence_first)
    scan_output = outputs.permute(1, 2, 0)  # (seq_len, batch, intermediate) -> (batch, intermediate, seq_len)
    if D is not None:
        scan_output = scan_output + hidden_states * D[None, :, None]
    if z is not None:
        scan_output = scan_output * F.silu(z)
    if return_last_state:
        return scan_output, ssm_state
    return scan_output
