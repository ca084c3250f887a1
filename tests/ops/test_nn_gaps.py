"""Ops whose OpInfo samples used to fail: each case exported, run in onnxruntime, compared with eager
(values, shapes, dtypes), including the edge cases the fixes are about."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- resampling -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kwargs", [
    {"size": (5, 7)},  # downscale: Resize antialias=1
    {"size": (40, 9), "align_corners": True},  # torch's own scale: weight matrices
    {"scale_factor": (0.3, 2.5)},  # scale factors given: weight matrices
])
def test_antialiased_interpolate(mode: str, kwargs: dict) -> None:
    x = torch.randn(2, 3, 17, 23)
    check_against_eager(lambda t: F.interpolate(t, mode=mode, antialias=True, **kwargs), x)


@pytest.mark.parametrize("shape", [(2, 8, 4, 6), (8, 4, 2), (0, 4, 2, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_pixel_unshuffle_and_shuffle(shape: tuple, dtype: torch.dtype) -> None:
    x = torch.randn(shape).to(dtype)
    check_against_eager(lambda t: F.pixel_unshuffle(t, 2), x)
    check_against_eager(lambda t: F.pixel_shuffle(t, 2), x)


# -- bilinear ---------------------------------------------------------------------------------

@pytest.mark.parametrize("lead", [(), (0,), (4,), (2, 3)])
def test_bilinear(lead: tuple) -> None:
    x1, x2 = torch.randn(*lead, 3), torch.randn(*lead, 4)
    w, b = torch.randn(5, 3, 4), torch.randn(5)
    check_against_eager(lambda a, c, d, e: F.bilinear(a, c, d, e), x1, x2, w, b)
    check_against_eager(lambda a, c, d: F.bilinear(a, c, d), x1, x2, w)


def test_bilinear_bfloat16() -> None:
    args = (torch.randn(4, 3), torch.randn(4, 4), torch.randn(5, 3, 4), torch.randn(5))
    check_against_eager(F.bilinear, *(a.bfloat16() for a in args), rtol=1.6e-2, atol=1e-2)


def test_trilinear() -> None:
    check_against_eager(lambda a, b, c: torch._trilinear(a, b, c, [1, 3], [0], [1, 2], [2, 3]),
           torch.randn(4, 3), torch.randn(5, 3, 6), torch.randn(4, 6))


# -- indexing / scatter -----------------------------------------------------------------------

def test_take_negative_indices() -> None:
    check_against_eager(torch.take, torch.randn(3, 4), torch.tensor([[0, -1], [5, -12]]))


@pytest.mark.parametrize("size", [0, 2, 9])
def test_nonzero_static_pads_and_truncates(size: int) -> None:
    x = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    check_against_eager(lambda t: torch.nonzero_static(t, size=size, fill_value=-7), x)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_put(accumulate: bool, dtype: torch.dtype) -> None:
    x = torch.zeros(3, 4).to(dtype)
    index = torch.tensor([0, -1, 5, 5]) if accumulate else torch.tensor([0, -1, 5])
    source = torch.ones(index.shape).to(dtype)
    check_against_eager(lambda t, i, s: torch.put(t, i, s, accumulate=accumulate), x, index, source)


# -- pooling ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("shape", "out"), [((2, 3, 7), (3,)), ((2, 3, 5, 7), (2, 3)), ((3, 4, 5, 6), (4, 4)),
                                            ((1, 2, 5, 4, 6), (3, 3, 4))])
def test_adaptive_max_pool_non_uniform_bins_with_indices(shape: tuple, out: tuple) -> None:
    fn = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[len(out)]
    x = torch.randn(shape)
    x[..., 0] = x[..., 1]  # ties: the first maximum's index, as torch
    check_against_eager(lambda t: fn(t, out, return_indices=True), x)


def test_adaptive_max_pool_bfloat16() -> None:
    check_against_eager(lambda t: F.adaptive_max_pool2d(t, (2, 3)), torch.randn(2, 3, 5, 7).bfloat16(), rtol=0, atol=0)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_avg_pool_divisor_override_with_ceil_mode(n: int) -> None:
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    x = torch.randn(2, 3, *[6] * n)
    if n == 1:
        check_against_eager(lambda t: fn(t, 3, 2, 1, ceil_mode=True), x)  # avg_pool1d has no divisor_override
    else:
        check_against_eager(lambda t: fn(t, 3, 2, 1, ceil_mode=True, divisor_override=2), x)


# -- conv, pad, norm --------------------------------------------------------------------------

def test_conv_transpose_output_padding_at_least_stride() -> None:
    x, w, b = torch.randn(2, 4, 5, 6), torch.randn(4, 3, 3, 2), torch.randn(3)
    check_against_eager(lambda a, c, d: F.conv_transpose2d(a, c, d, stride=(2, 1), padding=(1, 0), output_padding=(2, 1),
                                              dilation=(3, 2)), x, w, b)
    x3, w3 = torch.randn(1, 2, 3, 4, 3), torch.randn(2, 2, 2, 2, 2)
    check_against_eager(lambda a, c: F.conv_transpose3d(a, c, stride=2, padding=1, output_padding=3, dilation=4), x3, w3)


@pytest.mark.parametrize("pad", [(-4, 5, 0, 0), (5, -4, -4, 3), (-2, -1, 4, 6)])
def test_replicate_pad_negative(pad: tuple) -> None:
    check_against_eager(lambda t: F.pad(t, pad, mode="replicate"), torch.randn(2, 3, 5, 4))


@pytest.mark.parametrize("shape", [(5, 3, 4), (6, 2), (4, 3, 2, 2)])
def test_batch_norm_training_uses_batch_statistics(shape: tuple) -> None:
    c = shape[1]
    args = (torch.randn(shape), torch.randn(c), torch.rand(c) + 0.5, torch.randn(c), torch.randn(c))
    check_against_eager(lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=True, eps=0.1), *args)


def test_batch_norm_one_dimensional_and_bfloat16() -> None:
    check_against_eager(lambda x, m, v: F.batch_norm(x, m, v, training=False), torch.zeros(0), torch.zeros(0), torch.ones(0))
    x = torch.randn(4, 3, 5).bfloat16()
    check_against_eager(lambda t: F.batch_norm(t, None, None, training=True), x, rtol=1.6e-2, atol=1e-2)


# -- reductions -------------------------------------------------------------------------------

@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 0.5])
def test_segment_reduce_lengths_axis1(reduce: str, initial: float | None) -> None:
    data, lengths = torch.randn(2, 6, 3), torch.tensor([[2, 0, 4], [1, 3, 2]])
    check_against_eager(lambda d, n: torch.segment_reduce(d, reduce, lengths=n, axis=1, initial=initial), data, lengths)


def test_segment_reduce_offsets() -> None:
    check_against_eager(lambda d, o: torch.segment_reduce(d, "mean", offsets=o), torch.randn(5, 2), torch.tensor([0, 2, 2, 5]))


@pytest.mark.parametrize("shape", [(0,), (0, 5), (1,)])
def test_var_mean_std_mean_nan_like_torch(shape: tuple) -> None:
    x = torch.randn(shape)
    check_against_eager(lambda t: torch.var_mean(t, unbiased=True), x)
    check_against_eager(lambda t: torch.std_mean(t, unbiased=True), x)


# -- activations, losses, attention -----------------------------------------------------------

def test_rrelu_eval_is_leaky_relu_with_mean_slope() -> None:
    check_against_eager(lambda t: F.rrelu(t, 0.1, 0.3, training=False), torch.randn(4, 5))


def test_rrelu_training_draws_slopes_in_range() -> None:
    x = -torch.rand(2000) - 0.5
    model = Fn(lambda t: F.rrelu(t, 0.1, 0.3, training=True))
    out = onnxport.export(model, (x,), opset_version=21)(x)[0]
    slopes = out / x
    assert out.shape == x.shape and out.dtype == x.dtype
    assert float(slopes.min()) >= 0.1 - 1e-6 and float(slopes.max()) <= 0.3 + 1e-6
    assert abs(float(slopes.mean()) - 0.2) < 0.01


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_linear_cross_entropy_chunked(reduction: str, label_smoothing: float) -> None:
    if not hasattr(F, "linear_cross_entropy"):
        pytest.skip("torch without linear_cross_entropy")
    x, w, b = torch.randn(6, 3), torch.randn(5, 3), torch.randn(5)
    target, weight = torch.tensor([0, 4, -100, 2, 2, 1]), torch.rand(5) + 0.5
    if reduction == "none" and label_smoothing:
        pytest.skip("the chunked reduction='none' op has no label smoothing")

    from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions

    options = LinearCrossEntropyOptions(batch_chunk_size=2)

    def fn(a: torch.Tensor, c: torch.Tensor, d: torch.Tensor, t: torch.Tensor, cw: torch.Tensor) -> torch.Tensor:
        return F.linear_cross_entropy(a, c, t, linear_bias=d, weight=cw, reduction=reduction, ignore_index=-100,
                                      label_smoothing=label_smoothing, options=options)
    check_against_eager(fn, x, w, b, target, weight)


def test_sdpa_query_broadcast_against_batched_key() -> None:
    q, k, v = torch.randn(4, 3, 8), torch.randn(4, 4, 6, 8), torch.randn(4, 4, 6, 8)
    check_against_eager(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), q, k, v)


def test_sdpa_bfloat16() -> None:
    q, k, v = (torch.randn(2, 2, 5, 8).bfloat16() for _ in range(3))
    check_against_eager(F.scaled_dot_product_attention, q, k, v, rtol=1.6e-2, atol=1e-2)


# -- views ------------------------------------------------------------------------------------

def test_as_strided_on_a_partial_view_uses_the_input_storage_offset() -> None:
    base = torch.randn(20)
    x = base[5:15]
    check_against_eager(lambda t: torch.as_strided(t, (2, 2), (1, 2)), x)
    check_against_eager(lambda t: torch.as_strided(t, (2, 2), (1, 2), 10), x)
    check_against_eager(lambda t: torch.as_strided(t, (3, 2), (2, 1), 1), torch.randn(4, 5).t())


def test_as_strided_outside_the_input_is_unsupported() -> None:
    x = torch.randn(20)[5:15]
    with pytest.raises(onnxport.UnsupportedOpError, match="outside the input"):
        onnxport.export(Fn(lambda t: torch.as_strided(t, (2, 2), (1, 2), 0)), (x,))


# -- dtypes without onnxruntime kernels (computed in float, cast back) --------------------------

@pytest.mark.parametrize("dtype", [torch.int64, torch.bfloat16])
def test_convolutions_of_integers_and_bfloat16(dtype: torch.dtype) -> None:
    x, w = torch.randint(-3, 4, (1, 2, 5, 5)).to(dtype), torch.randint(-3, 4, (2, 3, 3, 3)).to(dtype)
    check_against_eager(lambda a, c: F.conv_transpose2d(a, c, stride=2), x, w, rtol=0, atol=0)
    check_against_eager(lambda a, c: F.conv2d(a, c.transpose(0, 1)), x, w, rtol=0, atol=0)


def test_bfloat16_expand_repeat_masked_select_var() -> None:
    x = torch.randn(3, 1).bfloat16()
    check_against_eager(lambda t: t.expand(3, 4), x, rtol=0, atol=0)
    check_against_eager(lambda t: t.repeat(2, 3), x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.zeros_like(t) + t, x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.masked_select(t, t > 0), x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.var_mean(t, 0), torch.randn(5, 3).bfloat16(), rtol=1.6e-2, atol=1e-2)
