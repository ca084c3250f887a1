"""The coverage zoo: real architectures from small configs with random weights, one :class:`Case`
each, exported with dynamic shapes and run in onnxruntime at two sizes against eager PyTorch.

One list for the tests (``tests/models/test_zoo.py``: :data:`FAST` in CI, the rest ``slow``) and
the benchmark (``bench/coverage_compare.py``, onnxport vs ``torch.onnx.export(dynamo=True)``).
docs/coverage.md ("Architectures") records the results and the exact reason of every failure.

Families: decoder LLMs (sliding windows, mixture of experts), encoders, vision (CNN, ViT, detection,
segmentation, depth), audio, state-space / hybrid, diffusion (diffusers UNet / VAE) and torch.nn
recurrent / transformer modules. The transformers models come from ``tiny_models`` where it
already has them. Needs ``transformers`` (and ``diffusers`` for the diffusion cases), imported
when a case is built.

Sizes: every case is exported at its first size and compared at both; the second size differs in
every dynamic dim (batch, sequence, height, width, ...).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from onnxport._export import export as export_program
from onnxport.testing import tiny_models

VOCAB = tiny_models.VOCAB
Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One architecture.

    Attributes:
        name: Short id (``"mixtral"``).
        family: ``decoder``, ``encoder``, ``vision``, ``audio``, ``ssm``, ``diffusion`` or ``torch.nn``.
        build: Returns the model in eval mode (deterministic weights).
        inputs: ``inputs(size)`` → ``(args, kwargs)`` for one entry of ``sizes``.
        sizes: Two sizes; the second differs in every dynamic dim.
        dynamic_shapes: As for ``onnxport.export`` (named dims).
        atol: Absolute tolerance (float32; a relative ``rtol`` × max |eager| is added).
    """

    name: str
    family: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[Any], Inputs]
    sizes: tuple[Any, Any]
    dynamic_shapes: Any
    atol: float = 1e-4
    rtol: float = 1e-4


# -- inputs ---------------------------------------------------------------------------------------
TEXT_SIZES = ((2, 7), (3, 12))  # (batch, sequence); 7 and 12 are not multiples of Mamba2's chunk
TEXT_DYNAMIC = {"input_ids": {0: "batch_size", 1: "sequence_length"},
                "attention_mask": {0: "batch_size", 1: "sequence_length"}}
IDS_DYNAMIC = {"input_ids": {0: "batch_size", 1: "sequence_length"}}


def _gen(*size: int) -> torch.Generator:
    return torch.Generator().manual_seed(sum(s * 31**i for i, s in enumerate(size)))


def text(size: tuple[int, int]) -> Inputs:
    """Token ids in [3, VOCAB) and an int64 attention mask whose row 0 ends with 2 pad tokens."""
    batch, sequence = size
    ids = torch.randint(3, VOCAB, (batch, sequence), generator=_gen(*size))
    mask = torch.ones(batch, sequence, dtype=torch.long)
    mask[0, -2:] = 0
    return (), {"input_ids": ids, "attention_mask": mask}


def ids_only(size: tuple[int, int]) -> Inputs:
    return (), {"input_ids": text(size)[1]["input_ids"]}


def images(size: tuple[int, ...]) -> Inputs:
    """``pixel_values`` (batch, 3, height, width), standard normal."""
    batch, height, width = size
    return (), {"pixel_values": torch.randn(batch, 3, height, width, generator=_gen(*size))}


def tensor_input(name: str, channels: int, scale: float = 1.0) -> Callable[[Any], Inputs]:
    """``{name: (batch, channels, length...)}`` for size ``(batch, length...)``."""
    def make(size: tuple[int, ...]) -> Inputs:
        batch, *rest = size
        return (), {name: scale * torch.randn(batch, channels, *rest, generator=_gen(*size))}
    return make


def _hf(config_class: str, model_class: str, **config: Any) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import transformers  # optional heavy dependency (test extra)

        torch.manual_seed(0)
        cfg = getattr(transformers, config_class)(**config)
        return getattr(transformers, model_class)(cfg).eval()
    return build


def _calibrated(build: Callable[[], torch.nn.Module], size: tuple[int, ...]) -> Callable[[], torch.nn.Module]:
    """``build`` with its batch norms reset (weight 1, bias 0) and their running statistics measured on
    one random batch of ``images(size)`` in train mode, then eval.

    transformers initializes every ``BatchNorm2d`` weight like a linear one (normal, std 0.02), so a
    deep random CNN (EfficientNet: ~40 norms) decays to exactly 0.0 in float32 and a comparison with
    eager could not fail; measured statistics keep every layer's activations near unit scale.
    """
    def calibrated() -> torch.nn.Module:
        model = build()
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.reset_parameters()
                module.momentum = None  # a cumulative average: the one batch's statistics
        model.train()
        with torch.no_grad():
            model(**images(size)[1])
        return model.eval()
    return calibrated


def _tiny(name: str, **overrides: Any) -> Callable[[], torch.nn.Module]:
    return lambda: tiny_models.build(name, **overrides)


DEC = {**tiny_models.DECODER, "use_cache": False}
VIT = {"image_size": 32, "patch_size": 8, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
       "intermediate_size": 37}
MOE = {**DEC, "intermediate_size": 32}
ENC = tiny_models.BERTISH


def decoder(name: str, build: Callable[[], torch.nn.Module], atol: float = 1e-4) -> Case:
    return Case(name, "decoder", build, text, TEXT_SIZES, TEXT_DYNAMIC, atol=atol)


def encoder(name: str, build: Callable[[], torch.nn.Module]) -> Case:
    return Case(name, "encoder", build, text, TEXT_SIZES, TEXT_DYNAMIC)


BATCH_HW = {"pixel_values": {0: "batch_size", 2: "height", 3: "width"}}
BATCH = {"pixel_values": {0: "batch_size"}}


def vision(name: str, build: Callable[[], torch.nn.Module], sizes: tuple[Any, Any],
           dynamic: Any = BATCH_HW, atol: float = 1e-4) -> Case:
    return Case(name, "vision", build, images, sizes, dynamic, atol=atol)


# -- diffusers and torch.nn modules ----------------------------------------------------------------
class _Unet(torch.nn.Module):
    """diffusers ``UNet2DConditionModel`` (2 blocks, cross-attention), ``return_dict=False``."""

    def __init__(self) -> None:
        super().__init__()
        import diffusers  # optional heavy dependency (test extra)

        torch.manual_seed(0)
        self.unet: Any = diffusers.UNet2DConditionModel(
            sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(16, 32),
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=16, attention_head_dim=4, norm_num_groups=8,
        )
        self.eval()  # the UNet is a submodule

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor, encoder_hidden_states: torch.Tensor) -> Any:
        return self.unet(sample, timestep, encoder_hidden_states, return_dict=False)[0]


def unet_inputs(size: tuple[int, int, int, int]) -> Inputs:
    batch, height, width, tokens = size
    g = _gen(*size)
    return (torch.randn(batch, 4, height, width, generator=g), torch.tensor([10.0] * batch),
            torch.randn(batch, tokens, 16, generator=g)), {}


class _Unet1d(torch.nn.Module):
    """diffusers ``UNet1DModel``: its skips are concatenated with down- and up-sampled copies, so the
    length must be a multiple of 8 (a guard, warned; session 37: was "only supports size 32")."""

    def __init__(self) -> None:
        super().__init__()
        import diffusers  # optional heavy dependency (test extra)

        torch.manual_seed(0)
        self.unet: Any = diffusers.UNet1DModel(sample_size=32, in_channels=2, out_channels=2,
                                               block_out_channels=(32, 32, 64), extra_in_channels=64)
        self.eval()

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        return self.unet(sample, timestep, return_dict=False)[0]


def unet1d_inputs(size: tuple[int, int]) -> Inputs:
    batch, length = size
    return (torch.randn(batch, 2, length, generator=_gen(*size)), torch.tensor([10] * batch)), {}


class _LtxVideo(torch.nn.Module):
    """diffusers ``LTXVideoTransformer3DModel`` (one layer, a 2x4x4 latent video): its
    ``temb.view(batch_size, -1, D)`` is a mismatch of symbolic sizes under size-oblivious capture,
    captured again with torch.export's size rule (session 37)."""

    def __init__(self) -> None:
        super().__init__()
        import diffusers  # optional heavy dependency (test extra)

        torch.manual_seed(0)
        self.transformer: Any = diffusers.LTXVideoTransformer3DModel(
            in_channels=4, out_channels=4, patch_size=1, patch_size_t=1, num_attention_heads=2, attention_head_dim=8,
            cross_attention_dim=16, num_layers=1, caption_channels=16)
        self.eval()

    def forward(self, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor, timestep: torch.Tensor,
                encoder_attention_mask: torch.Tensor) -> torch.Tensor:
        return self.transformer(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                                timestep=timestep, encoder_attention_mask=encoder_attention_mask, num_frames=2,
                                height=4, width=4, return_dict=False)[0]


def ltx_inputs(size: tuple[int, int]) -> Inputs:
    batch, tokens = size
    g = _gen(*size)
    return (torch.randn(batch, 32, 4, generator=g), torch.randn(batch, tokens, 16, generator=g),
            torch.tensor([10] * batch), torch.ones(batch, tokens, dtype=torch.long)), {}


class _Vae(torch.nn.Module):
    """diffusers ``AutoencoderKL`` forward (encode → posterior mode → decode)."""

    def __init__(self) -> None:
        super().__init__()
        import diffusers  # optional heavy dependency (test extra)

        torch.manual_seed(0)
        self.vae: Any = diffusers.AutoencoderKL(
            in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 32), layers_per_block=1,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), norm_num_groups=8, sample_size=16,
        )
        self.eval()  # the VAE is a submodule

    def forward(self, sample: torch.Tensor) -> torch.Tensor:
        return self.vae(sample, return_dict=False)[0]


class _Recurrent(torch.nn.Module):
    """``nn.LSTM`` / ``nn.GRU`` (2 layers, bidirectional, batch_first) with its final state."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.rnn = getattr(torch.nn, kind)(8, 16, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x: torch.Tensor) -> Any:
        return self.rnn(x)


class _Seq2SeqTransformer(torch.nn.Module):
    """``nn.Transformer`` (batch_first) with a causal target mask."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.model = torch.nn.Transformer(
            d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32,
            dropout=0.0, batch_first=True,
        ).eval()

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        mask = torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.model(src, tgt, tgt_mask=mask, tgt_is_causal=True)


class _Encoder(torch.nn.Module):
    """``nn.TransformerEncoder`` (2 pre-norm layers, batch_first)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)


class _Mha(torch.nn.Module):
    """``nn.MultiheadAttention`` self-attention returning the averaged attention weights too."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()

    def forward(self, x: torch.Tensor) -> Any:
        return self.mha(x, x, x)


def sequence(name: str, features: int) -> Callable[[Any], Inputs]:
    def make(size: tuple[int, int]) -> Inputs:
        return (), {name: torch.randn(size[0], size[1], features, generator=_gen(*size))}
    return make


def _two(names: tuple[str, str], features: int) -> Callable[[Any], Inputs]:
    def make(size: tuple[int, int, int]) -> Inputs:
        batch, s1, s2 = size
        g = _gen(*size)
        return (torch.randn(batch, s1, features, generator=g), torch.randn(batch, s2, features, generator=g)), {}
    return make


SEQ = {0: "batch_size", 1: "sequence_length"}

# -- the list ---------------------------------------------------------------------------------------

CASES: list[Case] = [
    # decoder LLMs: dense, sliding window, mixture of experts
    decoder("gpt2", _tiny("gpt2", use_cache=False)),
    decoder("llama", _tiny("llama", use_cache=False)),
    decoder("mistral-sliding", _tiny("mistral", use_cache=False, sliding_window=4)),
    decoder("qwen2", _tiny("qwen2", use_cache=False)),
    decoder("qwen3", _tiny("qwen3", use_cache=False)),
    decoder("gemma", _tiny("gemma", use_cache=False)),
    decoder("gemma2-sliding", _hf("Gemma2Config", "Gemma2ForCausalLM", **DEC, head_dim=8, sliding_window=4,
                                   initializer_range=0.2)),
    decoder("gemma3-sliding", _hf("Gemma3TextConfig", "Gemma3ForCausalLM", **DEC, head_dim=8, sliding_window=4,
                                   initializer_range=0.2)),
    decoder("phi3", _hf("Phi3Config", "Phi3ForCausalLM", **DEC)),
    decoder("opt", _tiny("opt", use_cache=False)),
    decoder("gpt-neox", _hf("GPTNeoXConfig", "GPTNeoXForCausalLM", vocab_size=VOCAB, hidden_size=32,
                            num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                            max_position_embeddings=64, use_cache=False)),
    decoder("phi", _hf("PhiConfig", "PhiForCausalLM", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, max_position_embeddings=64, use_cache=False)),
    decoder("starcoder2", _hf("Starcoder2Config", "Starcoder2ForCausalLM", **DEC, sliding_window=4)),
    decoder("mixtral-moe", _hf("MixtralConfig", "MixtralForCausalLM", **MOE, num_local_experts=4,
                               num_experts_per_tok=2)),
    decoder("mixtral-moe-eager-loop", lambda: _eager_experts(_hf(
        "MixtralConfig", "MixtralForCausalLM", **MOE, num_local_experts=4, num_experts_per_tok=2)())),
    decoder("qwen2-moe", _hf("Qwen2MoeConfig", "Qwen2MoeForCausalLM", **MOE, num_experts=4, num_experts_per_tok=2,
                             moe_intermediate_size=16, shared_expert_intermediate_size=32)),
    decoder("qwen3-moe", _hf("Qwen3MoeConfig", "Qwen3MoeForCausalLM", **MOE, head_dim=8, num_experts=4,
                             num_experts_per_tok=2, moe_intermediate_size=16)),
    decoder("olmoe", _hf("OlmoeConfig", "OlmoeForCausalLM", **MOE, num_experts=4, num_experts_per_tok=2)),
    decoder("deepseek-v3", _hf("DeepseekV3Config", "DeepseekV3ForCausalLM", **{**MOE, "num_key_value_heads": 4},
                               n_routed_experts=4,
                               num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=1,
                               first_k_dense_replace=1, n_group=2, topk_group=1, kv_lora_rank=16,
                               q_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8)),
    # encoders
    encoder("bert", _tiny("bert")),
    encoder("roberta", _tiny("roberta")),
    encoder("distilbert", _tiny("distilbert")),
    encoder("electra", _tiny("electra")),
    encoder("albert", _tiny("albert")),
    encoder("mpnet", _tiny("mpnet")),
    encoder("deberta-v2", _hf("DebertaV2Config", "DebertaV2Model", **ENC)),
    encoder("xlm-roberta", _hf("XLMRobertaConfig", "XLMRobertaModel", **ENC, pad_token_id=1)),
    # vision: CNNs at any resolution, ViTs at their configured one. initializer_range (default 0.02)
    # is raised where the default weights shrink the outputs to ~1e-8 (DPT) or ~1e-3 (SegFormer), so
    # the comparison with eager at atol 1e-4 could not fail; outputs are O(1) with these values.
    vision("resnet", _tiny("resnet"), ((2, 32, 32), (3, 40, 48))),
    vision("convnext", _tiny("convnext"), ((2, 32, 32), (3, 40, 48))),
    vision("mobilenet-v2", _calibrated(_hf("MobileNetV2Config", "MobileNetV2ForImageClassification",
                                           depth_multiplier=0.35, image_size=32, num_labels=5), (8, 32, 32)),
           ((2, 32, 32), (3, 40, 48))),
    # hidden_dim must equal round_filters(1280) (the top conv's channels): 128 at width 0.1
    vision("efficientnet", _calibrated(_hf("EfficientNetConfig", "EfficientNetForImageClassification",
                                           width_coefficient=0.1, depth_coefficient=0.1, image_size=32,
                                           hidden_dim=128, num_labels=5), (8, 32, 32)),
           ((2, 32, 32), (3, 40, 48))),
    vision("vit", _tiny("vit"), ((2, 32, 32), (3, 32, 32)), BATCH),
    vision("dinov2", _hf("Dinov2Config", "Dinov2Model", image_size=32, patch_size=8, hidden_size=32,
                         num_hidden_layers=2, num_attention_heads=4, intermediate_size=37),
           ((2, 32, 32), (3, 40, 48))),
    vision("swin", _hf("SwinConfig", "SwinForImageClassification", image_size=32, patch_size=4, embed_dim=16,
                       depths=[1, 1], num_heads=[2, 2], window_size=4, num_labels=5),
           ((2, 32, 32), (3, 41, 52))),
    vision("segformer", _hf("SegformerConfig", "SegformerForSemanticSegmentation", num_encoder_blocks=2,
                            depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], num_attention_heads=[1, 2],
                            decoder_hidden_size=32, num_labels=3, initializer_range=0.2),
           ((2, 32, 32), (3, 40, 48))),
    vision("dpt-depth", _hf("DPTConfig", "DPTForDepthEstimation", image_size=32, patch_size=8, hidden_size=32,
                            num_hidden_layers=4, num_attention_heads=4, intermediate_size=37,
                            backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[8, 16, 32, 32],
                            fusion_hidden_size=16, head_hidden_size=8, initializer_range=0.13),
           ((2, 32, 32), (3, 48, 48))),  # square: its neck reshapes to sqrt(patches) per side
    vision("detr", _hf("DetrConfig", "DetrForObjectDetection", use_timm_backbone=False, use_pretrained_backbone=False,
                       backbone_config={"model_type": "resnet", "embedding_size": 16, "hidden_sizes": [16, 32],
                                        "depths": [1, 1], "out_features": ["stage2"]},
                       d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                       decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, num_queries=5,
                       num_labels=3), ((2, 64, 64), (3, 80, 96))),
    vision("yolos", _hf("YolosConfig", "YolosForObjectDetection", image_size=[32, 32], patch_size=8,
                        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                        num_detection_tokens=5, num_labels=3), ((2, 32, 32), (3, 32, 32)), BATCH),
    # audio
    Case("whisper-encoder", "audio", lambda: tiny_models.build("whisper").get_encoder(),
         tensor_input("input_features", 16), ((2, 32), (3, 32)), {"input_features": {0: "batch_size"}}),
    Case("wav2vec2", "audio", _hf("Wav2Vec2Config", "Wav2Vec2Model", hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=37, conv_dim=(16, 16),
                                  conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                  num_conv_pos_embedding_groups=4),
         lambda size: ((), {"input_values": torch.randn(*size, generator=_gen(*size))}),
         ((2, 400), (3, 560)), {"input_values": SEQ}),
    Case("hubert", "audio", _hf("HubertConfig", "HubertModel", hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=37, conv_dim=(16, 16),
                                conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                num_conv_pos_embedding_groups=4),
         lambda size: ((), {"input_values": torch.randn(*size, generator=_gen(*size))}),
         ((2, 400), (3, 560)), {"input_values": SEQ}),
    # state-space and hybrid
    Case("mamba", "ssm", _hf("MambaConfig", "MambaForCausalLM", vocab_size=VOCAB, hidden_size=32,
                             num_hidden_layers=2, state_size=8, use_cache=False),
         ids_only, TEXT_SIZES, IDS_DYNAMIC),
    Case("mamba2", "ssm", _hf("Mamba2Config", "Mamba2ForCausalLM", vocab_size=VOCAB, hidden_size=32,
                              num_hidden_layers=2, state_size=8, expand=2, n_groups=1, head_dim=8, num_heads=8,
                              chunk_size=4, use_cache=False),
         ids_only, TEXT_SIZES, IDS_DYNAMIC),
    Case("jamba", "ssm", _hf("JambaConfig", "JambaForCausalLM", **MOE, num_experts=4, num_experts_per_tok=2,
                             attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1,
                             mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4,
                             use_mamba_kernels=False),
         text, TEXT_SIZES, TEXT_DYNAMIC),
    Case("bamba", "ssm", _hf("BambaConfig", "BambaForCausalLM", **DEC, attn_layer_indices=[1], mamba_n_heads=8,
                             mamba_d_head=8, mamba_n_groups=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2,
                             mamba_chunk_size=4),
         text, TEXT_SIZES, TEXT_DYNAMIC),
    # diffusion
    Case("unet2d-condition", "diffusion", _Unet, unet_inputs, ((2, 8, 8, 5), (3, 9, 13, 7)),
         ({0: "batch_size", 2: "height", 3: "width"}, {0: "batch_size"},
          {0: "batch_size", 1: "sequence_length"})),
    Case("autoencoder-kl", "diffusion", _Vae, lambda size: ((images(size)[1]["pixel_values"],), {}),
         ((2, 16, 16), (3, 24, 32)), ({0: "batch_size", 2: "height", 3: "width"},)),
    Case("unet1d", "diffusion", _Unet1d, unet1d_inputs, ((2, 32), (3, 64)),
         ({0: "batch_size", 2: "length"}, {0: "batch_size"})),
    Case("ltx-video", "diffusion", _LtxVideo, ltx_inputs, ((2, 5), (3, 7)),
         ({0: "batch_size"}, {0: "batch_size", 1: "sequence_length"}, {0: "batch_size"},
          {0: "batch_size", 1: "sequence_length"})),
    # torch.nn
    Case("nn.LSTM", "torch.nn", lambda: _Recurrent("LSTM").eval(), sequence("x", 8), ((2, 7), (3, 12)), {"x": SEQ}),
    Case("nn.GRU", "torch.nn", lambda: _Recurrent("GRU").eval(), sequence("x", 8), ((2, 7), (3, 12)), {"x": SEQ}),
    Case("nn.TransformerEncoder", "torch.nn", _Encoder, sequence("x", 16), ((2, 7), (3, 12)), {"x": SEQ}),
    Case("nn.Transformer", "torch.nn", _Seq2SeqTransformer, _two(("src", "tgt"), 16), ((2, 7, 5), (3, 12, 6)),
         {"src": SEQ, "tgt": {0: "batch_size", 1: "target_sequence_length"}}),
    Case("nn.MultiheadAttention", "torch.nn", _Mha, sequence("x", 16), ((2, 7), (3, 12)), {"x": SEQ}),
    # more families (ALiBi decoders, parallel blocks, encoders with local/relative attention,
    # CLIP/SigLIP towers, hierarchical and relative-bias ViTs, pyramid-pooling segmentation,
    # conditional DETR, WavLM's gated relative bias, spectrogram transformers)
    decoder("bloom", _hf("BloomConfig", "BloomForCausalLM", vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4,
                         use_cache=False)),
    decoder("falcon", _hf("FalconConfig", "FalconForCausalLM", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, use_cache=False)),
    decoder("gptj", _hf("GPTJConfig", "GPTJForCausalLM", vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                        rotary_dim=4, n_positions=64, bos_token_id=1, eos_token_id=2, use_cache=False)),
    decoder("mpt", _hf("MptConfig", "MptForCausalLM", vocab_size=VOCAB, d_model=32, n_layers=2, n_heads=4,
                       max_seq_len=64, use_cache=False)),
    decoder("cohere", _hf("CohereConfig", "CohereForCausalLM", **DEC)),
    decoder("olmo2", _hf("Olmo2Config", "Olmo2ForCausalLM", **DEC)),
    encoder("modernbert", _hf("ModernBertConfig", "ModernBertModel", vocab_size=VOCAB, hidden_size=32,
                              num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                              max_position_embeddings=64, local_attention=4, global_attn_every_n_layers=2,
                              pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2)),
    encoder("t5-encoder", _hf("T5Config", "T5EncoderModel", vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37,
                              num_layers=2, num_heads=4)),
    encoder("clip-text", _hf("CLIPTextConfig", "CLIPTextModel", vocab_size=VOCAB, hidden_size=32,
                             num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                             max_position_embeddings=64)),
    vision("siglip-vision", _hf("SiglipVisionConfig", "SiglipVisionModel", **VIT), ((2, 32, 32), (3, 32, 32)), BATCH),
    vision("beit", _hf("BeitConfig", "BeitModel", **VIT, use_relative_position_bias=True),
           ((2, 32, 32), (3, 32, 32)), BATCH),
    vision("levit", _calibrated(_hf("LevitConfig", "LevitModel", image_size=32, hidden_sizes=[16, 24, 32],
                                    num_attention_heads=[1, 2, 2], depths=[1, 1, 1], key_dim=[8, 8, 8]),
                                (8, 32, 32)), ((2, 32, 32), (3, 32, 32)), BATCH),
    vision("pvt-v2", _hf("PvtV2Config", "PvtV2Model", hidden_sizes=[8, 16], depths=[1, 1], num_encoder_blocks=2,
                         num_attention_heads=[1, 2], sr_ratios=[2, 1], mlp_ratios=[2, 2], patch_sizes=[7, 3],
                         strides=[4, 2]), ((2, 32, 32), (3, 40, 48))),
    vision("upernet", _hf("UperNetConfig", "UperNetForSemanticSegmentation",
                          backbone_config={"model_type": "convnext", "hidden_sizes": [8, 16, 16, 16],
                                           "depths": [1, 1, 1, 1],
                                           "out_features": ["stage1", "stage2", "stage3", "stage4"]},
                          hidden_size=16, auxiliary_in_channels=16, num_labels=3, initializer_range=0.2),
           ((2, 64, 64), (3, 96, 128))),
    vision("conditional-detr", _hf("ConditionalDetrConfig", "ConditionalDetrForObjectDetection",
                                   use_timm_backbone=False, use_pretrained_backbone=False,
                                   backbone_config={"model_type": "resnet", "embedding_size": 16,
                                                    "hidden_sizes": [16, 32], "depths": [1, 1],
                                                    "out_features": ["stage2"]},
                                   d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                                   decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37,
                                   num_queries=5, num_labels=3), ((2, 64, 64), (3, 80, 96))),
    Case("wavlm", "audio", _hf("WavLMConfig", "WavLMModel", hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=4, intermediate_size=37, conv_dim=(8, 8), conv_stride=(5, 2),
                               conv_kernel=(10, 3), num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2),
         lambda size: ((), {"input_values": torch.randn(*size, generator=_gen(*size))}),
         ((2, 400), (3, 640)), {"input_values": SEQ}),
    # Longformer's sliding chunks: as_strided with sizes and strides symbolic in the batch (its
    # sequence dim turns sizes into tensors: torch.export cannot capture it dynamic)
    Case("longformer", "encoder", _hf("LongformerConfig", "LongformerModel", **ENC, attention_window=4,
                                      pad_token_id=1), text, ((2, 8), (3, 8)),
         {"input_ids": {0: "batch_size"}, "attention_mask": {0: "batch_size"}}),
    Case("ast", "audio", _hf("ASTConfig", "ASTModel", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=37, num_mel_bins=16, max_length=32, patch_size=16,
                             frequency_stride=8, time_stride=8),
         lambda size: ((), {"input_values": torch.randn(size[0], 32, 16, generator=_gen(*size))}),
         ((2, 32), (3, 32)), {"input_values": {0: "batch_size"}}),
]
BY_NAME = {c.name: c for c in CASES}
# The CI subset (tests/models/test_zoo.py without -m slow): the grouped_mm MoE and quick cases of
# four families. Mamba2's padded chunk view and the MoE ops also have small tests in tests/translate.
FAST = ("bert", "mixtral-moe", "resnet", "whisper-encoder", "nn.TransformerEncoder")


def _eager_experts(model: torch.nn.Module) -> torch.nn.Module:
    model.set_experts_implementation("eager")  # type: ignore[operator]
    return model


# -- running ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class Result:
    """One case with one exporter.

    Attributes:
        export_seconds: Wall time of the export call (capture to ONNX model).
        nodes: Nodes of the main graph.
        max_diff: Largest |onnxruntime − eager| over outputs and both sizes.
        error: ``None`` when both sizes match eager, else the first line of what went wrong
            (``"export: ..."``, ``"size 2: ..."``).
    """

    case: str
    exporter: str
    export_seconds: float = 0.0
    nodes: int = 0
    max_diff: float = 0.0
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None


def eager(model: torch.nn.Module, inputs: Inputs) -> list[torch.Tensor]:
    """The model's tensor outputs in pytree order."""
    args, kwargs = inputs
    with torch.no_grad():
        out = model(*args, **kwargs)
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def compare(case: Case, actual: Sequence[Any], expected: Sequence[torch.Tensor]) -> float:
    """Largest abs difference; raises ``AssertionError`` on a count, shape, dtype or value mismatch."""
    assert len(actual) == len(expected), f"{len(actual)} outputs, eager has {len(expected)}"
    worst = 0.0
    for i, (a, e) in enumerate(zip(actual, expected)):
        a = torch.as_tensor(a)
        assert tuple(a.shape) == tuple(e.shape), f"output {i}: shape {tuple(a.shape)}, eager {tuple(e.shape)}"
        assert a.dtype == e.dtype, f"output {i}: dtype {a.dtype}, eager {e.dtype}"
        if not e.numel():
            continue
        if not e.is_floating_point():
            assert torch.equal(a, e), f"output {i}: {int((a != e).sum())} values differ"
            continue
        diff = float((a.double() - e.double()).abs().max())
        bound = case.atol + case.rtol * float(e.abs().max())
        assert diff <= bound, f"output {i}: max abs diff {diff:.3g} > {bound:.3g}"
        worst = max(worst, diff)
    return worst


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:300] if text else ''}"


def export_onnxport(model: torch.nn.Module, case: Case, inputs: Inputs) -> tuple[Callable[..., Any], int]:
    program = export_program(model, inputs[0], inputs[1], dynamic_shapes=case.dynamic_shapes)
    return program, len(program.model.graph)


def export_torch_onnx(model: torch.nn.Module, case: Case, inputs: Inputs) -> tuple[Callable[..., Any], int]:
    """``torch.onnx.export(dynamo=True)`` with the same dynamic dims (``Dim.DYNAMIC``, as strings
    name dims only in torch.onnx's ``dynamic_shapes`` since 2.6)."""

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, inputs[0], kwargs=inputs[1], dynamic_shapes=case.dynamic_shapes,
                                    dynamo=True, verbose=False)
    assert program is not None
    return program, len(program.model.graph)


EXPORTERS: dict[str, Callable[[torch.nn.Module, Case, Inputs], tuple[Callable[..., Any], int]]] = {
    "onnxport": export_onnxport,
    "torch.onnx": export_torch_onnx,
}


def run(case: Case, exporter: str = "onnxport") -> Result:
    """Build, export at the first size, run in onnxruntime at both sizes and compare with eager.

    Never raises for a model failure: the :class:`Result` carries the first error line.
    """
    result = Result(case.name, exporter)
    try:
        model = case.build()
        first = case.inputs(case.sizes[0])
    except Exception as e:  # a broken case (config) is reported, not raised
        result.error = f"build: {_first_line(e)}"
        return result
    start = time.perf_counter()
    try:
        program, result.nodes = EXPORTERS[exporter](model, case, first)
    except Exception as e:
        result.export_seconds = time.perf_counter() - start
        result.error = f"export: {_first_line(e)}"
        return result
    result.export_seconds = time.perf_counter() - start
    for index, size in enumerate(case.sizes, 1):
        inputs = first if index == 1 else case.inputs(size)
        try:
            actual = program(*inputs[0], **inputs[1])
            result.max_diff = max(result.max_diff, compare(case, actual, eager(model, inputs)))
        except Exception as e:
            result.error = f"size {index} {size}: {_first_line(e)}"
            return result
    return result
