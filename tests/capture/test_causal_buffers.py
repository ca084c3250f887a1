"""GPT-Neo's attention mask during capture (capture/causal_buffers.py): the same as the stored
table's slice for global and local layers, with and without past keys, and the exported cache
graph holds no ``(max_positions, max_positions)`` table."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import pytest
import torch

import onnxport.hf

transformers = pytest.importorskip("transformers")
neo = pytest.importorskip("transformers.models.gpt_neo.modeling_gpt_neo")
CONFIG = dict(vocab_size=100, hidden_size=32, num_layers=4, num_heads=4, window_size=3, max_position_embeddings=64,
              attention_types=[[["global", "local"], 2]], intermediate_size=64)  # fmt: skip


@pytest.mark.parametrize("kind", ["global", "local"])
def test_positional_mask_equals_the_table(kind: str) -> None:
    """Exported with symbolic lengths (the replacement's path), compared with the original ``_attn``
    (the stored table) at prompts, one-token steps and steps past the window, with left padding."""
    config = transformers.GPTNeoConfig(**CONFIG)
    layer = neo.GPTNeoSelfAttention(config, kind, layer_id=0).eval()
    g = torch.Generator().manual_seed(0)

    def inputs(queries: int, keys: int) -> tuple[torch.Tensor, ...]:
        q, k, v = (torch.randn(2, 4, n, 8, generator=g) for n in (queries, keys, keys))
        mask = torch.zeros(2, 1, 1, keys)
        mask[1, ..., :2] = torch.finfo(torch.float32).min  # left padding
        return q, k, v, mask

    program = onnxport.export(_Attn(layer), inputs(4, 7), dynamic_shapes=(
        {2: "queries"}, {2: "keys"}, {2: "keys"}, {3: "keys"}))  # fmt: skip
    for queries, keys in [(5, 5), (1, 9), (4, 11), (1, 13)]:
        args = inputs(queries, keys)
        with torch.no_grad():
            expected = layer._attn(*args)[0]
        torch.testing.assert_close(program(*args)[0], expected, rtol=1e-5, atol=1e-6)


class _Attn(torch.nn.Module):
    def __init__(self, layer: torch.nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.layer._attn(q, k, v, mask)[0]


def test_cache_graph_holds_no_position_table(tmp_path: pathlib.Path) -> None:
    torch.manual_seed(0)
    transformers.GPTNeoForCausalLM(transformers.GPTNeoConfig(**CONFIG)).eval().save_pretrained(tmp_path / "ckpt")
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out")
    assert result.passed
    model = onnx.load(tmp_path / "out" / "onnx" / "model.onnx")
    shapes = [tuple(t.dims) for t in model.graph.initializer]
    shapes += [tuple(a.t.dims) for n in model.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    assert not [s for s in shapes if int(np.prod(s)) >= 64 * 64 and len(s) == 4], shapes
