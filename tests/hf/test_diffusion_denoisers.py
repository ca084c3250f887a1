"""SDXL, Stable Diffusion 3 and Flux pipeline folders through ``onnxport.hf.export``: Optimum's
input and output names (``unet`` with ``text_embeds``/``time_ids``, ``transformer`` with
``pooled_projections``/``img_ids``/``txt_ids``/``guidance``, CLIP encoders with every layer's hidden
states, a T5 encoder), and the graphs against eager PyTorch on sizes the export and its validation
did not use (an SDXL Euler loop end to end)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf

diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")

CLIP = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=77)  # fmt: skip
T5 = dict(vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4)
VAE = dict(down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
           block_out_channels=(8, 16), latent_channels=4, norm_num_groups=4, layers_per_block=1)  # fmt: skip


def clip(projection_dim: int | None = None) -> Any:
    """A tiny CLIP text encoder, with a projection (``text_embeds``) when ``projection_dim`` is given."""
    if projection_dim is None:
        return transformers.CLIPTextModel(transformers.CLIPTextConfig(**CLIP))
    return transformers.CLIPTextModelWithProjection(transformers.CLIPTextConfig(**CLIP, projection_dim=projection_dim))


def export_pipeline(tmp_path: pathlib.Path, cls: str, parts: dict[str, Any], scheduler: Any = None) -> Any:
    """Save each random-weight part (eval mode) in its folder of ``tmp_path / "pipe"`` with the
    ``model_index.json`` naming them (and ``scheduler``), export it into ``tmp_path / "out"``; the
    result, validated."""
    folder = tmp_path / "pipe"
    index: dict[str, Any] = {"_class_name": cls}
    for name, model in parts.items():
        library = "transformers" if isinstance(model, transformers.PreTrainedModel) else "diffusers"
        model.eval().save_pretrained(folder / name)
        index[name] = [library, type(model).__name__]
    (folder / "model_index.json").write_text(json.dumps(index))
    if scheduler is not None:
        scheduler.save_pretrained(folder / "scheduler")
    result = onnxport.hf.export(folder, output_dir=tmp_path / "out")
    assert result.passed
    return result


def sessions(out: pathlib.Path, names: Any) -> dict[str, ort.InferenceSession]:
    return {name: ort.InferenceSession(str(out / name / "model.onnx")) for name in names}


def run(session: ort.InferenceSession, **feeds: Any) -> list[np.ndarray]:
    return session.run(None, {k: np.asarray(v) for k, v in feeds.items()})


def test_sdxl_pipeline_exports_and_denoises_like_eager(tmp_path: pathlib.Path) -> None:
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=(8, 16), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=64, norm_num_groups=4, attention_head_dim=4, addition_embed_type="text_time",
        addition_time_embed_dim=4, projection_class_embeddings_input_dim=16 + 6 * 4,
    )  # fmt: skip
    parts = {"text_encoder": clip(), "text_encoder_2": clip(16), "unet": unet, "vae": diffusers.AutoencoderKL(**VAE)}
    result = export_pipeline(tmp_path, "StableDiffusionXLPipeline", parts, diffusers.EulerDiscreteScheduler())
    folder = tmp_path / "pipe"
    assert set(result.programs) == {"text_encoder", "text_encoder_2", "unet", "vae_encoder", "vae_decoder"}
    s = sessions(tmp_path / "out", result.programs)
    hidden = ["hidden_states.0", "hidden_states.1", "hidden_states.2"]
    assert [o.name for o in s["text_encoder"].get_outputs()] == ["last_hidden_state", "pooler_output", *hidden]
    assert [o.name for o in s["text_encoder_2"].get_outputs()] == ["text_embeds", "last_hidden_state", *hidden]
    assert [(i.name, i.shape) for i in s["unet"].get_inputs()] == [
        ("sample", ["batch_size", 4, "height", "width"]), ("timestep", []),
        ("encoder_hidden_states", ["batch_size", "sequence_length", 64]), ("text_embeds", ["batch_size", 16]),
        ("time_ids", ["batch_size", 6]),
    ]  # fmt: skip

    # The SDXL pipeline's use of the parts: penultimate hidden states of both encoders side by side,
    # the second's projection pooled, (height, width, crop, target) time ids, 3 Euler steps.
    ids = np.random.default_rng(0).integers(3, 99, (2, 9)).astype(np.int64)
    latents = np.random.default_rng(1).standard_normal((2, 4, 7, 9)).astype(np.float32)  # odd sides, a 14x18 image
    time_ids = np.array([[14, 18, 0, 0, 14, 18]] * 2, dtype=np.float32)

    def generate(encode, denoise, decode) -> np.ndarray:  # noqa: ANN001
        first, second = encode(ids)
        hidden_states = np.concatenate([first[-2], second[-2]], -1)
        scheduler = diffusers.EulerDiscreteScheduler.from_pretrained(folder / "scheduler")
        scheduler.set_timesteps(3)
        sample = torch.from_numpy(latents) * scheduler.init_noise_sigma
        for t in scheduler.timesteps:
            scaled = scheduler.scale_model_input(sample, t).numpy()
            noise = denoise(scaled, np.array(t, dtype=np.float32), hidden_states, second[0], time_ids)
            sample = scheduler.step(torch.from_numpy(noise), t, sample).prev_sample
        return decode(sample.numpy())

    def onnx_encode(x: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        a, b = run(s["text_encoder"], input_ids=x), run(s["text_encoder_2"], input_ids=x)
        return a[2:], [b[0], *b[2:]]

    @torch.no_grad()
    def eager_encode(x: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        a = parts["text_encoder"](torch.from_numpy(x), output_hidden_states=True)
        b = parts["text_encoder_2"](torch.from_numpy(x), output_hidden_states=True)
        return [h.numpy() for h in a.hidden_states], [b.text_embeds.numpy(), *(h.numpy() for h in b.hidden_states)]

    def onnx_denoise(x, t, h, embeds, times) -> np.ndarray:  # noqa: ANN001
        return run(s["unet"], sample=x, timestep=t, encoder_hidden_states=h, text_embeds=embeds, time_ids=times)[0]

    @torch.no_grad()
    def eager_denoise(x, t, h, embeds, times) -> np.ndarray:  # noqa: ANN001
        added = {"text_embeds": torch.from_numpy(embeds), "time_ids": torch.from_numpy(times)}
        return unet(torch.from_numpy(x), torch.from_numpy(t), torch.from_numpy(h), added_cond_kwargs=added).sample.numpy()

    expected = generate(eager_encode, eager_denoise, lambda z: parts["vae"].decode(torch.from_numpy(z)).sample.detach().numpy())
    actual = generate(onnx_encode, onnx_denoise, lambda z: run(s["vae_decoder"], latent_sample=z)[0])
    assert actual.shape == expected.shape == (2, 3, 14, 18)
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-4)


def test_sd3_pipeline_exports_transformer_and_three_text_encoders(tmp_path: pathlib.Path) -> None:
    torch.manual_seed(0)
    transformer = diffusers.SD3Transformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8, num_attention_heads=4,
        joint_attention_dim=32, caption_projection_dim=32, pooled_projection_dim=32, out_channels=4, pos_embed_max_size=32,
    ).eval()  # fmt: skip
    t5 = transformers.T5EncoderModel(transformers.T5Config(**T5))
    parts = {"text_encoder": clip(16), "text_encoder_2": clip(16), "text_encoder_3": t5, "transformer": transformer,
             "vae": diffusers.AutoencoderKL(**VAE)}  # fmt: skip
    result = export_pipeline(tmp_path, "StableDiffusion3Pipeline", parts)
    assert set(result.programs) == {"text_encoder", "text_encoder_2", "text_encoder_3", "transformer", "vae_encoder", "vae_decoder"}
    s = sessions(tmp_path / "out", ["text_encoder_2", "text_encoder_3", "transformer"])
    assert [o.name for o in s["text_encoder_2"].get_outputs()][:3] == ["text_embeds", "last_hidden_state", "hidden_states.0"]
    assert [o.name for o in s["text_encoder_3"].get_outputs()] == ["last_hidden_state"]
    assert [(i.name, i.shape) for i in s["transformer"].get_inputs()] == [
        ("hidden_states", ["batch_size", 4, "2*height", "2*width"]),
        ("encoder_hidden_states", ["batch_size", "sequence_length", 32]),
        ("pooled_projections", ["batch_size", 32]), ("timestep", ["batch_size"]),
    ]  # fmt: skip
    assert (tmp_path / "out" / "transformer" / "config.json").is_file()

    gen = torch.Generator().manual_seed(5)
    feeds = {"hidden_states": torch.randn(4, 4, 14, 8, generator=gen), "encoder_hidden_states": torch.randn(4, 11, 32, generator=gen),
             "pooled_projections": torch.randn(4, 32, generator=gen), "timestep": torch.tensor([999.0, 500.0, 20.5, 1.0])}  # fmt: skip
    with torch.no_grad():
        expected = transformer(**feeds).sample.numpy()
    actual = run(s["transformer"], **{k: v.numpy() for k, v in feeds.items()})[0]
    assert actual.shape == (4, 4, 14, 8)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)

    ids = np.random.default_rng(2).integers(3, 99, (2, 13)).astype(np.int64)
    with torch.no_grad():
        expected_t5 = t5(torch.from_numpy(ids)).last_hidden_state.numpy()
    np.testing.assert_allclose(run(s["text_encoder_3"], input_ids=ids)[0], expected_t5, rtol=1e-4, atol=1e-5)


def test_flux_pipeline_exports_transformer_with_ids_and_guidance(tmp_path: pathlib.Path) -> None:
    torch.manual_seed(0)
    transformer = diffusers.FluxTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=32, pooled_projection_dim=32, guidance_embeds=True, axes_dims_rope=(4, 6, 6),
    ).eval()  # fmt: skip
    parts = {"text_encoder": clip(), "text_encoder_2": transformers.T5EncoderModel(transformers.T5Config(**T5)),
             "transformer": transformer, "vae": diffusers.AutoencoderKL(**VAE)}  # fmt: skip
    export_pipeline(tmp_path, "FluxPipeline", parts)
    s = sessions(tmp_path / "out", ["text_encoder", "transformer"])
    assert [o.name for o in s["text_encoder"].get_outputs()] == ["last_hidden_state", "pooler_output"]  # not SDXL/SD3
    assert [(i.name, i.shape) for i in s["transformer"].get_inputs()] == [
        ("hidden_states", ["batch_size", "packed_height_width", 16]),
        ("encoder_hidden_states", ["batch_size", "sequence_length", 32]), ("pooled_projections", ["batch_size", 32]),
        ("timestep", ["batch_size"]), ("img_ids", ["packed_height_width", 3]), ("txt_ids", ["sequence_length", 3]),
        ("guidance", ["batch_size"]),
    ]  # fmt: skip

    # A 12x20 latent packed 2x2 as FluxPipeline does: 6x10 = 60 positions of 16 channels.
    latents = torch.randn(1, 4, 12, 20, generator=torch.Generator().manual_seed(3))
    packed = diffusers.FluxPipeline._pack_latents(latents, 1, 4, 12, 20)
    img_ids = diffusers.FluxPipeline._prepare_latent_image_ids(1, 6, 10, "cpu", torch.float32)
    feeds = {"hidden_states": packed, "encoder_hidden_states": torch.randn(1, 7, 32), "pooled_projections": torch.randn(1, 32),
             "timestep": torch.tensor([0.75]), "img_ids": img_ids, "txt_ids": torch.zeros(7, 3), "guidance": torch.tensor([4.0])}  # fmt: skip
    with torch.no_grad():
        expected = transformer(**feeds).sample.numpy()
    actual = run(s["transformer"], **{k: v.numpy() for k, v in feeds.items()})[0]
    assert actual.shape == (1, 60, 16)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)
