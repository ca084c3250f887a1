"""Histograms: histc, histogram (bin count or bin edges) and histogramdd."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import _HALF_TYPES, rank
from onnxport.ops.tensor.sort import _float_work
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


# -- histc ------------------------------------------------------------------------------------

@translates(aten.histc.default)
def aten_histc(ctx: Ctx, self: ir.Value, bins: int = 100, min: float = 0, max: float = 0) -> ir.Value:
    """histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor

    torch.histc docs: equal-width bins over [min, max]; min = max means the data's minimum and
    maximum, widened by ±1 when those are equal too; elements outside (and NaN) are ignored. An
    element's bin is trunc((x - min)·bins / (max - min)) in the input's precision, x = max in the
    last bin (aten/src/ATen/native/cpu/HistogramKernel.cpp, linear interpolation). Counts are a
    ScatterElements add (ONNX spec, ScatterElements-16 ``reduction="add"``) into bins + 1 slots, the
    extra one taking the ignored elements.
    """
    dtype = self.dtype
    x = ctx.op.Reshape(_float_work(ctx, self), ctx.const([-1]))
    ft = x.dtype

    def rounded(v: ir.Value) -> ir.Value:  # half types: round every step to the input type, as c10::Half does
        return ctx.op.Cast(ctx.op.Cast(v, to=dtype), to=ft) if dtype in _HALF_TYPES else v

    if min == max:
        val = ctx.arg_val(0)
        if val is not None and isinstance(val.numel(), int) and val.numel() == 0:
            lo, hi = ctx.const(float(min), ft), ctx.const(float(max), ft)
        else:
            lo = ctx.op.ReduceMin(x, ctx.const([0]), keepdims=0)
            hi = ctx.op.ReduceMax(x, ctx.const([0]), keepdims=0)
        same = ctx.op.Equal(lo, hi)
        lo = ctx.op.Where(same, rounded(ctx.op.Sub(lo, ctx.const(1.0, ft))), lo)
        hi = ctx.op.Where(same, rounded(ctx.op.Add(hi, ctx.const(1.0, ft))), hi)
    else:
        lo, hi = rounded(ctx.const(float(min), ft)), rounded(ctx.const(float(max), ft))
    valid = ctx.op.And(ctx.op.GreaterOrEqual(x, lo), ctx.op.LessOrEqual(x, hi))
    scaled = rounded(ctx.op.Div(rounded(ctx.op.Mul(rounded(ctx.op.Sub(x, lo)), rounded(ctx.const(float(bins), ft)))),
                                rounded(ctx.op.Sub(hi, lo))))
    pos = ctx.op.Min(ctx.op.Cast(ctx.op.Where(valid, scaled, ctx.const(0.0, ft)), to=ir.DataType.INT64),
                     ctx.const(bins - 1))
    pos = ctx.op.Where(valid, pos, ctx.const(bins))
    zeros = ctx.op.Expand(ctx.const(0.0, ir.DataType.FLOAT), ctx.const([bins + 1]))
    ones = ctx.op.Expand(ctx.const(1.0, ir.DataType.FLOAT), ctx.op.Shape(x))
    counts = ctx.op.ScatterElements(zeros, pos, ones, axis=0, reduction="add")
    hist = ctx.op.Slice(counts, ctx.const([0]), ctx.const([bins]))
    return hist if dtype == ir.DataType.FLOAT else ctx.op.Cast(hist, to=dtype)


# -- histogram, histogramdd --------------------------------------------------------------------

def _static_numel(ctx: Ctx) -> int | None:
    """The input's element count when static (None when unknown or dynamic)."""
    val = ctx.arg_val(0)  # type: ignore[union-attr]
    numel = val.numel() if val is not None else None
    return numel if isinstance(numel, int) else None


def _linspace(ctx: Ctx, lo: ir.Value, hi: ir.Value, steps: int) -> ir.Value:
    """torch.linspace(lo, hi, steps) on CPU, bit for bit, for scalar ``lo``/``hi`` of the work type.

    aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp (``linspace_kernel``): step = (hi - lo)/(steps - 1)
    in the tensor's type; the first half of the points is lo + step·i, the second hi - step·(steps-1-i),
    each a fused multiply-add in torch's CPU build. The fma is exact here for float32 (the product
    and the sum in float64, rounded once); float64 edges may differ from eager's in the last bit.
    """
    dtype = lo.dtype
    step = ctx.op.Div(ctx.op.Sub(hi, lo), ctx.const(float(builtins.max(steps - 1, 1)), dtype))
    half = steps // 2
    wide = ir.DataType.DOUBLE
    mult = ctx.const([float(i) if i < half else float(-(steps - 1 - i)) for i in range(steps)], wide)
    base = ctx.op.Where(ctx.const([i < half for i in range(steps)]), ctx.op.Cast(lo, to=wide), ctx.op.Cast(hi, to=wide))
    points = ctx.op.Add(base, ctx.op.Mul(ctx.op.Cast(step, to=wide), mult))
    return points if dtype == wide else ctx.op.Cast(points, to=dtype)


def _bin_edges(
    ctx: Ctx, x: ir.Value, bins: Sequence[int], range: Sequence[float] | None,
) -> list[ir.Value]:
    """Per-dim bin edges of torch.histogramdd for bin counts, ``x`` (M, D) of the input type.

    aten/src/ATen/native/Histogram.cpp (``select_outer_bin_edges``): the outer edges are ``range``,
    else each column's min and max (0 and 1 for an empty input), in float64, widened by ±0.5 when
    equal; the edges are linspace(lo, hi, bins + 1) in the input type (:func:`_linspace`).
    """
    dtype = x.dtype
    wide = ir.DataType.DOUBLE
    edges = []
    empty = _static_numel(ctx) == 0
    for d, n in enumerate(bins):
        if range is not None:
            lo_f, hi_f = float(range[2 * d]), float(range[2 * d + 1])
            if lo_f == hi_f:
                lo_f, hi_f = lo_f - 0.5, hi_f + 0.5
            # constant edges: torch's own linspace, as eager computes them
            edges.append(ctx.const(torch.linspace(lo_f, hi_f, n + 1,
                                                  dtype=torch.float64 if dtype == wide else torch.float32)))
            continue
        if empty:
            lo, hi = ctx.const(0.0, wide), ctx.const(1.0, wide)
        else:
            col = ctx.op.Gather(x, ctx.const(d), axis=1)
            lo = ctx.op.Cast(ctx.op.ReduceMin(col, ctx.const([0]), keepdims=0), to=wide)
            hi = ctx.op.Cast(ctx.op.ReduceMax(col, ctx.const([0]), keepdims=0), to=wide)
        same = ctx.op.Equal(lo, hi)
        lo = ctx.op.Where(same, ctx.op.Sub(lo, ctx.const(0.5, wide)), lo)
        hi = ctx.op.Where(same, ctx.op.Add(hi, ctx.const(0.5, wide)), hi)
        if dtype != wide:
            lo, hi = ctx.op.Cast(lo, to=dtype), ctx.op.Cast(hi, to=dtype)
        edges.append(_linspace(ctx, lo, hi, n + 1))
    return edges


def _histogramdd(
    ctx: Ctx, x: ir.Value, edges: Sequence[ir.Value], weight: ir.Value | None, density: bool,
) -> ir.Value:
    """The D-dim histogram of the rows of ``x`` (M, D) over increasing ``edges`` (one 1-D tensor per dim).

    aten/src/ATen/native/cpu/HistogramKernel.cpp (``histogramdd_cpu_contiguous``): an element outside
    [edges[0], edges[-1]] (or NaN) in any dim is skipped; else its bin in each dim is the number of
    edges ≤ it minus one (upper_bound; the linear-interpolation path of bin counts checks its guess
    against the edges the same way), the last bin keeping its right edge. Counts (or weights) are a
    ScatterElements add (ONNX spec, ScatterElements-16 ``reduction="add"``) into one extra slot for
    the skipped. ``density``: divided by the total, then by each dim's bin widths (torch.histogramdd
    docs).
    """
    dtype = x.dtype
    i64 = ir.DataType.INT64
    valid = None
    index = None
    sizes = []
    for d, e in enumerate(edges):
        col = ctx.op.Gather(x, ctx.const(d), axis=1)  # (M,)
        nbins = ctx.op.Sub(ctx.op.Shape(e), ctx.const([1]))  # (1,)
        first = ctx.op.Gather(e, ctx.const(0), axis=0)
        last = ctx.op.Squeeze(ctx.op.Slice(e, ctx.const([-1]), ctx.const([2**62])), ctx.const([0]))
        inside = ctx.op.And(ctx.op.GreaterOrEqual(col, first), ctx.op.LessOrEqual(col, last))
        hits = ctx.op.LessOrEqual(ctx.op.Unsqueeze(e, ctx.const([0])), ctx.op.Unsqueeze(col, ctx.const([1])))
        count = ctx.op.ReduceSum(ctx.op.Cast(hits, to=i64), ctx.const([1]), keepdims=0)
        pos = ctx.op.Min(ctx.op.Sub(count, ctx.const(1)), ctx.op.Sub(nbins, ctx.const([1])))
        valid = inside if valid is None else ctx.op.And(valid, inside)
        index = pos if index is None else ctx.op.Add(ctx.op.Mul(index, nbins), pos)
        sizes.append(nbins)
    assert valid is not None and index is not None
    total = sizes[0]
    for s in sizes[1:]:
        total = ctx.op.Mul(total, s)
    index = ctx.op.Where(valid, index, ctx.op.Squeeze(total, ctx.const([0])))
    updates = ctx.op.Reshape(weight, ctx.const([-1])) if weight is not None else \
        ctx.op.Expand(ctx.const(1.0, dtype), ctx.op.Shape(index))
    zeros = ctx.op.Expand(ctx.const(0.0, dtype), ctx.op.Add(total, ctx.const([1])))
    hist = ctx.op.ScatterElements(zeros, index, updates, axis=0, reduction="add")
    hist = ctx.op.Reshape(ctx.op.Slice(hist, ctx.const([0]), total), ctx.op.Concat(*sizes, axis=0))
    if density:
        hist = ctx.op.Div(hist, ctx.op.ReduceSum(hist, keepdims=0))
        D = len(edges)
        for d, e in enumerate(edges):
            widths = ctx.op.Sub(ctx.op.Slice(e, ctx.const([1]), ctx.const([2**62])),
                                ctx.op.Slice(e, ctx.const([0]), ctx.const([-1])))
            shape = [1] * D
            shape[d] = -1
            hist = ctx.op.Div(hist, ctx.op.Reshape(widths, ctx.const(shape)))
    return hist


def _rows(ctx: Ctx, self: ir.Value, D: int) -> ir.Value:
    return ctx.op.Reshape(self, ctx.const([-1, D]))


def _dims(ctx: Ctx, self: ir.Value, what: str) -> int:
    D = self.shape[-1] if self.shape is not None and rank(self) > 0 else None
    if not isinstance(D, int):
        ctx.unsupported(f"{what} of an input whose last dim (the number of dims binned) is not static")
    return D


@translates(aten.histogram.bin_ct)
def aten_histogram_bin_ct(
    ctx: Ctx, self: ir.Value, bins: int = 100, *, range: Sequence[float] | None = None,
    weight: ir.Value | None = None, density: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)

    torch.histogram docs: ``bins`` equal-width bins over ``range`` (default: the data's min and
    max) of the flattened input; :func:`_bin_edges`, :func:`_histogramdd` with one dim.
    """
    x = _rows(ctx, self, 1)
    edges = _bin_edges(ctx, x, [bins], range)
    return _histogramdd(ctx, x, edges, weight, density), edges[0]


@translates(aten.histogram.bins_tensor)
def aten_histogram_bins_tensor(
    ctx: Ctx, self: ir.Value, bins: ir.Value, *, weight: ir.Value | None = None, density: bool = False,
) -> tuple[ir.Value, ir.Value]:
    """histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)

    torch.histogram docs: the bins are given by their increasing edges; :func:`_histogramdd`.
    """
    x = _rows(ctx, self, 1)
    return _histogramdd(ctx, x, [bins], weight, density), ctx.op.Identity(bins)


@translates(aten._histogramdd_bin_edges.default)
def aten_histogramdd_bin_edges(
    ctx: Ctx, self: ir.Value, bins: Sequence[int], *, range: Sequence[float] | None = None,
    weight: ir.Value | None = None, density: bool = False,
) -> tuple[ir.Value, ...]:
    """_histogramdd_bin_edges(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, bool density=False) -> Tensor[]

    The bin edges torch.histogramdd returns for bin counts (:func:`_bin_edges`); the last dim of
    ``self`` indexes the D binned coordinates.
    """
    D = _dims(ctx, self, "histogramdd")
    return tuple(_bin_edges(ctx, _rows(ctx, self, D), bins, range))


@translates(aten._histogramdd_from_bin_cts.default)
def aten_histogramdd_from_bin_cts(
    ctx: Ctx, self: ir.Value, bins: Sequence[int], *, range: Sequence[float] | None = None,
    weight: ir.Value | None = None, density: bool = False,
) -> ir.Value:
    """_histogramdd_from_bin_cts(Tensor self, int[] bins, *, float[]? range=None, Tensor? weight=None, bool density=False) -> Tensor

    torch.histogramdd docs with bin counts: :func:`_bin_edges`, then :func:`_histogramdd`.
    """
    D = _dims(ctx, self, "histogramdd")
    x = _rows(ctx, self, D)
    return _histogramdd(ctx, x, _bin_edges(ctx, x, bins, range), weight, density)


@translates(aten._histogramdd_from_bin_tensors.default)
def aten_histogramdd_from_bin_tensors(
    ctx: Ctx, self: ir.Value, bins: Sequence[ir.Value], *, weight: ir.Value | None = None, density: bool = False,
) -> ir.Value:
    """_histogramdd_from_bin_tensors(Tensor self, Tensor[] bins, *, Tensor? weight=None, bool density=False) -> Tensor

    torch.histogramdd docs with each dim's increasing bin edges given: :func:`_histogramdd`.
    """
    D = _dims(ctx, self, "histogramdd")
    return _histogramdd(ctx, _rows(ctx, self, D), list(bins), weight, density)
