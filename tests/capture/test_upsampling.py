"""diffusers' UNets exported with dynamic H/W run at any latent size (capture/upsampling.py): the
example is a multiple of the down-sampling factor, the checked sizes are odd, where the up-sampling
blocks resize to their skip connections' sizes instead of doubling."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import onnxport
from onnxport.capture import patches, upsampling

diffusers = pytest.importorskip("diffusers")
AUTO = torch.export.Dim.AUTO


def _unet() -> torch.nn.Module:
    torch.manual_seed(0)
    return diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16, 16),
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=8, attention_head_dim=4, norm_num_groups=4,
    ).eval()  # fmt: skip


def _inputs(batch: int, height: int, width: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(height * 100 + width)
    return torch.randn(batch, 4, height, width, generator=g), torch.tensor(10.0), torch.randn(batch, 3, 8, generator=g)


def test_unet_runs_at_latent_sizes_off_its_multiple_of_four() -> None:
    unet = _unet()
    assert unet.num_upsamplers == 2  # two up-sampling stages: eager doubles only at multiples of 4
    program = onnxport.export(
        unet, _inputs(2, 8, 12), kwargs={"return_dict": False},
        dynamic_shapes={"sample": {0: AUTO, 2: AUTO, 3: AUTO}, "timestep": None, "encoder_hidden_states": {0: AUTO}},
    )  # fmt: skip
    assert unet.num_upsamplers == 2  # restored after the capture
    session = program._inference_session()
    names = [i.name for i in session.get_inputs()]
    for batch, height, width in [(1, 9, 13), (3, 7, 6), (2, 16, 20), (1, 5, 11)]:
        sample, timestep, hidden = _inputs(batch, height, width)
        with torch.no_grad():
            (expected,) = unet(sample, timestep, hidden, return_dict=False)
        (actual,) = session.run(None, dict(zip(names, (sample.numpy(), timestep.numpy(), hidden.numpy()))))
        assert actual.shape == (batch, 4, height, width)
        np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-4, atol=1e-5)


def test_patch_applies_to_symbolic_sizes_only_and_is_restored() -> None:
    cls = diffusers.UNet2DConditionModel
    original = vars(cls)["forward"]
    assert (cls, "forward") in [(owner, name) for owner, name, _ in upsampling.upsampling_patches()]
    unet = _unet()
    seen: list[object] = []  # num_upsamplers as the UNet's forward body sees it
    unet.down_blocks[0].register_forward_pre_hook(lambda m, args: seen.append(unet.num_upsamplers))
    with patches.library_patches():
        assert vars(cls)["forward"] is not original
        with torch.no_grad():
            unet(*_inputs(1, 8, 8))  # plain int sizes (eager, a static capture): the original
        assert seen == [2]
        torch.export.export(unet, _inputs(1, 8, 8), dynamic_shapes=({2: AUTO, 3: AUTO}, None, None))
        assert seen[1:] and all(value is upsampling.ANY_SIZE for value in seen[1:])
    assert vars(cls)["forward"] is original and unet.num_upsamplers == 2


def test_any_size_sentinel() -> None:
    any_size = upsampling.ANY_SIZE
    factor = 2**any_size
    assert factor is any_size
    assert 8 % factor == 1 and 9 % factor == 1
