"""RMS norm fusion into RMSNormalization (opset ≥ 23): positive and near-miss cases."""

from __future__ import annotations

import pytest
import torch

import onnxport


class HandRMSNorm(torch.nn.Module):
    """As transformers' LlamaRMSNorm."""

    def __init__(self, hidden: int = 8, eps: float = 1e-6, axis: int = -1, reuse: bool = False) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, hidden))
        self.eps, self.axis, self.reuse = eps, axis, reuse

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(self.axis, keepdim=True)
        inv = torch.rsqrt(variance + self.eps)
        out = self.weight * (x * inv)
        return out + variance if self.reuse else out


def _ops(module: torch.nn.Module, x: torch.Tensor, opset: int) -> list[str]:
    program = onnxport.export(module, (x,), opset_version=opset)
    torch.testing.assert_close(program(x)[0], module(x).detach(), rtol=1e-5, atol=1e-5)
    return [n.op_type for n in program.model.graph]


def test_fused_at_opset_23() -> None:
    x = torch.randn(2, 3, 8)
    assert _ops(HandRMSNorm().eval(), x, 23) == ["RMSNormalization"]


@pytest.mark.parametrize(
    ("module", "opset"),
    [
        (HandRMSNorm(), 22),  # RMSNormalization does not exist yet
        (HandRMSNorm(hidden=3, axis=1), 23),  # normalizes another axis than the last
        (HandRMSNorm(reuse=True), 23),  # an intermediate is used elsewhere
    ],
    ids=["opset22", "other_axis", "intermediate_reused"],
)
def test_near_misses_are_not_fused(module: torch.nn.Module, opset: int) -> None:
    x = torch.randn(2, 3, 8)
    if module.axis == 1:  # type: ignore[union-attr]
        x = torch.randn(2, 3, 3)
    assert "RMSNormalization" not in _ops(module.eval(), x, opset)
