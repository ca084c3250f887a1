"""A diffusers Stable Diffusion pipeline folder through ``onnxport.hf.export``: one graph per model
component (Optimum's layout), validated, and a 3-step text-to-image loop through the graphs that
gives eager PyTorch's image."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import onnxruntime as ort
import pytest
import torch

import onnxport.hf
from onnxport.errors import HFError

diffusers = pytest.importorskip("diffusers")
transformers = pytest.importorskip("transformers")


def tiny_pipeline(folder: pathlib.Path) -> pathlib.Path:
    """A random-weight Stable Diffusion 1.x-style pipeline (CLIP text encoder, UNet, VAE, DDIM)."""
    torch.manual_seed(0)
    text = transformers.CLIPTextConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=37, max_position_embeddings=77)  # fmt: skip
    transformers.CLIPTextModel(text).eval().save_pretrained(folder / "text_encoder")
    diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=(8, 16), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, norm_num_groups=4, attention_head_dim=4,
    ).eval().save_pretrained(folder / "unet")  # fmt: skip
    diffusers.AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(8, 16), latent_channels=4, norm_num_groups=4, layers_per_block=1,
    ).eval().save_pretrained(folder / "vae")  # fmt: skip
    diffusers.DDIMScheduler().save_pretrained(folder / "scheduler")
    index = {"_class_name": "StableDiffusionPipeline", "text_encoder": ["transformers", "CLIPTextModel"],
             "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"],
             "scheduler": ["diffusers", "DDIMScheduler"], "tokenizer": [None, None]}  # fmt: skip
    (folder / "model_index.json").write_text(json.dumps(index))
    return folder


def generate(text_encoder, unet, vae_decoder, ids: np.ndarray, latents: np.ndarray, folder: pathlib.Path) -> np.ndarray:  # noqa: ANN001
    """3 DDIM steps without guidance: each component is a callable on numpy arrays."""
    scheduler = diffusers.DDIMScheduler.from_pretrained(folder / "scheduler")
    scheduler.set_timesteps(3)
    hidden = text_encoder(ids)
    sample = torch.from_numpy(latents)
    for t in scheduler.timesteps:
        noise = unet(sample.numpy(), np.array(t, dtype=np.float32), hidden)  # Optimum: a 0-d float timestep
        sample = scheduler.step(torch.from_numpy(noise), t, sample).prev_sample
    return vae_decoder(sample.numpy())


def test_pipeline_exports_and_generates_like_eager(tmp_path: pathlib.Path) -> None:
    folder = tiny_pipeline(tmp_path / "pipe")
    result = onnxport.hf.export(folder, output_dir=tmp_path / "out")
    assert result.task == "text-to-image" and result.passed
    assert set(result.programs) == {"text_encoder", "unet", "vae_encoder", "vae_decoder"}
    out = tmp_path / "out"
    for name in result.programs:
        assert (out / name / "model.onnx").is_file() and (out / name / "config.json").is_file()
    assert (out / "model_index.json").is_file() and (out / "scheduler" / "scheduler_config.json").is_file()

    sessions = {name: ort.InferenceSession(str(out / name / "model.onnx")) for name in result.programs}
    unet_inputs = [i.name for i in sessions["unet"].get_inputs()]
    assert unet_inputs == ["sample", "timestep", "encoder_hidden_states"]
    timestep = sessions["unet"].get_inputs()[1]
    assert (timestep.shape, timestep.type) == ([], "tensor(float)")
    onnx_parts = (
        lambda ids: sessions["text_encoder"].run(["last_hidden_state"], {"input_ids": ids})[0],
        lambda s, t, h: sessions["unet"].run(None, dict(zip(unet_inputs, (s, t, h))))[0],
        lambda z: sessions["vae_decoder"].run(None, {"latent_sample": z})[0],
    )
    text = transformers.CLIPTextModel.from_pretrained(folder / "text_encoder").eval()
    unet = diffusers.UNet2DConditionModel.from_pretrained(folder / "unet").eval()
    vae = diffusers.AutoencoderKL.from_pretrained(folder / "vae").eval()

    def eager(fn):  # noqa: ANN001, ANN202
        def run(*arrays: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return fn(*(torch.from_numpy(a) for a in arrays)).numpy()
        return run

    eager_parts = (
        eager(lambda ids: text(ids).last_hidden_state),
        eager(lambda s, t, h: unet(s, t, h).sample),
        eager(lambda z: vae.decode(z).sample),
    )
    gen = np.random.default_rng(0)
    ids = gen.integers(3, 99, (2, 7)).astype(np.int64)
    # odd latent sides, off the UNet's multiple of 2 (capture.upsampling): a non-square 10x18 image
    latents = gen.standard_normal((2, 4, 5, 9)).astype(np.float32)
    expected = generate(*eager_parts, ids, latents, folder)
    actual = generate(*onnx_parts, ids, latents, folder)
    assert actual.shape == expected.shape == (2, 3, 10, 18)
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-4)


def test_unknown_denoiser_is_refused_before_loading(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "hunyuan"
    folder.mkdir()
    index = {"_class_name": "HunyuanDiTPipeline", "text_encoder": ["transformers", "BertModel"],
             "transformer": ["diffusers", "HunyuanDiT2DModel"]}  # fmt: skip
    (folder / "model_index.json").write_text(json.dumps(index))  # no component folders: nothing may load
    with pytest.raises(HFError, match="denoiser is HunyuanDiT2DModel.*SD3Transformer2DModel.*onnxport.export"):
        onnxport.hf.export(folder, output_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_pipeline_without_denoiser_is_refused(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "vae-only"
    folder.mkdir()
    (folder / "model_index.json").write_text(json.dumps({"vae": ["diffusers", "AutoencoderKL"]}))
    with pytest.raises(HFError, match="names no denoiser"):
        onnxport.hf.export(folder, output_dir=tmp_path / "out")
