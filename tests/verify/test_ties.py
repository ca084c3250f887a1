"""Eager references order tied ``topk`` values by index, as ONNX's TopK (onnxport.verify.ties):
a model selecting rows by ``topk`` among ties verifies, and the reference keeps torch's values."""

from __future__ import annotations

import numpy as np
import torch

import onnxport
from onnxport.verify.ties import index_ordered_topk


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
    with index_ordered_topk():
        values, index = torch.topk(scores, 12, dim=1)
        low_values, low_index = scores.topk(3, largest=False)
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
