"""Pooling: max/avg pooling and adaptive average pooling."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops.conv import _expand
from onnxport.ops.shape import input_val, rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


def _pool_attrs(n: int, kernel_size: Sequence[int], stride: Sequence[int], padding: Sequence[int] | int,
                ceil_mode: bool) -> dict:
    kernel = _expand(kernel_size, n)
    strides = _expand(stride, n) if stride else kernel  # torch: stride defaults to kernel_size
    pads = _expand(padding, n)
    return {"kernel_shape": kernel, "strides": strides, "pads": pads + pads, "ceil_mode": int(ceil_mode)}


def _batched(ctx: Ctx, x: ir.Value, n: int) -> tuple[ir.Value, bool]:
    if rank(x) == n + 1:
        return ctx.op.Unsqueeze(x, ctx.const([0])), True
    return x, False


@translates(aten.max_pool1d.default, aten.max_pool2d.default, aten.max_pool3d.default)
def aten_max_pool(
    ctx: Ctx, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int] = (),
    padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,), ceil_mode: bool = False,
) -> ir.Value:
    """max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor"""
    n = {aten.max_pool1d.default: 1, aten.max_pool2d.default: 2, aten.max_pool3d.default: 3}[ctx.node.target]  # type: ignore[union-attr,index]
    x, unbatched = _batched(ctx, self, n)
    attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
    out = ctx.op.MaxPool(x, dilations=_expand(dilation, n), **attrs)
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


@translates(aten.avg_pool1d.default, aten.avg_pool2d.default, aten.avg_pool3d.default)
def aten_avg_pool(
    ctx: Ctx, self: ir.Value, kernel_size: Sequence[int], stride: Sequence[int] = (),
    padding: Sequence[int] = (0,), ceil_mode: bool = False, count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> ir.Value:
    """avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"""
    if divisor_override is not None:
        ctx.unsupported("avg_pool with divisor_override has no ONNX AveragePool equivalent")
    n = {aten.avg_pool1d.default: 1, aten.avg_pool2d.default: 2, aten.avg_pool3d.default: 3}[ctx.node.target]  # type: ignore[union-attr,index]
    x, unbatched = _batched(ctx, self, n)
    attrs = _pool_attrs(n, kernel_size, stride, padding, ceil_mode)
    out = ctx.op.AveragePool(x, count_include_pad=int(count_include_pad), **attrs)
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out


@translates(aten.adaptive_avg_pool1d.default, aten.adaptive_avg_pool2d.default, aten.adaptive_avg_pool3d.default,
            aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default)
def aten_adaptive_avg_pool(ctx: Ctx, self: ir.Value, output_size: Sequence[int]) -> ir.Value:
    """adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor

    Output 1 → GlobalAveragePool; input sizes divisible by the output sizes → AveragePool with
    kernel = stride = in/out (the bins PyTorch computes are then uniform).
    """
    n = len(output_size)
    x, unbatched = _batched(ctx, self, n)
    spatial = list(input_val(ctx).shape)[-n:]
    if all(o == 1 for o in output_size):
        out = ctx.op.GlobalAveragePool(x)
    elif all(isinstance(s, int) and s % o == 0 for s, o in zip(spatial, output_size)):
        kernel = [s // o for s, o in zip(spatial, output_size)]
        out = ctx.op.AveragePool(x, kernel_shape=kernel, strides=kernel)
    else:
        ctx.unsupported(f"adaptive_avg_pool from {spatial} to {list(output_size)} (non-uniform bins)")
    return ctx.op.Squeeze(out, ctx.const([0])) if unbatched else out
