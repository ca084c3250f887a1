"""time-series-forecasting: PatchTST and PatchTSMixer forecasters (``*ForPrediction``) as the graph
Optimum exports for them (optimum-onnx ``PatchTSTOnnxConfig``, ``PatchTSMixerOnnxConfig``;
``OnnxConfig._TASK_TO_COMMON_OUTPUTS["time-series-forecasting"]``):

``past_values`` ``[batch_size, context_length, num_input_channels]`` float32 (the configured
``context_length``: the models cut it into ``patch_length`` patches and their heads read a fixed
number of patches) → ``prediction_outputs`` ``[batch_size, prediction_length,
num_input_channels]`` float32, the point forecast (the models' ``loss="mse"`` head; a distribution
head, ``loss="nll"``, returns distribution parameters and is refused). feature-extraction of the
base models (``PatchTSTModel``, ``PatchTSMixerModel``: ``main_input_name`` ``past_values``) gives
their ``last_hidden_state`` (per channel and patch) from the same input.
"""

from __future__ import annotations

from typing import Any

import torch

from onnxport.errors import HFError
from onnxport.hf.dims import BATCH
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes
from onnxport.hf.parts import generator as _generator


class Forecaster(torch.nn.Module):
    """``past_values`` → the task's outputs (``prediction_outputs``; the base model's
    ``last_hidden_state`` for feature-extraction)."""

    def __init__(self, model: torch.nn.Module, outputs: list[str]) -> None:
        super().__init__()
        self.model = model
        self.outputs = tuple(outputs)

    def forward(self, past_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.model(past_values=past_values)
        return tuple(out[name] for name in self.outputs)


def forecast_component(loaded: LoadedModel) -> Component:
    """The forecaster's one graph (module docstring).

    Raises:
        HFError: The model has no ``context_length``/``num_input_channels`` (not a PatchTST-style
            forecaster) or forecasts a distribution (``loss="nll"``).
    """
    model = loaded.model
    config: Any = model.config
    length, channels = getattr(config, "context_length", None), getattr(config, "num_input_channels", None)
    if not isinstance(length, int) or not isinstance(channels, int):
        raise HFError(
            f"time-series-forecasting exports PatchTST-style forecasters (a config with context_length and "
            f"num_input_channels); {type(model).__name__} has other inputs. Export it with onnxport.export."
        )
    if getattr(config, "loss", "mse") != "mse":
        raise HFError(
            f"{type(model).__name__} forecasts a distribution (loss={config.loss!r}): its prediction_outputs are the "
            "distribution's parameters, not one forecast. Export a model trained with loss='mse', or export it with "
            "onnxport.export and its distribution head."
        )

    def make(sizes: Sizes) -> dict[str, Any]:
        return {"past_values": torch.randn(sizes.batch, length, channels, generator=_generator(sizes))}

    outputs = list(loaded.task.outputs)
    return Component("model", Forecaster(model, outputs), make, {"past_values": {0: BATCH}}, ["past_values"], outputs)


__all__ = ["forecast_component"]
