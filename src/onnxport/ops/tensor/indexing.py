"""Indexing ops: embedding, advanced indexing (index.Tensor), gather, index_select."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import dtype_of, rank, shape_of
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.embedding.default)
def aten_embedding(
    ctx: Ctx, weight: ir.Value, indices: ir.Value, padding_idx: int = -1,
    scale_grad_by_freq: bool = False, sparse: bool = False,
) -> ir.Value:
    """embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor"""
    return ctx.op.Gather(weight, indices, axis=0)


@translates(aten.index_select.default)
def aten_index_select(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value) -> ir.Value:
    """index_select(Tensor self, int dim, Tensor index) -> Tensor (0-D self: index must be [0])."""
    if rank(self) == 0:
        picked = ctx.op.Gather(ctx.op.Reshape(self, ctx.const([1])), index, axis=0)
        return ctx.op.Reshape(picked, ctx.shape_tensor(list(ctx.val().shape)))
    return ctx.op.Gather(self, index, axis=dim % rank(self))


@translates(aten.gather.default)
def aten_gather(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, *, sparse_grad: bool = False) -> ir.Value:
    """gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor

    An empty index (torch accepts any integer dtype and rank for it) gives an empty result of its
    shape; other indices are cast to INT64 when GatherElements would reject their type.
    """
    if 0 in shape_of(index):
        return ctx.op.Expand(ctx.const(0, dtype_of(self)), ctx.op.Shape(index))
    if rank(self) == 0:
        return ctx.op.Identity(self)
    if dtype_of(index) not in (ir.DataType.INT32, ir.DataType.INT64):
        index = ctx.op.Cast(index, to=ir.DataType.INT64)
    return ctx.op.GatherElements(self, index, axis=dim % rank(self))


@translates(aten.index.Tensor)
def aten_index(ctx: Ctx, self: ir.Value, indices: Sequence[ir.Value | None]) -> ir.Value:
    """index.Tensor(Tensor self, Tensor?[] indices) -> Tensor (NumPy advanced indexing).

    The indexed dims are moved to the front and gathered with GatherND on the broadcast, stacked
    indices. As in NumPy/PyTorch, the result's index dims replace the indexed dims when those are
    adjacent, and go first otherwise. A boolean mask over k dims stands for its k ``NonZero``
    coordinate rows (NumPy's rule: ``x[mask]`` is ``x[mask.nonzero()]``); the result's length
    along them is then known only at run time.
    """
    indices = _masks_as_positions(ctx, indices)
    positions = [i for i, idx in enumerate(indices) if idx is not None]
    r = rank(self)
    if len(positions) == 1:
        return ctx.op.Gather(self, indices[positions[0]], axis=positions[0])
    sliced = _aranges_as_slice(ctx, self, indices, positions)
    if sliced is not None:
        return sliced
    rest = [i for i in range(r) if i not in positions]
    x = self if positions == list(range(len(positions))) else ctx.op.Transpose(self, perm=positions + rest)
    idx = [indices[i] for i in positions]
    idx = [i if i.dtype == ir.DataType.INT64 else ctx.op.Cast(i, to=ir.DataType.INT64) for i in idx]  # type: ignore[union-attr]
    broadcast_shape = ctx.op.Shape(ctx.op.Add(*idx[:2])) if len(idx) == 2 else None
    if broadcast_shape is None:
        total = idx[0]
        for i in idx[1:]:
            total = ctx.op.Add(total, i)
        broadcast_shape = ctx.op.Shape(total)
    stacked = ctx.op.Concat(
        *[ctx.op.Unsqueeze(ctx.op.Expand(i, broadcast_shape), ctx.const([-1])) for i in idx], axis=-1
    )
    out = ctx.op.GatherND(x, stacked, batch_dims=0)
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    if not adjacent or positions[0] == 0:
        return out
    # Move the broadcast index dims to where the first indexed dim was (a complex result's real
    # view has the real/imaginary axis last, among ``rest``).
    idx_rank = len(ctx.val().shape) + int(ctx.val().is_complex()) - len(rest)
    before = positions[0]
    perm = list(range(idx_rank, idx_rank + before)) + list(range(idx_rank)) + list(
        range(idx_rank + before, idx_rank + len(rest))
    )
    return ctx.op.Transpose(out, perm=perm)


def _aranges_as_slice(
    ctx: Ctx, self: ir.Value, indices: Sequence[ir.Value | None], positions: list[int]
) -> ir.Value | None:
    """``x[arange(n0)[:, None], arange(n1)[None, :]]`` as a ``Slice`` of ``x[:n0, :n1]`` and an
    ``Unsqueeze``, or ``None`` when the indices are not such aranges.

    Applies when the indexed dims are adjacent and every index is ``arange(0, n, 1)`` (an ONNX
    ``Range``: a dynamic ``n``) seen through ``Unsqueeze``, varying along its own dim of the
    broadcast index shape, those dims in the order of the indexed dims. NumPy's rule then gives
    ``result[..., b_0, .., b_R-1, ...] = x[..., b_p0, .., b_pm-1, ...]``: the slice with 1-dims
    inserted. transformers' mask builders index the padding mask this way
    (``attention_mask[batch_arange, kv_arange]``) at every decoder step; GatherND over broadcast
    coordinates cost ~8 nodes there. An ``n`` beyond the dim is an index error in eager and is
    clamped by ``Slice``.
    """
    if positions != list(range(positions[0], positions[0] + len(positions))):
        return None
    ranges: list[tuple[ir.Value, int, ir.Value]] = []  # (n, the index's varying axis, the index)
    for i in positions:
        index = indices[i]
        found = _arange_along(index)
        if found is None or index is None or index.shape is None:
            return None
        ranges.append((*found, index))
    broadcast_rank = max(rank(index) for _, _, index in ranges)
    axes = [axis + broadcast_rank - rank(index) for _, axis, index in ranges]
    if axes != sorted(set(axes)):
        return None
    # A range as long as its dim (the same symbolic dim) takes all of it: no slice there.
    cut = [(limit, p) for (limit, axis, index), p in zip(ranges, positions)
           if not _same_dim(index.shape[axis], None if self.shape is None else self.shape[p])]  # type: ignore[index]
    out = self
    if cut:
        ends = ctx.op.Concat(*[ctx.op.Reshape(n, ctx.const([1])) for n, _ in cut], axis=0)
        out = ctx.op.Slice(self, ctx.const([0] * len(cut)), ends, ctx.const([p for _, p in cut]))
    ones = [positions[0] + j for j in range(broadcast_rank) if j not in axes]
    return ctx.op.Unsqueeze(out, ctx.const(ones)) if ones else ctx.op.Identity(out)


def _same_dim(a: int | ir.SymbolicDim, b: int | ir.SymbolicDim | None) -> bool:
    """Two dims known equal: the same int, or the same named symbolic dim."""
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    return b is not None and a.value is not None and a.value == b.value


def _arange_along(value: ir.Value | None) -> tuple[ir.Value, int] | None:
    """``(n, axis)`` when ``value`` is ``arange(0, n, 1)`` (INT64 ``Range`` with constant 0 and 1)
    put through ``Unsqueeze`` (or ``+ 0``: transformers' ``kv_arange + kv_offset``), its one dim
    that is not a static 1 being ``axis``."""
    if value is None or value.shape is None or value.dtype != ir.DataType.INT64:
        return None
    varying = [i for i, d in enumerate(value.shape) if d != 1]
    if len(varying) != 1:
        return None
    node = value.producer()
    while node is not None and node.domain == "" and (
        node.op_type in ("Unsqueeze", "Identity")
        or (node.op_type == "Add" and _scalar_constant(node.inputs[1]) == 0)
    ):
        node = node.inputs[0].producer()  # type: ignore[union-attr]
    if node is None or node.op_type != "Range" or node.domain != "":
        return None
    start, limit, delta = node.inputs
    if _scalar_constant(start) != 0 or _scalar_constant(delta) != 1 or limit is None:
        return None
    return limit, varying[0]


def _scalar_constant(value: ir.Value | None) -> float | None:
    tensor = None if value is None else value.const_value
    if tensor is None or tensor.size != 1:
        return None
    return float(tensor.numpy().reshape(()))


def _masks_as_positions(ctx: Ctx, indices: Sequence[ir.Value | None]) -> list[ir.Value | None]:
    """Each boolean mask of rank k replaced by the k INT64 rows of its ``NonZero`` (row-major
    order, as ``torch.nonzero``), one per dim it covers."""
    out: list[ir.Value | None] = []
    for idx in indices:
        if idx is None or idx.dtype != ir.DataType.BOOL:
            out.append(idx)
            continue
        k = rank(idx)
        if k == 0:
            ctx.unsupported("a 0-d boolean index (x[True] adds a dim of length 0 or 1)")
        coords = ctx.op.NonZero(idx)  # (k, n)
        out.extend(ctx.op.Squeeze(ctx.op.Slice(coords, ctx.const([j]), ctx.const([j + 1]), ctx.const([0])),
                                  ctx.const([0])) for j in range(k))
    return out


@translates(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
def aten_embedding_bag(
    ctx: Ctx, weight: ir.Value, indices: ir.Value, offsets: ir.Value, scale_grad_by_freq: bool = False,
    mode: int = 0, sparse: bool = False, per_sample_weights: ir.Value | None = None,
    include_last_offset: bool = False, padding_idx: int = -1,
) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)

    Bag of each index = (number of offsets ≤ its position) − 1; rows are gathered, weighted, and
    reduced into their bag with ScatterND (add, or max for mode 2). Mode 1 divides by the bag's
    count; empty bags give 0; indices equal to ``padding_idx`` are left out (PyTorch docs,
    torch.nn.functional.embedding_bag). Outputs 2-4 (offset2bag, bag_size, max_indices) are the
    bag of each index, the count per bag, and zeros.
    """
    i64 = ir.DataType.INT64
    idx = indices if indices.dtype == i64 else ctx.op.Cast(indices, to=i64)
    offs = offsets if offsets.dtype == i64 else ctx.op.Cast(offsets, to=i64)
    n = ctx.op.Shape(idx)
    positions = ctx.op.Range(ctx.const(0), ctx.op.Squeeze(n, ctx.const([0])), ctx.const(1))
    ge = ctx.op.GreaterOrEqual(ctx.op.Unsqueeze(positions, ctx.const([1])), ctx.op.Unsqueeze(offs, ctx.const([0])))
    bag = ctx.op.Sub(ctx.op.ReduceSum(ctx.op.Cast(ge, to=i64), ctx.const([1]), keepdims=0), ctx.const(1))
    n_bags = ctx.op.Shape(offs)
    if include_last_offset:
        n_bags = ctx.op.Sub(n_bags, ctx.const([1]))
    valid = ctx.op.Less(bag, ctx.op.Squeeze(n_bags, ctx.const([0])))  # past the last offset: dropped
    if padding_idx is not None and padding_idx >= 0:
        valid = ctx.op.And(valid, ctx.op.Not(ctx.op.Equal(idx, ctx.const(padding_idx))))
    rows = ctx.op.Gather(weight, idx, axis=0)
    if per_sample_weights is not None:
        rows = ctx.op.Mul(rows, ctx.op.Unsqueeze(per_sample_weights, ctx.const([1])))
    dim = ctx.op.Shape(weight, start=1, end=2)
    out_shape = ctx.op.Concat(n_bags, dim, axis=0)
    # Invalid entries go to an extra bag that is sliced away.
    target = ctx.op.Where(valid, bag, ctx.op.Squeeze(n_bags, ctx.const([0])))
    target = ctx.op.Unsqueeze(target, ctx.const([1]))
    padded_shape = ctx.op.Concat(ctx.op.Add(n_bags, ctx.const([1])), dim, axis=0)
    counts = ctx.op.ScatterND(ctx.op.Expand(ctx.const(0), ctx.op.Add(n_bags, ctx.const([1]))), target,
                              ctx.op.Expand(ctx.const(1), n), reduction="add")
    counts = ctx.op.Slice(counts, ctx.const([0]), n_bags)
    if mode == 2:
        start = ctx.op.Expand(ctx.const(float("-inf"), weight.dtype), padded_shape)
        total = ctx.op.ScatterND(start, target, rows, reduction="max")
    else:
        total = ctx.op.ScatterND(ctx.op.Expand(ctx.const(0, weight.dtype), padded_shape), target, rows, reduction="add")
    out = ctx.op.Slice(total, ctx.const([0]), n_bags, ctx.const([0]))
    empty = ctx.op.Unsqueeze(ctx.op.Equal(counts, ctx.const(0)), ctx.const([1]))
    if mode == 1:
        out = ctx.op.Div(out, ctx.op.Unsqueeze(ctx.op.Cast(ctx.op.Max(counts, ctx.const(1)), to=weight.dtype), ctx.const([1])))
    out = ctx.op.Where(empty, ctx.const(0, weight.dtype), out)
    max_indices = ctx.op.Expand(ctx.const(0), out_shape) if mode == 2 else ctx.op.Expand(ctx.const(0), n_bags)
    return out, bag, counts, max_indices


@translates(aten.repeat_interleave.Tensor)
def aten_repeat_interleave_tensor(ctx: Ctx, repeats: ir.Value, *, output_size: int | None = None) -> ir.Value:
    """repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor

    Index i repeated repeats[i] times, in order: output position p holds the number of cumulative
    sums ≤ p (the bag p falls into), so the order is the repeats' order.
    """
    i64 = ir.DataType.INT64
    r = repeats if repeats.dtype == i64 else ctx.op.Cast(repeats, to=i64)
    r = ctx.op.Reshape(r, ctx.const([-1]))
    ends = ctx.op.CumSum(r, ctx.const(0))
    total = ctx.op.ReduceSum(r, ctx.const([0]), keepdims=0)
    positions = ctx.op.Range(ctx.const(0), total, ctx.const(1))
    le = ctx.op.LessOrEqual(ctx.op.Unsqueeze(ends, ctx.const([0])), ctx.op.Unsqueeze(positions, ctx.const([1])))
    out = ctx.op.ReduceSum(ctx.op.Cast(le, to=i64), ctx.const([1]), keepdims=0)
    return out if ctx.out_dtype() == i64 else ctx.op.Cast(out, to=ctx.out_dtype())


@translates(aten.repeat_interleave.self_int)
def aten_repeat_interleave_self_int(
    ctx: Ctx, self: ir.Value, repeats: int | ir.Value, dim: int | None = None, *, output_size: int | None = None,
) -> ir.Value:
    """repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor

    Each slice along ``dim`` repeated ``repeats`` times in place (``dim=None``: the flattened
    input): Unsqueeze after ``dim``, Expand that axis to ``repeats``, merge it into ``dim``.
    ``repeats`` may be a SymInt (0-D INT64 value).
    """
    if dim is None:
        self, dim, r = ctx.op.Reshape(self, ctx.const([-1])), 0, 1
    else:
        r = rank(self)
        dim %= r
    sizes = ctx.op.Shape(self)
    count = ctx.op.Reshape(repeats, ctx.const([1])) if isinstance(repeats, ir.Value) else ctx.const([repeats])

    def part(start: int, end: int) -> ir.Value:
        return ctx.op.Slice(sizes, ctx.const([start]), ctx.const([end]))

    expanded = ctx.op.Expand(ctx.op.Unsqueeze(self, ctx.const([dim + 1])),
                             ctx.op.Concat(part(0, dim + 1), count, part(dim + 1, r), axis=0))
    merged = ctx.op.Mul(part(dim, dim + 1), count)
    return ctx.op.Reshape(expanded, ctx.op.Concat(part(0, dim), merged, part(dim + 1, r), axis=0))


@translates(aten.masked_select.default)
def aten_masked_select(ctx: Ctx, self: ir.Value, mask: ir.Value) -> ir.Value:
    """masked_select(Tensor self, Tensor mask) -> Tensor: the broadcast self where mask, row-major."""
    shape = ctx.op.Shape(ctx.op.Add(ctx.op.Cast(mask, to=ir.DataType.INT64),
                                    ctx.op.Expand(ctx.const(0), ctx.op.Shape(self))))
    flat_mask = ctx.op.Reshape(ctx.op.Expand(mask, shape), ctx.const([-1]))
    if self.dtype == ir.DataType.BFLOAT16:  # no onnxruntime bfloat16 Expand/Compress: select in float
        flat = ctx.op.Reshape(ctx.op.Expand(ctx.op.Cast(self, to=ir.DataType.FLOAT), shape), ctx.const([-1]))
        return ctx.op.Cast(ctx.op.Compress(flat, flat_mask, axis=0), to=self.dtype)
    flat = ctx.op.Reshape(ctx.op.Expand(self, shape), ctx.const([-1]))
    return ctx.op.Compress(flat, flat_mask, axis=0)


@translates(aten.one_hot.default)
def aten_one_hot(ctx: Ctx, self: ir.Value, num_classes: int = -1) -> ir.Value:
    """one_hot(Tensor self, int num_classes=-1) -> Tensor: ONNX OneHot with values [0, 1] (int64).

    ``num_classes=-1`` means max(self) + 1, computed at run time.
    """
    if num_classes == -1:
        depth = ctx.op.Add(ctx.op.ReduceMax(self, keepdims=0), ctx.const(1, self.dtype))
    else:
        depth = ctx.const(num_classes, self.dtype)
    return ctx.op.OneHot(self, depth, ctx.const([0, 1]), axis=-1)


@translates(aten.take.default)
def aten_take(ctx: Ctx, self: ir.Value, index: ir.Value) -> ir.Value:
    """take(Tensor self, Tensor index) -> Tensor: self viewed as 1-D, gathered at ``index``.

    Gather accepts negative indices counted from the end, as torch.take does (PyTorch docs,
    torch.take); the output has the index's shape.
    """
    return ctx.op.Gather(ctx.op.Reshape(self, ctx.const([-1])), index, axis=0)


@translates(aten.nonzero_static.default)
def aten_nonzero_static(ctx: Ctx, self: ir.Value, *, size: int, fill_value: int = -1) -> ir.Value:
    """nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor

    The (size, rank) indices of the first ``size`` non-zero elements in row-major order, rows past
    the count filled with ``fill_value`` (PyTorch docs, torch.nonzero_static): NonZero, transposed,
    padded with a (size, rank) block of ``fill_value`` and sliced to ``size`` rows.
    """
    r = rank(self)
    fill = ctx.op.Expand(ctx.const(fill_value, ir.DataType.INT64), ctx.shape_tensor([size, r]))
    if r == 0:
        return fill
    flags = self if self.dtype == ir.DataType.BOOL else ctx.op.Cast(self, to=ir.DataType.BOOL)
    found = ctx.op.Transpose(ctx.op.NonZero(flags), perm=[1, 0])
    padded = ctx.op.Concat(found, fill, axis=0)
    return ctx.op.Slice(padded, ctx.const([0]), ctx.shape_tensor([size]), ctx.const([0]))
