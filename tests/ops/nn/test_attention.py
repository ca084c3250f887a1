"""scaled_dot_product_attention: ONNX Attention at opset 23, the explicit encoding below it.

Fully masked rows give 0 as in torch's math backend (not NaN), in both encodings; a row an additive
mask hides with the lowest float (not -inf) gets the mean of V, as in torch.
"""

from __future__ import annotations

import pytest
import torch

import onnxport
from _eager import check_against_eager


class Sdpa(torch.nn.Module):
    def __init__(self, **kwargs: object) -> None:
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kwargs)  # type: ignore[arg-type]


def _qkv(kv_heads: int = 4) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(2, 4, 5, 8), torch.randn(2, kv_heads, 6, 8), torch.randn(2, kv_heads, 6, 8)


def _bool_mask() -> torch.Tensor:
    mask = torch.rand(2, 1, 5, 6) > 0.3
    mask[0, 0, 1, :] = False  # a fully masked row
    return mask


CASES = {
    "no_mask": ({}, False, None),
    "bool_mask_fully_masked_row": ({}, False, "bool"),
    "float_mask": ({}, False, "float"),
    "float_mask_lowest_row": ({}, False, "lowest"),
    "float_mask_minus_inf_row": ({}, False, "-inf"),
    "causal": ({"is_causal": True}, False, None),
    "gqa_scale": ({"enable_gqa": True, "scale": 0.3}, True, "bool"),
}


@pytest.mark.parametrize("opset", [18, 23])
@pytest.mark.parametrize("case", list(CASES))
def test_sdpa_matches_eager(case: str, opset: int) -> None:
    kwargs, gqa, mask_kind = CASES[case]
    q, k, v = _qkv(2 if gqa else 4)
    mask = None
    if mask_kind == "bool":
        mask = _bool_mask()
    elif mask_kind == "float":
        mask = torch.randn(2, 1, 5, 6)
    elif mask_kind in ("lowest", "-inf"):  # transformers' finfo.min masks: every key of row 1 hidden
        hidden = torch.finfo(torch.float32).min if mask_kind == "lowest" else float("-inf")
        mask = torch.where(_bool_mask(), 0.0, hidden)
    model = Sdpa(**kwargs)
    args = (q, k, v) if mask is None else (q, k, v, mask)
    program = onnxport.export(model, args, opset_version=opset)
    ops = [n.op_type for n in program.model.graph]
    assert ("Attention" in ops) == (opset >= 23)
    (out,) = program(*args)
    expected = model(*args)
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    if mask_kind in ("bool", "-inf"):
        assert float(out[0, :, 1].abs().max()) == 0.0
    if mask_kind == "lowest":  # the lowest float is added like any number: the mean of V
        torch.testing.assert_close(out[0, :, 1], v[0].mean(dim=-2), rtol=1e-4, atol=1e-5)


F = torch.nn.functional


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def test_sdpa_query_broadcast_against_batched_key() -> None:
    q, k, v = torch.randn(4, 3, 8), torch.randn(4, 4, 6, 8), torch.randn(4, 4, 6, 8)
    check_against_eager(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), q, k, v)


def test_sdpa_bfloat16() -> None:
    q, k, v = (torch.randn(2, 2, 5, 8).bfloat16() for _ in range(3))
    check_against_eager(F.scaled_dot_product_attention, q, k, v, rtol=1.6e-2, atol=1e-2)
