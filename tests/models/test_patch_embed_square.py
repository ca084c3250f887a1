"""diffusers' ``PatchEmbed`` (DiT, PixArt) exported from a latent at the configured sample size:
its forward adds the registered sin-cos table there and recomputes it elsewhere, a branch
torch.export leaves out without a guard. The capture patch (``capture/diffusers_models.always_interpolating``)
takes the recomputing path, so the graph runs at other sizes, non-square ones too, with eager's
values; and the recomputed table equals the registered one at the configured size."""

from __future__ import annotations

import pytest
import torch

import onnxport

diffusers = pytest.importorskip("diffusers")

DYNAMIC = {"hidden_states": {0: "batch", 2: "height", 3: "width"}, "encoder_hidden_states": {0: "batch", 1: "seq"},
           "timestep": {0: "batch"}}  # fmt: skip


class PixArt(torch.nn.Module):
    """A 2-layer PixArt transformer (sample size 8, patch 2: a 4x4 grid of patches)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.model = diffusers.PixArtTransformer2DModel(
            sample_size=8, num_layers=2, attention_head_dim=8, num_attention_heads=2, in_channels=4,
            out_channels=8, cross_attention_dim=16, caption_channels=12, patch_size=2,
            norm_type="ada_norm_single", use_additional_conditions=False,
        ).eval()  # fmt: skip

    def forward(self, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        return self.model(hidden_states, encoder_hidden_states=encoder_hidden_states, timestep=timestep, return_dict=False)[0]


def inputs(batch: int, height: int, width: int, seq: int) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(height * width + seq)
    return (torch.randn(batch, 4, height, width, generator=gen), torch.randn(batch, seq, 12, generator=gen),
            torch.arange(batch) * 7 + 1)  # fmt: skip


def test_example_at_the_sample_size_exports_every_size() -> None:
    model = PixArt()
    program = onnxport.export(model, inputs(2, 8, 8, 5), dynamic_shapes=DYNAMIC)
    dims = [[getattr(d, "value", d) for d in i.shape] for i in program.model.graph.inputs]
    assert dims[0] == ["batch", 4, "height", "width"]
    for shape in ((2, 8, 8, 5), (3, 12, 16, 7), (1, 16, 8, 3)):
        args = inputs(*shape)
        with torch.no_grad():
            expected = model(*args)
        (actual,) = program(*args)
        assert actual.shape == expected.shape == (shape[0], 8, shape[1], shape[2])
        torch.testing.assert_close(torch.as_tensor(actual), expected, rtol=1e-4, atol=1e-5)
