"""MiniMax's lightning attention: the closed form the capture uses (capture/lightning.py) equals
transformers' block loop at lengths across block boundaries, state included, and an export with a
dynamic sequence runs at lengths of other block counts."""

from __future__ import annotations

import warnings

import pytest
import torch

import onnxport
from onnxport.capture import lightning

transformers = pytest.importorskip("transformers")
minimax = pytest.importorskip("transformers.models.minimax.modeling_minimax")


def _layer(block_size: int = 4) -> torch.nn.Module:
    config = transformers.MiniMaxConfig(hidden_size=32, num_attention_heads=4, head_dim=8, num_hidden_layers=3,
                                        block_size=block_size)  # fmt: skip
    torch.manual_seed(0)
    layer = minimax.MiniMaxLightningAttention(config, layer_idx=1).eval()
    with torch.no_grad():  # the default init leaves the projections random, the slopes fixed
        for p in layer.parameters():
            p.normal_(0, 0.3)
    return layer


@pytest.mark.parametrize("length", [1, 3, 4, 5, 9, 13])
def test_closed_form_equals_the_block_loop(length: int) -> None:
    layer = _layer()
    x = torch.randn(2, length, 32, generator=torch.Generator().manual_seed(length))
    mask = torch.ones(2, length, dtype=torch.int64)
    mask[1, :1] = 0  # a padded position: zeroed by the original's padding mask
    with torch.no_grad():
        expected, expected_state = layer(x, None, mask)
        actual, state = lightning._decayed_attention(layer, x, mask, minimax.apply_mask_to_padding_states)
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(state, expected_state, rtol=1e-4, atol=1e-5)


class _Wrapper(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = _layer()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x, None, None)[0]


def test_export_runs_at_other_block_counts() -> None:
    model = _Wrapper().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no narrowed sequence range
        program = onnxport.export(model, (torch.randn(1, 6, 32),), dynamic_shapes={"x": {0: "batch_size", 1: "sequence_length"}})
    for length in (2, 11, 17):
        x = torch.randn(2, length, 32)
        with torch.no_grad():
            expected = model(x)
        torch.testing.assert_close(program(x)[0], expected, rtol=1e-4, atol=1e-5)
