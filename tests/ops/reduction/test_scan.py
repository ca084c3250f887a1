"""Cumulative ops the acceptance models reach that are not covered elsewhere (cumsum) against eager."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager

CASES = {
    "cumsum": (lambda x: torch.cumsum(x, dim=1), torch.randn(2, 6)),
    "cumsum_bool_to_int64": (lambda x: torch.cumsum(x, dim=0), torch.tensor([True, False, True])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_eager(name: str) -> None:
    fn, x = CASES[name]
    check_against_eager(fn, x, rtol=None, atol=None, equal_nan=False)
