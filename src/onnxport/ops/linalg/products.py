"""Matrix products: linear, addmm, mm/bmm/matmul, baddbmm, addmv, addbmm, einsum, and the bilinear
forms bilinear / _trilinear."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import rank, static_dim
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


@translates(aten.bilinear.default)
def aten_bilinear(ctx: Ctx, input1: ir.Value, input2: ir.Value, weight: ir.Value, bias: ir.Value | None = None) -> ir.Value:
    """bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor

    y_o = Σᵢⱼ x1ᵢ Wₒᵢⱼ x2ⱼ + bₒ (PyTorch docs, torch.nn.Bilinear): x1 (…, in1) MatMul W as
    (in1, out·in2), reshaped (…, out, in2), times x2 as (…, 1, in2), summed over the last axis.
    The MatMul's right operand is 2-D, so empty batches broadcast (onnxruntime rejects a 0-sized
    batch against a batched right operand). bfloat16 (no onnxruntime MatMul kernel) computes in float.
    """
    dtype = input1.dtype
    if dtype == ir.DataType.BFLOAT16:
        input1, input2, weight = (ctx.op.Cast(v, to=ir.DataType.FLOAT) for v in (input1, input2, weight))
    out_size, in2 = ctx.op.Shape(weight, start=0, end=1), ctx.op.Shape(weight, start=2, end=3)
    w = ctx.op.Reshape(ctx.op.Transpose(weight, perm=[1, 0, 2]), ctx.op.Concat(
        ctx.op.Shape(weight, start=1, end=2), ctx.op.Mul(out_size, in2), axis=0))
    left = ctx.op.MatMul(input1, w)
    lead = ctx.op.Shape(input1, start=0, end=rank(input1) - 1)
    left = ctx.op.Reshape(left, ctx.op.Concat(lead, out_size, in2, axis=0), allowzero=1)
    # A non-negative axis: onnxruntime's ReduceSum ignores a negative one on an empty input.
    r = rank(input1)
    out = ctx.op.ReduceSum(ctx.op.Mul(left, ctx.op.Unsqueeze(input2, ctx.const([r - 1]))), ctx.const([r]), keepdims=0)
    if bias is not None:
        out = ctx.op.Add(out, bias if dtype != ir.DataType.BFLOAT16 else ctx.op.Cast(bias, to=ir.DataType.FLOAT))
    return out if dtype != ir.DataType.BFLOAT16 else ctx.op.Cast(out, to=dtype)


@translates(aten._trilinear.default)
def aten_trilinear(
    ctx: Ctx, i1: ir.Value, i2: ir.Value, i3: ir.Value, expand1: Sequence[int], expand2: Sequence[int],
    expand3: Sequence[int], sumdim: Sequence[int], unroll_dim: int = 1,
) -> ir.Value:
    """_trilinear(Tensor i1, Tensor i2, Tensor i3, int[] expand1, int[] expand2, int[] expand3, int[] sumdim, int unroll_dim=1) -> Tensor

    Σ_sumdim i1.unsqueeze(expand1) · i2.unsqueeze(expand2) · i3.unsqueeze(expand3) (aten
    Linear.cpp, ``_trilinear``); ``unroll_dim`` only picks torch's loop order.
    """
    product = None
    for x, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
        term = ctx.op.Unsqueeze(x, ctx.const(sorted(expand))) if expand else x
        product = term if product is None else ctx.op.Mul(product, term)
    assert product is not None
    if not sumdim:
        return product
    return ctx.op.ReduceSum(product, ctx.const(sorted(sumdim)), keepdims=0)

_GEMM_TYPES = {ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16, ir.DataType.DOUBLE}


@translates(aten.linear.default)
def aten_linear(ctx: Ctx, input: ir.Value, weight: ir.Value, bias: ir.Value | None = None) -> ir.Value:
    """linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor: input @ weightᵀ + bias.

    A 2-D input becomes one Gemm (transB=1); other ranks (and integers: onnxruntime has no integer
    Gemm) MatMul with the transposed weight.
    """
    if rank(input) == 2 and rank(weight) == 2 and input.dtype in _GEMM_TYPES:
        return ctx.op.Gemm(input, weight, bias, transB=1)
    out = ctx.op.MatMul(input, ctx.op.Transpose(weight, perm=[1, 0]) if rank(weight) == 2 else weight)
    return out if bias is None else ctx.op.Add(out, bias)


@translates(aten.addmm.default)
def aten_addmm(
    ctx: Ctx, self: ir.Value, mat1: ir.Value, mat2: ir.Value, *, beta: float = 1, alpha: float = 1
) -> ir.Value:
    """addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor

    Gemm for floating point; integers (no onnxruntime Gemm kernel) and an empty inner dimension
    (onnxruntime 1.31's Gemm then returns C without the beta scaling) MatMul, then beta·self + alpha·prod.
    """
    if mat1.dtype not in _GEMM_TYPES or static_dim(mat1, -1) == 0:
        return _scaled_sum(ctx, self, ctx.op.MatMul(mat1, mat2), beta, alpha)
    return ctx.op.Gemm(mat1, mat2, self, alpha=float(alpha), beta=float(beta))


@translates(aten.mm.default, aten.bmm.default, aten.matmul.default)
def aten_matmul(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """matmul(Tensor self, Tensor other) -> Tensor (numpy matmul semantics, as ONNX MatMul)."""
    return ctx.op.MatMul(self, other)


@translates(aten.baddbmm.default)
def aten_baddbmm(
    ctx: Ctx, self: ir.Value, batch1: ir.Value, batch2: ir.Value, *, beta: float = 1, alpha: float = 1
) -> ir.Value:
    """baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor

    ``self`` broadcasts to the product's shape (PyTorch doc, ``torch.baddbmm``), so a ``self`` of
    zeros (``torch.zeros(...)`` as :func:`_zeros` sees it: GPT-NeoX-Japanese's attention scores) adds
    nothing and is left out, as ``beta=0`` is."""
    prod = ctx.op.MatMul(batch1, batch2)
    if alpha != 1:
        prod = ctx.op.Mul(prod, ctx.const(alpha, prod.dtype))
    if beta == 0 or _zeros(self):
        return prod
    base = self if beta == 1 else ctx.op.Mul(self, ctx.const(beta, self.dtype))
    return ctx.op.Add(base, prod)


def _zeros(value: ir.Value) -> bool:
    """Whether ``value`` is ``Expand(Constant(0), shape)``, ``aten.zeros`` as translated."""
    expand = value.producer()
    if expand is None or expand.op_type != "Expand" or expand.domain != "" or expand.inputs[0] is None:
        return False
    constant = expand.inputs[0].producer()
    zero = expand.inputs[0].const_value
    return constant is not None and constant.op_type == "Constant" and zero is not None and zero.size == 1 and not zero.numpy().any()


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
