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


class PowRMSNorm(torch.nn.Module):
    """As transformers' Gemma4RMSNorm: ``x * torch.pow(mean(x²) + eps, -0.5)``, with or without a
    scale (``with_scale=False``: Gemma 4's value norm)."""

    def __init__(self, hidden: int = 8, with_scale: bool = True) -> None:
        super().__init__()
        self.with_scale = with_scale
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normed = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + 1e-6, -0.5)
        return normed * self.weight if self.with_scale else normed


class TwoUnscaled(torch.nn.Module):
    """Two norms without a scale over the same last size, one feeding a matmul."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = PowRMSNorm(with_scale=False)
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(self.norm(x)))


@pytest.mark.parametrize("with_scale", [True, False], ids=["scaled", "unscaled"])
def test_pow_form_fused(with_scale: bool) -> None:
    x = torch.randn(2, 3, 8) * 3
    assert _ops(PowRMSNorm(with_scale=with_scale).eval(), x, 23) == ["RMSNormalization"]


def test_unscaled_norms_get_a_scale_of_ones() -> None:
    x = torch.randn(2, 5, 8)
    model = TwoUnscaled().eval()
    program = onnxport.export(model, (x,), dynamic_shapes={"x": {0: "batch", 1: "seq"}})
    nodes = [n for n in program.model.graph if n.op_type == "RMSNormalization"]
    assert len(nodes) == 2
    for node in nodes:
        scale = node.inputs[1]
        assert scale.is_initializer() and scale.const_value.numpy().tolist() == [1.0] * 8
    other = torch.randn(3, 7, 8)
    torch.testing.assert_close(torch.as_tensor(program(other)[0]), model(other).detach(), rtol=1e-5, atol=1e-5)
    assert not {"Pow", "ReduceMean"} & {n.op_type for n in program.model.graph}
