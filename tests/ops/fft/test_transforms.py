"""FFT translations (aten._fft_r2c / _fft_c2c / _fft_c2r via ONNX DFT) against eager torch.fft."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import onnxport
from _eager import check_against_eager

_check = partial(check_against_eager, equal_nan=False)


@pytest.mark.parametrize(("opset", "norm"), [(18, None), (20, "ortho"), (23, None), (23, "ortho"), (23, "forward")])
def test_fft_family_every_norm_and_dft_encoding(opset: int, norm: str | None) -> None:
    x = torch.randn(3, 10)
    program = _check(
        lambda x: (torch.fft.fft(x, norm=norm), torch.fft.ifft(x, norm=norm), torch.fft.rfft(x, norm=norm),
                   torch.fft.irfft(x, norm=norm), torch.fft.hfft(x, norm=norm), torch.fft.ihfft(x, norm=norm)),
        x, opset=opset,
    ).program
    dft = [n for n in program.model.graph if n.op_type == "DFT"]
    assert dft and all(len(n.inputs) == (3 if opset >= 20 else 1) for n in dft)  # DFT-20 takes axis as input


@pytest.mark.parametrize("n", [7, 8, 9])
def test_irfft_hfft_odd_and_even_lengths_rebuild_the_spectrum(n: int) -> None:
    z = torch.randn(2, 5, dtype=torch.complex64)  # not Hermitian: DC/Nyquist imaginary parts drop
    _check(lambda z: (torch.fft.irfft(z, n=n), torch.fft.hfft(z, n=n)), z)


def test_lengths_pad_and_truncate_and_dims() -> None:
    x = torch.randn(2, 6, 5)
    _check(lambda x: (torch.fft.fft(x, n=8, dim=1), torch.fft.rfft(x, n=3), torch.fft.fft2(x, s=(4, 7)),
                      torch.fft.rfftn(x, dim=(0, 2)), torch.fft.irfftn(x, s=(3, 6), dim=(0, -1)),
                      torch.fft.ifftn(x, dim=(-2,))), x)


def test_complex_input_transforms() -> None:
    z = torch.randn(4, 6, dtype=torch.complex64)
    _check(lambda z: (torch.fft.fft(z), torch.fft.ifft2(z, norm="ortho"), torch.fft.hfftn(z), torch.fft.irfft2(z)), z)


def test_float64_transforms() -> None:
    x = torch.randn(3, 12, dtype=torch.float64)
    _check(lambda x: (torch.fft.rfft(x), torch.fft.irfft(torch.fft.rfft(x), n=12)), x, atol=1e-9, rtol=1e-9)


def test_long_non_power_of_two_length_is_accurate() -> None:
    # onnxruntime's float32 DFT is off by ~2.6e-2 at n=1000; the translation runs it in float64.
    x = torch.randn(2, 1000)
    _check(lambda x: torch.fft.fft(x), x, atol=1e-4, rtol=1e-5)


def test_integer_input_is_transformed_as_float() -> None:
    x = torch.randint(-5, 5, (3, 8), dtype=torch.int32)
    _check(lambda x: torch.fft.rfft(x), x)


def test_dynamic_batch_dim() -> None:
    x = torch.randn(3, 16)
    batch = torch.export.Dim("batch", min=2)
    _check(lambda x: torch.fft.rfft(x, norm="ortho").abs(), x, dynamic_shapes={"x": {0: batch}},
           others=((torch.randn(5, 16),),))


def test_fft_over_dynamic_dim_uses_runtime_signal_size() -> None:
    x = torch.randn(3, 16)
    length = torch.export.Dim("length", min=4, max=64)
    _check(lambda x: torch.fft.ifft(x, norm="ortho"), x, dynamic_shapes={"x": {1: length}},
           others=((torch.randn(3, 20),),))


class Spectrogram(torch.nn.Module):
    def __init__(self, n_fft: int = 64, hop: int = 16) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(x, self.n_fft, self.hop, window=self.window, return_complex=True)
        return spec.abs().pow(2)


def test_stft_spectrogram_module() -> None:
    model = Spectrogram()
    x = torch.randn(2, 800)
    program = onnxport.export(model, (x,))
    expected = model(x)
    actual = program(x)[0]
    assert actual.shape == expected.shape == (2, 33, 51) and actual.dtype == torch.float32
    torch.testing.assert_close(actual, expected, rtol=2e-4, atol=1e-3)


def test_stft_of_a_waveform_of_any_length() -> None:
    # the frames (reflect-padded waveform unfolded by hop) counted at run time: one graph for
    # every length, as an audio model's front end needs
    model = Spectrogram()
    x = torch.randn(2, 800)
    program = onnxport.export(model, (x,), dynamic_shapes={"x": {0: "batch", 1: "samples"}})
    for inputs in (x, torch.randn(1, 1000), torch.randn(3, 337)):
        expected, actual = model(inputs), program(inputs)[0]
        assert actual.shape == expected.shape and actual.dtype == torch.float32
        torch.testing.assert_close(actual, expected, rtol=2e-4, atol=1e-3)


def test_stft_complex_output_and_istft_round_trip() -> None:
    window = torch.hann_window(32)
    x = torch.randn(1, 400)
    _check(lambda x, w: torch.stft(x, 32, 8, window=w, return_complex=True), x, window)
    spec = torch.stft(x, 32, 8, window=window, return_complex=True)
    _check(lambda s, w: torch.istft(s, 32, 8, window=w, length=400), spec, window, atol=1e-4)


def test_irfft_back_to_a_dynamic_length() -> None:
    # spectral filters (FNO, audio denoisers): irfft(rfft(x) * w, n=x.shape[-1]) with a dynamic
    # length: N and the Hermitian completion come from the shape at run time
    fn = lambda x: torch.fft.irfft(torch.fft.rfft(x, dim=-1) * 2, n=x.shape[-1], dim=-1)  # noqa: E731
    others = tuple((torch.randn(2, length),) for length in (2, 9, 16, 33))
    check_against_eager(fn, torch.randn(3, 20), dynamic_shapes={"x": {0: "batch", 1: "length"}}, others=others)
