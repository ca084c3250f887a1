"""Named regression tests for semantics that exporters get wrong (issue 3), each against eager."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import onnxport
from _eager import Fn, check_against_eager


def _check(fn: Any, args: tuple, *, dynamic_shapes: Any = None, others: tuple = (), opset: int | None = None) -> None:
    """Export, then compare with eager (torch's default tolerances, NaN unequal) on the example and
    on each input tuple of ``others``."""
    check_against_eager(Fn(fn), *args, dynamic_shapes=dynamic_shapes, others=others, opset=opset,
                        rtol=None, atol=None, equal_nan=False)


def test_masked_scatter_takes_source_in_row_major_mask_order() -> None:
    mask = torch.tensor([[False, True, True], [True, False, True]])
    x = torch.zeros(2, 3)
    source = torch.arange(1.0, 7.0).reshape(2, 3)
    # Row-major order: (0,1)←1, (0,2)←2, (1,0)←3, (1,2)←4 (not a column-major or transposed order).
    _check(lambda x, m, s: x.masked_scatter(m, s), (x, mask, source))
    _check(lambda x, m, s: x.masked_scatter(m, s), (torch.zeros(2, 3), mask[:, :1], source))  # broadcast mask


class LastDimPut(torch.nn.Module):
    def forward(self, x: torch.Tensor, idx: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[:, idx] = v
        return x


def test_index_put_on_last_dim_with_dynamic_shapes() -> None:
    x, idx, v = torch.zeros(3, 5), torch.tensor([4, 0]), torch.tensor([1.0, 2.0])
    batch, width = torch.export.Dim("batch", min=2), torch.export.Dim("width", min=5)
    model = LastDimPut()
    program = onnxport.export(model, (x, idx, v), dynamic_shapes=({0: batch, 1: width}, None, None))
    for inputs in ((x, idx, v), (torch.zeros(6, 9), torch.tensor([8, 1]), torch.tensor([3.0, 4.0]))):
        torch.testing.assert_close(program(*inputs)[0], model(*inputs))


def test_index_put_accumulate_with_duplicates() -> None:
    def fn(x: torch.Tensor, i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.index_put(x, (i,), v, accumulate=True)

    _check(fn, (torch.zeros(4), torch.tensor([1, 1, 3]), torch.tensor([1.0, 2.0, 5.0])))


def test_index_put_boolean_mask() -> None:
    def fn(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[m] = -1.0
        return x

    x = torch.randn(3, 4)
    _check(fn, (x, x > 0))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_floor_division_of_negative_ints(dtype: torch.dtype) -> None:
    a = torch.tensor([-7, -6, 7, 0, -1, 5], dtype=dtype)
    b = torch.tensor([2, 3, -2, 5, 4, -5], dtype=dtype)
    _check(lambda a, b: (a // b, torch.div(a, b, rounding_mode="floor"), torch.remainder(a, b)), (a, b))
    _check(lambda a: a // 4, (a,))


def test_repeat_interleave_order() -> None:
    x = torch.tensor([[1, 2], [3, 4]])
    _check(lambda x: x.repeat_interleave(2, dim=0), (x,))
    _check(lambda x: x.repeat_interleave(3), (x,))
    _check(lambda x: torch.repeat_interleave(x, torch.tensor([1, 2]), dim=1), (x,))


@pytest.mark.parametrize("opset", [18, 23])
def test_fully_masked_attention_rows_are_zero(opset: int) -> None:
    q = k = v = torch.randn(1, 2, 3, 4)
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)

    out = onnxport.export(Fn(fn), (q, k, v, mask), opset_version=opset)(q, k, v, mask)[0]
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out[:, :, 1], torch.zeros(1, 2, 4))


def test_sort_is_stable_on_ties() -> None:
    x = torch.tensor([3, 1, 3, 1, 2, 3])
    _check(lambda x: torch.sort(x, stable=True), (x,))
    _check(lambda x: torch.sort(x, descending=True, stable=True), (x,))


def test_scatter_reduce_without_self() -> None:
    x = torch.tensor([10.0, 20.0, 30.0])
    index = torch.tensor([0, 0, 2, 2])
    src = torch.tensor([1.0, 5.0, 2.0, 4.0])
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        _check(lambda x, i, s, r=reduce: x.scatter_reduce(0, i, s, r, include_self=False), (x, index, src))
