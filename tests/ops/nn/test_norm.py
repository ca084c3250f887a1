"""Normalization against eager: half-precision batch norm running statistics, training-mode batch norm,
group norm of groups whose mean dwarfs their spread."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)

F = torch.nn.functional


# -- half precision ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_batch_norm_running_stats_and_renorm(dtype: torch.dtype) -> None:
    x = torch.randn(3, 2, 4, dtype=dtype)
    w, b, rm, rv = torch.randn(2, dtype=dtype), torch.randn(2, dtype=dtype), torch.randn(2, dtype=dtype), torch.rand(2, dtype=dtype) + 1
    check_against_eager(lambda *t: torch.ops.aten._native_batch_norm_legit.default(*t, False, 0.1, 1e-5), x, w, b, rm, rv,
           rtol=1.6e-2, atol=1e-2)
    check_against_eager(lambda t: torch.renorm(t, 2, 0, 1.0), torch.randn(4, 5, dtype=dtype), rtol=1.6e-2, atol=1e-2)


@pytest.mark.parametrize("shape", [(5, 3, 4), (6, 2), (4, 3, 2, 2)])
def test_batch_norm_training_uses_batch_statistics(shape: tuple) -> None:
    c = shape[1]
    args = (torch.randn(shape), torch.randn(c), torch.rand(c) + 0.5, torch.randn(c), torch.randn(c))
    check_against_eager(lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=True, eps=0.1), *args)


def test_batch_norm_one_dimensional_and_bfloat16() -> None:
    check_against_eager(lambda x, m, v: F.batch_norm(x, m, v, training=False), torch.zeros(0), torch.zeros(0), torch.ones(0))
    x = torch.randn(4, 3, 5).bfloat16()
    check_against_eager(lambda t: F.batch_norm(t, None, None, training=True), x, rtol=1.6e-2, atol=1e-2)


# -- group norm -------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", [18, 21, 23])
def test_group_norm_of_groups_far_from_zero_stays_accurate(opset: int) -> None:
    """Groups with mean 3 and spread 0.01: ``E[x²] - E[x]²`` (ONNX GroupNormalization-21's
    function body, which onnxruntime inlines) loses the variance in float32 (error 0.029 against
    float64, eager's 4.4e-5); the translation's LayerNormalization subtracts the mean first."""
    x = torch.randn(2, 64, 8, 8) * 0.01 + 3.0
    w, b = torch.rand(64) + 0.5, torch.randn(64)
    out = check_against_eager(lambda t, w, b: F.group_norm(t, 32, w, b), x, w, b, opset=opset, rtol=1e-4, atol=2e-4)
    reference = F.group_norm(x.double(), 32, w.double(), b.double())
    assert out[0].dtype == torch.float32 and out[0].shape == (2, 64, 8, 8)
    assert (out[0].double() - reference).abs().max() < 2e-4
    assert "GroupNormalization" not in [n.op_type for n in out.program.model.graph]
