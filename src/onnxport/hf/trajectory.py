"""reinforcement-learning: Decision Transformer (``DecisionTransformerModel``) as the graph Optimum
exports for it (optimum-onnx ``DecisionTransformerOnnxConfig``): a trajectory of ``sequence_length``
steps →

- inputs ``states`` ``[batch_size, sequence_length, state_dim]``, ``actions`` ``[batch_size,
  sequence_length, act_dim]``, ``timesteps`` ``[batch_size, sequence_length]`` int64 (episode
  steps, below ``max_ep_len``), ``returns_to_go`` ``[batch_size, sequence_length, 1]`` float32,
  ``attention_mask`` ``[batch_size, sequence_length]`` int64;
- outputs ``state_preds``, ``action_preds``, ``return_preds`` and ``last_hidden_state`` (the
  GPT-2 stack's, ``3 * sequence_length`` interleaved return/state/action tokens).
"""

from __future__ import annotations

from typing import Any

import torch

from onnxport.hf.dims import BATCH, SEQUENCE
from onnxport.hf.loading import LoadedModel
from onnxport.hf.parts import Component, Sizes
from onnxport.hf.parts import generator as _generator

INPUTS = ("states", "actions", "timesteps", "returns_to_go", "attention_mask")


class Trajectory(torch.nn.Module):
    """The five trajectory inputs → the task's outputs."""

    def __init__(self, model: torch.nn.Module, outputs: tuple[str, ...]) -> None:
        super().__init__()
        self.model = model
        self.outputs = outputs

    def forward(
        self,
        states: torch.Tensor,
        actions: torch.Tensor,
        timesteps: torch.Tensor,
        returns_to_go: torch.Tensor,
        attention_mask: torch.Tensor,
    ) -> tuple[torch.Tensor, ...]:
        out = self.model(states=states, actions=actions, timesteps=timesteps, returns_to_go=returns_to_go,
                         attention_mask=attention_mask)  # fmt: skip
        return tuple(out[name] for name in self.outputs)


def trajectory_component(loaded: LoadedModel) -> Component:
    """The Decision Transformer's one graph (module docstring)."""
    config: Any = loaded.model.config

    def make(sizes: Sizes) -> dict[str, Any]:
        gen = _generator(sizes)
        steps = (sizes.batch, sizes.sequence)
        return {
            "states": torch.randn(*steps, config.state_dim, generator=gen),
            "actions": torch.randn(*steps, config.act_dim, generator=gen).tanh(),
            "timesteps": torch.randint(0, config.max_ep_len, steps, generator=gen),
            "returns_to_go": torch.randn(*steps, 1, generator=gen),
            "attention_mask": torch.ones(steps, dtype=torch.int64),
        }

    axes = {0: BATCH, 1: SEQUENCE}
    outputs = tuple(loaded.task.outputs)
    dynamic = {name: dict(axes) for name in INPUTS}
    return Component("model", Trajectory(loaded.model, outputs), make, dynamic, list(INPUTS), list(outputs))


__all__ = ["trajectory_component"]
