"""Integer elementwise ops (gcd, lcm, bit shifts) against eager, at the edge amounts and for int32/int64."""

from __future__ import annotations

import pytest
import torch

from _eager import INTS, check_against_eager, ints


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("dtype", INTS)
def test_gcd_lcm(dtype: torch.dtype) -> None:
    a = torch.tensor([0, 0, -4, 6, 12, -2, 1, 832040, 514229], dtype=dtype)  # Fibonacci: the longest Euclid
    b = torch.tensor([0, 5, 6, -9, 0, -2, 7, 1346269, 317811], dtype=dtype)
    check_against_eager(lambda x, y: (torch.gcd(x, y), torch.lcm(x, y)), a, b)
    check_against_eager(lambda x, y: torch.gcd(x, y), ints(dtype, 4, 1, lo=-50, hi=50), ints(dtype, 3, lo=-50, hi=50))


@pytest.mark.parametrize("dtype", INTS)
def test_shifts_edge_amounts(dtype: torch.dtype) -> None:
    bits = torch.iinfo(dtype).bits
    a = torch.tensor([5, -5, 7, -8, 1, -1, 0, torch.iinfo(dtype).min], dtype=dtype).reshape(-1, 1)
    n = torch.tensor([-1, 0, 1, 3, bits - 2, bits - 1, bits, bits + 5], dtype=dtype)
    check_against_eager(lambda x, s: (torch.bitwise_left_shift(x, s), torch.bitwise_right_shift(x, s)), a, n)
    check_against_eager(lambda x: (x << 3, x >> 2), a)
