"""mask-generation: Segment Anything (``SamModel``) as the two graphs Optimum exports for it
(optimum-onnx ``SamOnnxConfig``, its default ``split`` variant, and ``SAMModelPatcher``) and
transformers.js runs (``src/models/sam/modeling_sam.js``: sessions ``vision_encoder`` and
``prompt_encoder_mask_decoder``), so the image is encoded once for any number of prompts:

- ``vision_encoder.onnx``: ``pixel_values`` ``[batch_size, 3, S, S]`` float32 (``S`` the
  configured ``vision_config.image_size``, 1024: ``SamProcessor`` resizes the longest side to it
  and pads the image to ``S x S``; the vision transformer's absolute position embeddings are that
  size) → ``image_embeddings`` ``[batch_size, C, E, E]`` and ``image_positional_embeddings``
  ``[batch_size, C, E, E]`` (``C`` the neck's ``output_channels``, ``E = S / patch_size``;
  transformers' ``SamModel.get_image_wide_positional_embeddings``, repeated over the batch);
- ``prompt_encoder_mask_decoder.onnx``: those two, ``input_points`` ``[batch_size,
  point_batch_size, nb_points_per_image, 2]`` float32 (x, y in the ``S x S`` frame, as the
  processor rescales them) and ``input_labels`` ``[batch_size, point_batch_size,
  nb_points_per_image]`` int64 (1 foreground, 0 background, -10 padding) → ``iou_scores``
  ``[batch_size, point_batch_size, 3]`` and ``pred_masks`` ``[batch_size, point_batch_size, 3,
  4E, 4E]`` (low-resolution mask logits, three per prompt: ``multimask_output=True``, as Optimum
  exports it; ``SamProcessor.post_process_masks`` upscales them).

Boxes and mask prompts are not inputs (Optimum's export has none either). SAM 2, EdgeTAM, SAM-HQ and
the SAM 3 tracker (other mask-generation models) are refused with an ``HFError``.
"""

from __future__ import annotations

from typing import Any

import torch

from onnxport.capture.dynamic_shapes import DimName
from onnxport.errors import HFError
from onnxport.hf.dims import BATCH
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes
from onnxport.hf.parts import generator as _generator

# Optimum's dim names (SamOnnxConfig.inputs).
POINT_BATCH = DimName("point_batch_size", min=1)
POINTS = DimName("nb_points_per_image", min=1)


class ImageEmbeddings(torch.nn.Module):
    """``pixel_values`` → ``(image_embeddings, image_positional_embeddings)``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        model: Any = self.model
        embeddings = model.get_image_embeddings(pixel_values)
        positions = model.get_image_wide_positional_embeddings()
        return embeddings, positions.expand(pixel_values.shape[0], -1, -1, -1)


class PromptMaskDecoder(torch.nn.Module):
    """``(image_embeddings, image_positional_embeddings, input_points, input_labels)`` →
    ``(iou_scores, pred_masks)``: transformers' ``SamModel.forward`` after the vision encoder."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        image_embeddings: torch.Tensor,
        image_positional_embeddings: torch.Tensor,
        input_points: torch.Tensor,
        input_labels: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # One symbol per named dim before the prompt encoder broadcasts points against labels
        # (torch.export keeps one per input until its guards join them).
        torch._check(image_positional_embeddings.shape[0] == image_embeddings.shape[0])
        for axis in range(3):
            torch._check(input_labels.shape[axis] == input_points.shape[axis])
        torch._check(input_points.shape[0] == image_embeddings.shape[0])
        model: Any = self.model
        sparse, dense = model.prompt_encoder(
            input_points=input_points, input_labels=input_labels, input_boxes=None, input_masks=None
        )
        masks, scores = model.mask_decoder(
            image_embeddings=image_embeddings,
            image_positional_embeddings=image_positional_embeddings,
            sparse_prompt_embeddings=sparse,
            dense_prompt_embeddings=dense,
            multimask_output=True,
        )[:2]
        return scores, masks


def components(loaded: LoadedModel) -> list[Component]:
    """The ``vision_encoder`` and ``prompt_encoder_mask_decoder`` components (module docstring).

    Raises:
        HFError: The model is not a ``SamModel`` (SAM 2, EdgeTAM, SAM-HQ, SAM 3 tracker).
    """
    model = loaded.model
    config: Any = model.config
    if getattr(config, "model_type", None) != "sam":
        raise HFError(
            f"mask-generation exports Segment Anything (SamModel); {type(model).__name__} "
            f"({getattr(config, 'model_type', None)}) has other prompt and memory inputs. Export its parts with "
            "onnxport.export."
        )
    side = int(config.vision_config.image_size)
    grid = int(config.prompt_encoder_config.image_embedding_size)
    channels = int(config.vision_config.output_channels)

    def images(sizes: Sizes) -> dict[str, Any]:
        return {"pixel_values": torch.randn(sizes.batch, 3, side, side, generator=_generator(sizes))}

    def prompts(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        points = max(1, sizes.encoder_sequence // 2)
        shape = (sizes.batch, sizes.sequence, points)
        labels = torch.randint(0, 2, shape, generator=gen)
        if points > 1:
            labels[0, 0, -1] = -10  # a padding point
        return {
            "image_embeddings": torch.randn(sizes.batch, channels, grid, grid, generator=gen),
            "image_positional_embeddings": torch.randn(sizes.batch, channels, grid, grid, generator=gen),
            "input_points": torch.rand(*shape, 2, generator=gen) * side,
            "input_labels": labels,
        }

    prompt_axes = {0: BATCH, 1: POINT_BATCH, 2: POINTS}
    return [
        Component("vision_encoder", ImageEmbeddings(model), images, {"pixel_values": {0: BATCH}}, ["pixel_values"],
                  ["image_embeddings", "image_positional_embeddings"]),  # fmt: skip
        Component(
            "prompt_encoder_mask_decoder",
            PromptMaskDecoder(model),
            prompts,
            {"image_embeddings": {0: BATCH}, "image_positional_embeddings": {0: BATCH}, "input_points": prompt_axes,
             "input_labels": dict(prompt_axes)},  # fmt: skip
            ["image_embeddings", "image_positional_embeddings", "input_points", "input_labels"],
            ["iou_scores", "pred_masks"],
        ),
    ]


__all__ = ["components"]
