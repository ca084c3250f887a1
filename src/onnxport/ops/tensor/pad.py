"""Padding: constant_pad_nd, reflection_pad{1,2,3}d, replication_pad{1,2,3}d, pad (the high-level op).

torch lists pads from the last dim backwards, (begin, end) pairs; ONNX Pad takes
``pads = [begins..., ends...]`` over every dim (zeros for the dims torch leaves alone; not Pad-18's
``axes``, see :func:`onnxport.ops._common.full_pads`). Negative pads crop, in both.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import INT64_MAX, full_pads, rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

# ORT's Pad kernels cover float, double, float16 (not every mode), int32, int64, uint8, bool
# (constant); the rest pad in float and cast back.
_PAD_TYPES = {ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.INT32, ir.DataType.INT64,
              ir.DataType.UINT8, ir.DataType.INT8}


def _pad(ctx: Ctx, x: ir.Value, pad: Sequence[int | ir.Value], mode: str, value: float | None = None) -> ir.Value:
    n = len(pad) // 2
    r = rank(x)
    if n == 0:
        return ctx.op.Identity(x)
    axes = [r - 1 - i for i in range(n)]
    begins = [pad[2 * i] for i in range(n)]
    ends = [pad[2 * i + 1] for i in range(n)]
    if mode == "edge" and any(isinstance(p, int) and p < 0 for p in pad):
        return _replicate_gather(ctx, x, axes, begins, ends)
    if mode != "constant" and any(isinstance(p, int) and p < 0 for p in pad):
        # ORT rejects negative pads in reflect/edge modes: crop with Slice first, then pad.
        starts = [max(-b, 0) if isinstance(b, int) else 0 for b in begins]
        stops = [e if isinstance(e, int) and e < 0 else INT64_MAX for e in ends]
        x = ctx.op.Slice(x, ctx.const(starts), ctx.const(stops), ctx.const(axes))
        begins = [max(b, 0) if isinstance(b, int) else b for b in begins]
        ends = [max(e, 0) if isinstance(e, int) else e for e in ends]
    dtype = x.dtype
    work = x if dtype in _PAD_TYPES else ctx.op.Cast(x, to=ir.DataType.FLOAT)
    fill = None if mode != "constant" else ctx.const(value if value is not None else 0, work.dtype)
    pairs = [p for begin, end in zip(begins, ends) for p in (begin, end)]
    out = ctx.op.Pad(work, full_pads(ctx, r, pairs), fill, mode=mode)
    return out if work is x else ctx.op.Cast(out, to=dtype)


def _replicate_gather(ctx: Ctx, x: ir.Value, axes: Sequence[int], begins: Sequence[int | ir.Value],
                      ends: Sequence[int | ir.Value]) -> ir.Value:
    """Replicate padding with a negative pad: output j of an axis of size L is input
    clamp(j − begin, 0, L − 1) (aten ReplicationPadding.cpp), a Gather per axis. A crop then an
    edge pad would differ where the crop empties the axis (torch still replicates the last element
    kept by the index clamp)."""
    out = x
    for axis, begin, end in zip(axes, begins, ends):
        if isinstance(begin, int) and isinstance(end, int) and begin == 0 and end == 0:
            continue
        size = ctx.op.Squeeze(ctx.op.Shape(x, start=axis, end=axis + 1), ctx.const([0]))
        b = ctx.shape_tensor([begin])
        b = ctx.op.Squeeze(b, ctx.const([0]))
        total = ctx.op.Add(ctx.op.Add(size, b), ctx.op.Squeeze(ctx.shape_tensor([end]), ctx.const([0])))
        idx = ctx.op.Sub(ctx.op.Range(ctx.const(0), total, ctx.const(1)), b)
        idx = ctx.op.Min(ctx.op.Max(idx, ctx.const(0)), ctx.op.Sub(size, ctx.const(1)))
        out = ctx.op.Gather(out, idx, axis=axis)
    return out


@translates(aten.constant_pad_nd.default)
def aten_constant_pad_nd(ctx: Ctx, self: ir.Value, pad: Sequence[int | ir.Value], value: float = 0) -> ir.Value:
    """constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor"""
    return _pad(ctx, self, pad, "constant", value)


@translates(aten.reflection_pad1d.default, aten.reflection_pad2d.default, aten.reflection_pad3d.default)
def aten_reflection_pad(ctx: Ctx, self: ir.Value, padding: Sequence[int | ir.Value]) -> ir.Value:
    """reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor"""
    return _pad(ctx, self, padding, "reflect")


@translates(aten.replication_pad1d.default, aten.replication_pad2d.default, aten.replication_pad3d.default)
def aten_replication_pad(ctx: Ctx, self: ir.Value, padding: Sequence[int | ir.Value]) -> ir.Value:
    """replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor"""
    return _pad(ctx, self, padding, "edge")


@translates(aten._pad_circular.default)
def aten_pad_circular(ctx: Ctx, self: ir.Value, pad: Sequence[int | ir.Value]) -> ir.Value:
    """_pad_circular(Tensor self, SymInt[] pad) -> Tensor

    Slices from the other end concatenated, dim by dim. (ONNX Pad-19 "wrap" would express it,
    but onnxruntime 1.31's CPU Pad rejects that mode: "Unexpected mode of 3".)
    """
    return _circular(ctx, self, pad)


def _circular(ctx: Ctx, x: ir.Value, pad: Sequence[int | ir.Value]) -> ir.Value:
    """Below opset 19 (no "wrap"): concatenate slices from the other end, dim by dim."""
    r = rank(x)
    out = x
    for i in range(len(pad) // 2):
        axis = r - 1 - i
        begin, end = pad[2 * i], pad[2 * i + 1]
        if not (isinstance(begin, int) and isinstance(end, int)):
            ctx.unsupported("circular padding by symbolic amounts")
        axes = ctx.const([axis])
        parts = []
        if begin > 0:
            parts.append(ctx.op.Slice(out, ctx.const([-begin]), ctx.const([2**63 - 1]), axes))
        core = out
        if begin < 0 or end < 0:
            core = ctx.op.Slice(out, ctx.const([max(-begin, 0)]), ctx.const([end if end < 0 else 2**63 - 1]), axes)
        parts.append(core)
        if end > 0:
            parts.append(ctx.op.Slice(out, ctx.const([0]), ctx.const([end]), axes))
        out = parts[0] if len(parts) == 1 else ctx.op.Concat(*parts, axis=axis)
    return out


@translates(aten.pad.default)
def aten_pad(
    ctx: Ctx, self: ir.Value, pad: Sequence[int | ir.Value], mode: str = "constant", value: float | None = None,
) -> ir.Value:
    """pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor"""
    if mode == "constant":
        return _pad(ctx, self, pad, "constant", value)
    if mode == "circular":
        return _circular(ctx, self, pad)
    return _pad(ctx, self, pad, {"reflect": "reflect", "replicate": "edge"}[mode])
