"""Ops that rearrange or refill elements: flip, roll, repeat, tril/triu, diagonal, as_strided,
copy, fill, empty_strided, and the scalar/stride queries (_local_scalar_dense, sym_stride)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import INT64_MAX, input_val, rank, reshape_to, window_index
from onnxport.ops.tensor.shape import aten_unbind
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten
INT64_MIN = -(2**63)


@translates(aten.flip.default)
def aten_flip(ctx: Ctx, self: ir.Value, dims: Sequence[int]) -> ir.Value:
    """flip(Tensor self, int[] dims) -> Tensor: Slice with step −1 on each dim."""
    r = rank(self)
    if not dims or r == 0:
        return ctx.op.Identity(self)
    axes = [d % r for d in dims]
    n = len(axes)
    return ctx.op.Slice(self, ctx.const([-1] * n), ctx.const([INT64_MIN] * n), ctx.const(axes), ctx.const([-1] * n))


@translates(aten.roll.default)
def aten_roll(ctx: Ctx, self: ir.Value, shifts: Sequence[int | ir.Value], dims: Sequence[int] = ()) -> ir.Value:
    """roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor

    Each shift s on a dim of length n: concat(x[n−s mod n:], x[:n−s mod n]); no dims rolls the
    flattened tensor and restores the shape.
    """
    if not dims:
        flat = ctx.op.Reshape(self, ctx.const([-1]))
        rolled = _roll_axis(ctx, flat, shifts[0], 0)
        return ctx.op.Reshape(rolled, ctx.op.Shape(self))
    out = self
    for shift, dim in zip(shifts, dims):
        out = _roll_axis(ctx, out, shift, dim % rank(self))
    return out


def _roll_axis(ctx: Ctx, x: ir.Value, shift: int | ir.Value, axis: int) -> ir.Value:
    n = ctx.op.Shape(x, start=axis, end=axis + 1)
    s = ctx.shape_tensor([shift])
    split = ctx.op.Mod(ctx.op.Sub(n, ctx.op.Mod(s, ctx.op.Max(n, ctx.const([1])))), ctx.op.Max(n, ctx.const([1])))
    axes = ctx.const([axis])
    tail = ctx.op.Slice(x, split, ctx.const([INT64_MAX]), axes)
    head = ctx.op.Slice(x, ctx.const([0]), split, axes)
    return ctx.op.Concat(tail, head, axis=axis)


@translates(aten.repeat.default)
def aten_repeat(ctx: Ctx, self: ir.Value, repeats: Sequence[int | ir.Value]) -> ir.Value:
    """repeat(Tensor self, SymInt[] repeats) -> Tensor: Tile, after adding leading dims of 1."""
    extra = len(repeats) - rank(self)
    x = ctx.op.Reshape(self, ctx.op.Concat(ctx.const([1] * extra), ctx.op.Shape(self), axis=0)) if extra > 0 else self
    if x.dtype == ir.DataType.BFLOAT16:  # no onnxruntime bfloat16 Tile: tile in float (exact), cast back
        tiled = ctx.op.Tile(ctx.op.Cast(x, to=ir.DataType.FLOAT), ctx.shape_tensor(list(repeats)))
        return ctx.op.Cast(tiled, to=x.dtype)
    return ctx.op.Tile(x, ctx.shape_tensor(list(repeats)))


def _trilu(ctx: Ctx, self: ir.Value, diagonal: int | ir.Value, upper: int) -> ir.Value:
    k = ctx.const(diagonal) if isinstance(diagonal, int) else diagonal
    if self.dtype == ir.DataType.BOOL:  # ORT's Trilu has no bool kernel: select with a mask
        mask = ctx.op.Trilu(ctx.op.Expand(ctx.const(True), ctx.op.Shape(self, start=-2)), k, upper=upper)
        return ctx.op.And(self, mask)
    return ctx.op.Trilu(self, k, upper=upper)


@translates(aten.tril.default)
def aten_tril(ctx: Ctx, self: ir.Value, diagonal: int | ir.Value = 0) -> ir.Value:
    """tril(Tensor self, SymInt diagonal=0) -> Tensor"""
    return _trilu(ctx, self, diagonal, 0)


@translates(aten.triu.default)
def aten_triu(ctx: Ctx, self: ir.Value, diagonal: int | ir.Value = 0) -> ir.Value:
    """triu(Tensor self, SymInt diagonal=0) -> Tensor"""
    return _trilu(ctx, self, diagonal, 1)


def _static_plane(ctx: Ctx, x: ir.Value, dim1: int, dim2: int, what: str) -> tuple[int, int, int, int, int]:
    """(rank, dim1, dim2 made non-negative, rows, cols) of the (dim1, dim2) plane of ``x``; refuses
    dynamic sizes on those two axes (the diagonal positions are computed at export time)."""
    r = rank(x)
    d1, d2 = dim1 % r, dim2 % r
    rows, cols = input_val(ctx).shape[d1], input_val(ctx).shape[d2]
    if not (isinstance(rows, int) and isinstance(cols, int)):
        ctx.unsupported(f"{what} on dynamic dims")
    return r, d1, d2, rows, cols


@translates(aten.diagonal.default)
def aten_diagonal(ctx: Ctx, self: ir.Value, offset: int = 0, dim1: int = 0, dim2: int = 1) -> ir.Value:
    """diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)

    dim1, dim2 are moved last and flattened; the diagonal is a Gather at row·cols + col + offset
    positions. The diagonal's length comes from the recorded output shape, so the two dims must be
    static.
    """
    r, d1, d2, rows, cols = _static_plane(ctx, self, dim1, dim2, "diagonal")
    length = int(ctx.val().shape[-1])
    rest = [i for i in range(r) if i not in (d1, d2)]
    x = ctx.op.Transpose(self, perm=[*rest, d1, d2])
    lead = ctx.op.Shape(self, start=0, end=0) if not rest else ctx.op.Gather(ctx.op.Shape(self), ctx.const(rest), axis=0)
    flat = ctx.op.Reshape(x, ctx.op.Concat(lead, ctx.const([rows * cols]), axis=0))
    start = offset if offset >= 0 else -offset * cols
    index = start + np.arange(length, dtype=np.int64) * (cols + 1)
    return ctx.op.Gather(flat, ctx.const(index), axis=len(rest))


@translates(aten.as_strided.default)
def aten_as_strided(
    ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], stride: Sequence[int | ir.Value],
    storage_offset: int | ir.Value | None = None,
) -> ir.Value:
    """as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)

    A Gather on the flattened input. torch addresses the input's *storage*: element i of the view
    is storage position ``offset + Σ iₖ·strideₖ`` (``offset`` defaulting to the input's own storage
    offset). The ONNX input is the logical tensor, so each storage position is mapped back to the
    input element stored there, using the example input's strides and storage offset (recorded
    by torch.export); positions no input element occupies (the rest of a larger base tensor) are
    not in the graph and are unsupported. Symbolic sizes, strides or input layouts go through
    :func:`_symbolic_as_strided`.
    """
    sizes = [s for s in size if isinstance(s, int)]
    strides = [s for s in stride if isinstance(s, int)]
    in_val = input_val(ctx)
    in_shape: list[Any] = [1]
    in_strides: list[Any] = [1]
    in_start: Any = 0
    if isinstance(in_val, torch.Tensor):
        in_shape, in_strides, in_start = list(in_val.shape), list(in_val.stride()), in_val.storage_offset()
    static_input = all(isinstance(d, int) for d in (*in_shape, *in_strides, in_start))
    if len(sizes) != len(size) or len(strides) != len(stride) or isinstance(storage_offset, ir.Value) \
            or not static_input:
        return _symbolic_as_strided(ctx, self, size, stride, storage_offset)
    in_offset = int(in_start)
    offset = in_offset if storage_offset is None else int(storage_offset)
    wanted = np.full(sizes, offset, dtype=np.int64)
    for k, (n, st) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[k] = int(n)
        wanted = wanted + (np.arange(int(n), dtype=np.int64) * int(st)).reshape(shape)
    # Storage position of each input element, in the row-major order of the flattened input.
    stored = np.full(in_shape, in_offset, dtype=np.int64)
    for k, (n, st) in enumerate(zip(in_shape, in_strides)):
        shape = [1] * len(in_shape)
        shape[k] = int(n)
        stored = stored + (np.arange(int(n), dtype=np.int64) * int(st)).reshape(shape)
    stored = stored.reshape(-1)
    order = np.argsort(stored, kind="stable")
    found = np.searchsorted(stored[order], wanted) if stored.size else np.zeros_like(wanted)
    found = np.minimum(found, max(stored.size - 1, 0))
    if wanted.size and (stored.size == 0 or not np.array_equal(stored[order][found], wanted)):
        ctx.unsupported(
            f"as_strided reads storage positions outside the input (the input occupies storage from offset "
            f"{in_offset}; the view starts at {offset}): the rest of its base tensor is not a graph input")
    index = order[found] if wanted.size else wanted
    flat = ctx.op.Reshape(self, ctx.const([-1]))
    return ctx.op.Gather(flat, ctx.const(index.astype(np.int64)), axis=0)


def _hint(value: Any) -> int | None:
    """The example's value of a size, stride or offset (a SymInt's hint), ``None`` when unbacked."""
    if isinstance(value, int):
        return value
    hint = getattr(getattr(value, "node", None), "hint", None)
    return int(hint) if hint is not None else None


def _scalar(ctx: Ctx, value: int | ir.Value) -> ir.Value:
    """A 0-D INT64 value."""
    if isinstance(value, int):
        return ctx.const(np.array(value, dtype=np.int64))
    return ctx.op.Reshape(value, ctx.const(np.zeros((0,), dtype=np.int64)))


def _symbolic_as_strided(
    ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], stride: Sequence[int | ir.Value],
    storage_offset: int | ir.Value | None,
) -> ir.Value:
    """as_strided with symbolic sizes, strides or input layout, for an input whose elements fill
    its storage span without gaps in some axis order (a contiguous tensor or a permuted view of
    one: Longformer's ``_chunk`` over a transposed projection, batch-dependent strides).

    The input's axes are put in storage order (decreasing stride, read from the example's values)
    and flattened, so flat index = storage position − the input's storage offset; the view's
    positions ``offset + Σ arange(sizeₖ)·strideₖ`` are computed in the graph (``Range``, ``Mul``,
    broadcast ``Add``) and gathered. The layout and the bounds are checked on the example's values.
    """
    in_val, out_val = input_val(ctx), ctx.val()
    if not isinstance(in_val, torch.Tensor) or not isinstance(in_val.storage_offset(), int):
        ctx.unsupported("as_strided with symbolic sizes or strides on a non-tensor input or a symbolic storage offset")
    hints = [_hint(v) for v in (*in_val.shape, *in_val.stride(), *out_val.shape, *out_val.stride(),
                                out_val.storage_offset())]
    known = [h for h in hints if h is not None]
    if len(known) != len(hints):
        ctx.unsupported("as_strided with data-dependent sizes or strides")
    r_in, r_out = in_val.dim(), out_val.dim()
    in_shape, in_strides = known[:r_in], known[r_in:2 * r_in]
    out_sizes, out_strides = known[2 * r_in:2 * r_in + r_out], known[2 * r_in + r_out:2 * r_in + 2 * r_out]
    in_offset, out_offset = int(in_val.storage_offset()), known[-1]
    order = sorted(range(r_in), key=lambda k: -in_strides[k])
    numel = 1
    for k in reversed(order):
        if in_shape[k] != 1 and in_strides[k] != numel:
            ctx.unsupported("as_strided with symbolic sizes on an input with gaps or overlaps in its storage")
        numel *= in_shape[k]
    reach = [(n - 1) * st for n, st in zip(out_sizes, out_strides)]
    low = out_offset + sum(r for r in reach if r < 0)
    high = out_offset + sum(r for r in reach if r > 0)
    if min(out_sizes, default=1) > 0 and (low < in_offset or high >= in_offset + numel):
        ctx.unsupported("as_strided reads storage positions outside the input: the rest of its base tensor "
                        "is not a graph input")
    x = self if order == sorted(order) else ctx.op.Transpose(self, perm=order)
    flat = ctx.op.Reshape(x, ctx.const([-1]))
    r = len(size)
    base: int | ir.Value = 0 if storage_offset is None else storage_offset
    if isinstance(base, int):
        index: ir.Value = ctx.const(np.array(base - in_offset, dtype=np.int64))
    else:
        index = ctx.op.Sub(_scalar(ctx, base), ctx.const(np.array(in_offset, dtype=np.int64)))
    for k, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * r
        shape[k] = -1
        if isinstance(n, int) and isinstance(st, int):
            term = ctx.const((np.arange(n, dtype=np.int64) * st).reshape(shape))
        else:
            steps = ctx.op.Range(ctx.const(np.array(0, dtype=np.int64)), _scalar(ctx, n),
                                 ctx.const(np.array(1, dtype=np.int64)))
            term = ctx.op.Reshape(ctx.op.Mul(steps, _scalar(ctx, st)), ctx.const(shape))
        index = ctx.op.Add(index, term)
    if r == 0:
        return ctx.op.Gather(flat, index, axis=0)
    return ctx.op.Gather(flat, ctx.op.Expand(index, ctx.shape_tensor(list(size))), axis=0)


@translates(aten.copy.default)
def aten_copy(ctx: Ctx, self: ir.Value, src: ir.Value, non_blocking: bool = False) -> ir.Value:
    """copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor: src in self's dtype and shape."""
    value = src if src.dtype == self.dtype else ctx.op.Cast(src, to=self.dtype)
    return ctx.op.Expand(value, ctx.op.Shape(self))


@translates(aten.fill.Scalar, aten.fill.Tensor)
def aten_fill(ctx: Ctx, self: ir.Value, value: Any) -> ir.Value:
    """fill.Scalar(Tensor self, Scalar value) -> Tensor"""
    if isinstance(value, ir.Value):
        v = value if value.dtype == self.dtype else ctx.op.Cast(value, to=self.dtype)
    else:
        v = ctx.const(value, self.dtype)
    return ctx.op.Expand(v, ctx.op.Shape(self))


@translates(aten.empty_strided.default, aten.new_empty_strided.default, aten.empty_permuted.default)
def aten_empty_strided(ctx: Ctx, *args: Any, **kwargs: Any) -> ir.Value:
    """empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, ...) -> Tensor

    Uninitialized memory in torch: zeros here (strides do not exist in ONNX). Also
    new_empty_strided(self, size, stride, ...) and empty_permuted(size, physical_layout, ...).
    """
    size = args[1] if isinstance(args[0], ir.Value) else args[0]
    return ctx.op.Expand(ctx.const(0, ctx.out_dtype()), ctx.shape_tensor(list(size)))


@translates(aten._local_scalar_dense.default, aten.item.default)
def aten_local_scalar_dense(ctx: Ctx, self: ir.Value) -> ir.Value:
    """_local_scalar_dense(Tensor self) -> Scalar: the one element as a 0-D value (SymInt → INT64,
    SymFloat → FLOAT, SymBool → BOOL, as the dispatcher types symbolic scalars)."""
    val = ctx.val()
    target = (ir.DataType.BOOL if isinstance(val, (bool, torch.SymBool))
              else ir.DataType.INT64 if isinstance(val, (int, torch.SymInt))
              else ir.DataType.FLOAT)
    scalar = ctx.op.Reshape(self, ctx.const([], ir.DataType.INT64))
    return scalar if self.dtype == target else ctx.op.Cast(scalar, to=target)


@translates(aten.sym_stride.int)
def aten_sym_stride(ctx: Ctx, self: ir.Value, dim: int) -> ir.Value:
    """sym_stride.int(Tensor self, int dim) -> SymInt: the contiguous stride, Π sizes after ``dim``."""
    r = rank(self)
    d = dim % r
    if d == r - 1:
        return ctx.const(1)
    return ctx.op.ReduceProd(ctx.op.Shape(self, start=d + 1), keepdims=0)


@translates(aten.sym_storage_offset.default)
def aten_sym_storage_offset(ctx: Ctx, self: ir.Value) -> ir.Value:
    """sym_storage_offset(Tensor self) -> SymInt: 0 (every ONNX value owns its storage)."""
    return ctx.op.Identity(ctx.const(0))


@translates(aten.unfold.default)
def aten_unfold(ctx: Ctx, self: ir.Value, dimension: int, size: int, step: int) -> ir.Value:
    """unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)

    Windows ``x[i·step : i·step + size]`` along ``dimension`` gathered with a (count, size)
    index (:func:`~onnxport.ops._common.window_index`: computed at run time along a dynamic
    dimension, as an STFT's frames of a waveform of any length), the window axis moved last
    (PyTorch docs, Tensor.unfold).
    """
    r = rank(self)
    if r == 0:
        return ctx.op.Unsqueeze(self, ctx.const([0]))
    axis = dimension % r
    index = window_index(ctx, self, axis, input_val(ctx).shape[axis], size, step)
    gathered = ctx.op.Gather(self, index, axis=axis)  # (..., count, size, ...)
    perm = [*range(axis + 1), *range(axis + 2, r + 1), axis + 1]
    return ctx.op.Transpose(gathered, perm=perm)


@translates(aten.narrow_copy.default, aten.narrow.default)
def aten_narrow(ctx: Ctx, self: ir.Value, dim: int, start: int | ir.Value, length: int | ir.Value) -> ir.Value:
    """narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor"""
    axis = dim % rank(self)
    begin = ctx.shape_tensor([start])
    if isinstance(start, int) and start < 0:
        begin = ctx.op.Add(begin, ctx.op.Shape(self, start=axis, end=axis + 1))
    end = ctx.op.Add(begin, ctx.shape_tensor([length]))
    return ctx.op.Slice(self, begin, end, ctx.const([axis]))


@translates(aten.as_strided_copy.default)
def aten_as_strided_copy(
    ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], stride: Sequence[int | ir.Value],
    storage_offset: int | ir.Value | None = None,
) -> ir.Value:
    """as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor"""
    return aten_as_strided(ctx, self, size, stride, storage_offset)


@translates(aten.as_strided_scatter.default)
def aten_as_strided_scatter(
    ctx: Ctx, self: ir.Value, src: ir.Value, size: Sequence[int | ir.Value], stride: Sequence[int | ir.Value],
    storage_offset: int | ir.Value | None = None,
) -> ir.Value:
    """as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor"""
    index = _strided_index(ctx, size, stride, storage_offset)
    flat = ctx.op.Reshape(self, ctx.const([-1]))
    updates = ctx.op.Reshape(src if src.dtype == self.dtype else ctx.op.Cast(src, to=self.dtype), ctx.const([-1]))
    out = ctx.op.ScatterND(flat, ctx.const(index.reshape(-1, 1)), updates)
    return ctx.op.Reshape(out, ctx.op.Shape(self))


def _strided_index(ctx: Ctx, size: Sequence[Any], stride: Sequence[Any], storage_offset: Any) -> np.ndarray:
    if not all(isinstance(v, int) for v in [*size, *stride, storage_offset or 0]):
        ctx.unsupported("as_strided with symbolic sizes or strides")
    index = np.full([int(s) for s in size], int(storage_offset or 0), dtype=np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = int(n)
        index = index + (np.arange(int(n), dtype=np.int64) * int(st)).reshape(shape)
    return index


@translates(aten.diagonal_scatter.default)
def aten_diagonal_scatter(ctx: Ctx, self: ir.Value, src: ir.Value, offset: int = 0, dim1: int = 0, dim2: int = 1) -> ir.Value:
    """diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor

    The diagonal positions of ``diagonal`` (flattened dim1·dim2 plane, static sizes) written with
    ScatterND on the plane moved first.
    """
    r, d1, d2, rows, cols = _static_plane(ctx, self, dim1, dim2, "diagonal_scatter")
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    rest = [i for i in range(r) if i not in (d1, d2)]
    x = ctx.op.Transpose(self, perm=[d1, d2, *rest])
    plane = ctx.op.Reshape(x, ctx.op.Concat(ctx.const([rows * cols]), ctx.op.Shape(x, start=2), axis=0))
    start = offset if offset >= 0 else -offset * cols
    index = (start + np.arange(length, dtype=np.int64) * (cols + 1)).reshape(-1, 1)
    # src is (..., length) over the remaining dims: move its last axis first.
    s = src if src.dtype == self.dtype else ctx.op.Cast(src, to=self.dtype)
    s = ctx.op.Transpose(s, perm=[len(rest), *range(len(rest))]) if rest else s
    out = ctx.op.ScatterND(plane, ctx.const(index), s)
    out = ctx.op.Reshape(out, ctx.op.Shape(x))
    perm = [d1, d2, *rest]
    return ctx.op.Transpose(out, perm=[perm.index(i) for i in range(r)])


@translates(aten.resize_.default, aten.resize.default)
def aten_resize(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], *, memory_format: Any = None) -> ir.Value:
    """resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)

    The first numel(size) elements in row-major order; elements past the input's (uninitialized
    memory in torch) are zeros.
    """
    flat = ctx.op.Reshape(self, ctx.const([-1]))
    need = ctx.op.ReduceProd(ctx.shape_tensor(list(size)), keepdims=1) if size else ctx.const([1])
    padded = ctx.op.Concat(flat, ctx.op.Expand(ctx.const([0], self.dtype), need), axis=0)
    head = ctx.op.Slice(padded, ctx.const([0]), need, ctx.const([0]))
    return ctx.op.Reshape(head, ctx.shape_tensor(list(size)))


@translates(aten.sym_is_contiguous.default, aten.is_contiguous.default)
def aten_sym_is_contiguous(ctx: Ctx, self: ir.Value, *args: Any, **kwargs: Any) -> ir.Value:
    """sym_is_contiguous(Tensor self, MemoryFormat memory_format=contiguous_format) -> SymBool: True (ONNX values are contiguous)."""
    return ctx.op.Identity(ctx.const(True))


@translates(aten.permute_copy.default)
def aten_permute_copy(ctx: Ctx, self: ir.Value, dims: Sequence[int]) -> ir.Value:
    """permute_copy(Tensor self, int[] dims) -> Tensor"""
    r = rank(self)
    return ctx.op.Transpose(self, perm=[d % r for d in dims]) if r else ctx.op.Identity(self)


@translates(aten.view_copy.default)
def aten_view_copy(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value]) -> ir.Value:
    """view_copy(Tensor self, SymInt[] size) -> Tensor"""

    return reshape_to(ctx, self, ctx.val().shape, size)


@translates(aten.unbind_copy.int)
def aten_unbind_copy(ctx: Ctx, self: ir.Value, dim: int = 0) -> tuple[ir.Value, ...]:
    """unbind_copy.int(Tensor self, int dim=0) -> Tensor[]"""

    return aten_unbind(ctx, self, dim)
