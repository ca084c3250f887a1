"""Sana and PixArt pipeline folders through ``onnxport.hf.export``: denoisers conditioned on a
padded caption and its mask (optimum-onnx ``SanaTransformerOnnxConfig``: ``encoder_attention_mask``),
text encoders that take the mask (Sana's decoder-only Gemma 2, PixArt's T5), Sana's
deep-compression autoencoder (``AutoencoderDC``: ``latent_sample``), and the graphs against eager
PyTorch on sizes the export and its validation did not use (a Sana flow-matching loop end to end)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch
from tests.hf.test_diffusion_denoisers import T5, VAE, export_pipeline, run, sessions

diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")

GEMMA2 = dict(vocab_size=99, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=8, sliding_window=4, pad_token_id=0)  # fmt: skip
DC_AE = dict(in_channels=3, latent_channels=4, attention_head_dim=4, encoder_block_types=("ResBlock", "EfficientViTBlock"),
             decoder_block_types=("ResBlock", "EfficientViTBlock"), encoder_block_out_channels=(8, 16),
             decoder_block_out_channels=(8, 16), encoder_layers_per_block=(1, 1), decoder_layers_per_block=(1, 1),
             encoder_qkv_multiscales=((), (5,)), decoder_qkv_multiscales=((), (5,)))  # fmt: skip


def caption(rows: list[int], length: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded token ids (pad 0) and their mask, one row per caption length in ``rows``."""
    ids = np.random.default_rng(len(rows)).integers(3, 99, (len(rows), length)).astype(np.int64)
    mask = (np.arange(length)[None, :] < np.array(rows)[:, None]).astype(np.int64)
    return ids * mask, mask


def test_sana_pipeline_exports_and_denoises_like_eager(tmp_path: pathlib.Path) -> None:
    torch.manual_seed(0)
    gemma = transformers.Gemma2Model(transformers.Gemma2Config(**GEMMA2))
    transformer = diffusers.SanaTransformer2DModel(
        in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=8, num_layers=2, num_cross_attention_heads=2,
        cross_attention_head_dim=8, cross_attention_dim=16, caption_channels=32, sample_size=8, patch_size=1,
    )  # fmt: skip
    vae = diffusers.AutoencoderDC(**DC_AE)
    parts = {"text_encoder": gemma, "transformer": transformer, "vae": vae}
    result = export_pipeline(
        tmp_path, "SanaPipeline", parts, diffusers.FlowMatchEulerDiscreteScheduler()
    )
    assert set(result.programs) == {"text_encoder", "transformer", "vae_encoder", "vae_decoder"}
    s = sessions(tmp_path / "out", result.programs)
    assert [(i.name, i.shape) for i in s["text_encoder"].get_inputs()] == [
        ("input_ids", ["batch_size", "sequence_length"]), ("attention_mask", ["batch_size", "sequence_length"])]  # fmt: skip
    assert [o.name for o in s["text_encoder"].get_outputs()] == ["last_hidden_state"]
    assert [(i.name, i.shape) for i in s["transformer"].get_inputs()] == [
        ("hidden_states", ["batch_size", 4, "height", "width"]),
        ("encoder_hidden_states", ["batch_size", "sequence_length", 32]),
        ("encoder_attention_mask", ["batch_size", "sequence_length"]), ("timestep", ["batch_size"]),
    ]  # fmt: skip
    assert [(o.name, o.shape) for o in s["vae_encoder"].get_outputs()] == [
        ("latent_sample", ["batch_size", 4, "height", "width"])
    ]
    assert (tmp_path / "out" / "vae_decoder" / "config.json").is_file()

    # SanaPipeline's use of the parts: the caption's last hidden state with its mask, the mask on
    # every transformer call, 3 flow-matching Euler steps, the latents decoded.
    ids, mask = caption([11, 4], 11)  # the second caption padded
    latents = np.random.default_rng(1).standard_normal((2, 4, 5, 7)).astype(np.float32)

    def generate(encode, denoise, decode) -> np.ndarray:  # noqa: ANN001
        embeds = encode(ids, mask)
        scheduler = diffusers.FlowMatchEulerDiscreteScheduler.from_pretrained(
            tmp_path / "pipe" / "scheduler"
        )
        scheduler.set_timesteps(3)
        sample = torch.from_numpy(latents)
        for t in scheduler.timesteps:
            timestep = np.full((2,), float(t), dtype=np.float32)
            noise = denoise(sample.numpy(), embeds, mask, timestep)
            sample = scheduler.step(torch.from_numpy(noise), t, sample).prev_sample
        return decode(sample.numpy())

    @torch.no_grad()
    def eager_encode(x: np.ndarray, m: np.ndarray) -> np.ndarray:
        return gemma(
            torch.from_numpy(x), attention_mask=torch.from_numpy(m)
        ).last_hidden_state.numpy()

    @torch.no_grad()
    def eager_denoise(x, h, m, t) -> np.ndarray:  # noqa: ANN001
        x, h, m, t = (torch.from_numpy(a) for a in (x, h, m, t))
        return transformer(
            x, encoder_hidden_states=h, encoder_attention_mask=m, timestep=t
        ).sample.numpy()

    def onnx_denoise(x, h, m, t) -> np.ndarray:  # noqa: ANN001
        return run(
            s["transformer"],
            hidden_states=x,
            encoder_hidden_states=h,
            encoder_attention_mask=m,
            timestep=t,
        )[0]

    expected = generate(
        eager_encode,
        eager_denoise,
        lambda z: vae.decode(torch.from_numpy(z)).sample.detach().numpy(),
    )
    actual = generate(
        lambda x, m: run(s["text_encoder"], input_ids=x, attention_mask=m)[0], onnx_denoise,
        lambda z: run(s["vae_decoder"], latent_sample=z)[0],
    )  # fmt: skip
    assert (
        actual.shape == expected.shape == (2, 3, 10, 14)
    )  # DC-AE up-samples 2x per stage but the last
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-4)

    image = np.random.default_rng(3).standard_normal((3, 3, 6, 10)).astype(np.float32)
    with torch.no_grad():
        latent = vae.encode(torch.from_numpy(image)).latent.numpy()
    np.testing.assert_allclose(run(s["vae_encoder"], sample=image)[0], latent, rtol=1e-4, atol=1e-5)


def test_pixart_alpha_transformer_takes_resolution_and_aspect_ratio(tmp_path: pathlib.Path) -> None:
    torch.manual_seed(0)
    t5 = transformers.T5EncoderModel(transformers.T5Config(**T5))
    # 3 heads: the size embedding splits the width in three (resolution twice, aspect ratio once).
    transformer = diffusers.PixArtTransformer2DModel(
        num_attention_heads=3, attention_head_dim=8, in_channels=4, out_channels=8, num_layers=2, cross_attention_dim=24,
        caption_channels=32, sample_size=8, patch_size=2, norm_type="ada_norm_single", use_additional_conditions=True,
    )  # fmt: skip
    parts = {"text_encoder": t5, "transformer": transformer, "vae": diffusers.AutoencoderKL(**VAE)}
    result = export_pipeline(tmp_path, "PixArtAlphaPipeline", parts)
    assert set(result.programs) == {"text_encoder", "transformer", "vae_encoder", "vae_decoder"}
    s = sessions(tmp_path / "out", ["text_encoder", "transformer"])
    assert [i.name for i in s["transformer"].get_inputs()] == [
        "hidden_states", "encoder_hidden_states", "encoder_attention_mask", "timestep", "resolution", "aspect_ratio"]  # fmt: skip
    assert [o.shape for o in s["transformer"].get_outputs()] == [
        ["batch_size", 8, "2*height", "2*width"]
    ]

    ids, mask = caption([9, 3, 6], 9)
    with torch.no_grad():
        hidden = t5(
            torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)
        ).last_hidden_state.numpy()
    np.testing.assert_allclose(
        run(s["text_encoder"], input_ids=ids, attention_mask=mask)[0], hidden, rtol=1e-4, atol=1e-5
    )

    gen = torch.Generator().manual_seed(5)
    feeds = {"hidden_states": torch.randn(3, 4, 14, 6, generator=gen), "encoder_hidden_states": torch.from_numpy(hidden),
             "encoder_attention_mask": torch.from_numpy(mask), "timestep": torch.tensor([999.0, 500.0, 20.5]),
             "resolution": torch.tensor([[1024.0, 512.0]] * 3), "aspect_ratio": torch.tensor([[0.5]] * 3)}  # fmt: skip
    with torch.no_grad():
        added = {"resolution": feeds["resolution"], "aspect_ratio": feeds["aspect_ratio"]}
        expected = transformer(
            feeds["hidden_states"], encoder_hidden_states=feeds["encoder_hidden_states"], timestep=feeds["timestep"],
            encoder_attention_mask=feeds["encoder_attention_mask"], added_cond_kwargs=added,
        ).sample.numpy()  # fmt: skip
    actual = run(s["transformer"], **{k: v.numpy() for k, v in feeds.items()})[0]
    assert actual.shape == (3, 8, 14, 6)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)
