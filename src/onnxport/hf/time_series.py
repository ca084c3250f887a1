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

TimesFM (``TimesFmModelForPrediction``, google/timesfm-2.0): the series as its ``_preprocess``
leaves them, ``past_values`` ``[batch_size, context_length]`` float32 (each series' last
``context_length`` values, left-padded with zeros), ``past_values_padding`` ``[batch_size,
context_length]`` float32 (1 at the padding) and ``freq`` ``[batch_size, 1]`` int32 (0 high, 1
medium, 2 low frequency) → ``mean_predictions`` ``[batch_size, horizon_length]`` and
``full_predictions`` ``[batch_size, horizon_length, 1 + len(quantiles)]`` (the mean, then the
quantiles), as its forward returns them for one decoding step (its horizon is one output patch);
the base ``TimesFmModel`` gives ``last_hidden_state``, ``loc`` and ``scale`` from the same inputs.
TimesFM 2.5 (another forward: flip invariance, continuous quantile head) gets an ``HFError``.
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


class TimesFmForecaster(torch.nn.Module):
    """TimesFM's decoder and output head on preprocessed series (module docstring); the base
    model's outputs when ``model`` is a ``TimesFmModel``."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.head = hasattr(model, "horizon_ff_layer")

    def forward(
        self, past_values: torch.Tensor, past_values_padding: torch.Tensor, freq: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        decoder: Any = self.model.decoder if self.head else self.model
        out = decoder(past_values=past_values, past_values_padding=past_values_padding, freq=freq)
        if not self.head:
            return out.last_hidden_state, out.loc, out.scale
        model: Any = self.model
        full = model._postprocess_output(out.last_hidden_state, (out.loc, out.scale))
        full = full[:, -1, : model.horizon_len, :]  # the last patch's forecast: the next horizon
        return full[:, :, 0], full


def _timesfm_component(loaded: LoadedModel) -> Component:
    config: Any = loaded.model.config
    length = int(config.context_length)  # the horizon is one output patch: one decoding step

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        values = torch.randn(sizes.batch, length, generator=gen).cumsum(-1)  # a random walk
        padding = torch.zeros(sizes.batch, length)
        padding[0, : length // 4] = 1.0  # a shorter first series, left-padded as _preprocess pads it
        values = values * (1 - padding)
        freq = torch.randint(0, 3, (sizes.batch, 1), generator=gen, dtype=torch.int32)
        return {"past_values": values, "past_values_padding": padding, "freq": freq}

    module = TimesFmForecaster(loaded.model)
    outputs = ["mean_predictions", "full_predictions"] if module.head else ["last_hidden_state", "loc", "scale"]
    names = ["past_values", "past_values_padding", "freq"]
    dynamic = {name: {0: BATCH} for name in names}
    return Component("model", module, make, dynamic, names, outputs)


def forecast_component(loaded: LoadedModel) -> Component:
    """The forecaster's one graph (module docstring).

    Raises:
        HFError: The model has no ``context_length``/``num_input_channels`` (not a PatchTST-style
            forecaster nor TimesFM) or forecasts a distribution (``loss="nll"``).
    """
    model = loaded.model
    config: Any = model.config
    if getattr(config, "model_type", None) == "timesfm":
        return _timesfm_component(loaded)
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
