"""Activation functions, softmax, and the chunked linear cross-entropy ops of torch.nn."""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

from onnxport.ops._common import dtype_of
from onnxport.ops.nn.random_ops import uniform
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

try:  # torch.nn.functional.linear_cross_entropy's custom ops (torch >= 2.12), registered on import
    import torch.nn.modules.linear_cross_entropy  # noqa: F401

    _LCE_CHUNKED: tuple = (torch.ops.torch_nn._linear_cross_entropy_batch_chunked.default,)
    _LCE_CHUNKED_NONE: tuple = (torch.ops.torch_nn._linear_cross_entropy_batch_chunked_no_reduction.default,)
except (ImportError, AttributeError):
    _LCE_CHUNKED = _LCE_CHUNKED_NONE = ()


@translates(aten.gelu.default)
def aten_gelu(ctx: Ctx, self: ir.Value, *, approximate: str = "none") -> ir.Value:
    """gelu(Tensor self, *, str approximate="none") -> Tensor

    Below opset 20 (no ONNX Gelu): 0.5·x·(1 + erf(x/√2)), or the tanh form for "tanh"
    (PyTorch docs, torch.nn.GELU).
    """
    half = ctx.const(0.5, self.dtype)
    one = ctx.const(1.0, self.dtype)
    if approximate == "tanh":
        inner = ctx.op.Mul(
            ctx.const(math.sqrt(2 / math.pi), self.dtype),
            ctx.op.Add(self, ctx.op.Mul(ctx.const(0.044715, self.dtype), ctx.op.Mul(self, ctx.op.Mul(self, self)))),
        )
        return ctx.op.Mul(ctx.op.Mul(half, self), ctx.op.Add(one, ctx.op.Tanh(inner)))
    # x / √2 (Div, not Mul by 1/√2) and the 0.5·x factor on one side: the form torch.onnx
    # writes and onnxruntime's transformer optimizer fuses into Gelu/BiasGelu (its
    # fusion_gelu.py, FusionGelu.fuse_1, "pattern 1").
    erf = ctx.op.Erf(ctx.op.Div(self, ctx.const(math.sqrt(2), self.dtype)))
    return ctx.op.Mul(ctx.op.Mul(half, self), ctx.op.Add(one, erf))


@translates(aten.gelu.default, since=20)
def aten_gelu_20(ctx: Ctx, self: ir.Value, *, approximate: str = "none") -> ir.Value:
    """gelu(Tensor self, *, str approximate="none") -> Tensor: ONNX Gelu (opset 20)."""
    return ctx.op.Gelu(self, approximate=approximate)


@translates(aten.silu.default)
def aten_silu(ctx: Ctx, self: ir.Value) -> ir.Value:
    """silu(Tensor self) -> Tensor: x·sigmoid(x)."""
    return ctx.op.Mul(self, ctx.op.Sigmoid(self))


@translates(aten.hardsigmoid.default)
def aten_hardsigmoid(ctx: Ctx, self: ir.Value) -> ir.Value:
    """hardsigmoid(Tensor self) -> Tensor: clip(x/6 + 1/2, 0, 1) (PyTorch docs)."""
    return ctx.op.HardSigmoid(self, alpha=1 / 6, beta=0.5)


@translates(aten.hardswish.default)
def aten_hardswish(ctx: Ctx, self: ir.Value) -> ir.Value:
    """hardswish(Tensor self) -> Tensor"""
    return ctx.op.HardSwish(self)


@translates(aten.mish.default)
def aten_mish(ctx: Ctx, self: ir.Value) -> ir.Value:
    """mish(Tensor self) -> Tensor"""
    return ctx.op.Mish(self)


@translates(aten.leaky_relu.default)
def aten_leaky_relu(ctx: Ctx, self: ir.Value, negative_slope: float = 0.01) -> ir.Value:
    """leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor"""
    return ctx.op.LeakyRelu(self, alpha=float(negative_slope))


@translates(aten.elu.default)
def aten_elu(ctx: Ctx, self: ir.Value, alpha: float = 1, scale: float = 1, input_scale: float = 1) -> ir.Value:
    """elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor"""
    if scale == 1 and input_scale == 1:
        return ctx.op.Elu(self, alpha=float(alpha))
    x = ctx.op.Mul(self, ctx.const(input_scale, self.dtype))
    return ctx.op.Mul(ctx.op.Elu(x, alpha=float(alpha)), ctx.const(scale, self.dtype))


@translates(aten.hardtanh.default)
def aten_hardtanh(ctx: Ctx, self: ir.Value, min_val: float = -1, max_val: float = 1) -> ir.Value:
    """hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor"""
    return ctx.op.Clip(self, ctx.const(min_val, self.dtype), ctx.const(max_val, self.dtype))


@translates(aten.softplus.default)
def aten_softplus(ctx: Ctx, self: ir.Value, beta: float = 1, threshold: float = 20) -> ir.Value:
    """softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor

    log(1 + exp(βx))/β, linear where βx > threshold (PyTorch docs, torch.nn.Softplus).
    """
    bx = ctx.op.Mul(self, ctx.const(beta, self.dtype)) if beta != 1 else self
    soft = ctx.op.Softplus(bx)
    if beta != 1:
        soft = ctx.op.Div(soft, ctx.const(beta, self.dtype))
    return ctx.op.Where(ctx.op.Greater(bx, ctx.const(threshold, self.dtype)), self, soft)


@translates(aten.softmax.int, aten._softmax.default)
def aten_softmax(ctx: Ctx, self: ir.Value, dim: int, dtype: torch.dtype | bool | None = None) -> ir.Value:
    """softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self
    if ctx.out_dtype() != x.dtype:  # dtype= (softmax.int) or half_to_float (_softmax)
        x = ctx.op.Cast(x, to=ctx.out_dtype())
    return ctx.op.Softmax(x, axis=dim)


@translates(aten.log_softmax.int, aten._log_softmax.default)
def aten_log_softmax(ctx: Ctx, self: ir.Value, dim: int, dtype: torch.dtype | bool | None = None) -> ir.Value:
    """log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"""
    x = self
    if ctx.out_dtype() != x.dtype:
        x = ctx.op.Cast(x, to=ctx.out_dtype())
    return ctx.op.LogSoftmax(x, axis=dim)


def _cross_entropy(
    ctx: Ctx, logits: ir.Value, target: ir.Value, weight: ir.Value | None, reduction: str, ignore_index: int,
    label_smoothing: float,
) -> ir.Value:
    """Cross-entropy of (N, C) logits against class indices (PyTorch docs, CrossEntropyLoss; aten
    LossNLL.cpp ``cross_entropy_loss_label_smoothing``): with logp = log_softmax(logits) and
    wₜ = weight[target] (0 where target == ignore_index),
    loss = (1 − ε)·(−wₜ·logp[target]) + ε/C·(−Σ_c w_c·logp_c); "mean" divides both sums by Σ wₜ.
    """
    dtype = logits.dtype
    i64 = ir.DataType.INT64
    logp = ctx.op.LogSoftmax(logits, axis=1)
    tgt = target if target.dtype == i64 else ctx.op.Cast(target, to=i64)
    valid = ctx.op.Not(ctx.op.Equal(tgt, ctx.const(ignore_index)))
    safe = ctx.op.Where(valid, tgt, ctx.const(0))
    picked = ctx.op.Squeeze(ctx.op.GatherElements(logp, ctx.op.Unsqueeze(safe, ctx.const([1])), axis=1),
                            ctx.const([1]))
    zero = ctx.const(0.0, dtype)
    w_t = ctx.op.Gather(weight, safe, axis=0) if weight is not None else ctx.op.Expand(ctx.const(1.0, dtype), ctx.op.Shape(safe))
    w_t = ctx.op.Where(valid, w_t, zero)
    loss = ctx.op.Neg(ctx.op.Mul(picked, w_t))
    if label_smoothing > 0:
        weighted = logp if weight is None else ctx.op.Mul(logp, ctx.op.Unsqueeze(weight, ctx.const([0])))
        smooth = ctx.op.Where(valid, ctx.op.Neg(ctx.op.ReduceSum(weighted, ctx.const([1]), keepdims=0)), zero)
        classes = ctx.op.Cast(ctx.op.Shape(logits, start=1, end=2), to=dtype)
        loss = ctx.op.Add(ctx.op.Mul(loss, ctx.const(1.0 - label_smoothing, dtype)),
                          ctx.op.Mul(smooth, ctx.op.Div(ctx.const(label_smoothing, dtype), classes)))
    if reduction == "none":
        return loss
    total = ctx.op.ReduceSum(loss, keepdims=0)
    if reduction == "sum":
        return total
    return ctx.op.Div(total, ctx.op.ReduceSum(w_t, keepdims=0))


def _linear_logits(ctx: Ctx, input: ir.Value, linear_weight: ir.Value, linear_bias: ir.Value | None,
                   work: ir.DataType) -> ir.Value:
    x, w = (v if v.dtype == work else ctx.op.Cast(v, to=work) for v in (input, linear_weight))
    logits = ctx.op.MatMul(x, ctx.op.Transpose(w, perm=[1, 0]))
    if linear_bias is not None:
        logits = ctx.op.Add(logits, linear_bias if linear_bias.dtype == work else ctx.op.Cast(linear_bias, to=work))
    return logits


def _work_type(dtype: ir.DataType) -> ir.DataType:
    return dtype if dtype in (ir.DataType.FLOAT, ir.DataType.DOUBLE) else ir.DataType.FLOAT


@translates(*_LCE_CHUNKED)
def torch_nn_linear_cross_entropy_chunked(
    ctx: Ctx, input: ir.Value, linear_weight: ir.Value, target: ir.Value, linear_bias: ir.Value | None,
    weight: ir.Value | None, reduction: str, ignore_index: int, label_smoothing: float, batch_chunk_size: int,
    acc_policy: str, acc_dtype: torch.dtype, allow_retain_graph: bool, compute_input_grad: bool,
    compute_linear_weight_grad: bool, compute_linear_bias_grad: bool,
) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """_linear_cross_entropy_batch_chunked(Tensor input, Tensor linear_weight, Tensor target, Tensor? linear_bias, Tensor? weight, str reduction, int ignore_index, float label_smoothing, int batch_chunk_size, str acc_policy, ScalarType acc_dtype, bool allow_retain_graph, bool compute_input_grad, bool compute_linear_weight_grad, bool compute_linear_bias_grad) -> (Tensor, Tensor, Tensor, Tensor)

    cross_entropy(input @ linear_weightᵀ + linear_bias, target) in one pass (chunking over the
    batch only bounds torch's memory); computed in float for half types. The gradient outputs
    are empty when not requested (inference); requested ones are unsupported.
    """
    if compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad:
        ctx.unsupported("linear_cross_entropy with precomputed gradients (export in inference mode, without grad)")
    work = _work_type(dtype_of(input))
    logits = _linear_logits(ctx, input, linear_weight, linear_bias, work)
    w = None if weight is None else (weight if weight.dtype == work else ctx.op.Cast(weight, to=work))
    loss = _cross_entropy(ctx, logits, target, w, reduction, ignore_index, label_smoothing)
    if work != input.dtype:
        loss = ctx.op.Cast(loss, to=input.dtype)
    vals = ctx.val()
    empties = [ctx.const(torch.zeros([int(d) for d in v.shape], dtype=v.dtype)) for v in vals[1:]]
    return (loss, *empties)  # type: ignore[return-value]


@translates(*_LCE_CHUNKED_NONE)
def torch_nn_linear_cross_entropy_chunked_none(
    ctx: Ctx, input: ir.Value, linear_weight: ir.Value, target: ir.Value, linear_bias: ir.Value | None,
    weight: ir.Value | None, ignore_index: int, batch_chunk_size: int, acc_policy: str, acc_dtype: torch.dtype,
) -> ir.Value:
    """_linear_cross_entropy_batch_chunked_no_reduction(Tensor input, Tensor linear_weight, Tensor target, Tensor? linear_bias, Tensor? weight, int ignore_index, int batch_chunk_size, str acc_policy, ScalarType acc_dtype) -> Tensor

    Per-sample cross_entropy(input @ linear_weightᵀ + linear_bias, target), reduction "none".
    """
    work = _work_type(dtype_of(input))
    logits = _linear_logits(ctx, input, linear_weight, linear_bias, work)
    w = None if weight is None else (weight if weight.dtype == work else ctx.op.Cast(weight, to=work))
    loss = _cross_entropy(ctx, logits, target, w, "none", ignore_index, 0.0)
    return loss if work == input.dtype else ctx.op.Cast(loss, to=input.dtype)


@translates(aten.rrelu_with_noise_functional.default)
def aten_rrelu_with_noise_functional(
    ctx: Ctx, self: ir.Value, noise: ir.Value, lower: float = 0.125, upper: float = 1.0 / 3.0,
    training: bool = False, generator: object = None,
) -> tuple[ir.Value, ir.Value]:
    """rrelu_with_noise_functional(Tensor self, Tensor noise, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> (Tensor, Tensor noise_out)

    Randomized leaky ReLU (Xu et al. 2015, "Empirical Evaluation of Rectified Activations in
    Convolutional Network"; PyTorch docs, RReLU). Eval: leaky ReLU with slope (lower + upper)/2,
    ``noise`` returned as is. Training: x ≤ 0 is scaled by a slope drawn from U(lower, upper)
    (RandomUniformLike, so values differ from torch's generator), and noise_out holds the slopes
    (1 where x > 0).
    """
    if self.dtype == ir.DataType.BFLOAT16:  # no onnxruntime comparison kernels: in float
        out, noise_out = aten_rrelu_with_noise_functional(
            ctx, ctx.op.Cast(self, to=ir.DataType.FLOAT), noise, lower, upper, training)
        return ctx.op.Cast(out, to=self.dtype), (noise if not training else ctx.op.Cast(noise_out, to=self.dtype))
    if not training:
        slope = (float(lower) + float(upper)) / 2
        out = ctx.op.Where(ctx.op.Less(self, ctx.const(0, self.dtype)), ctx.op.Mul(self, ctx.const(slope, self.dtype)), self)
        return out, ctx.op.Identity(noise)

    slopes = uniform(ctx, ctx.op.Shape(self), float(lower), float(upper))
    if self.dtype != ir.DataType.FLOAT:
        slopes = ctx.op.Cast(slopes, to=self.dtype)
    negative = ctx.op.LessOrEqual(self, ctx.const(0, self.dtype))
    noise_out = ctx.op.Where(negative, slopes, ctx.const(1, self.dtype))
    return ctx.op.Mul(self, noise_out), noise_out
