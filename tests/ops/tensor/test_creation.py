"""Tensor creation against eager: tril_indices / triu_indices."""

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
