"""Discrete Fourier transforms: aten._fft_r2c / _fft_c2c / _fft_c2r → ONNX DFT, on the complex-as-real
layout of :mod:`onnxport.ops.fft.complex` (a trailing dimension of 2: real, imaginary), evaluated in
float64 and normalized as torch's ``normalization`` argument says (onnx.ai/onnx/operators/onnx__DFT.html)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops.fft.complex import _arg_val, _conj, _re, _real_dtype
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


# Normalization codes of aten._fft_* (torch/_refs/fft.py, ``_apply_norm`` / ``_NORM_MODE``):
# 0 leaves the sum unscaled, 1 scales by 1/sqrt(n), 2 by 1/n (n: the signal size).
_NORM_NONE, _NORM_SQRT, _NORM_N = 0, 1, 2


def _dft(ctx: Ctx, x: ir.Value, axis: int, onesided: bool = False) -> ir.Value:
    """One forward ONNX DFT (unscaled) along ``axis`` of a ``[..., 1]`` (real) or ``[..., 2]``
    (complex) input.

    DFT-17 takes ``axis`` as an attribute, DFT-20 as its third input (the one attribute-to-input
    move here). ``onesided`` keeps the first n//2+1 bins of a real input's spectrum.

    Inverse transforms use the forward one: Σ X·e^{+2πikm/n} = conj(DFT(conj X)) (Oppenheim &
    Schafer, *Discrete-Time Signal Processing*, §8.6), because onnxruntime 1.31's ``inverse=1``
    DFT is inaccurate off powers of two (float64: 2e-8 at n=12, where its forward DFT stays below
    1e-13); the normalization is then applied once by :func:`_normalize`.
    """
    flags = {"onesided": int(onesided)}
    if ctx.opset >= 20:
        out = ctx.op.DFT(x, None, ctx.const(axis), **flags)
    else:
        out = ctx.op.DFT(x, axis=axis, **flags)
    out.dtype = x.dtype  # the builder does not track DFT's type; later constants need it
    return out


def _in_double(ctx: Ctx, x: ir.Value) -> ir.Value:
    """The transform's input in float64.

    onnxruntime 1.31's float32 DFT loses accuracy on lengths that are not powers of two (measured
    against numpy.fft: max error 5.5e-5 at n=20, 5.6e-4 at n=100, 2.6e-2 at n=1000, where torch's
    pocketfft stays below 1.5e-5); its float64 DFT stays below 1e-10. So the transforms run in
    float64 and the result is cast back to the output dtype (:func:`_out`).
    """
    return x if x.dtype == ir.DataType.DOUBLE else ctx.op.Cast(x, to=ir.DataType.DOUBLE)


def _out(ctx: Ctx, x: ir.Value) -> ir.Value:
    target = _real_dtype(ctx)
    return x if x.dtype == target else ctx.op.Cast(x, to=target)


def _signal_size(ctx: Ctx, x: ir.Value, sizes: Sequence[Any], axes: Sequence[int]) -> int | ir.Value:
    """n = Π sizes (a Python int when static, else computed from ``x``'s shape at ``axes``)."""
    if all(isinstance(s, int) for s in sizes):
        return math.prod(sizes)
    dims = ctx.op.Gather(ctx.op.Shape(x), ctx.const(list(axes)))
    return ctx.op.ReduceProd(dims, keepdims=0)


def _normalize(ctx: Ctx, x: ir.Value, n: int | ir.Value, normalization: int) -> ir.Value:
    """Apply aten's normalization to an unscaled transform (:func:`_dft`): 1 (mode 0),
    1/sqrt(n) (mode 1) or 1/n (mode 2), in either direction (torch/_refs/fft.py ``_apply_norm``)."""
    power = {_NORM_NONE: 0.0, _NORM_SQRT: -0.5, _NORM_N: -1.0}[normalization]
    if power == 0.0:
        return x
    if isinstance(n, int):
        return ctx.op.Mul(x, ctx.const(float(n) ** power, x.dtype))
    nf = ctx.op.Cast(n, to=x.dtype)
    factor = ctx.op.Reciprocal(nf) if power == -1.0 else ctx.op.Pow(nf, ctx.const(power, x.dtype))
    return ctx.op.Mul(x, factor)


def _axes(dim: Sequence[int], rank: int) -> list[int]:
    return [d % rank for d in dim]


# -- transforms ------------------------------------------------------------------------------

@translates(aten._fft_r2c.default, complex=True)
def aten_fft_r2c(ctx: Ctx, self: ir.Value, dim: Sequence[int], normalization: int, onesided: bool) -> ir.Value:
    """_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor

    Real input as ``[..., 1]``; the last of ``dim`` first (onesided there when asked, as
    torch's r2c halves the last transformed dim), then full transforms along the others.
    Normalization as torch/_refs/fft.py ``_apply_norm`` with n = Π input sizes along ``dim``.
    """
    in_val = _arg_val(ctx)
    axes = _axes(dim, in_val.dim())
    x = ctx.op.Unsqueeze(_in_double(ctx, self), ctx.const([-1]))
    out = _dft(ctx, x, axes[-1], onesided=onesided)
    for axis in axes[:-1]:
        out = _dft(ctx, out, axis)
    n = _signal_size(ctx, self, [in_val.shape[a] for a in axes], axes)
    return _out(ctx, _normalize(ctx, out, n, normalization))


@translates(aten._fft_c2c.default, complex=True)
def aten_fft_c2c(ctx: Ctx, self: ir.Value, dim: Sequence[int], normalization: int, forward: bool) -> ir.Value:
    """_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor

    One ONNX DFT per dim (the inverse as conj ∘ DFT ∘ conj, see :func:`_dft`), then torch's
    normalization (torch/_refs/fft.py ``_apply_norm``), n = Π sizes along ``dim``.
    """
    in_val = _arg_val(ctx)
    axes = _axes(dim, in_val.dim())
    if not axes:
        return ctx.op.Identity(self)
    out = _in_double(ctx, self)
    out = out if forward else _conj(ctx, out)
    for axis in axes:
        out = _dft(ctx, out, axis)
    out = out if forward else _conj(ctx, out)
    n = _signal_size(ctx, self, [in_val.shape[a] for a in axes], axes)
    return _out(ctx, _normalize(ctx, out, n, normalization))


@translates(aten._fft_c2r.default, complex=True)
def aten_fft_c2r(
    ctx: Ctx, self: ir.Value, dim: Sequence[int], normalization: int, last_dim_size: int | ir.Value,
) -> ir.Value:
    """_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor

    Inverse transforms along all of ``dim`` but the last; along the last, ONNX DFT has no
    onesided inverse, so the full spectrum of length N = ``last_dim_size`` is rebuilt from the
    first N//2+1 bins by Hermitian symmetry, X[N−k] = conj(X[k]) (Oppenheim & Schafer,
    *Discrete-Time Signal Processing*, §8.6.4), inverse-transformed, and its real part kept
    (imaginary parts of the DC and Nyquist bins drop out, as in pocketfft's c2r).
    """
    in_val = _arg_val(ctx)
    axes = _axes(dim, in_val.dim())
    last = axes[-1]
    # Work on conj(X) (see _dft): forward DFTs along the other dims give conj of their inverse,
    # the Hermitian completion commutes with conj, and Re(DFT(conj full)) is the inverse's real part.
    x = _conj(ctx, _in_double(ctx, self))
    for axis in axes[:-1]:
        x = _dft(ctx, x, axis)
    axis_c = ctx.const([last])
    if isinstance(last_dim_size, int):
        half: int | ir.Value = last_dim_size // 2 + 1
        if not (isinstance(in_val.shape[last], int) and in_val.shape[last] == half):
            x = ctx.op.Slice(x, ctx.const([0]), ctx.const([half]), axis_c)
        # bins N−N//2−1, ..., 1 (reversed, conjugated) complete bins 0..N//2 to N bins
        mirror = ctx.op.Slice(x, ctx.const([last_dim_size - half]), ctx.const([0]), axis_c, ctx.const([-1]))
        full = ctx.op.Concat(x, _conj(ctx, mirror), axis=last) if last_dim_size - half > 0 else x
    else:  # the same from N at run time; an empty mirror (N ≤ 2) concatenates nothing
        n_1d = ctx.op.Reshape(last_dim_size, ctx.const([1]))
        half = ctx.op.Add(ctx.op.Div(n_1d, ctx.const([2])), ctx.const([1]))
        x = ctx.op.Slice(x, ctx.const([0]), half, axis_c)
        mirror = ctx.op.Slice(x, ctx.op.Sub(n_1d, half), ctx.const([0]), axis_c, ctx.const([-1]))
        full = ctx.op.Concat(x, _conj(ctx, mirror), axis=last)
    out = _re(ctx, _dft(ctx, full, last))
    out_val = ctx.val()
    n = _signal_size(ctx, out, [out_val.shape[a] for a in axes], axes)
    return _out(ctx, _normalize(ctx, out, n, normalization))
