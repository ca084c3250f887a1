"""The gated delta rule with its chunks as a ``scan`` (``capture/delta_rule.py``) against
transformers' own chunked form, and the inverse by repeated squaring against a triangular solve."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from onnxport.capture.delta_rule import chunk_gated_delta_rule, unit_lower_inverse

transformers = pytest.importorskip("transformers")


def _inputs(length: int, with_state: bool, k_heads: int = 2, v_heads: int = 4) -> tuple[tuple[torch.Tensor, ...], torch.Tensor | None]:
    gen = torch.Generator().manual_seed(length)
    batch, k_dim, v_dim = 2, 8, 6
    args = (
        torch.randn(batch, length, k_heads, k_dim, generator=gen),
        torch.randn(batch, length, k_heads, k_dim, generator=gen),
        torch.randn(batch, length, v_heads, v_dim, generator=gen),
        -torch.rand(batch, length, v_heads, generator=gen),  # log decay <= 0
        torch.rand(batch, length, v_heads, generator=gen),
    )
    state = torch.randn(batch, v_heads, k_dim, v_dim, generator=gen) if with_state else None
    return args, state


@pytest.mark.parametrize("length", [1, 5, 64, 150])
@pytest.mark.parametrize("with_state", [False, True])
def test_equals_transformers_chunked_form(length: int, with_state: bool) -> None:
    """Same output and final state as ``torch_chunk_gated_delta_rule`` (its eager path, which
    solves the UT system with ``solve_triangular``), at one position, within one chunk, a full
    chunk and three chunks (the last one padded)."""
    from transformers.models.qwen3_5.modeling_qwen3_5 import torch_chunk_gated_delta_rule

    (q, k, v, g, beta), state = _inputs(length, with_state)
    options = dict(initial_state=state, output_final_state=True, use_qk_l2norm_in_kernel=True)
    want_out, want_state = torch_chunk_gated_delta_rule(q, k, v, g=g, beta=beta, **options)
    got_out, got_state = chunk_gated_delta_rule(q, k, v, g=g, beta=beta, **options)
    assert got_out.shape == want_out.shape == (2, length, 4, 6) and got_out.dtype == torch.float32
    assert got_state.shape == want_state.shape == (2, 4, 8, 6)
    np.testing.assert_allclose(got_out.numpy(), want_out.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state.numpy(), want_state.numpy(), rtol=1e-4, atol=1e-5)
    assert float(got_out.abs().max()) > 0.05  # the comparison is not between zeros


def test_no_final_state_unless_asked_and_dtype_kept() -> None:
    (q, k, v, g, beta), _ = _inputs(5, False, k_heads=4)
    out, state = chunk_gated_delta_rule(q.bfloat16(), k.bfloat16(), v.bfloat16(), g=g, beta=beta)
    assert state is None and out.dtype == torch.bfloat16 and out.shape == (2, 5, 4, 6)


@pytest.mark.parametrize("size", [5, 64])
def test_unit_lower_inverse_equals_triangular_solve(size: int) -> None:
    """``(I + tril(A, -1))^-1`` by squarings: ``ceil(log2 size)`` factors cover every power below
    ``size`` (5 is not a power of two); the diagonal and upper part of the input are ignored."""
    system = torch.randn(3, size, size, generator=torch.Generator().manual_seed(size)) * 0.3
    identity = torch.eye(size).expand(3, size, size)
    want = torch.linalg.solve_triangular(system, identity, upper=False, unitriangular=True)
    got = unit_lower_inverse(system)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose((got @ (identity + system.tril(-1))).numpy(), identity.numpy(), atol=1e-4)
