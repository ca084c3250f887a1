"""``passes/repeat_layers.py``: a graph captured with two layers, grown to N, equals the N-layer
model in onnxruntime; a graph that is not a chain of copyable layers is refused untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import onnxport
from onnxport.passes.repeat_layers import (
    KEY_REPEATED_FROM,
    LayerNames,
    RepeatRefused,
    repeat_layers,
)


class Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.lin = torch.nn.Linear(width, width)

    def forward(self, h: torch.Tensor, scale: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        new_state = torch.cat([state, self.lin(self.norm(h))], dim=1)  # a per-layer "cache"
        return h + torch.tanh(self.lin(self.norm(h))) * scale, new_state


class Chain(torch.nn.Module):
    """Shared value (``scale``) computed once, read by every layer; one state in/out per layer."""

    def __init__(self, layers: int, width: int = 8, dense: bool = False) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(Block(width) for _ in range(layers))
        self.head = torch.nn.Linear(width, 3)
        self.dense = dense

    def forward(self, x: torch.Tensor, states: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        scale = torch.sigmoid(x.mean(dim=-1, keepdim=True))
        h, first, out = x, None, []
        for layer, state in zip(self.layers, states):
            h, new_state = layer(h, scale, state)
            out.append(new_state)
            if self.dense:  # every layer also reads the first layer's output: not a chain
                first = h if first is None else first
                h = h + 0.5 * first
        return (self.head(h), *out)


def _inputs(layers: int, batch: int, seq: int, past: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    g = torch.Generator().manual_seed(batch * 100 + seq)
    return torch.randn(batch, seq, 8, generator=g), [torch.randn(batch, past, 8, generator=g) for _ in range(layers)]


def _export(model: Chain, layers: int) -> onnxport.ONNXProgram:
    batch, seq, past = torch.export.Dim("batch"), torch.export.Dim("seq"), torch.export.Dim("past")
    return onnxport.export(
        model, _inputs(layers, 2, 3, 4),
        dynamic_shapes=({0: batch, 1: seq}, [{0: batch, 1: past}] * layers),
        input_names=["x", *(f"past.{i}" for i in range(layers))],
        output_names=["y", *(f"present.{i}" for i in range(layers))],
        verify=False,
    )


NAMES = LayerNames("Block", "layers", inputs=("past",), outputs=("present",))


def test_two_layers_grown_to_five_equal_the_five_layer_model() -> None:
    torch.manual_seed(0)
    full = Chain(5).eval()
    small = Chain(2).eval()
    small.load_state_dict({k: v for k, v in full.state_dict().items() if k in small.state_dict()})
    program = _export(small, 2)
    before = len(program.model.graph)
    repeat_layers(program.model, program.weights, NAMES, captured=2, total=5)
    graph = program.model.graph
    assert [v.name for v in graph.inputs] == ["x", *(f"past.{i}" for i in range(5))]
    assert [v.name for v in graph.outputs] == ["y", *(f"present.{i}" for i in range(5))]
    copied = [n for n in graph if KEY_REPEATED_FROM in n.metadata_props]
    assert copied and len(copied) % 3 == 0 and len(graph) - before == len(copied)  # three copies of one layer
    assert sorted(program.weights.missing(program.model)) == sorted(
        k for k in full.state_dict() if k.startswith(("layers.2.", "layers.3.", "layers.4."))
    )
    program.apply_weights(full.state_dict())
    for batch, seq, past in [(2, 3, 4), (3, 5, 7)]:  # the second size differs in every dynamic dim
        x, states = _inputs(5, batch, seq, past)
        expected = full(x, states)
        actual = program(x, *states)
        assert len(actual) == 6
        for e, a in zip(expected, actual):
            assert tuple(a.shape) == tuple(e.shape)
            np.testing.assert_allclose(np.asarray(a), e.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_graph_that_is_not_a_chain_is_refused_untouched() -> None:
    program = _export(Chain(2, dense=True).eval(), 2)
    nodes, inits = len(program.model.graph), set(program.model.graph.initializers)
    with pytest.raises(RepeatRefused, match="values read after it|computed by layer"):
        repeat_layers(program.model, program.weights, NAMES, captured=2, total=4)
    assert len(program.model.graph) == nodes and set(program.model.graph.initializers) == inits


def test_names_rename_only_the_layer_index() -> None:
    names = LayerNames("Block", "model.layers")
    assert names.rename("model.layers.1.mlp.weight", ["model.layers"], 1, 7) == "model.layers.7.mlp.weight"
    assert names.rename("model.layers.11.mlp.weight", ["model.layers"], 1, 7) is None
    assert names.rename("past_key_values.1.key", names.inputs, 1, 3) == "past_key_values.3.key"
    assert names.rename("lm_head.weight", ["model.layers"], 1, 3) is None
    assert names.rename("present.1", names.outputs, 1, 4) == "present.4"
