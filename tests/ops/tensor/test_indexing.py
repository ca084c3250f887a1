"""Indexing against eager: gather with an empty index, take with negative indices, nonzero_static."""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import check_against_eager


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def test_gather_with_an_empty_uint8_index_of_another_rank() -> None:
    class Gather(torch.nn.Module):
        def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
            return torch.gather(x, 0, index)

    x, index = torch.randn(5), torch.zeros(2, 0, dtype=torch.uint8)
    (out,) = onnxport.export(Gather(), (x, index))(x, index)
    assert out.shape == (2, 0) and out.dtype == torch.float32


# -- indexing / scatter -----------------------------------------------------------------------

def test_take_negative_indices() -> None:
    check_against_eager(torch.take, torch.randn(3, 4), torch.tensor([[0, -1], [5, -12]]))


@pytest.mark.parametrize("size", [0, 2, 9])
def test_nonzero_static_pads_and_truncates(size: int) -> None:
    x = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    check_against_eager(lambda t: torch.nonzero_static(t, size=size, fill_value=-7), x)


class RepeatInterleave(torch.nn.Module):
    """repeat_interleave.self_int with a constant, a SymInt (the batch size) and no dim."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x.repeat_interleave(3, dim=1), x.repeat_interleave(x.shape[0], dim=-1), x.repeat_interleave(2)


def test_repeat_interleave_self_int_with_dynamic_dims_and_a_symbolic_count() -> None:
    model, x = RepeatInterleave(), torch.randn(2, 5, 3)
    program = onnxport.export(model, (x,), dynamic_shapes=({0: "batch", 1: "length"},))
    assert program.status.decomposed is False  # translated whole: no run_decompositions
    for y in (x, torch.randn(3, 4, 3)):
        for actual, expected in zip(program(y), model(y)):
            assert actual.shape == expected.shape and actual.dtype == expected.dtype
            assert torch.equal(torch.as_tensor(actual), expected)


class _Masks(torch.nn.Module):
    def forward(self, x: torch.Tensor, boxes: torch.Tensor, scores: torch.Tensor) -> tuple[torch.Tensor, ...]:
        keep = scores > 0.5
        return (x[x > 0], boxes[keep], x[:, x[0] > 0], boxes[keep, 1:3], x[x.sum(1) > 0, :2],
                boxes[0][scores[0] > 0.5])


def test_boolean_mask_indexing_is_its_nonzero_coordinates() -> None:
    # x[mask] = x[mask.nonzero()] (NumPy): full masks, leading-dim masks, a mask after a slice,
    # a mask with a slice after it; lengths known only at run time, all-false masks give empty rows
    g = torch.Generator().manual_seed(0)
    args = (torch.randn(4, 9, generator=g), torch.randn(2, 7, 4, generator=g), torch.rand(2, 7, generator=g))
    others = ((torch.randn(6, 11, generator=g), torch.randn(2, 5, 4, generator=g), torch.rand(2, 5, generator=g)),
              (-torch.ones(3, 4), torch.randn(2, 3, 4, generator=g), torch.zeros(2, 3)))
    dims = ({0: "rows", 1: "cols"}, {1: "queries"}, {1: "queries"})
    program = onnxport.export(_Masks(), args, dynamic_shapes=dims)
    assert "NonZero" in {n.op_type for n in program.model.graph}
    for inputs in (args, *others):
        for got, want in zip(program(*inputs), _Masks()(*inputs), strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype
            torch.testing.assert_close(got, want, rtol=0, atol=0)


class _LastEos(torch.nn.Module):
    """BART's sequence-classification pooling: the rows' ``<eos>`` states, viewed per row, the last."""

    def forward(self, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        selected = hidden[ids.eq(2), :]
        return selected.view(hidden.size(0), -1, hidden.size(-1))[:, -1, :]


def test_masked_rows_viewed_by_a_symbolic_size() -> None:
    # the view's checks on the data-dependent row count join SymBools with ``and``
    # (operator.and_: ops/control/symbolic.py): it had no translation
    g = torch.Generator().manual_seed(0)
    dims = ({0: "batch_size", 1: "sequence_length"},) * 2
    args = (torch.randn(2, 4, 8, generator=g), torch.tensor([[5, 6, 7, 2], [8, 9, 3, 2]]))
    program = onnxport.export(_LastEos(), args, dynamic_shapes=dims)
    other = (torch.randn(3, 5, 8, generator=g), torch.tensor([[5, 2, 7, 2, 4], [2, 9, 3, 2, 6], [1, 1, 2, 1, 2]]))
    for inputs in (args, other):
        (got,) = program(*inputs)
        want = _LastEos()(*inputs)
        assert got.shape == want.shape == (inputs[0].shape[0], 8)
        torch.testing.assert_close(got, want, rtol=0, atol=0)


class _ArangeIndices(torch.nn.Module):
    """Index tensors that are aranges of dynamic sizes: transformers' padding-mask lookup
    ``mask[batch_arange[:, None, None, None], kv_arange[None, None, None, :]]``, the same after a
    leading slice-all dim, a shorter range than the dim, and the aranges' dims swapped (not a
    slice: it stays GatherND)."""

    def forward(self, mask: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, t = torch.arange(mask.shape[0]), torch.arange(mask.shape[1])
        rows, cols = torch.arange(x.shape[1]), torch.arange(x.shape[2] - 1)
        return (mask[b[:, None, None, None], t[None, None, None, :]],
                x[:, rows[:, None], cols[None, :]],
                x[:, rows[None, :, None], cols[None, None, :]],
                x[:, rows[None, :], cols[:, None]])


def test_arange_indices_are_a_slice() -> None:
    g = torch.Generator().manual_seed(0)
    args = (torch.rand(2, 7, generator=g) > 0.3, torch.randn(3, 4, 5, generator=g))
    dims = ({0: "batch", 1: "length"}, {0: "n", 1: "rows", 2: "cols"})
    program = onnxport.export(_ArangeIndices(), args, dynamic_shapes=dims)
    ops = [n.op_type for n in program.model.graph]
    assert ops.count("GatherND") == 1 and "Slice" in ops, ops  # the swapped dims only
    others = (torch.rand(5, 3, generator=g) > 0.5, torch.randn(2, 6, 9, generator=g))
    for inputs in (args, others):
        for got, want in zip(program(*inputs), _ArangeIndices()(*inputs), strict=True):
            assert got.shape == want.shape and got.dtype == want.dtype
            torch.testing.assert_close(got, want, rtol=0, atol=0)
