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


def test_baddbmm_onto_zeros_is_the_scaled_product() -> None:
    """``torch.baddbmm(torch.zeros(...), q, k, alpha=a)`` (GPT-NeoX-Japanese's attention scores):
    the zeros add nothing, so the graph is ``MatMul`` times ``alpha``, no ``Add`` run at every
    step; another input is still added."""

    class Scores(torch.nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            zeros = torch.zeros(q.shape[0], q.shape[1], k.shape[2], dtype=q.dtype)
            return torch.baddbmm(zeros, q, k, alpha=0.25), torch.baddbmm(bias, q, k, alpha=0.25)

    q, k, bias = torch.randn(6, 3, 8), torch.randn(6, 8, 5), torch.randn(6, 3, 5)
    program = onnxport.export(Scores(), (q, k, bias), dynamic_shapes=({0: "b", 1: "s"}, {0: "b", 2: "t"}, {0: "b", 1: "s", 2: "t"}))
    assert [n.op_type for n in program.model.graph].count("Add") == 1
    q, k, bias = torch.randn(4, 2, 8), torch.randn(4, 8, 7), torch.randn(4, 2, 7)
    for got, want in zip(program(q, k, bias), Scores()(q, k, bias), strict=True):
        assert got.shape == want.shape == (4, 2, 7)
        torch.testing.assert_close(got, want)


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
