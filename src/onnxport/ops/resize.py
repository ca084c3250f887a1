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

import onnx_ir as ir
import torch

from onnxport.ops.shape import rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

_FLOAT_RESIZE = {ir.DataType.FLOAT, ir.DataType.DOUBLE}


def _resize(
    ctx: Ctx, x: ir.Value, output_size: Sequence[int | ir.Value] | None, scales: Sequence[float | None] | None,
    mode: str, transform: str, nearest_mode: str = "floor",
) -> ir.Value:
    r = rank(x)
    n = r - 2
    dtype = x.dtype
    # ORT's Resize kernels: float, int32, int8/uint8 for every mode; others resize in float.
    work = x if dtype in _FLOAT_RESIZE or (mode == "nearest" and dtype in (ir.DataType.INT32, ir.DataType.UINT8)) \
        else ctx.op.Cast(x, to=ir.DataType.FLOAT)
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest_mode
    if mode == "cubic":
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
    return _resize(ctx, input, output_size or (None if scales else _out_spatial(ctx, input)), scales,
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
    return _resize(ctx, input, output_size or (None if scales else _out_spatial(ctx, input)), scales,
                   "cubic", _linear_transform(align_corners))


@translates(aten.upsample_bicubic2d.default)
def aten_upsample_bicubic(
    ctx: Ctx, self: ir.Value, output_size: Sequence[int | ir.Value], align_corners: bool, *scales: float | None,
) -> ir.Value:
    """upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor"""
    return _resize(ctx, self, output_size, None, "cubic", _linear_transform(align_corners))


def _out_spatial(ctx: Ctx, x: ir.Value) -> list[int]:
    shape = list(ctx.val().shape)[2:]
    if not all(isinstance(d, int) for d in shape):
        ctx.unsupported("resize to a dynamic output size given by align_corners scale factors")
    return shape  # type: ignore[return-value]


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
    """pixel_shuffle(Tensor self, int upscale_factor) -> Tensor: DepthToSpace, mode "CRD"."""
    if rank(self) != 4:
        return _batch_flattened(ctx, self, lambda x: ctx.op.DepthToSpace(x, blocksize=upscale_factor, mode="CRD"))
    return ctx.op.DepthToSpace(self, blocksize=upscale_factor, mode="CRD")


@translates(aten.pixel_unshuffle.default)
def aten_pixel_unshuffle(ctx: Ctx, self: ir.Value, downscale_factor: int) -> ir.Value:
    """pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor

    SpaceToDepth orders channels as DCR; torch as CRD: reshape/transpose instead.
    """
    b = downscale_factor
    c, h, w = (ctx.op.Shape(self, start=i, end=i + 1) for i in (-3, -2, -1))
    lead = ctx.op.Shape(self, start=0, end=-3)
    hb = ctx.op.Div(h, ctx.const([b]))
    wb = ctx.op.Div(w, ctx.const([b]))
    x = ctx.op.Reshape(self, ctx.op.Concat(ctx.const([-1]), c, hb, ctx.const([b]), wb, ctx.const([b]), axis=0))
    x = ctx.op.Transpose(x, perm=[0, 1, 3, 5, 2, 4])
    out_shape = ctx.op.Concat(lead, ctx.op.Mul(c, ctx.const([b * b])), hb, wb, axis=0)
    return ctx.op.Reshape(x, out_shape)


def _batch_flattened(ctx: Ctx, x: ir.Value, fn: object) -> ir.Value:
    """Apply a 4-D op to a (..., C, H, W) tensor of another rank via reshapes."""
    lead = ctx.op.Shape(x, start=0, end=-3)
    chw = ctx.op.Shape(x, start=-3)
    flat = ctx.op.Reshape(x, ctx.op.Concat(ctx.const([-1]), chw, axis=0))
    out = fn(flat)  # type: ignore[operator]
    return ctx.op.Reshape(out, ctx.op.Concat(lead, ctx.op.Shape(out, start=1), axis=0))

