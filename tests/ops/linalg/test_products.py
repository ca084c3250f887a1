"""Matrix products (addmm, linear) on integers and empty inner dims, and the bilinear forms (bilinear, _trilinear) against eager."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import INTS, check_against_eager, ints

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_addmm_and_linear(dtype: torch.dtype) -> None:
    a, b, c = ints(dtype, 3, 4), ints(dtype, 4, 5), ints(dtype, 3, 5)
    check_against_eager(lambda s, m1, m2: torch.addmm(s, m1, m2, beta=2, alpha=3), c, a, b)
    check_against_eager(lambda s, m1, m2: torch.addmm(s, m1, m2, beta=0), c, a, b)
    check_against_eager(lambda x, w, bias: F.linear(x, w, bias), a, ints(dtype, 5, 4), ints(dtype, 5))


def test_addmm_with_an_empty_inner_dimension_scales_self_by_beta() -> None:
    class AddMM(torch.nn.Module):
        def forward(self, c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.addmm(c, a, b, beta=0.2, alpha=0.6)

    c, a, b = torch.randn(5, 10), torch.randn(5, 0), torch.randn(0, 10)
    (out,) = onnxport.export(AddMM(), (c, a, b))(c, a, b)
    torch.testing.assert_close(out, 0.2 * c)


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
