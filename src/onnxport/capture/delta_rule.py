"""The gated delta rule's chunked form (Qwen3-Next, Qwen3.5, OLMo-Hybrid linear attention) with
the chunks as a ``scan`` op, so torch.export keeps the sequence dynamic.

transformers' ``torch_chunk_gated_delta_rule`` (the same function in modeling_qwen3_next.py,
modeling_qwen3_5.py, modeling_qwen3_5_moe.py, modeling_qwen4_exp.py, modeling_olmo_hybrid.py)
computes gated DeltaNet (Yang, Kautz & Hatamizadeh 2024, "Gated Delta Networks", section 3.3: the
chunkwise form with the UT transform) in chunks of ``chunk_size`` positions. Under torch.export it
has two problems:

- ``for i in range(num_chunks)``: the number of chunks is read as a Python int, so the program
  holds the example's chunk count and onnxruntime fails on a prompt of another number of chunks
  (a 150-token prompt after a capture on 5 tokens: a ``Range`` node's shape error).
- The UT transform ``(I + A)^-1`` (``A`` the strictly lower part of the chunk's ``k_beta @ k^T``,
  decayed) is built by forward substitution when exporting: 63 in-place row updates per layer,
  which force ``run_decompositions`` and thousands of nodes (a 4-layer Qwen3-Next: 6237 nodes,
  46 s).

:func:`chunk_gated_delta_rule` computes the same chunked sums with the chunks as a
``torch._higher_order_ops.scan.scan`` (one ONNX ``Scan``, ops/control/control_flow.py) and the
inverse by repeated squaring: ``A`` is nilpotent (``A^C = 0`` for chunk size ``C``), so
``(I + A)^-1 = sum_k N^k = (I + N)(I + N^2)(I + N^4)...`` with ``N = -A``, ``ceil(log2 C)``
factors (6 for 64). The factors are exact; the result agrees with transformers' substitution to
float32 rounding.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch._higher_order_ops.scan import scan


def _l2norm(x: torch.Tensor) -> torch.Tensor:
    """transformers' ``l2norm`` (as the FLA library): ``x * rsqrt(sum(x^2) + 1e-6)`` on the last axis."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + 1e-6)


def unit_lower_inverse(system: torch.Tensor) -> torch.Tensor:
    """``(I + tril(system, -1))^-1`` of ``[..., C, C]`` matrices: the unit lower triangular matrix
    with ``system``'s strictly lower part, inverted by ``ceil(log2 C)`` squarings
    (``sum_{k<C} N^k``, ``N = -tril(system, -1)``); the diagonal and upper part of ``system`` are
    ignored, as ``torch.linalg.solve_triangular(..., unitriangular=True)`` ignores them."""
    size = system.shape[-1]
    power = -system.tril(-1)
    positions = torch.arange(size, device=system.device)
    inverse = (positions[:, None] == positions[None, :]).to(system.dtype) + power  # I + N
    for _ in range(1, max(1, math.ceil(math.log2(size)))):
        power = power @ power
        inverse = inverse + inverse @ power
    return inverse


def chunk_gated_delta_rule(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,  # transformers passes the rest by keyword
    chunk_size: int = 64,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """transformers' ``torch_chunk_gated_delta_rule`` with the chunks as a ``scan`` op.

    Args:
        query: (batch, seq_len, k_heads, k_head_dim).
        key: (batch, seq_len, k_heads, k_head_dim).
        value: (batch, seq_len, v_heads, v_head_dim); each query/key head serves
            ``v_heads // k_heads`` consecutive value heads.
        g: (batch, seq_len, v_heads) log decay (``<= 0``).
        beta: (batch, seq_len, v_heads) write strength.
        chunk_size: Positions per chunk (transformers' 64).
        initial_state: (batch, v_heads, k_head_dim, v_head_dim) state before the first position,
            optional (zeros).
        output_final_state: Also return the state after the last position.
        use_qk_l2norm_in_kernel: L2-normalize queries and keys first.
        _: transformers' other keywords (``cu_seqlens``...), ignored as its torch path does.

    Returns:
        (batch, seq_len, v_heads, v_head_dim) output in ``query``'s dtype, and the float32 final
        state when ``output_final_state`` (else ``None``).
    """
    dtype = query.dtype
    length = key.shape[1]
    k_heads, v_heads = key.shape[2], value.shape[2]
    if k_heads != v_heads:
        query = query.repeat_interleave(v_heads // k_heads, dim=2)
        key = key.repeat_interleave(v_heads // k_heads, dim=2)
    # normalized and scaled per position before the transposes, so each input reaches its
    # transpose to (batch, heads, seq_len, ...) as the recurrence takes it, in float32: the
    # operands com.microsoft.LinearAttention reads (passes/ort/linear_attention.py)
    query, key, value, beta, g = (x.to(torch.float32) for x in (query, key, value, beta, g))
    if use_qk_l2norm_in_kernel:
        query, key = _l2norm(query), _l2norm(key)
    query = query * query.shape[-1] ** -0.5
    query, key, value, beta, decay = (
        x.transpose(1, 2).contiguous() for x in (query, key, value, beta, g)
    )

    # the padded length as chunks * chunk_size, which torch's symbolic shapes see divides evenly
    # (transformers' (chunk_size - length % chunk_size) % chunk_size makes the reshapes guard on the
    # example's chunk count)
    chunks = (length + chunk_size - 1) // chunk_size
    pad = chunks * chunk_size - length
    query, key, value = (F.pad(x, (0, 0, 0, pad)) for x in (query, key, value))
    beta, decay = (F.pad(x, (0, pad)) for x in (beta, decay))
    v_beta, k_beta = value * beta[..., None], key * beta[..., None]
    batch, heads = key.shape[0], key.shape[1]
    # (batch, heads, chunks, chunk_size, ...)
    query, key, k_beta, v_beta = (x.reshape(batch, heads, chunks, chunk_size, x.shape[-1]) for x in (query, key, k_beta, v_beta))
    cum_decay = decay.reshape(batch, heads, chunks, chunk_size).cumsum(dim=-1)

    upper = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=query.device).triu(1)
    pairwise = (cum_decay[..., :, None] - cum_decay[..., None, :]).masked_fill(upper, float("-inf")).exp()
    inverse = unit_lower_inverse((k_beta @ key.transpose(-1, -2)) * pairwise)
    intra = (query @ key.transpose(-1, -2)) * pairwise
    new_values = inverse @ v_beta
    k_cumdecay = inverse @ (k_beta * cum_decay.exp()[..., None])
    query = query * cum_decay.exp()[..., None]
    key = key * (cum_decay[..., -1:] - cum_decay).exp()[..., None]
    chunk_decay = cum_decay[..., -1].exp()[..., None, None]

    def step(state: torch.Tensor, xs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v, k_decayed, attn, decay_all = xs  # one chunk: (batch, heads, chunk_size, ...)
        v_new = v - k_decayed @ state
        out = q @ state + attn @ v_new
        return state * decay_all + k.transpose(-1, -2) @ v_new, out.permute(2, 0, 1, 3)  # (chunk_size, batch, heads, v_dim)

    zeros = key.new_zeros((batch, heads, key.shape[-1], value.shape[-1]))
    # a fresh float32 tensor for scan's carry (no .to(): an unchanged dtype would alias the cache's state)
    state = zeros if initial_state is None else zeros + initial_state
    # fresh tensors, not views: scan's trace guards on a view's base size, which would fix the
    # number of chunks to the example's
    per_chunk = tuple(
        x.permute(2, 0, 1, 3, 4).clone(memory_format=torch.contiguous_format)
        for x in (query, key, new_values, k_cumdecay, intra, chunk_decay)
    )
    final, outputs = scan(step, state, per_chunk)
    # (chunks, chunk_size, batch, heads, v_dim) -> (batch, seq_len, heads, v_dim); merging the two
    # leading dims of the stacked output needs no view check (a reshape after a permute would guard
    # on the example's chunk count)
    out = outputs.reshape(chunks * chunk_size, batch, heads, value.shape[-1]).permute(1, 0, 2, 3)[:, :length]
    out = out.to(dtype, memory_format=torch.contiguous_format)
    return out, (final if output_final_state else None)
