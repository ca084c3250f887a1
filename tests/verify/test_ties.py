"""Eager references order tied ``topk`` values by index, as ONNX's TopK (onnxport.verify.ties):
a model selecting rows by ``topk`` among ties verifies, and the reference keeps torch's values."""

from __future__ import annotations

import numpy as np
import torch

import onnxport
from onnxport.verify import ties
from onnxport.verify.ties import index_ordered


class SelectQueries(torch.nn.Module):
    """RT-DETR's query selection in small: the rows of the ``k`` best scores, in score order."""

    def forward(self, scores: torch.Tensor, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, index = torch.topk(scores, 12, dim=1)
        rows = torch.gather(features, 1, index.unsqueeze(-1).expand(-1, -1, features.shape[-1]))
        return rows, index


def tied_scores(batch: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores where most entries tie at 0 above a few negatives and below two winners."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.zeros(batch, n)
    scores[:, ::5] = -1 - torch.rand(batch, len(range(0, n, 5)), generator=g)
    scores[:, 3] = 2.0
    scores[:, n - 2] = 1.5
    return scores, torch.arange(batch * n * 4, dtype=torch.float32).reshape(batch, n, 4)


def test_reference_orders_ties_by_index_and_keeps_values() -> None:
    scores, _ = tied_scores(2, 1000, 0)
    (values, index), (low_values, low_index) = index_ordered(
        lambda: (torch.topk(scores, 12, dim=1), scores.topk(3, largest=False)))
    expected = torch.topk(scores, 12, dim=1).values
    assert torch.equal(values, expected)
    # two winners, then the tied zeros from the lowest index on (multiples of 5 are negative)
    assert index[0].tolist() == [3, 998, 1, 2, 4, 6, 7, 8, 9, 11, 12, 13]
    assert torch.equal(low_values, torch.topk(scores, 3, largest=False).values)
    assert torch.equal(low_index, scores.argsort(dim=1, stable=True)[:, :3])


def test_model_selecting_among_ties_verifies_against_index_ordered_eager() -> None:
    model = SelectQueries().eval()
    args = tied_scores(2, 600, 1)
    program = onnxport.export(model, args, dynamic_shapes={"scores": {0: "batch", 1: "n"}, "features": {0: "batch", 1: "n"}})
    result = onnxport.verify(program, args, inputs=[tied_scores(3, 800, 2)])
    assert result.passed
    rows, index = program(*tied_scores(1, 900, 3))
    assert np.asarray(index)[0].tolist() == [3, 898, 1, 2, 4, 6, 7, 8, 9, 11, 12, 13]
    assert np.asarray(rows).shape == (1, 12, 4)


class _Branches(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.sum() > 0, lambda t: t.topk(2, -1).values, lambda t: (-t).topk(2, -1).values, (x,))


def test_higher_order_operators_run_without_the_tie_order() -> None:
    # torch.cond refuses to run under the dispatch mode: export(verify=True) of any model with a
    # cond failed (session 14); it now runs again without the mode, and eager cond still works after
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    program = onnxport.export(_Branches(), (x,), verify=True)
    for inputs in (x, -x):
        np.testing.assert_allclose(program(inputs)[0], _Branches()(inputs).numpy(), rtol=1e-6)
    assert ties.has_higher_order_ops(program.exported_program)
    assert torch.equal(index_ordered(lambda: _Branches()(x), program.exported_program), _Branches()(x))


class MaskPatches(torch.nn.Module):
    """ViT-MAE's random masking in small: keep the patches of the lowest noise (``argsort``)."""

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        noise = torch.rand(patches.shape[0], patches.shape[1])  # at its mean in verification: all ties
        keep = torch.argsort(noise, dim=1)[:, : patches.shape[1] // 2]
        return torch.gather(patches, 1, keep.unsqueeze(-1).expand(-1, -1, patches.shape[-1]))


def test_sort_among_ties_is_stable_in_the_reference() -> None:
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0, 1.0, 0.0] * 50])
    values, indices = index_ordered(lambda: torch.sort(x, dim=1, descending=True))
    assert indices[0, :6].tolist() == [0, 2, 4, 6, 8, 10] and values[0, :150].eq(1.0).all()
    assert index_ordered(lambda: torch.argsort(x, dim=1))[0, :3].tolist() == [1, 3, 5]
    patches = torch.arange(2 * 64 * 3, dtype=torch.float32).reshape(2, 64, 3)  # torch's argsort of 64 ties: 48, 33, ...
    program = onnxport.export(MaskPatches(), (patches,), verify=True)  # the first half, as ONNX's TopK
    assert program.status.verification is not None
    expected = index_ordered(lambda: MaskPatches()(patches))
    torch.testing.assert_close(expected, patches[:, :32])
