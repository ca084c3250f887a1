"""Integer, bool and half-precision cases onnxruntime used to reject (no kernel for the dtype) and
the integer ops that had no translation: each exported, run in onnxruntime and compared with eager
(values, shapes, dtypes), including the edge cases the encodings are about."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import check_against_eager

F = torch.nn.functional
INTS = [torch.int32, torch.int64]


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def _ints(dtype: torch.dtype, *shape: int, lo: int = -9, hi: int = 10) -> torch.Tensor:
    return torch.randint(lo, hi, shape, dtype=dtype)


# -- integer inputs ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INTS)
def test_integer_rounding_and_relu(dtype: torch.dtype) -> None:
    x = _ints(dtype, 3, 4)
    check_against_eager(lambda t: (torch.ceil(t), torch.floor(t), torch.round(t), F.relu(t)), x)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_addmm_and_linear(dtype: torch.dtype) -> None:
    a, b, c = _ints(dtype, 3, 4), _ints(dtype, 4, 5), _ints(dtype, 3, 5)
    check_against_eager(lambda s, m1, m2: torch.addmm(s, m1, m2, beta=2, alpha=3), c, a, b)
    check_against_eager(lambda s, m1, m2: torch.addmm(s, m1, m2, beta=0), c, a, b)
    check_against_eager(lambda x, w, bias: F.linear(x, w, bias), a, _ints(dtype, 5, 4), _ints(dtype, 5))


@pytest.mark.parametrize("kwargs", [{}, {"ceil_mode": True, "padding": 1}, {"divisor_override": 3},
                                    {"count_include_pad": False, "padding": 1}])
def test_integer_avg_pool_truncates(kwargs: dict) -> None:
    x = _ints(torch.int64, 2, 3, 7, 6)  # negative window sums: truncation toward zero
    check_against_eager(lambda t: F.avg_pool2d(t, 3, stride=2, **kwargs), x)


@pytest.mark.parametrize("dtype", INTS)
def test_gcd_lcm(dtype: torch.dtype) -> None:
    a = torch.tensor([0, 0, -4, 6, 12, -2, 1, 832040, 514229], dtype=dtype)  # Fibonacci: the longest Euclid
    b = torch.tensor([0, 5, 6, -9, 0, -2, 7, 1346269, 317811], dtype=dtype)
    check_against_eager(lambda x, y: (torch.gcd(x, y), torch.lcm(x, y)), a, b)
    check_against_eager(lambda x, y: torch.gcd(x, y), _ints(dtype, 4, 1, lo=-50, hi=50), _ints(dtype, 3, lo=-50, hi=50))


@pytest.mark.parametrize("dtype", INTS)
def test_shifts_edge_amounts(dtype: torch.dtype) -> None:
    bits = torch.iinfo(dtype).bits
    a = torch.tensor([5, -5, 7, -8, 1, -1, 0, torch.iinfo(dtype).min], dtype=dtype).reshape(-1, 1)
    n = torch.tensor([-1, 0, 1, 3, bits - 2, bits - 1, bits, bits + 5], dtype=dtype)
    check_against_eager(lambda x, s: (torch.bitwise_left_shift(x, s), torch.bitwise_right_shift(x, s)), a, n)
    check_against_eager(lambda x: (x << 3, x >> 2), a)


@pytest.mark.parametrize("dtype", INTS)
def test_bincount(dtype: torch.dtype) -> None:
    x = torch.tensor([1, 1, 3, 0, 7], dtype=dtype)
    check_against_eager(lambda t: torch.bincount(t), x)
    check_against_eager(lambda t: torch.bincount(t, minlength=12), x)
    check_against_eager(lambda t, w: torch.bincount(t, weights=w), x, torch.rand(5))
    check_against_eager(lambda t, w: torch.bincount(t, weights=w), x, torch.rand(5, dtype=torch.float64))
    check_against_eager(lambda t: torch.bincount(t, minlength=4), torch.zeros(0, dtype=dtype))


@pytest.mark.parametrize("offset", [-2, 0, 3])
def test_tril_triu_indices(offset: int) -> None:
    x = torch.zeros(1)
    check_against_eager(lambda t: (torch.tril_indices(4, 6, offset), torch.triu_indices(5, 3, offset, dtype=torch.int32)), x)


# -- bool inputs ------------------------------------------------------------------------------

def test_bool_ordering_and_extremes() -> None:
    a, b = torch.rand(4, 5) > 0.5, torch.rand(4, 5) > 0.5
    check_against_eager(lambda x, y: (x >= y, x > y, x <= y, x < y, torch.fmax(x, y), torch.fmin(x, y),
                         torch.clamp_min(x, y), torch.clamp_max(x, y)), a, b)
    check_against_eager(lambda x: (*torch.max(x, 1), *torch.min(x, 0)), a)
    check_against_eager(lambda x, y: torch.atan2(x, y), a, b)  # atan2(0, 0) = 0


def test_bool_scatters() -> None:
    self_ = torch.rand(4, 5) > 0.5
    src = torch.rand(4, 5) > 0.5
    index = torch.tensor([[0, 1, 2, 3, 0], [0, 0, 0, 0, 0]])  # repeated targets: bool add is Or
    check_against_eager(lambda s, i, x: torch.scatter_add(s, 0, i, x[:2]), self_, index, src)
    check_against_eager(lambda s, x: torch.index_add(s, 0, torch.tensor([1, 1, 0, 3]), x), self_, src)
    check_against_eager(lambda s, m, x: torch.masked_scatter(s, m, x), self_, torch.rand(4, 5) > 0.3, src)


# -- half precision ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_batch_norm_running_stats_and_renorm(dtype: torch.dtype) -> None:
    x = torch.randn(3, 2, 4, dtype=dtype)
    w, b, rm, rv = torch.randn(2, dtype=dtype), torch.randn(2, dtype=dtype), torch.randn(2, dtype=dtype), torch.rand(2, dtype=dtype) + 1
    check_against_eager(lambda *t: torch.ops.aten._native_batch_norm_legit.default(*t, False, 0.1, 1e-5), x, w, b, rm, rv,
           rtol=1.6e-2, atol=1e-2)
    check_against_eager(lambda t: torch.renorm(t, 2, 0, 1.0), torch.randn(4, 5, dtype=dtype), rtol=1.6e-2, atol=1e-2)


def test_addmm_with_an_empty_inner_dimension_scales_self_by_beta() -> None:
    class AddMM(torch.nn.Module):
        def forward(self, c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.addmm(c, a, b, beta=0.2, alpha=0.6)

    c, a, b = torch.randn(5, 10), torch.randn(5, 0), torch.randn(0, 10)
    (out,) = onnxport.export(AddMM(), (c, a, b))(c, a, b)
    torch.testing.assert_close(out, 0.2 * c)


def test_gather_with_an_empty_uint8_index_of_another_rank() -> None:
    class Gather(torch.nn.Module):
        def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
            return torch.gather(x, 0, index)

    x, index = torch.randn(5), torch.zeros(2, 0, dtype=torch.uint8)
    (out,) = onnxport.export(Gather(), (x, index))(x, index)
    assert out.shape == (2, 0) and out.dtype == torch.float32
