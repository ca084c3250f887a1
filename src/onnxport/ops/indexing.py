"""Indexing ops: embedding, advanced indexing (index.Tensor), gather, index_select."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops.shape import rank
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
    """index_select(Tensor self, int dim, Tensor index) -> Tensor"""
    return ctx.op.Gather(self, index, axis=dim % max(rank(self), 1))


@translates(aten.gather.default)
def aten_gather(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, *, sparse_grad: bool = False) -> ir.Value:
    """gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor"""
    if rank(self) == 0:
        return ctx.op.Identity(self)
    return ctx.op.GatherElements(self, index, axis=dim % rank(self))


@translates(aten.index.Tensor)
def aten_index(ctx: Ctx, self: ir.Value, indices: Sequence[ir.Value | None]) -> ir.Value:
    """index.Tensor(Tensor self, Tensor?[] indices) -> Tensor (NumPy advanced indexing).

    The indexed dims are moved to the front and gathered with GatherND on the broadcast, stacked
    indices. As in NumPy/PyTorch, the result's index dims replace the indexed dims when those are
    adjacent, and go first otherwise.
    """
    positions = [i for i, idx in enumerate(indices) if idx is not None]
    if any(indices[i].dtype == ir.DataType.BOOL for i in positions):  # type: ignore[union-attr]
        ctx.unsupported("boolean-mask indexing has a data-dependent shape; use torch.where instead")
    r = rank(self)
    if len(positions) == 1:
        return ctx.op.Gather(self, indices[positions[0]], axis=positions[0])
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
    # Move the broadcast index dims to where the first indexed dim was.
    idx_rank = len(ctx.val().shape) - len(rest)
    before = positions[0]
    perm = list(range(idx_rank, idx_rank + before)) + list(range(idx_rank)) + list(
        range(idx_rank + before, idx_rank + len(rest))
    )
    return ctx.op.Transpose(out, perm=perm)
