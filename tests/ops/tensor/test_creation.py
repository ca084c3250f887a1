"""Tensor creation against eager: tril_indices / triu_indices, linspace with a symbolic number of steps."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("offset", [-2, 0, 3])
def test_tril_triu_indices(offset: int) -> None:
    x = torch.zeros(1)
    check_against_eager(lambda t: (torch.tril_indices(4, 6, offset), torch.triu_indices(5, 3, offset, dtype=torch.int32)), x)


def test_linspace_with_a_symbolic_number_of_steps() -> None:
    """aten.linspace had no translation: a diffusers model (the LTX-2 diffusion decoder's rotary
    grid, ``torch.linspace(0, 1, height)``) paid the run_decompositions re-trace for it."""

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n = x.shape[0]
        return (torch.linspace(-1.0, 3.5, n) + 0 * x[:, 0], torch.linspace(0, 10, n, dtype=torch.float64),
                torch.linspace(0, 100, n, dtype=torch.int64), torch.linspace(2, 9, 5))

    others = tuple((torch.randn(n, 2),) for n in (1, 2, 3, 10, 64))
    out = check_against_eager(fn, torch.randn(7, 2), dynamic_shapes=({0: "n"},), others=others,
                              tol_by_dtype={torch.float32: (1e-6, 1e-6), torch.float64: (1e-14, 1e-14)})  # ~1 ulp
    assert out.program.status.decomposed is False
    assert torch.equal(torch.as_tensor(out[0]), torch.linspace(-1.0, 3.5, 7))  # its scalar loop, bit for bit
