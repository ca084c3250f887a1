"""Registry: keyed by OpOverload, opset selection by highest ``since`` ≤ target, built once."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import torch

import onnxport
import onnxport.ops
from onnxport.ops import FAMILIES, default_registry, register_families
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


class _CountingRegistry(Registry):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Translation] = []

    def register(self, translation: Translation) -> None:
        self.calls.append(translation)
        super().register(translation)


def test_each_translation_is_registered_once_by_the_module_that_defines_it() -> None:
    registry = _CountingRegistry()
    register_families(registry)
    keys = [(t.target, t.since, t.complex) for t in registry.calls]
    twice = {k for k in keys if keys.count(k) > 1}
    assert not twice, f"registered more than once: {sorted(map(str, twice))[:5]}"
    assert all(t.fn.__module__ in {m.__name__ for m in FAMILIES} for t in registry.calls)
    # e.g. aten.atan2 is imported by pointwise/float_ops.py but defined (and registered) in arithmetic.py
    atan2 = [t for t in registry.calls if t.target == aten.atan2.default]
    assert [t.fn.__module__ for t in atan2] == ["onnxport.ops.pointwise.arithmetic"]
    # onnxport's own entries (custom=False; other tests may add user translations process-wide),
    # the ones registered by name for an optional library's op included (ops/nn/moe.py)
    assert len(keys) == sum(1 for e in default_registry().entries() if not e.custom)


def test_every_module_defining_translations_is_a_listed_family() -> None:
    listed = {m.__name__ for m in FAMILIES}
    defining = set()
    for info in pkgutil.walk_packages(onnxport.ops.__path__, "onnxport.ops."):
        module = importlib.import_module(info.name)
        if any(getattr(v, "__module__", None) == info.name and getattr(v, "__onnxport_translations__", ())
               for v in vars(module).values()):
            defining.add(info.name)
    assert defining == listed


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
