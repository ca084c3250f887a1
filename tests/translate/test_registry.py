"""Registry: keyed by OpOverload, opset selection by highest ``since`` ≤ target, built once."""

from __future__ import annotations

import pytest
import torch

import onnxport
from onnxport.ops import default_registry
from onnxport.translate.registry import Registry, Translation

aten = torch.ops.aten


def _one(ctx: object, x: object) -> object:
    return x


def _two(ctx: object, x: object) -> object:
    return x


def test_highest_since_not_above_target_wins() -> None:
    registry = Registry()
    registry.register(Translation(aten.gelu.default, _one, since=18))
    registry.register(Translation(aten.gelu.default, _two, since=20))
    assert registry.get(aten.gelu.default, 18).fn is _one  # type: ignore[union-attr]
    assert registry.get(aten.gelu.default, 19).fn is _one  # type: ignore[union-attr]
    assert registry.get(aten.gelu.default, 20).fn is _two  # type: ignore[union-attr]
    assert registry.get(aten.gelu.default, 26).fn is _two  # type: ignore[union-attr]
    assert registry.get(aten.relu.default, 26) is None


def test_same_since_overrides_and_copy_is_independent() -> None:
    base = Registry()
    base.register(Translation(aten.relu.default, _one))
    copy = base.copy()
    copy.register(Translation(aten.relu.default, _two))
    assert base.get(aten.relu.default, 23).fn is _one  # type: ignore[union-attr]
    assert copy.get(aten.relu.default, 23).fn is _two  # type: ignore[union-attr]
    assert len(copy.translations_for(aten.relu.default)) == 1


def test_default_registry_is_built_once() -> None:
    assert default_registry() is default_registry()
    assert default_registry().is_registered(aten.linear.default)
    assert default_registry().is_registered(aten.scaled_dot_product_attention.default)


def test_packet_rejected_with_hint() -> None:
    with pytest.raises(onnxport.InputError, match=r"aten\.gelu\.default"):
        Registry().register(Translation(aten.gelu, _one))


class Gelu(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x)


class RMS(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.RMSNorm(8, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


@pytest.mark.parametrize(
    ("module", "opset", "expected_op", "absent_op"),
    [
        (Gelu(), 18, "Erf", "Gelu"),
        (Gelu(), 20, "Gelu", "Erf"),
        (RMS(), 22, "ReduceMean", "RMSNormalization"),
        (RMS(), 23, "RMSNormalization", "ReduceMean"),
    ],
)
def test_opset_variant_is_chosen_and_matches(module: torch.nn.Module, opset: int, expected_op: str, absent_op: str) -> None:
    torch.manual_seed(0)
    with torch.no_grad():
        module.eval()
        if isinstance(module, RMS):
            module.norm.weight.uniform_(0.5, 1.5)
    x = torch.randn(3, 8)
    program = onnxport.export(module, (x,), opset_version=opset)
    ops = [n.op_type for n in program.model.graph]
    assert expected_op in ops and absent_op not in ops
    assert program.model.opset_imports[""] == opset
    (out,) = program(x)
    torch.testing.assert_close(out, module(x).detach(), rtol=1e-5, atol=1e-5)
