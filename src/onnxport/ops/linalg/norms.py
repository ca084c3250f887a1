"""Vector norms and distances: linalg_vector_norm, dist, _cdist_forward, _pdist_forward."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.ops._common import input_val, rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten


def _p_norm(ctx: Ctx, diff: ir.Value, p: float, axis: int) -> ir.Value:
    axes = ctx.const([axis])
    if p == 2:
        return ctx.op.Sqrt(ctx.op.ReduceSum(ctx.op.Mul(diff, diff), axes, keepdims=0))
    a = ctx.op.Abs(diff)
    if p == 1:
        return ctx.op.ReduceSum(a, axes, keepdims=0)
    if p == 0:
        nonzero = ctx.op.Cast(ctx.op.Not(ctx.op.Equal(a, ctx.const(0, diff.dtype))), to=diff.dtype)
        return ctx.op.ReduceSum(nonzero, axes, keepdims=0)
    if math.isinf(p):
        return ctx.op.ReduceMax(a, axes, keepdims=0)
    summed = ctx.op.ReduceSum(ctx.op.Pow(a, ctx.const(p, diff.dtype)), axes, keepdims=0)
    return ctx.op.Pow(summed, ctx.const(1.0 / p, diff.dtype))


@translates(aten._cdist_forward.default)
def aten_cdist_forward(ctx: Ctx, x1: ir.Value, x2: ir.Value, p: float, compute_mode: int | None = None) -> ir.Value:
    """_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor

    ‖x1ᵢ − x2ⱼ‖ₚ over every pair by broadcasting (…, P, 1, M) − (…, 1, R, M): exact for every p
    (torch's matmul shortcut for p = 2 is only a speed trade-off).
    """
    diff = ctx.op.Sub(ctx.op.Unsqueeze(x1, ctx.const([-2])), ctx.op.Unsqueeze(x2, ctx.const([-3])))
    return _p_norm(ctx, diff, float(p), -1)


@translates(aten._pdist_forward.default)
def aten_pdist_forward(ctx: Ctx, self: ir.Value, p: float = 2.0) -> ir.Value:
    """_pdist_forward(Tensor self, float p=2.) -> Tensor: distances of the row pairs i < j, row-major."""
    n = input_val(ctx).shape[0]
    if not isinstance(n, int):
        ctx.unsupported("pdist over a dynamic number of rows")
    if n < 2:  # no pairs
        return ctx.op.Identity(ctx.const(np.zeros(0, dtype=np.float32), ctx.out_dtype()))
    i, j = np.triu_indices(n, k=1)
    a = ctx.op.Gather(self, ctx.const(i.astype(np.int64)), axis=0)
    b = ctx.op.Gather(self, ctx.const(j.astype(np.int64)), axis=0)
    return _p_norm(ctx, ctx.op.Sub(a, b), float(p), -1)


@translates(aten.linalg_vector_norm.default)
def aten_linalg_vector_norm(
    ctx: Ctx, self: ir.Value, ord: float = 2, dim: Sequence[int] | None = None, keepdim: bool = False, *,
    dtype: Any = None,
) -> ir.Value:
    """linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor

    ord 2 → ReduceL2, 1 → ReduceL1, ±inf → max/min of |x|, 0 → count of non-zeros, else
    (Σ|x|^p)^(1/p) (PyTorch docs, torch.linalg.vector_norm).
    """
    out_dtype = ctx.out_dtype()
    x = self if self.dtype == out_dtype else ctx.op.Cast(self, to=out_dtype)
    r = rank(self)
    if r == 0:
        x = ctx.op.Reshape(x, ctx.const([1]))
        dim, keep = [0], False
    else:
        dim = list(range(r)) if dim is None or (not isinstance(dim, int) and len(dim) == 0) else (
            [dim] if isinstance(dim, int) else list(dim))
        keep = keepdim
    axes = ctx.const([d % max(r, 1) for d in dim])
    k = int(keep)
    p = float(ord)
    if p == 2:
        return ctx.op.ReduceL2(x, axes, keepdims=k)
    a = ctx.op.Abs(x)
    if p == 1:
        return ctx.op.ReduceSum(a, axes, keepdims=k)
    if math.isinf(p):
        return ctx.op.ReduceMax(a, axes, keepdims=k) if p > 0 else ctx.op.ReduceMin(a, axes, keepdims=k)
    if p == 0:
        nz = ctx.op.Cast(ctx.op.Not(ctx.op.Equal(a, ctx.const(0, out_dtype))), to=out_dtype)
        return ctx.op.ReduceSum(nz, axes, keepdims=k)
    summed = ctx.op.ReduceSum(ctx.op.Pow(a, ctx.const(p, out_dtype)), axes, keepdims=k)
    return ctx.op.Pow(summed, ctx.const(1.0 / p, out_dtype))


@translates(aten.dist.default, promote=Promote.DEFAULT, promote_args=("self", "other"))
def aten_dist(ctx: Ctx, self: ir.Value, other: ir.Value, p: float = 2) -> ir.Value:
    """dist(Tensor self, Tensor other, Scalar p=2) -> Tensor: ‖self − other‖ₚ over all elements."""
    diff = ctx.op.Reshape(ctx.op.Sub(self, other), ctx.const([-1]))
    return _p_norm(ctx, diff, float(p), 0)
