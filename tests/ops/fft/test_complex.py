"""Complex tensors carried as real [..., 2] tensors: dispatch of complex=True translations, graph
inputs/outputs metadata, ONNXProgram IO, and the complex-aware ops, each against eager."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager
from onnxport.errors import UnsupportedOpError, UnsupportedOpsError
from onnxport.metadata import KEY_COMPLEX_AS_REAL, KEY_COMPLEX_OUTPUTS
from onnxport.ops import default_registry
from onnxport.translate.registry import Registry

aten = torch.ops.aten


def z(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex64)


# -- the mechanism -----------------------------------------------------------------------------

def test_registry_keeps_complex_and_real_entries_apart() -> None:
    registry = default_registry()
    real = registry.get(aten.mul.Tensor, 23)
    cplx = registry.get(aten.mul.Tensor, 23, complex=True)
    assert real is not None and cplx is not None and real is not cplx
    assert cplx.complex and not real.complex
    assert registry.get(aten._fft_c2c.default, 23) is None  # complex only
    assert registry.get(aten.exp.default, 23, complex=True) is None


def test_user_complex_translation_is_registered_separately() -> None:
    registry = Registry()
    registry.register_translation(aten.exp.default, lambda ctx, x: ctx.op.Exp(x), complex=True)
    assert registry.get(aten.exp.default, 23) is None
    assert registry.get(aten.exp.default, 23, complex=True).custom


def test_op_without_complex_translation_is_refused_by_name() -> None:
    # exp has a real translation; it must not receive the real view of a complex tensor.
    with pytest.raises((UnsupportedOpError, UnsupportedOpsError), match=r"no complex translation for aten\.exp"):
        onnxport.export(Fn(torch.exp), (z(2, 3),))


def test_graph_io_carry_complex_as_real_metadata() -> None:
    program = check_against_eager(lambda a, b: (torch.view_as_real(a * b), a * b, (a * b).abs()), z(2, 3), z(2, 3)).program
    graph = program.model.graph
    for value in graph.inputs:
        assert value.dtype.name == "FLOAT" and list(value.shape) == [2, 3, 2]
        assert value.metadata_props[KEY_COMPLEX_AS_REAL] == "complex64"
    assert graph.metadata_props[KEY_COMPLEX_OUTPUTS] == "1:complex64"
    assert list(graph.outputs[1].shape) == [2, 3, 2]
    assert KEY_COMPLEX_AS_REAL not in graph.outputs[2].metadata_props


def test_complex_and_its_real_view_returned_together() -> None:
    # Identity elimination merges these two outputs; the graph-level record keeps them apart.
    check_against_eager(lambda a: (torch.fft.fft(a), torch.view_as_real(torch.fft.fft(a))), z(3, 8))


def test_complex128_and_saved_model_round_trip(tmp_path: Any) -> None:
    a = torch.randn(2, 5, dtype=torch.complex128)
    program = check_against_eager(lambda a: torch.fft.ifft(a * 2), a).program
    path = tmp_path / "m.onnx"
    program.save(path)
    loaded = onnxport.ONNXProgram.load(path)
    out = loaded(a)[0]
    assert out.dtype == torch.complex128
    torch.testing.assert_close(out, torch.fft.ifft(a * 2))


class WithComplexBuffer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("phase", torch.polar(torch.ones(4), torch.linspace(0, 3, 4)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.view_as_real(torch.fft.fft(x) * self.phase)


def test_complex_buffer_becomes_real_view_initializer() -> None:
    model = WithComplexBuffer()
    x = torch.randn(3, 4)
    program = onnxport.export(model, (x,))
    torch.testing.assert_close(program(x)[0], model(x), rtol=2e-4, atol=2e-5)


# -- ops ---------------------------------------------------------------------------------------

def test_arithmetic_with_real_and_complex_operands_and_scalars() -> None:
    a, b, r = z(2, 3), z(2, 3), torch.randn(3)
    check_against_eager(lambda a, b, r: (a * b, a * r, r * a, a + r, r - a, a - b, a / b, a / r, a * 2.5, a + 1j, 2j * a,
                            a.add(b, alpha=2), -a), a, b, r)


def test_unary_complex_ops() -> None:
    a = z(2, 5)
    a[0, 0] = 0
    check_against_eager(lambda a: (a.abs(), a.angle(), a.conj().resolve_conj(), torch.conj_physical(a), a.real, a.imag,
                      torch.view_as_real(a.clone())), a)


def test_constructors() -> None:
    re, im = torch.randn(3, 1), torch.randn(1, 4)  # broadcast
    check_against_eager(lambda re, im: (torch.complex(re, im), torch.polar(re.abs(), im), torch.view_as_complex(
        torch.stack([re.expand(3, 4), im.expand(3, 4)], -1)), re.to(torch.complex64)), re, im)


def test_complex_views_count_dims_without_the_real_imag_axis() -> None:
    a = z(2, 3, 4)
    check_against_eager(lambda a: (a.reshape(6, 4), a.permute(2, 0, 1), a.transpose(-1, 0), a.unsqueeze(-1), a[:, 1:, -2:],
                      a[..., -1], a.reshape(2, 1, 12).squeeze(-2), a.unfold(-1, 2, 1), a.expand(5, 2, 3, 4),
                      torch.cat([a, a.real.to(torch.complex64)], dim=-1)), a)


def test_complex_splits_count_dims_without_the_real_imag_axis() -> None:
    """split / split_with_sizes / chunk / unbind of a complex tensor (Qwen-Image's rotary table,
    ``freqs.split([16, 24, 24], dim=1)``): no complex translation before ("no complex translation
    for aten.split_with_sizes.default")."""
    a = z(4, 6, 3)
    check_against_eager(lambda a: (*a.split([1, 2, 3], dim=1), *a.split(2, dim=-2), *a.chunk(2, dim=0),
                                   *a.unbind(-1), *a.split([2, 2], dim=-3)), a)


def test_complex_padding_and_dtype_casts() -> None:
    a = z(2, 6)
    check_against_eager(lambda a: (torch.nn.functional.pad(a, (2, 1)), torch.nn.functional.pad(a.unsqueeze(0), (2, 2), mode="reflect"),
                      a.to(torch.complex128), torch.constant_pad_nd(a, (1, 1), 3.0)), a)


def test_verify_and_localize_compare_complex_outputs_as_complex() -> None:
    class Spectrum(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y = torch.fft.fft(x)
            return y, torch.view_as_real(y)  # the same values twice: one complex, one real view

    x = torch.randn(3, 8)
    program = onnxport.export(Spectrum(), (x,))
    result = onnxport.verify(program, (x,), localize=True)
    first, second = result.input_sets[0].outputs
    assert (first.actual_dtype, first.actual_shape) == (torch.complex64, (3, 8))
    assert (second.actual_dtype, second.actual_shape) == (torch.float32, (3, 8, 2))
    assert first.passed and second.passed and first.max_abs_diff < 1e-5
    assert result.localization is not None and result.localization.first is None


def test_complex_indexing_scatter_and_filled_tensors() -> None:
    """index.Tensor (one index, two adjacent, two apart), select_scatter, new_full / new_zeros /
    zeros_like on complex tensors (Z-Image's rotary table, diffusers 0.42): no complex translation
    before ("no complex translation for aten.index.Tensor")."""
    a = z(4, 5, 3)
    rows, cols = torch.tensor([[0, 3], [2, 2]]), torch.tensor([1, 4])
    check_against_eager(lambda a: (a[rows], a[:, cols], a[rows, cols], a[rows, :, torch.tensor([0, 2])],
                                   torch.select_scatter(a, a[1] * 2, 0, 3), torch.select_scatter(a, a.real[:, 0], 1, -1),
                                   a.new_full((2, 3), 1.5 - 2j), a.new_zeros((3,)), torch.zeros_like(a)), a)
