"""Small-config transformers models with random weights, one per (architecture, task): the one
table the tests, the benchmarks (``bench/models.py``) and ``tests/hf/zoo.py`` build their models from.

Each :class:`Entry` builds a deterministic model (``torch.manual_seed(0)``) in eval mode with no network
access. ``build(name, **overrides)`` changes config fields for one use (``use_cache=False``, ...).
Needs ``transformers``; imported lazily.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

VOCAB = 99
TEXT = {"vocab_size": VOCAB, "max_position_embeddings": 64}
BERTISH = {
    **TEXT,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
}
DECODER = {
    **TEXT,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 64,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}


@dataclasses.dataclass(frozen=True)
class Entry:
    """One model: ``build(**overrides)`` returns a transformers model with random weights."""

    name: str
    task: str
    build: Callable[..., Any]


def _make(config_class: str, model_class: str, **kwargs: Any) -> Callable[..., Any]:
    def build(**overrides: Any) -> Any:
        import transformers  # heavy optional dependency (onnxport[hf])

        torch.manual_seed(0)
        config = getattr(transformers, config_class)(**{**kwargs, **overrides})
        return getattr(transformers, model_class)(config).eval()

    return build


ZOO = [
    Entry("bert", "feature-extraction", _make("BertConfig", "BertModel", **BERTISH)),
    Entry("bert-mlm", "fill-mask", _make("BertConfig", "BertForMaskedLM", **BERTISH)),
    Entry(
        "distilbert",
        "text-classification",
        _make(
            "DistilBertConfig",
            "DistilBertForSequenceClassification",
            vocab_size=VOCAB,
            dim=32,
            n_layers=2,
            n_heads=4,
            hidden_dim=37,
            max_position_embeddings=64,
        ),
    ),
    Entry(
        "roberta",
        "token-classification",
        _make("RobertaConfig", "RobertaForTokenClassification", **BERTISH, pad_token_id=1),
    ),
    Entry(
        "electra",
        "question-answering",
        _make("ElectraConfig", "ElectraForQuestionAnswering", **BERTISH, embedding_size=16),
    ),
    Entry(
        "albert",
        "fill-mask",
        _make("AlbertConfig", "AlbertForMaskedLM", **BERTISH, embedding_size=16),
    ),
    Entry("mpnet", "feature-extraction", _make("MPNetConfig", "MPNetModel", **BERTISH)),
    Entry(
        "vit",
        "image-classification",
        _make(
            "ViTConfig",
            "ViTForImageClassification",
            image_size=32,
            patch_size=8,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            num_labels=5,
        ),
    ),
    Entry(
        "resnet",
        "image-classification",
        _make(
            "ResNetConfig",
            "ResNetForImageClassification",
            embedding_size=16,
            hidden_sizes=[16, 32],
            depths=[1, 1],
            num_labels=5,
        ),
    ),
    # shifted windows over 3 stages, the last one window at the configured 64x64 (capture/windows.py)
    Entry("swin", "image-classification", _make(
        "SwinConfig", "SwinForImageClassification", image_size=64, patch_size=4, embed_dim=16, depths=[2, 2, 2],
        num_heads=[1, 2, 2], window_size=4, num_labels=5,
    )),
    Entry(
        "convnext",
        "image-classification",
        _make(
            "ConvNextConfig",
            "ConvNextForImageClassification",
            num_stages=2,
            hidden_sizes=[16, 32],
            depths=[1, 1],
            num_labels=5,
        ),
    ),
    Entry(
        "gpt2",
        "text-generation",
        _make(
            "GPT2Config",
            "GPT2LMHeadModel",
            vocab_size=VOCAB,
            n_embd=32,
            n_layer=2,
            n_head=4,
            n_positions=64,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        ),
    ),
    Entry("llama", "text-generation", _make("LlamaConfig", "LlamaForCausalLM", **DECODER)),
    Entry(
        "mistral",
        "text-generation",
        _make("MistralConfig", "MistralForCausalLM", **DECODER, sliding_window=None),
    ),
    Entry("qwen2", "text-generation", _make("Qwen2Config", "Qwen2ForCausalLM", **DECODER)),
    Entry(
        "qwen3", "text-generation", _make("Qwen3Config", "Qwen3ForCausalLM", **DECODER, head_dim=8)
    ),
    Entry(
        "gemma",
        "text-generation",
        _make("GemmaConfig", "GemmaForCausalLM", **DECODER, head_dim=8, initializer_range=0.2),
    ),
    Entry(
        "opt",
        "text-generation",
        _make(
            "OPTConfig",
            "OPTForCausalLM",
            vocab_size=VOCAB,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            ffn_dim=37,
            word_embed_proj_dim=32,
            max_position_embeddings=64,
            init_std=0.2,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        ),
    ),
    Entry(
        "t5",
        "text2text-generation",
        _make(
            "T5Config",
            "T5ForConditionalGeneration",
            vocab_size=VOCAB,
            d_model=32,
            d_kv=8,
            d_ff=37,
            num_layers=2,
            num_heads=4,
            decoder_start_token_id=0,
            pad_token_id=0,
            eos_token_id=1,
            initializer_factor=3.0,
        ),
    ),
    Entry(
        "bart",
        "text2text-generation",
        _make(
            "BartConfig",
            "BartForConditionalGeneration",
            vocab_size=VOCAB,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=37,
            decoder_ffn_dim=37,
            max_position_embeddings=64,
            bos_token_id=0,
            pad_token_id=1,
            eos_token_id=2,
            decoder_start_token_id=2,
            forced_eos_token_id=None,
            init_std=0.2,
        ),
    ),
    Entry(
        "whisper",
        "automatic-speech-recognition",
        _make(
            "WhisperConfig",
            "WhisperForConditionalGeneration",
            vocab_size=VOCAB,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=37,
            decoder_ffn_dim=37,
            num_mel_bins=16,
            max_source_positions=16,
            max_target_positions=32,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
            decoder_start_token_id=1,
            begin_suppress_tokens=None,
            suppress_tokens=None,
            init_std=0.3,  # at the default 0.02 greedy decoding repeats the start token
        ),
    ),
    # a raw 16 kHz waveform of any length into the encoder (input_values), no mask
    Entry("moonshine", "automatic-speech-recognition", _make(
        "MoonshineConfig", "MoonshineForConditionalGeneration", vocab_size=VOCAB, hidden_size=32, intermediate_size=37,
        encoder_num_hidden_layers=2, decoder_num_hidden_layers=2, encoder_num_attention_heads=4,
        decoder_num_attention_heads=4, encoder_num_key_value_heads=4, decoder_num_key_value_heads=4,
        bos_token_id=1, eos_token_id=2, pad_token_id=0, decoder_start_token_id=1, initializer_range=0.3,
    )),
]
# Image, audio and multimodal tasks, and encoder-decoders whose architecture names no task by
# its suffix (MarianMTModel): inferred from transformers' auto-class mappings.
VISION = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
          "image_size": 32, "patch_size": 8}  # fmt: skip
WAVEFORM = {"vocab_size": VOCAB, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
            "intermediate_size": 37, "conv_dim": (16, 16), "conv_stride": (5, 2), "conv_kernel": (10, 3),
            "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 2}  # fmt: skip
SEQ2SEQ = {"vocab_size": VOCAB, "d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
           "decoder_attention_heads": 4, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37, "max_position_embeddings": 64,
           "bos_token_id": 0, "eos_token_id": 2, "init_std": 0.2}  # fmt: skip
ZOO += [
    Entry("vit-features", "feature-extraction", _make("ViTConfig", "ViTModel", **VISION)),
    Entry("wav2vec2-ctc", "automatic-speech-recognition", _make("Wav2Vec2Config", "Wav2Vec2ForCTC", **WAVEFORM)),
    Entry("wav2vec2-audio", "audio-classification",
          _make("Wav2Vec2Config", "Wav2Vec2ForSequenceClassification", **WAVEFORM, num_labels=3)),
    # spectrogram input_features (batch, frames, features): w2v-BERT 2.0 and NVIDIA Parakeet CTC
    Entry("w2v-bert-ctc", "automatic-speech-recognition", _make(
        "Wav2Vec2BertConfig", "Wav2Vec2BertForCTC", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=37, feature_projection_input_dim=24, conv_depthwise_kernel_size=5,
    )),
    Entry("parakeet-ctc", "automatic-speech-recognition", _make(
        "ParakeetCTCConfig", "ParakeetForCTC", vocab_size=VOCAB, pad_token_id=VOCAB - 1, encoder_config={
            "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
            "conv_kernel_size": 5, "subsampling_conv_channels": 8, "num_mel_bins": 16,
        },
    )),
    # Whisper's encoder on (batch, num_mel_bins, 2 * max_source_positions) features
    Entry("whisper-audio", "audio-classification", _make(
        "WhisperConfig", "WhisperForAudioClassification", d_model=32, encoder_layers=2, encoder_attention_heads=4,
        encoder_ffn_dim=37, num_mel_bins=16, max_source_positions=24, num_labels=3,
    )),
    Entry("ast", "audio-classification", _make(
        "ASTConfig", "ASTForAudioClassification", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=37, patch_size=16, frequency_stride=10, time_stride=10, max_length=64, num_mel_bins=32,
    )),
    Entry("detr", "object-detection", _make(
        "DetrConfig", "DetrForObjectDetection", use_timm_backbone=False, use_pretrained_backbone=False,
        backbone_config={"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1],
                         "out_features": ["stage2"]},
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=37, decoder_ffn_dim=37, num_queries=5,
    )),
    # ResNet backbone of output stride 32, hybrid encoder, query selection by topk over anchors (random
    # weights: the masked anchors tie); runs at sides that are multiples of 32 only
    Entry("rt-detr", "object-detection", _make(
        "RTDetrConfig", "RTDetrForObjectDetection", use_pretrained_backbone=False,
        backbone_config={"model_type": "rt_detr_resnet", "embedding_size": 8, "hidden_sizes": [8, 16, 16, 16],
                         "depths": [1, 1, 1, 1], "out_features": ["stage2", "stage3", "stage4"], "layer_type": "basic"},
        encoder_in_channels=[16, 16, 16], encoder_hidden_dim=16, d_model=16, encoder_ffn_dim=32, decoder_ffn_dim=32,
        num_queries=12, decoder_layers=1, encoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
        num_labels=3, decoder_n_points=2, decoder_in_channels=[16, 16, 16], hidden_expansion=0.5,
    )),
    # DETR with its panoptic mask head: logits, pred_boxes and pred_masks at a quarter of the image
    Entry("detr-panoptic", "image-segmentation", _make(
        "DetrConfig", "DetrForSegmentation", use_timm_backbone=False, use_pretrained_backbone=False,
        backbone_config={"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 16, 16, 16], "depths": [1, 1, 1, 1],
                         "out_features": ["stage1", "stage2", "stage3", "stage4"]},
        d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=8, decoder_attention_heads=8,
        encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=5,
    )),
    # mask classification over a ResNet: class_queries_logits, masks_queries_logits
    Entry("maskformer", "image-segmentation", _make(
        "MaskFormerConfig", "MaskFormerForInstanceSegmentation", fpn_feature_size=32, mask_feature_size=32, num_queries=5,
        num_labels=3, backbone_config={"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 16, 16, 16],
                                       "depths": [1, 1, 1, 1], "out_features": ["stage1", "stage2", "stage3", "stage4"]},
        decoder_config={"model_type": "detr", "d_model": 16, "encoder_layers": 1, "decoder_layers": 1,
                        "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32,
                        "decoder_ffn_dim": 32, "num_queries": 5},
    )),
    # masked attention over a multi-scale deformable pixel decoder whose spatial shapes and reference
    # points are built from the feature maps' sizes (torch.as_tensor, torch.linspace)
    Entry("mask2former", "image-segmentation", _make(
        "Mask2FormerConfig", "Mask2FormerForUniversalSegmentation", use_pretrained_backbone=False,
        backbone_config={"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 16, 16, 16],
                         "depths": [1, 1, 1, 1], "out_features": ["stage1", "stage2", "stage3", "stage4"]},
        feature_size=32, mask_feature_size=32, hidden_dim=32, encoder_layers=1, decoder_layers=2, num_queries=5,
        encoder_feedforward_dim=32, dim_feedforward=32, num_attention_heads=2, num_labels=3,
    )),
    # super-resolution (2x) that runs only at sides in multiples of its window
    Entry("swin2sr", "image-to-image", _make(
        "Swin2SRConfig", "Swin2SRForImageSuperResolution", image_size=32, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
        window_size=4, upscale=2,
    )),
    # text-to-audio (MMS-TTS): noise drawn at inference (verified at its mean), a waveform whose
    # length the predicted durations set at run time
    Entry("vits", "text-to-audio", _make(
        "VitsConfig", "VitsModel", hidden_size=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=24, flow_size=8,
        spectrogram_bins=9, upsample_initial_channel=16, upsample_rates=[2, 2], upsample_kernel_sizes=[4, 4],
        resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1]], prior_encoder_num_wavenet_layers=1,
        posterior_encoder_num_wavenet_layers=1, prior_encoder_num_flows=1, duration_predictor_filter_channels=16,
        depth_separable_num_layers=1, duration_predictor_num_flows=1, vocab_size=30,
    )),
    Entry("segformer", "semantic-segmentation", _make(
        "SegformerConfig", "SegformerForSemanticSegmentation", num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
        hidden_sizes=[8, 16], num_attention_heads=[1, 2], decoder_hidden_size=16, patch_sizes=[7, 3], strides=[4, 2],
    )),
    # caches its attention biases in a dict on the module (attention_bias_cache), keyed by device
    Entry("levit", "image-classification", _make(
        "LevitConfig", "LevitForImageClassification", image_size=64, hidden_sizes=[16, 32, 48],
        num_attention_heads=[1, 2, 3], depths=[1, 1, 1], key_dim=[8, 8, 8], mlp_ratio=[2, 2, 2],
        attention_ratio=[2, 2, 2], num_labels=3,
    )),
    # DINOv2 backbone, DPT-style neck; the head resizes with int(patch_height * patch_size)
    Entry("depth-anything", "depth-estimation", _make(
        "DepthAnythingConfig", "DepthAnythingForDepthEstimation", reassemble_hidden_size=32, patch_size=14,
        neck_hidden_sizes=[8, 16, 16, 32], fusion_hidden_size=16, head_hidden_size=8,
        backbone_config={"model_type": "dinov2", "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
                         "intermediate_size": 37, "image_size": 56, "patch_size": 14,
                         "out_features": ["stage1", "stage2", "stage3", "stage4"], "reshape_hidden_states": False},
        initializer_range=0.1,  # at the default 0.02 the depth map is ~1e-8 (any graph is within atol), here ~1e-2
    )),
    Entry("clip", "zero-shot-image-classification", _make(
        "CLIPConfig", "CLIPModel", projection_dim=16, vision_config=VISION,
        text_config={**BERTISH, "max_position_embeddings": 64, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0},
    )),
    # text queries of one image → a box and a score per query for every patch (projection_dim is the
    # text width: the class head compares patch embeddings with the query embeddings)
    *(Entry(name, "zero-shot-object-detection", _make(
        config, arch, projection_dim=32,
        text_config={**BERTISH, "max_position_embeddings": 16, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0},
        vision_config={"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
                       "image_size": 64, "patch_size": 16},
    )) for name, config, arch in (("owlvit", "OwlViTConfig", "OwlViTForObjectDetection"),
                                  ("owlv2", "Owlv2Config", "Owlv2ForObjectDetection"))),
    Entry("bert-choice", "multiple-choice", _make("BertConfig", "BertForMultipleChoice", **BERTISH)),
    Entry("marian", "text2text-generation",
          _make("MarianConfig", "MarianMTModel", **SEQ2SEQ, pad_token_id=VOCAB - 1, decoder_start_token_id=VOCAB - 1)),
    Entry("m2m100", "text2text-generation",
          _make("M2M100Config", "M2M100ForConditionalGeneration", **SEQ2SEQ, pad_token_id=1, decoder_start_token_id=2)),
    Entry("nllb-moe", "text2text-generation",
          _make("NllbMoeConfig", "NllbMoeForConditionalGeneration", **SEQ2SEQ, pad_token_id=1, decoder_start_token_id=2,
                num_experts=4, expert_capacity=64, encoder_sparse_step=2, decoder_sparse_step=2)),
]  # fmt: skip


def _bert2bert(**overrides: Any) -> Any:
    """An ``EncoderDecoderModel`` of two BERTs (a composite config: the vocabulary is the parts')."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    bert: Any = transformers.BertConfig
    encoder = bert(**BERTISH)
    decoder = bert(**BERTISH, is_decoder=True, add_cross_attention=True)
    config = transformers.EncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id, config.pad_token_id = 1, 0
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.EncoderDecoderModel(config).eval()


def _trocr(**overrides: Any) -> Any:
    """A ``VisionEncoderDecoderModel`` of a ViT encoder and a TrOCR decoder (TrOCR, Donut)."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    vit: Any = transformers.ViTConfig
    trocr: Any = transformers.TrOCRConfig
    config = transformers.VisionEncoderDecoderConfig.from_encoder_decoder_configs(
        vit(**VISION), trocr(vocab_size=VOCAB, d_model=32, decoder_layers=2, decoder_attention_heads=4,
                             decoder_ffn_dim=37, max_position_embeddings=64, bos_token_id=0, eos_token_id=2,
                             pad_token_id=1, init_std=0.3),
    )  # fmt: skip
    config.decoder_start_token_id, config.pad_token_id, config.eos_token_id = 0, 1, 2
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.VisionEncoderDecoderModel(config).eval()


LLAVA_IMAGE_TOKEN = 100


def _llava(**overrides: Any) -> Any:
    """A ``LlavaForConditionalGeneration``: a 2-layer CLIP vision tower (32x32 images of 16 patches)
    and a 2-layer Llama whose random weights decode several distinct tokens; image token 100."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    text = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                                    num_key_value_heads=2, vocab_size=120, max_position_embeddings=256,
                                    initializer_range=0.2)
    vision = transformers.CLIPVisionConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                           num_attention_heads=4, image_size=32, patch_size=8)
    config = transformers.LlavaConfig(vision_config=vision, text_config=text, image_token_index=LLAVA_IMAGE_TOKEN,
                                      projector_hidden_act="gelu", vision_feature_layer=-1)
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.LlavaForConditionalGeneration(config).eval()


GEMMA3_IMAGE_TOKEN = 262


def _gemma3_vlm(**overrides: Any) -> Any:
    """A ``Gemma3ForConditionalGeneration``: a 2-layer SigLIP tower (32x32 images pooled to 4
    tokens) and a 2-layer Gemma 3 text model (a sliding-window layer, then a full one) whose image
    tokens (262) attend both ways on the first step (``token_type_ids``)."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    text = transformers.Gemma3TextConfig(
        hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, vocab_size=300, max_position_embeddings=256, sliding_window=8, initializer_range=0.02,
        layer_types=["sliding_attention", "full_attention"],
    )
    vision = transformers.SiglipVisionConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                             num_attention_heads=4, image_size=32, patch_size=8)
    config = transformers.Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                                       image_token_index=GEMMA3_IMAGE_TOKEN, boi_token_index=260, eoi_token_index=261)
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.Gemma3ForConditionalGeneration(config).eval()


SMOLVLM_IMAGE_TOKEN = 100


def _smolvlm(**overrides: Any) -> Any:
    """A ``SmolVLMForConditionalGeneration`` (Idefics3's architecture): a 2-layer SigLIP tower over
    32x32 image splits (16 patches, pixel-shuffled by 2 to 4 tokens per split) and a 2-layer Llama;
    image token 100."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 120, "max_position_embeddings": 256, "initializer_range": 0.2}
    vision = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
              "image_size": 32, "patch_size": 8}
    config = transformers.SmolVLMConfig(text_config=text, vision_config=vision, scale_factor=2,
                                        image_token_id=SMOLVLM_IMAGE_TOKEN)
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.SmolVLMForConditionalGeneration(config).eval()


QWEN2_VL_IMAGE_TOKEN = 290
QWEN2_VL_VISION_START = 292
# the 2-layer Qwen2 text model of both tiny Qwen VLMs, with multimodal rotary sections (2, 3, 3)
_QWEN2_VL_TEXT = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                  "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 512, "bos_token_id": 0,
                  "eos_token_id": 1, "pad_token_id": 0, "initializer_range": 0.2,
                  "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}}


def _qwen_vl(kind: str, vision: dict[str, Any], overrides: dict[str, Any], *, text: dict[str, Any] | None = None,
             marks: str = "vision") -> Any:
    """A tiny ``{kind}ForConditionalGeneration`` (``Qwen2VL``, ``Qwen2_5_VL``, ``Qwen3_5``,
    ``GlmOcr``): ``vision`` and ``text`` (default :data:`_QWEN2_VL_TEXT`), image token 290, video
    291, ``{marks}_start_token_id`` 292 and ``{marks}_end_token_id`` 293."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    config = getattr(transformers, f"{kind}Config")(
        text_config=dict(text or _QWEN2_VL_TEXT), vision_config=vision, image_token_id=QWEN2_VL_IMAGE_TOKEN,
        video_token_id=291, **{f"{marks}_start_token_id": QWEN2_VL_VISION_START, f"{marks}_end_token_id": 293})
    for key, value in overrides.items():
        setattr(config, key, value)
    return getattr(transformers, f"{kind}ForConditionalGeneration")(config).eval()


def _qwen2_vl(**overrides: Any) -> Any:
    """A ``Qwen2VLForConditionalGeneration``: a 2-block vision tower over 4x4 patches of 2 frames
    (merged 2x2 into the tokens of image token 290, vision start 292) and a 2-layer Qwen2 text model
    with multimodal rotary sections (2, 3, 3)."""
    vision = {"depth": 2, "embed_dim": 32, "hidden_size": 64, "num_heads": 4, "mlp_ratio": 2, "patch_size": 4,
              "temporal_patch_size": 2, "spatial_merge_size": 2, "in_channels": 3}
    return _qwen_vl("Qwen2VL", vision, overrides)


def _qwen2_5_vl(**overrides: Any) -> Any:
    """A ``Qwen2_5_VLForConditionalGeneration``: :func:`_qwen2_vl`'s layout with Qwen2.5-VL's tower
    (2 blocks, windows of 2x2 merged tokens on the first, full attention on the second)."""
    vision = {"depth": 2, "hidden_size": 32, "out_hidden_size": 64, "intermediate_size": 48, "num_heads": 4,
              "patch_size": 4, "temporal_patch_size": 2, "spatial_merge_size": 2, "in_channels": 3, "window_size": 16,
              "fullatt_block_indexes": [1]}
    return _qwen_vl("Qwen2_5_VL", vision, overrides)


def _qwen3_5_vl(**overrides: Any) -> Any:
    """A ``Qwen3_5ForConditionalGeneration``: a 2-block Qwen3.5 vision tower (4x4 patches of 2
    frames merged 2x2, a 4x4 learned position table interpolated to each grid) and a 4-layer
    Qwen3.5 text model (gated-delta-rule layers between full attention layers, interleaved
    multimodal rotary sections (2, 1, 1) on half the head); the Qwen2-VL token ids."""
    text = {**_QWEN2_VL_TEXT, "num_hidden_layers": 4, "head_dim": 16,
            "layer_types": ["linear_attention", "full_attention"] * 2, "linear_num_value_heads": 4,
            "linear_num_key_heads": 2, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
            "linear_conv_kernel_dim": 4,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1],
                                "mrope_interleaved": True, "partial_rotary_factor": 0.5}}
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 4, "patch_size": 4,
              "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 64, "num_position_embeddings": 16,
              "in_channels": 3}
    return _qwen_vl("Qwen3_5", vision, overrides, text=text)


def _glm_ocr(**overrides: Any) -> Any:
    """A ``GlmOcrForConditionalGeneration``: a 2-block GLM-OCR vision tower (4x4 patches of 2
    frames, merged 2x2 by a strided convolution) and a 2-layer GLM text model with multimodal
    rotary sections (2, 1, 1) on half the head; the Qwen2-VL token ids (image start 292, end 293)."""
    text = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512, "pad_token_id": 0,
            "eos_token_id": 1, "initializer_range": 0.2,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1],
                                "partial_rotary_factor": 0.5}}
    vision = {"depth": 2, "hidden_size": 32, "num_heads": 4, "intermediate_size": 48, "patch_size": 4,
              "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 64, "image_size": 32}
    return _qwen_vl("GlmOcr", vision, overrides, text=text, marks="image")


LFM2_VL_IMAGE_TOKEN = 290


def _lfm2_vl(**overrides: Any) -> Any:
    """An ``Lfm2VlForConditionalGeneration``: a 2-layer SigLIP2 NaFlex tower (4x4-pixel patches, a
    4x4 position table resized to each tile) whose tiles are pixel-unshuffled by 2 into the tokens
    of image token 290, and a 2-layer LFM2 text model (a short-convolution layer, then attention)."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 512,
            "layer_types": ["conv", "full_attention"], "initializer_range": 0.2, "model_type": "lfm2"}
    vision = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
              "patch_size": 4, "num_patches": 16, "model_type": "siglip2_vision_model"}
    config = transformers.Lfm2VlConfig(text_config=text, vision_config=vision, image_token_id=LFM2_VL_IMAGE_TOKEN,
                                       downsample_factor=2, projector_hidden_size=48)
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.Lfm2VlForConditionalGeneration(config).eval()


GEMMA4_IMAGE_TOKEN, GEMMA4_AUDIO_TOKEN = 290, 292


def _gemma4(**overrides: Any) -> Any:
    """A ``Gemma4ForConditionalGeneration`` as Gemma 4 E2B is built, shrunk: a 4-layer text model
    (sliding and full attention alternating, a proportional rotary on a quarter of the full layers'
    32-wide heads, per-layer embeddings of 8, the last 2 layers reusing earlier layers' key/values),
    a 2-layer vision tower (4x4-pixel patches as the processor flattens them, 2D rotary, 2x2 pooling
    into the tokens of image token 290) and a 2-layer conformer audio tower (8 log-mel bins, 4x
    subsampled, chunked local attention) for audio token 292."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    text = {"vocab_size": 300, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 32,
            "max_position_embeddings": 512, "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"] * 2,
            "vocab_size_per_layer_input": 300, "hidden_size_per_layer_input": 8, "num_kv_shared_layers": 2,
            "pad_token_id": 0, "eos_token_id": 1,
            "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                   "rope_theta": 1000000.0}}}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 2, "head_dim": 16, "pooling_kernel_size": 2, "patch_size": 4,
              "position_embedding_size": 64}
    audio = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "subsampling_conv_channels": [8, 4],
             "output_proj_dims": 48, "attention_chunk_size": 4, "attention_context_left": 5}
    config = transformers.Gemma4Config(text_config=text, vision_config=vision, audio_config=audio,
                                       image_token_id=GEMMA4_IMAGE_TOKEN, video_token_id=291,
                                       audio_token_id=GEMMA4_AUDIO_TOKEN, boi_token_id=293, eoi_token_id=294,
                                       boa_token_id=295, eoa_token_index=296)
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.Gemma4ForConditionalGeneration(config).eval()


MISTRAL3_IMAGE_TOKEN = 290


def _mistral3(**overrides: Any) -> Any:
    """A ``Mistral3ForConditionalGeneration``: a 2-layer Pixtral tower (patch 4, 2D rotary, at most
    64x64 pixels) whose patch merger joins 2x2 patches, so an image of ``8h x 8w`` pixels is
    ``h * w`` tokens of image token 290, and a 2-layer Mistral text model."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300, "max_position_embeddings": 512,
            "initializer_range": 0.2, "model_type": "mistral"}
    vision = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
              "image_size": 64, "patch_size": 4, "head_dim": 8, "model_type": "pixtral"}
    config = transformers.Mistral3Config(text_config=text, vision_config=vision, image_token_index=MISTRAL3_IMAGE_TOKEN,
                                         spatial_merge_size=2, vision_feature_layer=-1)
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.Mistral3ForConditionalGeneration(config).eval()


VOXTRAL_AUDIO_TOKEN = 290


def _voxtral(**overrides: Any) -> Any:
    """A ``VoxtralForConditionalGeneration``: a 2-layer Whisper-style audio tower over chunks of
    16 mel bins x 100 frames (25 audio tokens a chunk after the projector's 2x stacking) and a
    2-layer Llama of width 64; audio token 290."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    audio = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_mel_bins": 16, "max_source_positions": 50}
    text = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 300, "max_position_embeddings": 512,
            "initializer_range": 0.2, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 0}
    config = transformers.VoxtralConfig(audio_config=audio, text_config=text, audio_token_id=VOXTRAL_AUDIO_TOKEN,
                                        projector_hidden_act="gelu")
    for key, value in overrides.items():
        setattr(config, key, value)
    return transformers.VoxtralForConditionalGeneration(config).eval()


FLORENCE2_IMAGE_TOKEN = 110


def _florence2(**overrides: Any) -> Any:
    """A ``Florence2ForConditionalGeneration``: a 2-stage DaViT tower (64x64 images → 64 patch
    features + 1 pooled one, projected to 48) and a 1+1-layer BART of width 48; image token 110.
    Its matrices are redrawn from N(0, 0.5) so that greedy decoding emits several distinct tokens."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    vision = {"depths": [1, 1], "patch_size": [7, 3], "patch_stride": [4, 2], "patch_padding": [3, 1],
              "patch_prenorm": [False, True], "embed_dim": [16, 32], "num_heads": [2, 4], "num_groups": [2, 4],
              "window_size": 2, "projection_dim": 48, "max_temporal_embeddings": 4, "max_position_embeddings": 10}
    text = {"vocab_size": 120, "d_model": 48, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 4,
            "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 128,
            "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}
    config = transformers.Florence2Config(vision_config=vision, text_config=text, image_token_id=FLORENCE2_IMAGE_TOKEN)
    for key, value in overrides.items():
        setattr(config, key, value)
    model = transformers.Florence2ForConditionalGeneration(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.5)
    return model


def _sam(**overrides: Any) -> Any:
    """A ``SamModel``: a 2-layer vision transformer over 64x64 images (8x8 patches, a window layer
    then a global one, neck of 16 channels), prompt encoder and 2-layer mask decoder of width 16.
    Its weights are redrawn from N(0, 0.2): SAM's initialization leaves the mask logits near 1e-10 (0.05 now)."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    vision = {"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
              "image_size": 64, "patch_size": 8, "output_channels": 16, "window_size": 4, "global_attn_indexes": [1],
              "mlp_dim": 37, "num_pos_feats": 8}  # fmt: skip
    prompt = {"hidden_size": 16, "image_size": 64, "patch_size": 8, "mask_input_channels": 4}
    decoder = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "mlp_dim": 32, "iou_head_hidden_dim": 16}
    config = transformers.SamConfig(vision_config=vision, prompt_encoder_config=prompt, mask_decoder_config=decoder)
    for key, value in overrides.items():
        setattr(config, key, value)
    model = transformers.SamModel(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.2)
    return model


def _vitpose(**overrides: Any) -> Any:
    """A ``VitPoseForPoseEstimation``: a 2-layer ViT backbone over 64x48 images (8x8 patches), the
    simple decoder's heatmaps of 5 keypoints."""
    import transformers  # heavy optional dependency (onnxport[hf])

    torch.manual_seed(0)
    backbone: dict[str, Any] = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                                "intermediate_size": 37, "image_size": [64, 48], "patch_size": [8, 8], "out_indices": [2]}  # fmt: skip
    head: dict[str, Any] = {"num_labels": 5, **overrides}
    config = transformers.VitPoseConfig(backbone_config=transformers.VitPoseBackboneConfig(**backbone), **head)
    return transformers.VitPoseForPoseEstimation(config).eval()


ZOO.append(Entry("bert2bert", "text2text-generation", _bert2bert))
ZOO.append(Entry("sam", "mask-generation", _sam))
# pose estimation: per-keypoint heatmaps from a ViT backbone over 64x48 person crops
ZOO.append(Entry("vitpose", "keypoint-detection", _vitpose))
# point forecasts of 3 series, 32 steps of context → 12 steps (Optimum's time-series-forecasting)
ZOO.append(Entry("patchtst", "time-series-forecasting", _make(
    "PatchTSTConfig", "PatchTSTForPrediction", num_input_channels=3, context_length=32, patch_length=8, patch_stride=8,
    prediction_length=12, d_model=16, num_attention_heads=2, num_hidden_layers=2, ffn_dim=32,
)))
ZOO.append(Entry("patchtsmixer", "time-series-forecasting", _make(
    "PatchTSMixerConfig", "PatchTSMixerForPrediction", num_input_channels=3, context_length=32, patch_length=8,
    patch_stride=8, prediction_length=12, d_model=16, num_layers=2,
)))
ZOO.append(Entry("gemma3-vlm", "image-text-to-text", _gemma3_vlm))
ZOO.append(Entry("llava", "image-text-to-text", _llava))
ZOO.append(Entry("smolvlm", "image-text-to-text", _smolvlm))
ZOO.append(Entry("florence2", "image-text-to-text", _florence2))
ZOO.append(Entry("qwen2-vl", "image-text-to-text", _qwen2_vl))
ZOO.append(Entry("qwen2.5-vl", "image-text-to-text", _qwen2_5_vl))
ZOO.append(Entry("qwen3.5-vl", "image-text-to-text", _qwen3_5_vl))
ZOO.append(Entry("mistral3", "image-text-to-text", _mistral3))
ZOO.append(Entry("lfm2-vl", "image-text-to-text", _lfm2_vl))
ZOO.append(Entry("glm-ocr", "image-text-to-text", _glm_ocr))
ZOO.append(Entry("gemma4", "image-text-to-text", _gemma4))
ZOO.append(Entry("voxtral", "audio-text-to-text", _voxtral))
ZOO.append(Entry("trocr", "image-to-text", _trocr))
# Neural audio codecs (onnxport.hf.codec: encoder_model + decoder_model), outside the zoo's file layout
_SEANET = {"hidden_size": 32, "num_filters": 4, "upsampling_ratios": [4, 2], "codebook_size": 16}
_CODEC_TRANSFORMER = {"num_hidden_layers": 1, "intermediate_size": 32, "num_attention_heads": 2,
                      "num_key_value_heads": 2, "head_dim": 16, "upsample_groups": 32}
CODECS = [
    Entry("dac", "feature-extraction", _make(
        "DacConfig", "DacModel", encoder_hidden_size=8, downsampling_ratios=[2, 4], upsampling_ratios=[4, 2],
        decoder_hidden_size=16, hop_length=8, n_codebooks=2, codebook_size=16, codebook_dim=4, hidden_size=16,
    )),
    Entry("encodec", "feature-extraction", _make(
        "EncodecConfig", "EncodecModel", **_SEANET, codebook_dim=32, num_lstm_layers=1, sampling_rate=8000,
    )),
    Entry("mimi", "feature-extraction", _make(
        "MimiConfig", "MimiModel", **_SEANET, **_CODEC_TRANSFORMER, codebook_dim=16, num_quantizers=2,
        vector_quantization_hidden_dimension=16, sampling_rate=8000,
    )),
    Entry("pocket-tts-tokenizer", "feature-extraction", _make(
        "PocketTTSAudioTokenizerConfig", "PocketTTSAudioTokenizerModel", **_SEANET, **_CODEC_TRANSFORMER,
        latent_dim=8, sampling_rate=8000,
    )),
]
BY_NAME = {e.name: e for e in [*ZOO, *CODECS]}


def build(name: str, **overrides: Any) -> Any:
    """The model of the entry ``name`` with config fields ``overrides`` replaced.

    Raises:
        KeyError: No entry of that name (the message lists the names).
    """
    if name not in BY_NAME:
        raise KeyError(f"no tiny model {name!r}; known: {', '.join(sorted(BY_NAME))}")
    return BY_NAME[name].build(**overrides)
