"""Activations against eager: rrelu (eval and training), the chunked linear cross-entropy."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- activations, losses, attention -----------------------------------------------------------

def test_rrelu_eval_is_leaky_relu_with_mean_slope() -> None:
    check_against_eager(lambda t: F.rrelu(t, 0.1, 0.3, training=False), torch.randn(4, 5))


def test_rrelu_training_draws_slopes_in_range() -> None:
    x = -torch.rand(2000) - 0.5
    model = Fn(lambda t: F.rrelu(t, 0.1, 0.3, training=True))
    out = onnxport.export(model, (x,), opset_version=21)(x)[0]
    slopes = out / x
    assert out.shape == x.shape and out.dtype == x.dtype
    assert float(slopes.min()) >= 0.1 - 1e-6 and float(slopes.max()) <= 0.3 + 1e-6
    assert abs(float(slopes.mean()) - 0.2) < 0.01


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_linear_cross_entropy_chunked(reduction: str, label_smoothing: float) -> None:
    if not hasattr(F, "linear_cross_entropy"):
        pytest.skip("torch without linear_cross_entropy")
    x, w, b = torch.randn(6, 3), torch.randn(5, 3), torch.randn(5)
    target, weight = torch.tensor([0, 4, -100, 2, 2, 1]), torch.rand(5) + 0.5
    if reduction == "none" and label_smoothing:
        pytest.skip("the chunked reduction='none' op has no label smoothing")

    from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

    options = LinearCrossEntropyOptions(batch_chunk_size=2)

    def fn(a: torch.Tensor, c: torch.Tensor, d: torch.Tensor, t: torch.Tensor, cw: torch.Tensor) -> torch.Tensor:
        return F.linear_cross_entropy(a, c, t, linear_bias=d, weight=cw, reduction=reduction, ignore_index=-100,
                                      label_smoothing=label_smoothing, options=options)
    check_against_eager(fn, x, w, b, target, weight)
