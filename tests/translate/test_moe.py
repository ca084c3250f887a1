"""Mixture-of-experts grouped matmuls (ops/nn/moe.py) and transformers' expert implementations.

Every model is exported with a dynamic number of rows and run in onnxruntime at two sizes (other
row counts, other group boundaries, an empty group) against eager.
"""

from __future__ import annotations

import pytest
import torch

import onnxport
from onnxport.ops import default_registry
from onnxport.translate.registry import qualified_name

ROWS = {"x": {0: "rows"}, "offs": {}}


def _offs(*ends: int) -> torch.Tensor:
    return torch.tensor(ends, dtype=torch.int32)


BF16 = {"rtol": 2e-2, "atol": 2e-2}  # ATen's _grouped_mm takes bfloat16 only (its meta function)


def _bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape).to(torch.bfloat16)


class GroupedMM(torch.nn.Module):
    """``torch._grouped_mm(x, weight, offs)``: x (S, 8) sorted by expert, 3 experts of (8, 12)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.weight = torch.nn.Parameter(_bf16(3, 12, 8).transpose(-2, -1))  # the kernel wants K-major

    def forward(self, x: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        return torch._grouped_mm(x, self.weight, offs=offs) * 2.0


def test_aten_grouped_mm_rows_per_expert_at_two_sizes() -> None:
    model = GroupedMM()
    x, offs = _bf16(6, 8), _offs(2, 2, 6)  # expert 1 gets no row
    program = onnxport.export(model, (x, offs), dynamic_shapes=ROWS)
    assert "Loop" in {n.op_type for n in program.model.graph}
    for rows, ends in [(x, offs), (_bf16(11, 8), _offs(5, 9, 11)), (_bf16(4, 8), _offs(0, 0, 4))]:
        with torch.no_grad():
            expected = model(rows, ends)
        (actual,) = program(rows, ends)
        assert actual.shape == expected.shape == (rows.shape[0], 12)
        assert actual.dtype == torch.bfloat16
        torch.testing.assert_close(actual, expected, **BF16)


class BatchedMM(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch._grouped_mm(a, b)


def test_aten_grouped_mm_batched_form_is_matmul() -> None:
    model = BatchedMM()
    a, b = _bf16(3, 5, 8), _bf16(3, 4, 8).transpose(-2, -1)
    program = onnxport.export(model, (a, b), dynamic_shapes={"a": {1: "m"}, "b": {}})
    for m in (5, 9):
        a_m = _bf16(3, m, 8)
        torch.testing.assert_close(program(a_m, b)[0], model(a_m, b), **BF16)


class Fallback(torch.nn.Module):
    """transformers' custom op, with rows past ``offs[-1]`` (zero in its loop)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.weight = torch.nn.Parameter(torch.randn(4, 6, 5))

    def forward(self, x: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        return torch.ops.transformers.grouped_mm_fallback(x, self.weight, offs)


def test_transformers_grouped_mm_fallback_registered_by_name() -> None:
    pytest.importorskip("transformers")
    import transformers.integrations.moe  # noqa: F401  (defines the custom op)

    op = torch.ops.transformers.grouped_mm_fallback.default
    assert qualified_name(op) == "transformers::grouped_mm_fallback.default"
    assert default_registry().is_registered(op) and op in default_registry().targets()
    model = Fallback()
    x, offs = torch.randn(7, 6), _offs(1, 1, 4, 6)  # row 6 past offs[-1]
    program = onnxport.export(model, (x, offs), dynamic_shapes=ROWS)
    for rows, ends in [(x, offs), (torch.randn(12, 6), _offs(3, 7, 7, 12))]:
        expected = model(rows, ends)
        (actual,) = program(rows, ends)
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
    assert float(program(torch.ones(7, 6), _offs(1, 1, 4, 6))[0][6].abs().max()) == 0.0


def _experts(implementation: str) -> torch.nn.Module:
    transformers = pytest.importorskip("transformers")
    from transformers.models.mixtral.modeling_mixtral import MixtralExperts

    torch.manual_seed(0)
    config = transformers.MixtralConfig(hidden_size=8, intermediate_size=16, num_local_experts=4)
    config._experts_implementation = implementation
    experts = MixtralExperts(config).eval()
    with torch.no_grad():
        for p in experts.parameters():
            p.normal_()
    return experts


def _routing(tokens: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    index = torch.stack([torch.randperm(4, generator=g)[:2] for _ in range(tokens)])
    return torch.randn(tokens, 8, generator=g), index, torch.rand(tokens, 2, generator=g)


EXPERTS_DYNAMIC = {"hidden_states": {0: "tokens"}, "top_k_index": {0: "tokens"}, "top_k_weights": {0: "tokens"}}


@pytest.mark.parametrize("implementation", ["grouped_mm", "eager"])
def test_transformers_experts_at_two_token_counts(implementation: str) -> None:
    """grouped_mm translates directly; the eager loop (a data-dependent trip count) is captured by
    the rewrite strategy as grouped_mm, and the module's setting is restored."""
    experts = _experts(implementation)
    program = onnxport.export(experts, _routing(6, 0), dynamic_shapes=EXPERTS_DYNAMIC)
    strategies = [a.strategy for a in program.status.capture_attempts if a.success]
    assert ("'eager' loop as 'grouped_mm'" in strategies[0]) == (implementation == "eager")
    assert experts.config._experts_implementation == implementation
    for tokens, seed in [(6, 0), (11, 1)]:
        inputs = _routing(tokens, seed)
        with torch.no_grad():
            expected = experts(*inputs)
        torch.testing.assert_close(program(*inputs)[0], expected, rtol=1e-4, atol=1e-4)
