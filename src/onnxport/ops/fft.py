"""Discrete Fourier transforms (aten._fft_r2c / _fft_c2c / _fft_c2r) and the complex-number ops
around them. Complex tensors are carried as real tensors with a trailing dimension of 2 (real,
imaginary), the layout of ONNX DFT (onnx.ai/onnx/operators/onnx__DFT.html)."""

from __future__ import annotations
