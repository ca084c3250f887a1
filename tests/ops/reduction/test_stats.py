"""Order and moment statistics against eager: median, nanmedian, mode, var_mean/std_mean of empty inputs."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from _eager import check_against_eager

nan, inf = float("nan"), float("inf")

# torch's default tolerances unless a test gives its own
_check = partial(check_against_eager, rtol=None, atol=None)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- median, nanmedian, mode ----------------------------------------------------------------------

def test_median_lower_of_two_and_nan() -> None:
    x = torch.tensor([[4.0, 1.0, 3.0, 2.0], [1.0, nan, 5.0, nan], [7.0, 7.0, -1.0, 0.0]])
    out = _check(lambda x: torch.median(x, 1), x, skip=(1,))
    assert out[0].tolist()[0] == 2.0 and out[1][1] == 1  # lower median; index of the first NaN
    _check(lambda x: torch.median(x, 0, keepdim=True), x, skip=(1,))
    _check(torch.median, x)  # any NaN → NaN
    _check(torch.median, torch.tensor([5.0, 2.0, 9.0, 1.0]))
    _check(torch.median, torch.tensor([[5, 2], [9, 1]], dtype=torch.int32))


def test_nanmedian_ignores_nan() -> None:
    x = torch.tensor([[4.0, nan, 3.0, 2.0], [nan, nan, nan, nan], [inf, nan, 1.0, inf]])
    out = _check(lambda x: torch.nanmedian(x, 1), x, skip=(1,))
    assert out[0][0] == 3.0 and torch.isnan(out[0][1]) and out[0][2] == inf
    _check(torch.nanmedian, x)
    _check(torch.nanmedian, torch.tensor([1.0, nan, 3.0, 2.0], dtype=torch.float16))


def test_mode_ties_smallest_value_last_index() -> None:
    # Rows with some NaN are left out: torch's CPU kernel std::sorts with `<`, which leaves NaN's place
    # (and so its mode) undefined; an all-NaN row gives NaN in both.
    x = torch.tensor([[3.0, 1.0, 3.0, 1.0, 2.0], [4.0, 2.0, 4.0, 5.0, 9.0], [nan, nan, nan, nan, nan]])
    values, indices = _check(lambda x: torch.mode(x, 1), x, skip=(1,))
    assert values[0] == 1.0 and indices[0] == 3  # tie 3/1 → 1, at its last index
    assert values[1] == 4.0 and indices[1] == 2
    _check(lambda x: torch.mode(x, 0, keepdim=True), torch.tensor([[1, 2], [1, 3], [2, 3]]))
    _check(lambda x: torch.mode(x), torch.tensor([True, False, True, False]))


@pytest.mark.parametrize("shape", [(0,), (0, 5), (1,)])
def test_var_mean_std_mean_nan_like_torch(shape: tuple) -> None:
    x = torch.randn(shape)
    check_against_eager(lambda t: torch.var_mean(t, unbiased=True), x)
    check_against_eager(lambda t: torch.std_mean(t, unbiased=True), x)
