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
    """A symbolic ``steps`` goes through the capture's ``symbolic_linspace`` (aten.linspace takes an
    int), a static one through the ``aten.linspace`` translation (a constant): both as torch's CPU
    kernel. The capture's formula did not convert ``start``/``end`` to the output type first, so
    ``linspace(2.7, 9.3, 5, dtype=int64)`` gave [2, 4, 6, 7, 9] for eager's [2, 3, 5, 7, 9]."""

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n = x.shape[0]
        return (torch.linspace(-1.0, 3.5, n) + 0 * x[:, 0], torch.linspace(0, 10, n, dtype=torch.float64),
                torch.linspace(2.7, 9.3, n, dtype=torch.int64), torch.linspace(-2.5, 7.7, n, dtype=torch.int32),
                torch.linspace(2, 9, 5))

    # Up to 10 points: eager's vectorized loop for long outputs rounds differently (an integer point
    # that is exact in real arithmetic can truncate one lower, an ulp on floats).
    others = tuple((torch.randn(n, 2),) for n in (1, 2, 3, 5, 10))
    out = check_against_eager(fn, torch.randn(7, 2), dynamic_shapes=({0: "n"},), others=others,
                              tol_by_dtype={torch.float32: (1e-6, 1e-6), torch.float64: (1e-14, 1e-14)})  # ~1 ulp
    assert out.program.status.decomposed is False
    assert torch.equal(torch.as_tensor(out[0]), torch.linspace(-1.0, 3.5, 7))  # its scalar loop, bit for bit
