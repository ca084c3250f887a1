"""SwitchTransformers' and NLLB-MoE's expert loops (a ``nonzero`` over the experts hit) computed
densely during capture (capture/expert_loops.py): the same values as transformers' loop in eager,
with tokens dropped by a small expert capacity, and an export with a dynamic token count that gives
eager's values in onnxruntime at other sizes."""

from __future__ import annotations

import pytest
import torch

import onnxport
from onnxport.capture.patches import dense_experts

transformers = pytest.importorskip("transformers")
switch = pytest.importorskip("transformers.models.switch_transformers.modeling_switch_transformers")
nllb = pytest.importorskip("transformers.models.nllb_moe.modeling_nllb_moe")

HIDDEN, EXPERTS = 16, 4


def _switch(capacity: int) -> torch.nn.Module:
    config = transformers.SwitchTransformersConfig(d_model=HIDDEN, d_ff=24, num_experts=EXPERTS,
                                                   expert_capacity=capacity)
    torch.manual_seed(0)
    return switch.SwitchTransformersSparseMLP(config).eval()


class NllbMlp(torch.nn.Module):
    """NLLB-MoE's sparse MLP (the router's top-2 with capacity, then the experts)."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        config = transformers.NllbMoeConfig(d_model=HIDDEN, num_experts=EXPERTS, expert_capacity=capacity,
                                            moe_token_dropout=0.2, moe_eval_capacity_token_fraction=-1.0)
        torch.manual_seed(0)
        self.mlp = nllb.NllbMoeSparseMLP(config, ffn_dim=24).eval()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.mlp(hidden_states)


MODELS = {"switch": _switch, "nllb-moe": NllbMlp}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_dense_experts_give_the_loops_values(name: str) -> None:
    model = MODELS[name](3)  # 3 tokens per expert: some of the 2 x 9 tokens are dropped
    x = torch.randn(2, 9, HIDDEN, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(x)
        with dense_experts():
            actual = model(x)
    assert actual.shape == expected.shape == (2, 9, HIDDEN) and actual.dtype == torch.float32
    dropped = (expected.abs().sum(-1) == 0).sum()
    assert 0 < dropped < 18  # the capacity dropped some tokens, not all
    torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6)
    assert float(expected.abs().max()) > 0.01


@pytest.mark.parametrize("name", sorted(MODELS))
def test_export_runs_at_other_token_counts(name: str) -> None:
    model = MODELS[name](64)
    x = torch.randn(2, 5, HIDDEN, generator=torch.Generator().manual_seed(2))
    program = onnxport.export(model, (x,), dynamic_shapes=({0: "batch_size", 1: "sequence_length"},))
    for shape in [(2, 5), (3, 11), (1, 1)]:
        inputs = torch.randn(*shape, HIDDEN, generator=torch.Generator().manual_seed(shape[1]))
        with torch.no_grad():
            expected = model(inputs)
        (actual,) = program(inputs)
        assert tuple(actual.shape) == (*shape, HIDDEN)
        torch.testing.assert_close(torch.as_tensor(actual), expected, rtol=1e-5, atol=1e-5)
