"""Random tensors: rand, randn (and their _like forms), randint, randperm, bernoulli, normal.

ONNX's Random* ops draw from onnxruntime's generator, so values never match torch's; the op
suite checks shape, dtype and distribution. Sampling is done in float32 and cast, since ORT's
random kernels only produce float/double/float16.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch

from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten


def _like(ctx: Ctx, shape: ir.Value) -> ir.Value:
    """A float32 tensor of the given runtime shape to drive Random*Like."""
    return ctx.op.Expand(ctx.const(0.0, ir.DataType.FLOAT), shape)


def _cast_out(ctx: Ctx, x: ir.Value) -> ir.Value:
    dtype = ctx.out_dtype()
    return x if dtype == ir.DataType.FLOAT else ctx.op.Cast(x, to=dtype)


def uniform(ctx: Ctx, shape: ir.Value, low: float = 0.0, high: float = 1.0) -> ir.Value:
    return ctx.op.RandomUniformLike(_like(ctx, shape), low=float(low), high=float(high), dtype=ir.DataType.FLOAT)


def normal(ctx: Ctx, shape: ir.Value, mean: float = 0.0, std: float = 1.0) -> ir.Value:
    return ctx.op.RandomNormalLike(_like(ctx, shape), mean=float(mean), scale=float(std), dtype=ir.DataType.FLOAT)


@translates(aten.rand.default, aten.rand.generator)
def aten_rand(ctx: Ctx, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """rand(SymInt[] size, *, [Generator? generator,] ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor

    A generator is not carried over (ONNX random ops draw from their own seed), as for the other
    random ops here."""
    return _cast_out(ctx, uniform(ctx, ctx.shape_tensor(list(size))))


@translates(aten.randn.default, aten.randn.generator)
def aten_randn(ctx: Ctx, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """randn(SymInt[] size, *, [Generator? generator,] ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor

    A generator is not carried over, as for :func:`aten_rand`."""
    return _cast_out(ctx, normal(ctx, ctx.shape_tensor(list(size))))


@translates(aten.rand_like.default)
def aten_rand_like(ctx: Ctx, self: ir.Value, **kwargs: Any) -> ir.Value:
    """rand_like(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _cast_out(ctx, uniform(ctx, ctx.op.Shape(self)))


@translates(aten.randn_like.default)
def aten_randn_like(ctx: Ctx, self: ir.Value, **kwargs: Any) -> ir.Value:
    """randn_like(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _cast_out(ctx, normal(ctx, ctx.op.Shape(self)))


def _randint(ctx: Ctx, shape: ir.Value, low: int | ir.Value, high: int | ir.Value) -> ir.Value:
    """floor(U[0,1) · (high − low)) + low, in float32 then cast (exact for ranges < 2²⁴)."""
    lo = ctx.op.Cast(low, to=ir.DataType.FLOAT) if isinstance(low, ir.Value) else ctx.const(float(low))
    hi = ctx.op.Cast(high, to=ir.DataType.FLOAT) if isinstance(high, ir.Value) else ctx.const(float(high))
    u = uniform(ctx, shape)
    return _cast_out(ctx, ctx.op.Add(ctx.op.Floor(ctx.op.Mul(u, ctx.op.Sub(hi, lo))), lo))


@translates(aten.randint.default, aten.randint.low)
def aten_randint(ctx: Ctx, *args: Any, **kwargs: Any) -> ir.Value:
    """randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=long, ...) -> Tensor

    Also randint.default(SymInt high, SymInt[] size, ...).
    """
    if len(args) == 2:
        low, high, size = 0, args[0], args[1]
    else:
        low, high, size = args[0], args[1], args[2]
    return _randint(ctx, ctx.shape_tensor(list(size)), low, high)


@translates(aten.randint_like.default, aten.randint_like.low_dtype)
def aten_randint_like(ctx: Ctx, self: ir.Value, *args: Any, **kwargs: Any) -> ir.Value:
    """randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ...) -> Tensor (and randint_like(self, high))."""
    low, high = (0, args[0]) if len(args) == 1 else (args[0], args[1])
    return _randint(ctx, ctx.op.Shape(self), low, high)


@translates(aten.randperm.default)
def aten_randperm(ctx: Ctx, n: int | ir.Value, **kwargs: Any) -> ir.Value:
    """randperm(SymInt n, *, ScalarType? dtype=long, ...) -> Tensor

    The order that sorts n uniform draws is a uniformly random permutation (ties have
    probability ~0): TopK's indices over RandomUniformLike.
    """
    size = ctx.shape_tensor([n])
    _, indices = ctx.op.TopK(uniform(ctx, size), size, axis=0, largest=1, sorted=1, _outputs=2)
    return _cast_out_from(ctx, indices)


def _cast_out_from(ctx: Ctx, x: ir.Value) -> ir.Value:
    dtype = ctx.out_dtype()
    return ctx.op.Cast(x, to=dtype) if dtype != ir.DataType.INT64 else x


@translates(aten.bernoulli.default)
def aten_bernoulli(ctx: Ctx, self: ir.Value, *, generator: Any = None) -> ir.Value:
    """bernoulli(Tensor self, *, Generator? generator=None) -> Tensor: 1 where U[0,1) < p."""
    p = self if self.dtype == ir.DataType.FLOAT else ctx.op.Cast(self, to=ir.DataType.FLOAT)
    hit = ctx.op.Less(uniform(ctx, ctx.op.Shape(self)), p)
    return ctx.op.Cast(hit, to=ctx.out_dtype())


@translates(aten.bernoulli.p)
def aten_bernoulli_p(ctx: Ctx, self: ir.Value, p: float = 0.5, *, generator: Any = None) -> ir.Value:
    """bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor"""
    hit = ctx.op.Less(uniform(ctx, ctx.op.Shape(self)), ctx.const(float(p)))
    return ctx.op.Cast(hit, to=ctx.out_dtype())


@translates(aten.normal.Tensor_Tensor, aten.normal.Tensor_float, aten.normal.float_Tensor)
def aten_normal(ctx: Ctx, mean: Any, std: Any = 1.0, *, generator: Any = None) -> ir.Value:
    """normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor: mean + std · N(0, 1)."""
    shape = ctx.shape_tensor([d if isinstance(d, int) else -1 for d in ctx.val().shape])
    if any(not isinstance(d, int) for d in ctx.val().shape):
        ref = [v for v in (mean, std) if isinstance(v, ir.Value)]
        shape = ctx.op.Shape(ctx.op.Add(*ref) if len(ref) == 2 else ref[0])
    z = normal(ctx, shape)
    dtype = ctx.out_dtype()
    m = mean if isinstance(mean, ir.Value) else ctx.const(float(mean))
    s = std if isinstance(std, ir.Value) else ctx.const(float(std))
    m = ctx.op.Cast(m, to=ir.DataType.FLOAT) if m.dtype != ir.DataType.FLOAT else m
    s = ctx.op.Cast(s, to=ir.DataType.FLOAT) if s.dtype != ir.DataType.FLOAT else s
    out = ctx.op.Add(ctx.op.Mul(z, s), m)
    return out if dtype == ir.DataType.FLOAT else ctx.op.Cast(out, to=dtype)


@translates(aten.normal.float_float)
def aten_normal_float_float(ctx: Ctx, mean: float, std: float, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ...) -> Tensor"""
    return _cast_out(ctx, normal(ctx, ctx.shape_tensor(list(size)), mean, std))


@translates(aten.uniform.default)
def aten_uniform(ctx: Ctx, self: ir.Value, from_: float = 0.0, to: float = 1.0, *, generator: Any = None) -> ir.Value:
    """uniform(Tensor self, float from=0, float to=1, *, Generator? generator=None) -> Tensor"""
    return _cast_out(ctx, uniform(ctx, ctx.op.Shape(self), from_, to))


@translates(aten.native_dropout.default, since=18)
def aten_native_dropout_train(ctx: Ctx, input: ir.Value, p: float, train: bool | None) -> tuple[ir.Value, ir.Value]:
    """native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)

    Training-mode dropout: keep where U[0,1) ≥ p, scale kept values by 1/(1−p) (PyTorch docs,
    torch.nn.Dropout). At inference (train False or p = 0) the input passes through.
    """
    if not train or p == 0:
        return input, ctx.op.Expand(ctx.const(True), ctx.op.Shape(input))
    if p >= 1:
        return ctx.op.Mul(input, ctx.const(0, input.dtype)), ctx.op.Expand(ctx.const(False), ctx.op.Shape(input))
    keep = ctx.op.GreaterOrEqual(uniform(ctx, ctx.op.Shape(input)), ctx.const(float(p)))
    scaled = ctx.op.Mul(input, ctx.const(1.0 / (1.0 - p), input.dtype))
    return ctx.op.Where(keep, scaled, ctx.const(0, input.dtype)), keep


def _inverse_cdf(ctx: Ctx, self: ir.Value, fn: Any) -> ir.Value:
    u = uniform(ctx, ctx.op.Shape(self))
    out = fn(u)
    return out if self.dtype == ir.DataType.FLOAT else ctx.op.Cast(out, to=self.dtype)


@translates(aten.exponential.default)
def aten_exponential(ctx: Ctx, self: ir.Value, lambd: float = 1.0, *, generator: Any = None) -> ir.Value:
    """exponential(Tensor self, float lambd=1., *, Generator? generator=None) -> Tensor: −ln(1 − U)/λ."""
    return _inverse_cdf(ctx, self, lambda u: ctx.op.Div(
        ctx.op.Neg(ctx.op.Log(ctx.op.Sub(ctx.const(1.0), u))), ctx.const(float(lambd))))


@translates(aten.geometric.default)
def aten_geometric(ctx: Ctx, self: ir.Value, p: float, *, generator: Any = None) -> ir.Value:
    """geometric(Tensor self, float p, *, Generator? generator=None) -> Tensor: ⌈ln(1 − U)/ln(1 − p)⌉ (≥ 1)."""
    return _inverse_cdf(ctx, self, lambda u: ctx.op.Max(ctx.op.Ceil(ctx.op.Div(
        ctx.op.Log(ctx.op.Sub(ctx.const(1.0), u)), ctx.const(math.log1p(-p)))), ctx.const(1.0)))


@translates(aten.log_normal.default)
def aten_log_normal(ctx: Ctx, self: ir.Value, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> ir.Value:
    """log_normal(Tensor self, float mean=1., float std=2., *, Generator? generator=None) -> Tensor: exp(N(mean, std))."""
    out = ctx.op.Exp(normal(ctx, ctx.op.Shape(self), mean, std))
    return out if self.dtype == ir.DataType.FLOAT else ctx.op.Cast(out, to=self.dtype)


@translates(aten.cauchy.default)
def aten_cauchy(ctx: Ctx, self: ir.Value, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> ir.Value:
    """cauchy(Tensor self, float median=0., float sigma=1., *, Generator? generator=None) -> Tensor: median + σ·tan(π(U − ½))."""
    return _inverse_cdf(ctx, self, lambda u: ctx.op.Add(ctx.const(float(median)), ctx.op.Mul(
        ctx.const(float(sigma)), ctx.op.Tan(ctx.op.Mul(ctx.const(math.pi), ctx.op.Sub(u, ctx.const(0.5)))))))


@translates(aten.multinomial.default)
def aten_multinomial(ctx: Ctx, self: ir.Value, num_samples: int, replacement: bool = False, *, generator: Any = None) -> ir.Value:
    """multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor

    With replacement: ONNX Multinomial on log-probabilities. Without: the Gumbel-top-k trick
    (top-k of log p − log(−log U) draws k distinct categories with the sequential probabilities).
    """
    one_d = len(ctx.val().shape) == 1
    p = self if self.dtype == ir.DataType.FLOAT else ctx.op.Cast(self, to=ir.DataType.FLOAT)
    p = ctx.op.Unsqueeze(p, ctx.const([0])) if one_d else p
    logp = ctx.op.Log(p)
    if replacement:
        out = ctx.op.Multinomial(logp, sample_size=int(num_samples), dtype=ir.DataType.INT64)
    else:
        gumbel = ctx.op.Neg(ctx.op.Log(ctx.op.Neg(ctx.op.Log(uniform(ctx, ctx.op.Shape(p), 1e-20, 1.0)))))
        _, out = ctx.op.TopK(ctx.op.Add(logp, gumbel), ctx.const([int(num_samples)]), axis=-1, _outputs=2)
    return ctx.op.Squeeze(out, ctx.const([0])) if one_d else out


def _keep_mask(ctx: Ctx, input: ir.Value, p: float, feature: bool) -> ir.Value:
    """Bernoulli(1 − p) keep mask; per (N, C) channel for feature dropout (PyTorch docs, Dropout2d)."""
    shape = ctx.op.Shape(input)
    if feature:
        r = len(ctx.val().shape)
        shape = ctx.op.Concat(ctx.op.Shape(input, start=0, end=2), ctx.const([1] * (r - 2)), axis=0)
    return ctx.op.GreaterOrEqual(uniform(ctx, shape), ctx.const(float(p)))


@translates(aten.dropout.default, aten.feature_dropout.default)
def aten_dropout(ctx: Ctx, input: ir.Value, p: float, train: bool) -> ir.Value:
    """dropout(Tensor input, float p, bool train) -> Tensor

    At inference (train False or p = 0) the input passes through; in training mode each element
    (each channel for feature_dropout) is zeroed with probability p and the rest scaled by 1/(1−p).
    """
    if not train or p == 0:
        return ctx.op.Identity(input)
    if p >= 1:
        return ctx.op.Mul(input, ctx.const(0, input.dtype))
    feature = ctx.node is not None and ctx.node.target is aten.feature_dropout.default
    keep = ctx.op.Cast(_keep_mask(ctx, input, p, feature), to=input.dtype)
    return ctx.op.Mul(input, ctx.op.Mul(keep, ctx.const(1.0 / (1.0 - p), input.dtype)))


@translates(aten.alpha_dropout.default, aten.feature_alpha_dropout.default)
def aten_alpha_dropout(ctx: Ctx, input: ir.Value, p: float, train: bool) -> ir.Value:
    """alpha_dropout(Tensor input, float p, bool train) -> Tensor

    Training mode keeps SELU's mean and variance: x·(m·a) + a·α'·(m − 1 + p), m ~ Bernoulli(1 − p),
    a = ((α'²p + 1)(1 − p))^−½, α' = 1.7580993408473766 (aten Dropout.cpp).
    """
    if not train or p == 0:
        return ctx.op.Identity(input)
    if p >= 1:
        return ctx.op.Mul(input, ctx.const(0, input.dtype))
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    feature = ctx.node is not None and ctx.node.target is aten.feature_alpha_dropout.default
    m = ctx.op.Cast(_keep_mask(ctx, input, p, feature), to=input.dtype)
    b = ctx.op.Mul(ctx.op.Add(ctx.op.Sub(m, ctx.const(1.0, input.dtype)), ctx.const(p, input.dtype)),
                   ctx.const(alpha * a, input.dtype))
    return ctx.op.Add(ctx.op.Mul(input, ctx.op.Mul(m, ctx.const(a, input.dtype))), b)


@translates(aten.normal_functional.default)
def aten_normal_functional(ctx: Ctx, self: ir.Value, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> ir.Value:
    """normal_functional(Tensor self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor"""
    out = normal(ctx, ctx.op.Shape(self), mean, std)
    return out if self.dtype == ir.DataType.FLOAT else ctx.op.Cast(out, to=self.dtype)
