"""Matrix products: linear, addmm, mm, bmm, matmul, baddbmm."""

from __future__ import annotations

import onnx_ir as ir
import torch

from onnxport.ops.shape import rank
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.linear.default)
def aten_linear(ctx: Ctx, input: ir.Value, weight: ir.Value, bias: ir.Value | None = None) -> ir.Value:
    """linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor: input @ weightᵀ + bias.

    A 2-D input becomes one Gemm (transB=1); other ranks MatMul with the transposed weight.
    """
    if rank(input) == 2 and rank(weight) == 2:
        return ctx.op.Gemm(input, weight, bias, transB=1)
    out = ctx.op.MatMul(input, ctx.op.Transpose(weight, perm=[1, 0]) if rank(weight) == 2 else weight)
    return out if bias is None else ctx.op.Add(out, bias)


@translates(aten.addmm.default)
def aten_addmm(
    ctx: Ctx, self: ir.Value, mat1: ir.Value, mat2: ir.Value, *, beta: float = 1, alpha: float = 1
) -> ir.Value:
    """addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return ctx.op.Gemm(mat1, mat2, self, alpha=float(alpha), beta=float(beta))


@translates(aten.mm.default, aten.bmm.default, aten.matmul.default)
def aten_matmul(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """matmul(Tensor self, Tensor other) -> Tensor (numpy matmul semantics, as ONNX MatMul)."""
    return ctx.op.MatMul(self, other)


@translates(aten.baddbmm.default)
def aten_baddbmm(
    ctx: Ctx, self: ir.Value, batch1: ir.Value, batch2: ir.Value, *, beta: float = 1, alpha: float = 1
) -> ir.Value:
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    prod = ctx.op.MatMul(batch1, batch2)
    if alpha != 1:
        prod = ctx.op.Mul(prod, ctx.const(alpha, prod.dtype))
    if beta == 0:
        return prod
    base = self if beta == 1 else ctx.op.Mul(self, ctx.const(beta, self.dtype))
    return ctx.op.Add(base, prod)


@translates(aten.addmv.default)
def aten_addmv(ctx: Ctx, self: ir.Value, mat: ir.Value, vec: ir.Value, *, beta: float = 1, alpha: float = 1) -> ir.Value:
    """addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor"""
    return _scaled_sum(ctx, self, ctx.op.MatMul(mat, vec), beta, alpha)


@translates(aten.addbmm.default)
def aten_addbmm(ctx: Ctx, self: ir.Value, batch1: ir.Value, batch2: ir.Value, *, beta: float = 1, alpha: float = 1) -> ir.Value:
    """addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor: Σ_b batch1[b] @ batch2[b]."""
    prod = ctx.op.ReduceSum(ctx.op.MatMul(batch1, batch2), ctx.const([0]), keepdims=0)
    return _scaled_sum(ctx, self, prod, beta, alpha)


def _scaled_sum(ctx: Ctx, self: ir.Value, prod: ir.Value, beta: float, alpha: float) -> ir.Value:
    """beta·self + alpha·prod; beta = 0 ignores self (NaN included), as torch does."""
    if alpha != 1:
        prod = ctx.op.Mul(prod, ctx.const(alpha, self.dtype))
    if beta == 0:
        return ctx.op.Add(prod, ctx.op.Expand(ctx.const(0, self.dtype), ctx.op.Shape(self)))
    base = self if beta == 1 else ctx.op.Mul(self, ctx.const(beta, self.dtype))
    return ctx.op.Add(base, prod)


@translates(aten.einsum.default)
def aten_einsum(ctx: Ctx, equation: str, tensors: list[ir.Value], *, path: list[int] | None = None) -> ir.Value:
    """einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor: ONNX Einsum (same notation)."""
    out_dtype = ctx.out_dtype()
    operands = [t if t.dtype == out_dtype else ctx.op.Cast(t, to=out_dtype) for t in tensors]
    return ctx.op.Einsum(*operands, equation=equation.replace(" ", ""))
