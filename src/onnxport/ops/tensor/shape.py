"""View, reshape, transpose and other shape-manipulating ops.

Reshape targets are computed from the FakeTensor shapes torch.export recorded: a dim equal to the
input's dim on the same axis becomes 0 (copy, ONNX Reshape's default), one unknown dim becomes -1,
so most reshapes of dynamic tensors need no Shape/Concat subgraph.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import INT64_MAX, input_val, rank, reshape_to
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.view.default, aten.reshape.default, aten._unsafe_view.default)
def aten_view(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value]) -> ir.Value:
    """view(Tensor(a) self, SymInt[] size) -> Tensor(a)"""
    return reshape_to(ctx, self, ctx.val().shape, size)


@translates(aten.flatten.using_ints)
def aten_flatten(ctx: Ctx, self: ir.Value, start_dim: int = 0, end_dim: int = -1) -> ir.Value:
    """flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)"""
    return reshape_to(ctx, self, ctx.val().shape)


@translates(aten.unflatten.int)
def aten_unflatten(ctx: Ctx, self: ir.Value, dim: int, sizes: Sequence[int | ir.Value]) -> ir.Value:
    """unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a); ``sizes`` (SymInt values
    such as a ``height, width`` split of a flattened grid) resolve the dims the recorded shape cannot."""
    out_shape = ctx.val().shape
    start = dim % rank(self)
    full: list[int | ir.Value] = [-1] * start + list(sizes) + [-1] * (len(out_shape) - start - len(sizes))
    return reshape_to(ctx, self, out_shape, full)


@translates(aten.transpose.int)
def aten_transpose(ctx: Ctx, self: ir.Value, dim0: int, dim1: int) -> ir.Value:
    """transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"""
    r = rank(self)
    if r < 2:
        return ctx.op.Identity(self)
    perm = list(range(r))
    perm[dim0 % r], perm[dim1 % r] = perm[dim1 % r], perm[dim0 % r]
    return ctx.op.Transpose(self, perm=perm)


@translates(aten.t.default)
def aten_t(ctx: Ctx, self: ir.Value) -> ir.Value:
    """t(Tensor(a) self) -> Tensor(a)"""
    return aten_transpose(ctx, self, 0, 1)


@translates(aten.permute.default)
def aten_permute(ctx: Ctx, self: ir.Value, dims: Sequence[int]) -> ir.Value:
    """permute(Tensor(a) self, int[] dims) -> Tensor(a)"""
    r = rank(self)
    return ctx.op.Transpose(self, perm=[d % r for d in dims]) if r else ctx.op.Identity(self)


@translates(aten.unsqueeze.default)
def aten_unsqueeze(ctx: Ctx, self: ir.Value, dim: int) -> ir.Value:
    """unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"""
    return ctx.op.Unsqueeze(self, ctx.const([dim % (rank(self) + 1)]))


@translates(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def aten_squeeze(ctx: Ctx, self: ir.Value, dim: int | Sequence[int] | None = None) -> ir.Value:
    """squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a): only size-1 dims are removed."""
    r = rank(self)
    dims = range(r) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    in_shape = input_val(ctx).shape
    axes = [d % r for d in dims if r and isinstance(in_shape[d], int) and in_shape[d] == 1]
    if not axes:
        return ctx.op.Identity(self)
    return ctx.op.Squeeze(self, ctx.const(axes))


@translates(aten.expand.default)
def aten_expand(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], *, implicit: bool = False) -> ir.Value:
    """expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)

    -1 keeps the input's dim: it becomes 1 for ONNX Expand's bidirectional broadcast.
    """
    sizes = [1 if isinstance(s, int) and s == -1 else s for s in size]
    return _expand_any(ctx, self, ctx.shape_tensor(sizes))


@translates(aten.expand_as.default)
def aten_expand_as(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """expand_as(Tensor(a) self, Tensor other) -> Tensor(a)"""
    return _expand_any(ctx, self, ctx.op.Shape(other))


def _expand_any(ctx: Ctx, x: ir.Value, shape: ir.Value) -> ir.Value:
    """Expand; bfloat16 (no onnxruntime Expand kernel) expands in float and casts back (exact)."""
    if x.dtype != ir.DataType.BFLOAT16:
        return ctx.op.Expand(x, shape)
    return ctx.op.Cast(ctx.op.Expand(ctx.op.Cast(x, to=ir.DataType.FLOAT), shape), to=x.dtype)


@translates(aten.slice.Tensor)
def aten_slice(
    ctx: Ctx, self: ir.Value, dim: int = 0, start: int | ir.Value | None = None,
    end: int | ir.Value | None = None, step: int | ir.Value = 1,
) -> ir.Value:
    """slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"""
    r = rank(self)
    dim = dim % r if r else 0
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    in_dim = input_val(ctx).shape[dim]
    if isinstance(start, int) and start == 0 and isinstance(step, int) and step == 1:
        if isinstance(end, int) and isinstance(in_dim, int) and end >= in_dim:
            return ctx.op.Identity(self)
        if isinstance(end, int) and end == INT64_MAX:
            return ctx.op.Identity(self)
    return ctx.op.Slice(
        self, ctx.shape_tensor([start]), ctx.shape_tensor([min(end, INT64_MAX) if isinstance(end, int) else end]),
        ctx.const([dim]), ctx.shape_tensor([step]),
    )


@translates(aten.select.int)
def aten_select(ctx: Ctx, self: ir.Value, dim: int, index: int | ir.Value) -> ir.Value:
    """select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"""
    idx = ctx.const(index, ir.DataType.INT64) if isinstance(index, int) else index
    return ctx.op.Gather(self, idx, axis=dim % rank(self))


@translates(aten.cat.default, aten.concat.default)
def aten_cat(ctx: Ctx, tensors: Sequence[ir.Value], dim: int = 0) -> ir.Value:
    """cat(Tensor[] tensors, int dim=0) -> Tensor

    torch skips 1-D empty tensors of shape (0,) (legacy behaviour); so does this translation.
    Operands are cast to the promoted output dtype.
    """
    out_dtype = ctx.out_dtype()
    ranks = [t.shape.rank() for t in tensors if t.shape is not None]
    inputs = []
    for t in tensors:
        # the empty one may come first (DynamicLayer's torch.tensor([]) before the first keys)
        if t.shape is not None and list(t.shape) == [0] and any(r != 1 for r in ranks):
            continue
        inputs.append(t if t.dtype == out_dtype else ctx.op.Cast(t, to=out_dtype))
    r = rank(inputs[0]) if inputs else 1
    if len(inputs) == 1:
        return ctx.op.Identity(inputs[0])
    return ctx.op.Concat(*inputs, axis=dim % r)


def _split_at(ctx: Ctx, self: ir.Value, dim: int, sizes: Sequence[int | ir.Value]) -> tuple[ir.Value, ...]:
    if len(sizes) == 1:
        return (ctx.op.Identity(self),)
    return ctx.op.Split(self, ctx.shape_tensor(list(sizes)), axis=dim, _outputs=len(sizes))


@translates(aten.split.Tensor)
def aten_split(ctx: Ctx, self: ir.Value, split_size: int | ir.Value, dim: int = 0) -> tuple[ir.Value, ...]:
    """split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"""
    dim = dim % rank(self)
    outs = ctx.val()
    sizes = [o.shape[dim] for o in outs]
    if all(isinstance(s, int) for s in sizes):
        return _split_at(ctx, self, dim, sizes)
    return _chunks_of(ctx, self, dim, split_size, len(outs))


def _chunks_of(ctx: Ctx, self: ir.Value, dim: int, size: int | ir.Value, count: int) -> tuple[ir.Value, ...]:
    """``count`` slices of ``size`` along ``dim``, the last one to the end: a split whose length is
    dynamic, its chunk count fixed by the capture (the FX node's list of outputs)."""
    if isinstance(size, int):
        ends = [ctx.const([(i + 1) * size]) for i in range(count - 1)]
    else:
        step = ctx.shape_tensor([size])
        ends = [ctx.op.Mul(step, ctx.const([i + 1])) for i in range(count - 1)]
    ends.append(ctx.const([INT64_MAX]))
    starts = [ctx.const([0]), *ends[:-1]]
    return tuple(ctx.op.Slice(self, start, end, ctx.const([dim])) for start, end in zip(starts, ends))


@translates(aten.split_with_sizes.default, aten.split.sizes)
def aten_split_with_sizes(ctx: Ctx, self: ir.Value, split_sizes: Sequence[int | ir.Value], dim: int = 0) -> tuple[ir.Value, ...]:
    """split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"""
    return _split_at(ctx, self, dim % rank(self), split_sizes)


@translates(aten.chunk.default)
def aten_chunk(ctx: Ctx, self: ir.Value, chunks: int, dim: int = 0) -> tuple[ir.Value, ...]:
    """chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"""
    dim = dim % rank(self)
    outs = ctx.val()
    sizes = [o.shape[dim] for o in outs]
    if all(isinstance(s, int) for s in sizes):
        return _split_at(ctx, self, dim, sizes)
    # torch.chunk: every chunk ceil(length / chunks) long, the last one the rest
    length = ctx.op.Shape(self, start=dim, end=dim + 1)
    size = ctx.op.Div(ctx.op.Add(length, ctx.const([chunks - 1])), ctx.const([chunks]))
    return _chunks_of(ctx, self, dim, size, len(outs))


@translates(aten.unbind.int)
def aten_unbind(ctx: Ctx, self: ir.Value, dim: int = 0) -> tuple[ir.Value, ...]:
    """unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"""
    dim = dim % rank(self)
    n = len(ctx.val())
    axes = ctx.const([dim])
    if n == 1:
        return (ctx.op.Squeeze(self, axes),)
    parts = ctx.op.Split(self, axis=dim, num_outputs=n, _outputs=n)
    return tuple(ctx.op.Squeeze(p, axes) for p in parts)


@translates(aten.stack.default)
def aten_stack(ctx: Ctx, tensors: Sequence[ir.Value], dim: int = 0) -> ir.Value:
    """stack(Tensor[] tensors, int dim=0) -> Tensor"""
    axis = dim % (rank(tensors[0]) + 1)
    axes = ctx.const([axis])
    out_dtype = ctx.out_dtype()
    parts = [ctx.op.Unsqueeze(t if t.dtype == out_dtype else ctx.op.Cast(t, to=out_dtype), axes) for t in tensors]
    return parts[0] if len(parts) == 1 else ctx.op.Concat(*parts, axis=axis)


@translates(aten.diff.default)
def aten_diff(
    ctx: Ctx, self: ir.Value, n: int = 1, dim: int = -1, prepend: ir.Value | None = None,
    append: ir.Value | None = None,
) -> ir.Value:
    """diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor

    x[1:] - x[:-1] along ``dim``, n times, after concatenating prepend/append (bool: xor, as torch).
    """
    r = rank(self)
    axis = dim % r
    parts = [p for p in (prepend, self, append) if p is not None]
    x = parts[0] if len(parts) == 1 else ctx.op.Concat(*parts, axis=axis)
    axes = ctx.const([axis])
    for _ in range(n):
        later = ctx.op.Slice(x, ctx.const([1]), ctx.const([INT64_MAX]), axes)
        earlier = ctx.op.Slice(x, ctx.const([0]), ctx.const([-1]), axes)
        x = ctx.op.Xor(later, earlier) if self.dtype == ir.DataType.BOOL else ctx.op.Sub(later, earlier)
    return x
