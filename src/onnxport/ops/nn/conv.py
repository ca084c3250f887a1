"""Convolutions (1-D/2-D/3-D, transposed)."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import dtype_of, rank, shape_of
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


def _expand(value: int | Sequence[int], n: int) -> list[int]:
    return [int(value)] * n if isinstance(value, int) else [int(v) for v in value] * (n if len(value) == 1 else 1)


def _conv(ctx: Ctx, input: ir.Value, weight: ir.Value, bias: ir.Value | None, stride: Sequence[int],
          padding: Sequence[int] | str, dilation: Sequence[int], groups: int) -> ir.Value:
    n = rank(weight) - 2
    unbatched = rank(input) == n + 1
    x = ctx.op.Unsqueeze(input, ctx.const([0])) if unbatched else input
    attrs: dict = {"strides": _expand(stride, n), "dilations": _expand(dilation, n), "group": int(groups)}
    if isinstance(padding, str):
        kernel = list(shape_of(weight))[2:]
        if padding == "same" and all(isinstance(k, int) for k in kernel):
            # torch (nn/modules/conv.py, _ConvNd): total d·(k−1), the left half rounded down,
            # explicit because onnxruntime refuses SAME_UPPER with a dilation
            total = [d * (k - 1) for d, k in zip(attrs["dilations"], kernel)]
            attrs["pads"] = [t // 2 for t in total] + [t - t // 2 for t in total]
        elif padding == "same":
            attrs["auto_pad"] = "SAME_UPPER"  # torch pads the extra element at the end, like SAME_UPPER
        # "valid": no padding, ONNX's default
    else:
        pads = _expand(padding, n)
        attrs["pads"] = pads + pads
    out = ctx.op.Conv(x, weight, bias, **attrs)
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


@translates(aten.conv1d.default, aten.conv2d.default, aten.conv3d.default,
            aten.conv1d.padding, aten.conv2d.padding, aten.conv3d.padding)
def aten_conv(
    ctx: Ctx, input: ir.Value, weight: ir.Value, bias: ir.Value | None = None,
    stride: Sequence[int] = (1,), padding: Sequence[int] | str = (0,), dilation: Sequence[int] = (1,),
    groups: int = 1,
) -> ir.Value:
    """conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor"""
    work = _CONV_WORK.get(dtype_of(input))
    if work is not None:  # as in aten_convolution
        args = [None if v is None else ctx.op.Cast(v, to=work) for v in (input, weight, bias)]
        out = _conv(ctx, args[0], args[1], args[2], stride, padding, dilation, groups)  # type: ignore[arg-type]
        return ctx.op.Cast(out, to=input.dtype)
    return _conv(ctx, input, weight, bias, stride, padding, dilation, groups)


# onnxruntime's Conv/ConvTranspose CPU kernels are float (and float16 for Conv): others convolve in
# float and cast back, exact for integers while every partial sum stays below 2**24.
_CONV_WORK = {ir.DataType.FLOAT16: ir.DataType.FLOAT, ir.DataType.BFLOAT16: ir.DataType.FLOAT,
              ir.DataType.INT64: ir.DataType.FLOAT, ir.DataType.INT32: ir.DataType.FLOAT}


@translates(aten.convolution.default)
def aten_convolution(
    ctx: Ctx, input: ir.Value, weight: ir.Value, bias: ir.Value | None, stride: Sequence[int],
    padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
    groups: int,
) -> ir.Value:
    """convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor

    Half types and integers convolve in float (``_CONV_WORK``) and are cast back.
    """
    work = _CONV_WORK.get(dtype_of(input))
    if work is not None:
        args = [None if v is None else ctx.op.Cast(v, to=work) for v in (input, weight, bias)]
        for cast, orig in zip(args, (input, weight, bias)):
            if cast is not None and orig is not None:
                cast.shape = orig.shape
        out = aten_convolution(ctx, args[0], args[1], args[2], stride, padding, dilation, transposed,  # type: ignore[arg-type]
                               output_padding, groups)
        return ctx.op.Cast(out, to=input.dtype)
    if not transposed:
        return _conv(ctx, input, weight, bias, stride, padding, dilation, groups)
    n = rank(weight) - 2
    pads = _expand(padding, n)
    unbatched = rank(input) == n + 1
    x = ctx.op.Unsqueeze(input, ctx.const([0])) if unbatched else input
    strides, extra = _expand(stride, n), _expand(output_padding, n)
    if all(o < s for o, s in zip(extra, strides)):
        out = ctx.op.ConvTranspose(
            x, weight, bias, strides=strides, pads=pads + pads, dilations=_expand(dilation, n),
            output_padding=extra, group=int(groups),
        )
    else:
        out = _conv_transpose_cropped(ctx, x, weight, bias, strides, pads, _expand(dilation, n), extra, int(groups))
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


def _conv_transpose_cropped(ctx: Ctx, x: ir.Value, weight: ir.Value, bias: ir.Value | None, strides: list[int],
                            pads: list[int], dilations: list[int], output_padding: list[int], groups: int) -> ir.Value:
    """Transposed convolution with output_padding ≥ stride (torch allows it below the dilation;
    onnxruntime's ConvTranspose requires it below the stride).

    The unpadded result has (L − 1)·s + d·(k − 1) + 1 positions per axis; torch's output is its
    window [p, p + that − 2p + output_padding) (PyTorch docs, ConvTranspose2d): zeros are appended
    where the window runs past the end, the window is sliced, and the bias added last (the
    appended positions hold only the bias).
    """
    n = len(strides)
    full = ctx.op.ConvTranspose(x, weight, None, strides=strides, dilations=dilations, group=groups)
    tail = [max(0, o - p) for o, p in zip(output_padding, pads)]
    if any(tail):
        full = ctx.op.Pad(full, ctx.const([0] * (n + 2) + [0, 0] + tail), ctx.const(0.0, x.dtype))
    axes = list(range(2, n + 2))
    ends = ctx.op.Add(ctx.op.Shape(full, start=2), ctx.const([o - p - t for o, p, t in zip(output_padding, pads, tail)]))
    out = ctx.op.Slice(full, ctx.const(pads), ends, ctx.const(axes))
    if bias is not None:
        out = ctx.op.Add(out, ctx.op.Reshape(bias, ctx.const([-1] + [1] * n)))
    return out


@translates(aten.conv_transpose1d.default, aten.conv_transpose2d.input, aten.conv_transpose3d.input)
def aten_conv_transpose(
    ctx: Ctx, input: ir.Value, weight: ir.Value, bias: ir.Value | None = None, stride: Sequence[int] = (1,),
    padding: Sequence[int] = (0,), output_padding: Sequence[int] = (0,), groups: int = 1,
    dilation: Sequence[int] = (1,),
) -> ir.Value:
    """conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor"""
    return aten_convolution(ctx, input, weight, bias, stride, padding, dilation, True, output_padding, groups)
