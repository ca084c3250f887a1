"""Resampling: upsample_* (interpolate) → Resize, grid_sampler_2d → GridSample, col2im → Col2Im,
pixel_shuffle / pixel_unshuffle → DepthToSpace / SpaceToDepth.

Coordinate mappings (PyTorch docs of ``torch.nn.functional.interpolate`` and the ONNX Resize
spec): nearest is ``floor(dst · in/out)`` = Resize "asymmetric" + nearest_mode "floor";
nearest-exact is ``floor((dst + ½) · in/out)`` = "half_pixel" + "round_prefer_ceil"; linear and
cubic use "pytorch_half_pixel" (or "align_corners"). When the op carries scale factors, torch maps
coordinates with 1/scale, so they are given to Resize as ``scales``; else the output ``sizes``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

_FLOAT_RESIZE = {ir.DataType.FLOAT, ir.DataType.DOUBLE}


def _resize(
    ctx: Ctx, x: ir.Value, output_size: Sequence[int | ir.Value] | None, scales: Sequence[float | None] | None,
    mode: str, transform: str, nearest_mode: str = "floor", **extra: float,
) -> ir.Value:
    r = rank(x)
    n = r - 2
    dtype = x.dtype
    # ORT's Resize kernels: float, int32, int8/uint8 for every mode; others resize in float.
    work = x if dtype in _FLOAT_RESIZE or (mode == "nearest" and dtype in (ir.DataType.INT32, ir.DataType.UINT8)) \
        else ctx.op.Cast(x, to=ir.DataType.FLOAT)
    attrs: dict = {"mode": mode, "coordinate_transformation_mode": transform, **extra}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest_mode
    if mode == "cubic" and "cubic_coeff_a" not in attrs:
        attrs["cubic_coeff_a"] = -0.75  # torch's bicubic constant (aten UpSample.h)
    if scales and all(s is not None for s in scales) and not output_size:
        scale_values = ctx.const([1.0, 1.0, *[float(s) for s in scales]], ir.DataType.FLOAT)  # type: ignore[arg-type]
        out = ctx.op.Resize(work, None, scale_values, **attrs)
    else:
        sizes = ctx.shape_tensor([*list(ctx.val().shape[:2])[:0], *output_size]) if output_size else None
        if sizes is None:
            sizes = ctx.shape_tensor([d if isinstance(d, int) else -1 for d in ctx.val().shape[-n:]])
        # sizes for the spatial axes only (Resize-18 "axes"), so N and C stay dynamic.
        out = ctx.op.Resize(work, None, None, sizes, axes=list(range(2, r)), **attrs)
    return out if work is x else ctx.op.Cast(out, to=dtype)


def _scales(scale_factors: Sequence[float] | None, *scalars: float | None) -> list[float | None] | None:
    if scale_factors:
        return list(scale_factors)
    if scalars and all(s is not None for s in scalars):
        return list(scalars)
    return None


@translates(aten.upsample_nearest1d.vec, aten.upsample_nearest2d.vec, aten.upsample_nearest3d.vec)
def aten_upsample_nearest_vec(
    ctx: Ctx, input: ir.Value, output_size: Sequence[int | ir.Value] | None, scale_factors: Sequence[float] | None,
) -> ir.Value:
    """upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _resize(ctx, input, output_size, _scales(scale_factors), "nearest", "asymmetric", "floor")


@translates(aten.upsample_nearest1d.default, aten.upsample_nearest2d.default, aten.upsample_nearest3d.default)
def aten_upsample_nearest(ctx: Ctx, self: ir.Value, output_size: Sequence[int | ir.Value], *scales: float | None) -> ir.Value:
    """upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return _resize(ctx, self, output_size, None, "nearest", "asymmetric", "floor")


@translates(aten._upsample_nearest_exact1d.vec, aten._upsample_nearest_exact2d.vec, aten._upsample_nearest_exact3d.vec)
def aten_upsample_nearest_exact_vec(
    ctx: Ctx, input: ir.Value, output_size: Sequence[int | ir.Value] | None, scale_factors: Sequence[float] | None,
) -> ir.Value:
    """_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor"""
    return _resize(ctx, input, output_size, _scales(scale_factors), "nearest", "half_pixel", "round_prefer_ceil")


def _linear_transform(align_corners: bool) -> str:
    return "align_corners" if align_corners else "pytorch_half_pixel"


@translates(aten.upsample_linear1d.vec, aten.upsample_bilinear2d.vec, aten.upsample_trilinear3d.vec)
def aten_upsample_linear_vec(
    ctx: Ctx, input: ir.Value, output_size: Sequence[int | ir.Value] | None, align_corners: bool,
    scale_factors: Sequence[float] | None,
) -> ir.Value:
    """upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    scales = None if align_corners else _scales(scale_factors)
    return _resize(ctx, input, output_size or (None if scales else _out_spatial(ctx, input, scale_factors)), scales,
                   "linear", _linear_transform(align_corners))


@translates(aten.upsample_linear1d.default, aten.upsample_bilinear2d.default, aten.upsample_trilinear3d.default)
def aten_upsample_linear(
    ctx: Ctx, self: ir.Value, output_size: Sequence[int | ir.Value], align_corners: bool, *scales: float | None,
) -> ir.Value:
    """upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return _resize(ctx, self, output_size, None, "linear", _linear_transform(align_corners))


@translates(aten.upsample_bicubic2d.vec)
def aten_upsample_bicubic_vec(
    ctx: Ctx, input: ir.Value, output_size: Sequence[int | ir.Value] | None, align_corners: bool,
    scale_factors: Sequence[float] | None,
) -> ir.Value:
    """upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor"""
    scales = None if align_corners else _scales(scale_factors)
    return _resize(ctx, input, output_size or (None if scales else _out_spatial(ctx, input, scale_factors)), scales,
                   "cubic", _linear_transform(align_corners))


@translates(aten.upsample_bicubic2d.default)
def aten_upsample_bicubic(
    ctx: Ctx, self: ir.Value, output_size: Sequence[int | ir.Value], align_corners: bool, *scales: float | None,
) -> ir.Value:
    """upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return _resize(ctx, self, output_size, None, "cubic", _linear_transform(align_corners))


@translates(aten._upsample_bilinear2d_aa.default, aten._upsample_bicubic2d_aa.default)
def aten_upsample_aa(
    ctx: Ctx, self: ir.Value, output_size: Sequence[int | ir.Value], align_corners: bool, *scales: float | None,
) -> ir.Value:
    """_upsample_bilinear2d_aa(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor

    Anti-aliased resampling (PIL's convolution resize, which torch's ``antialias=True`` follows):
    on downscaling the interpolation filter is widened by in/out, taps outside the image are
    dropped and the rest renormalized. Without scale factors and align_corners that is ONNX
    Resize-18 with ``antialias=1`` and ``exclude_outside=1`` (ONNX spec, Resize). Otherwise torch
    centres and widens the filter with its own scale ((in−1)/(out−1), or 1/scale factor), which
    Resize cannot express with output sizes: for static sizes each spatial axis becomes a MatMul
    with the (out, in) matrix of torch's weights (aten/src/ATen/native/cpu/UpSampleKernel.cpp,
    ``_compute_indices_weights_aa``; the filter is separable). On dynamic sizes, scale factors are
    Resize-18 with ``scales`` and ``half_pixel`` (the filter widened by 1/scale, the output
    floor(in·scale), as torch); align_corners there is unsupported.
    """
    cubic = ctx.node is not None and ctx.node.target is aten._upsample_bicubic2d_aa.default
    given = [s for s in scales if s is not None and s > 0]
    if not align_corners and not given:
        if cubic:  # torch's AA bicubic filter is Keys' with a = −0.5
            return _resize(ctx, self, output_size, None, "cubic", "pytorch_half_pixel",
                           antialias=1, exclude_outside=1, cubic_coeff_a=-0.5)
        return _resize(ctx, self, output_size, None, "linear", "pytorch_half_pixel", antialias=1, exclude_outside=1)
    in_sizes = _input_shape(ctx)[-2:]
    out_sizes = list(ctx.val().shape)[-2:]
    if not all(isinstance(d, int) for d in (*in_sizes, *out_sizes)):
        if align_corners or len(given) != 2:
            ctx.unsupported("anti-aliased resize with align_corners on dynamic spatial sizes")
        # the filter scale is 1/scale factor, the output floor(in·scale): Resize-18 with scales and
        # half_pixel (ONNX spec, Resize: x_original = (x_resized + 0.5) / scale − 0.5)
        if cubic:
            return _resize(ctx, self, None, given, "cubic", "half_pixel", antialias=1, exclude_outside=1,
                           cubic_coeff_a=-0.5)
        return _resize(ctx, self, None, given, "linear", "half_pixel", antialias=1, exclude_outside=1)
    dtype = self.dtype
    x = self if dtype in _FLOAT_RESIZE else ctx.op.Cast(self, to=ir.DataType.FLOAT)
    np_dtype = np.float64 if x.dtype == ir.DataType.DOUBLE else np.float32
    scale_h, scale_w = (list(scales) + [None, None])[:2]
    wh = _aa_weights(in_sizes[0], out_sizes[0], align_corners, scale_h, cubic)
    ww = _aa_weights(in_sizes[1], out_sizes[1], align_corners, scale_w, cubic)
    out = ctx.op.MatMul(x, ctx.const(ww.T.astype(np_dtype), x.dtype))  # (N, C, H, out_w)
    out = ctx.op.MatMul(ctx.const(wh.astype(np_dtype), x.dtype), out)  # (N, C, out_h, out_w)
    return out if x is self else ctx.op.Cast(out, to=dtype)


def _input_shape(ctx: Ctx) -> list:
    assert ctx.node is not None
    return list(ctx.node.args[0].meta["val"].shape)  # type: ignore[union-attr]


def _aa_filter(x: np.ndarray, cubic: bool) -> np.ndarray:
    """Triangle filter, or Keys' cubic convolution with a = −0.5 (torch's AA filters)."""
    x = np.abs(x)
    if not cubic:
        return np.clip(1.0 - x, 0.0, None)
    a = -0.5
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _aa_weights(size_in: int, size_out: int, align_corners: bool, scale: float | None, cubic: bool) -> np.ndarray:
    """The (out, in) resampling matrix of torch's anti-aliased interpolation along one axis."""
    if align_corners:
        s = (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else size_in / size_out
    half = 2.0 if cubic else 1.0  # interp_size / 2
    support = half * s if s >= 1.0 else half
    inv = 1.0 / s if s >= 1.0 else 1.0
    weights = np.zeros((size_out, size_in), dtype=np.float64)
    for i in range(size_out):
        center = s * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), size_in)
        taps = _aa_filter((np.arange(lo, hi) - center + 0.5) * inv, cubic)
        total = taps.sum()
        weights[i, lo:hi] = taps / total if total != 0 else taps
    return weights


def _out_spatial(ctx: Ctx, x: ir.Value, scale_factors: Sequence[float] | None) -> list[int | ir.Value]:
    """The output's spatial sizes: recorded ints, or for a dynamic dim with a scale factor
    ``floor(in · scale)`` computed in the graph (in float64, as ATen's
    ``upsample_compute_output_size`` casts ``input_size * scale`` to an integer)."""
    shape = list(ctx.val().shape)[2:]
    sizes: list[int | ir.Value] = []
    for i, d in enumerate(shape):
        if isinstance(d, int):
            sizes.append(d)
            continue
        if not scale_factors:
            ctx.unsupported("resize to a dynamic output size given neither as sizes nor as scale factors")
        axis = 2 + i
        in_size = ctx.op.Cast(ctx.op.Shape(x, start=axis, end=axis + 1), to=ir.DataType.DOUBLE)
        scaled = ctx.op.Floor(ctx.op.Mul(in_size, ctx.const([float(scale_factors[i])], ir.DataType.DOUBLE)))
        sizes.append(ctx.op.Cast(scaled, to=ir.DataType.INT64))
    return sizes


# -- grid_sample ------------------------------------------------------------------------------

_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@translates(aten.grid_sampler_2d.default)
def aten_grid_sampler_2d(
    ctx: Ctx, input: ir.Value, grid: ir.Value, interpolation_mode: int, padding_mode: int, align_corners: bool,
) -> ir.Value:
    """grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor

    GridSample-16 (modes "bilinear", "nearest", "bicubic"), same coordinate conventions as torch.
    """
    mode = {0: "bilinear", 1: "nearest", 2: "bicubic"}[interpolation_mode]
    return ctx.op.GridSample(input, grid, mode=mode, padding_mode=_GRID_PADDING[padding_mode],
                             align_corners=int(align_corners))


@translates(aten.grid_sampler_2d.default, since=20)
def aten_grid_sampler_2d_20(
    ctx: Ctx, input: ir.Value, grid: ir.Value, interpolation_mode: int, padding_mode: int, align_corners: bool,
) -> ir.Value:
    """grid_sampler_2d(...) -> Tensor: GridSample-20 (modes renamed "linear", "nearest", "cubic")."""
    mode = {0: "linear", 1: "nearest", 2: "cubic"}[interpolation_mode]
    return ctx.op.GridSample(input, grid, mode=mode, padding_mode=_GRID_PADDING[padding_mode],
                             align_corners=int(align_corners))


@translates(aten.grid_sampler_3d.default)
def aten_grid_sampler_3d(
    ctx: Ctx, input: ir.Value, grid: ir.Value, interpolation_mode: int, padding_mode: int, align_corners: bool,
) -> ir.Value:
    """grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor

    Below opset 20 GridSample is 2-D only (ONNX spec, GridSample-16: 4-D input), so refused.
    """
    ctx.unsupported(f"grid_sampler_3d (5-D grid_sample) at opset {ctx.opset}: ONNX GridSample takes N-D "
                    "inputs only from opset 20; export with opset_version >= 20")


@translates(aten.grid_sampler_3d.default, since=20)
def aten_grid_sampler_3d_20(
    ctx: Ctx, input: ir.Value, grid: ir.Value, interpolation_mode: int, padding_mode: int, align_corners: bool,
) -> ir.Value:
    """grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor

    GridSample-20 on (N, C, D, H, W) with a (N, D', H', W', 3) grid of (x, y, z) (ONNX spec,
    GridSample-20; torch.nn.functional.grid_sample docs). torch's "bilinear" on 5-D is trilinear
    = "linear"; "bicubic" is 2-D only in torch as in ONNX ("cubic" supports 4-D input only).
    """
    if interpolation_mode not in (0, 1):
        ctx.unsupported("grid_sampler_3d with bicubic interpolation: torch and ONNX GridSample-20 support "
                        "cubic only for 4-D inputs")
    mode = {0: "linear", 1: "nearest"}[interpolation_mode]
    return ctx.op.GridSample(input, grid, mode=mode, padding_mode=_GRID_PADDING[padding_mode],
                             align_corners=int(align_corners))


# -- col2im, pixel shuffle --------------------------------------------------------------------

@translates(aten.col2im.default)
def aten_col2im(
    ctx: Ctx, self: ir.Value, output_size: Sequence[int | ir.Value], kernel_size: Sequence[int],
    dilation: Sequence[int], padding: Sequence[int], stride: Sequence[int],
) -> ir.Value:
    """col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor"""
    unbatched = rank(self) == 2
    x = ctx.op.Unsqueeze(self, ctx.const([0])) if unbatched else self
    out = ctx.op.Col2Im(x, ctx.shape_tensor(list(output_size)), ctx.const(list(kernel_size)),
                        dilations=list(dilation), pads=list(padding) * 2, strides=list(stride))
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


@translates(aten.pixel_shuffle.default)
def aten_pixel_shuffle(ctx: Ctx, self: ir.Value, upscale_factor: int) -> ir.Value:
    """pixel_shuffle(Tensor self, int upscale_factor) -> Tensor

    4-D float tensors: DepthToSpace, mode "CRD". Other ranks and dtypes (onnxruntime has no
    DepthToSpace kernels for integers, bool, bfloat16): reshape (…, C, b, b, H, W), transpose to
    (…, C, H, b, W, b), reshape (…, C, H·b, W·b), sizes from Shape with ``allowzero=1``.
    """
    b = upscale_factor
    r = rank(self)
    if r == 4 and self.dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.FLOAT16):
        return ctx.op.DepthToSpace(self, blocksize=b, mode="CRD")
    lead = ctx.op.Shape(self, start=0, end=r - 3)
    c, h, w = (ctx.op.Shape(self, start=i, end=i + 1) for i in (r - 3, r - 2, r - 1))
    block = ctx.const([b])
    cb = ctx.op.Div(c, ctx.const([b * b]))
    x = ctx.op.Reshape(self, ctx.op.Concat(lead, cb, block, block, h, w, axis=0), allowzero=1)
    k = r - 3
    x = ctx.op.Transpose(x, perm=[*range(k), k, k + 3, k + 1, k + 4, k + 2])
    out_shape = ctx.op.Concat(lead, cb, ctx.op.Mul(h, block), ctx.op.Mul(w, block), axis=0)
    return ctx.op.Reshape(x, out_shape, allowzero=1)


def _static_numel(ctx: Ctx) -> int | None:
    assert ctx.node is not None
    shape = list(ctx.node.args[0].meta["val"].shape)  # type: ignore[union-attr]
    if any(isinstance(d, int) and d == 0 for d in shape):
        return 0
    return int(np.prod(shape)) if all(isinstance(d, int) for d in shape) else None


@translates(aten.pixel_unshuffle.default)
def aten_pixel_unshuffle(ctx: Ctx, self: ir.Value, downscale_factor: int) -> ir.Value:
    """pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor

    SpaceToDepth orders channels as DCR; torch as CRD: reshape (..., C, H/b, b, W/b, b), move the
    two block axes after C, reshape (..., C·b², H/b, W/b). Sizes come from Shape with
    ``allowzero=1`` (no −1), so empty batches keep their zero sizes.
    """
    b = downscale_factor
    r = rank(self)
    if _static_numel(ctx) == 0:  # torch returns an empty input unchanged (aten PixelShuffle.cpp)
        return ctx.op.Identity(self)
    lead = ctx.op.Shape(self, start=0, end=r - 3)
    c, h, w = (ctx.op.Shape(self, start=i, end=i + 1) for i in (r - 3, r - 2, r - 1))
    hb = ctx.op.Div(h, ctx.const([b]))
    wb = ctx.op.Div(w, ctx.const([b]))
    block = ctx.const([b])
    x = ctx.op.Reshape(self, ctx.op.Concat(lead, c, hb, block, wb, block, axis=0), allowzero=1)
    k = r - 3
    x = ctx.op.Transpose(x, perm=[*range(k), k, k + 2, k + 4, k + 1, k + 3])
    out_shape = ctx.op.Concat(lead, ctx.op.Mul(c, ctx.const([b * b])), hb, wb, axis=0)
    return ctx.op.Reshape(x, out_shape, allowzero=1)
