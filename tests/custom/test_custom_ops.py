"""Custom operators: registration API, scoping, overrides, custom domains, and the error without one."""

from __future__ import annotations

import onnx
import pytest
import torch

import onnxport


@torch.library.custom_op("onnxport_custom::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _scaled_tanh_fake(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.empty_like(x)


class UsesScaledTanh(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.onnxport_custom.scaled_tanh(self.fc(x), 2.5) + 1


TARGET = torch.ops.onnxport_custom.scaled_tanh.default


def translate_scaled_tanh(ctx: onnxport.Ctx, x: object, scale: float) -> object:
    """scaled_tanh(Tensor x, float scale) -> Tensor"""
    return ctx.op.Mul(ctx.op.Tanh(x), ctx.const(scale, x.dtype))  # type: ignore[attr-defined]


def test_without_translation_the_error_says_how_to_register() -> None:
    with pytest.raises(onnxport.UnsupportedOpError) as info:
        onnxport.export(UsesScaledTanh(), (torch.randn(2, 4),))
    text = str(info.value)
    assert "onnxport_custom.scaled_tanh.default" in text
    assert "@onnxport.register_translation(torch.ops.onnxport_custom.scaled_tanh.default)" in text
    assert "custom_translations=" in text
    assert "test_custom_ops.py" in text  # the user's source line


def test_custom_translations_scoped_to_one_export() -> None:
    model = UsesScaledTanh().eval()
    x = torch.randn(3, 4)
    program = onnxport.export(model, (x,), custom_translations={TARGET: translate_scaled_tanh})
    torch.testing.assert_close(program(x)[0], model(x).detach())
    assert not onnxport.is_registered(TARGET)  # the default registry is untouched
    with pytest.raises(onnxport.UnsupportedOpError):
        onnxport.export(model, (x,))


def test_registry_object() -> None:
    registry = onnxport.default_registry().copy()
    registry.register_translation(TARGET, translate_scaled_tanh)
    assert onnxport.is_registered(TARGET, registry)
    assert [t.fn for t in onnxport.translations_for(TARGET, registry)] == [translate_scaled_tanh]
    model = UsesScaledTanh().eval()
    x = torch.randn(2, 4)
    program = onnxport.export(model, (x,), registry=registry)
    torch.testing.assert_close(program(x)[0], model(x).detach())


def test_global_registration_with_decorator() -> None:
    @torch.library.custom_op("onnxport_custom::plus_two", mutates_args=())
    def plus_two(x: torch.Tensor) -> torch.Tensor:
        return x + 2

    @plus_two.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    target = torch.ops.onnxport_custom.plus_two.default

    @onnxport.register_translation(target)
    def translate(ctx: onnxport.Ctx, x: object) -> object:
        return ctx.op.Add(x, ctx.const(2.0))

    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.ops.onnxport_custom.plus_two(x)

    x = torch.randn(3)
    assert onnxport.is_registered(target)
    torch.testing.assert_close(onnxport.export(M(), (x,))(x)[0], x + 2)


def test_override_of_aten_translation_wins_at_every_opset() -> None:
    def gelu_as_relu(ctx: onnxport.Ctx, x: object, *, approximate: str = "none") -> object:
        return ctx.op.Relu(x)

    class Gelu(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.gelu(x)

    x = torch.tensor([-1.0, 0.5, 2.0])
    for opset in (18, 23):  # onnxport has its own Gelu encodings at 18 and 20
        program = onnxport.export(Gelu(), (x,), opset_version=opset,
                                  custom_translations={torch.ops.aten.gelu.default: gelu_as_relu})
        assert [n.op_type for n in program.model.graph] == ["Relu"]
        torch.testing.assert_close(program(x)[0], torch.relu(x))


def test_custom_domain_gets_its_opset_import() -> None:
    def as_custom_domain(ctx: onnxport.Ctx, x: object, scale: float) -> object:
        return ctx.op.ScaledTanh(x, scale=scale, _domain="com.example", _version=2)

    program = onnxport.export(UsesScaledTanh(), (torch.randn(2, 4),),
                              custom_translations={TARGET: as_custom_domain})
    proto = program.model_proto
    imports = {o.domain: o.version for o in proto.opset_import}
    assert imports["com.example"] == 2 and imports[""] == 23
    node = next(n for n in proto.graph.node if n.domain == "com.example")
    assert node.op_type == "ScaledTanh"
    assert onnx.helper.get_attribute_value(node.attribute[0]) == pytest.approx(2.5)


def test_custom_translations_must_be_mapping_or_registry() -> None:
    with pytest.raises(onnxport.InputError, match="custom_translations must be a dict"):
        onnxport.export(UsesScaledTanh(), (torch.randn(2, 4),), custom_translations=[translate_scaled_tanh])
