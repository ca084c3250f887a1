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
from _generation import assert_genai_equals_transformers

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


def test_onnxruntime_target_fuses_global_and_local_layers(tmp_path: pathlib.Path) -> None:
    """The positional mask is the kernel's causal mask (global layers) and its
    ``local_window_size`` (local layers: ``window_size``), so GPT-Neo's shared-buffer graph fuses
    (before: "not fused for past_key_values.0.key ...") and onnxruntime-genai generates
    transformers' tokens for a right-padded batch."""
    og = pytest.importorskip("onnxruntime_genai")
    torch.manual_seed(0)
    model = transformers.GPTNeoForCausalLM(transformers.GPTNeoConfig(**{
        **CONFIG, "hidden_size": 64, "initializer_range": 0.2, "pad_token_id": 0,
        "bos_token_id": 1, "eos_token_id": 2})).eval()  # fmt: skip
    model.save_pretrained(tmp_path / "ckpt")
    result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out", stream=True,
                                target="onnxruntime", kv_cache="shared")  # fmt: skip
    assert result.passed
    gqa = [n for n in result.programs["model"].model.graph if n.op_type == "GroupQueryAttention"]
    windows = [n.attributes["local_window_size"].as_int() if "local_window_size" in n.attributes else None for n in gqa]
    assert windows == [None, 3, None, 3]  # attention_types: global, local, global, local
    assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)


def test_onnxruntime_target_equals_the_standard_graph_with_left_padding() -> None:
    """The concatenating graph's GroupQueryAttention (bias from the mask, the window as
    ``local_window_size``) equals the standard graph on every row of a left-padded prompt, the
    pad rows included (their mean of ``V`` over the causal, windowed prefix: before, 2.38 off),
    and on the next step."""
    torch.manual_seed(0)
    model = transformers.GPTNeoForCausalLM(transformers.GPTNeoConfig(**{
        **CONFIG, "hidden_size": 64, "num_layers": 2, "initializer_range": 0.2, "attention_types": [[["global", "local"], 1]]})).eval()  # fmt: skip
    standard = onnxport.hf.export(model).programs["model"]
    fused = onnxport.hf.export(model, target="onnxruntime").programs["model"]
    assert [n.op_type for n in fused.model.graph].count("GroupQueryAttention") == 2
    mask = torch.tensor([[1] * 6, [0, 0, 0, 1, 1, 1]])
    feeds = {"input_ids": torch.tensor([[5, 6, 7, 8, 9, 10], [0, 0, 0, 4, 3, 2]]), "attention_mask": mask,
             "position_ids": (mask.cumsum(1) - 1).clamp(min=0), "past_key_values": [(torch.zeros(2, 4, 0, 16),) * 2] * 2}  # fmt: skip
    want, got = standard(**feeds), fused(**feeds)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-4, atol=1e-5)
    past = [(torch.as_tensor(np.asarray(want[1 + 2 * i])), torch.as_tensor(np.asarray(want[2 + 2 * i]))) for i in range(2)]
    step = {"input_ids": torch.tensor([[11], [12]]), "attention_mask": torch.cat([mask, torch.ones(2, 1, dtype=torch.int64)], 1),
            "position_ids": torch.tensor([[6], [3]]), "past_key_values": past}  # fmt: skip
    np.testing.assert_allclose(np.asarray(fused(**step)[0]), np.asarray(standard(**step)[0]), rtol=1e-4, atol=1e-5)
