"""Shape ops the acceptance models reach that are not covered elsewhere (diff) against eager."""

from __future__ import annotations

import pytest
import torch

from _eager import check_against_eager

CASES = {
    "diff": (lambda x: torch.diff(x, dim=1), torch.randn(3, 5)),
    "diff_n2_prepend": (lambda x: torch.diff(x, n=2, dim=0, prepend=x[:1]), torch.randn(4, 3)),
    "diff_bool": (lambda x: torch.diff(x, dim=-1), torch.tensor([[True, False, False, True]])),
    # torch.cat skips a 1-D empty tensor, first or not (transformers' DynamicLayer starts from
    # torch.tensor([]): Flaubert/XLM concatenate their first keys to it)
    "cat_empty_first": (lambda x: torch.cat([torch.tensor([]), x.transpose(1, 2)], dim=-2), torch.randn(2, 5, 3, 4)),
    "cat_empty_middle": (lambda x: torch.cat([x, torch.tensor([]), x * 2], dim=1), torch.randn(2, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_eager(name: str) -> None:
    fn, x = CASES[name]
    check_against_eager(fn, x, rtol=None, atol=None, equal_nan=False)
