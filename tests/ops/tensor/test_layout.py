"""Layout ops against eager: as_strided on views and out of bounds, bfloat16 expand/repeat/masked_select/var."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


# -- views ------------------------------------------------------------------------------------

def test_as_strided_on_a_partial_view_uses_the_input_storage_offset() -> None:
    base = torch.randn(20)
    x = base[5:15]
    check_against_eager(lambda t: torch.as_strided(t, (2, 2), (1, 2)), x)
    check_against_eager(lambda t: torch.as_strided(t, (2, 2), (1, 2), 10), x)
    check_against_eager(lambda t: torch.as_strided(t, (3, 2), (2, 1), 1), torch.randn(4, 5).t())


def test_as_strided_outside_the_input_is_unsupported() -> None:
    x = torch.randn(20)[5:15]
    with pytest.raises(onnxport.UnsupportedOpError, match="outside the input"):
        onnxport.export(Fn(lambda t: torch.as_strided(t, (2, 2), (1, 2), 0)), (x,))


def test_bfloat16_expand_repeat_masked_select_var() -> None:
    x = torch.randn(3, 1).bfloat16()
    check_against_eager(lambda t: t.expand(3, 4), x, rtol=0, atol=0)
    check_against_eager(lambda t: t.repeat(2, 3), x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.zeros_like(t) + t, x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.masked_select(t, t > 0), x, rtol=0, atol=0)
    check_against_eager(lambda t: torch.var_mean(t, 0), torch.randn(5, 3).bfloat16(), rtol=1.6e-2, atol=1e-2)
