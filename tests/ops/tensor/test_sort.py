"""Sorting and searching against eager: searchsorted with an empty sorter and a scalar."""

from __future__ import annotations

from functools import partial

import torch

from _eager import check_against_eager

# torch's default tolerances unless a test gives its own
_check = partial(check_against_eager, rtol=None, atol=None)


# -- searchsorted ---------------------------------------------------------------------------------

def test_searchsorted_empty_sorter_and_scalar() -> None:
    _check(torch.searchsorted, torch.zeros(0), torch.zeros(0))
    _check(torch.searchsorted, torch.zeros(0), torch.tensor([1.0, 2.0]))
    seq, sorter = torch.tensor([3.0, 1.0, 2.0, 5.0]), torch.tensor([1, 2, 0, 3])
    _check(lambda s, v, o: torch.searchsorted(s, v, sorter=o, side="right"), seq, torch.tensor([2.0, 0.0, 9.0]), sorter)
    _check(lambda s: torch.searchsorted(s, 2.5), torch.tensor([1.0, 2.0, 3.0]))
