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


class BuiltMask(torch.nn.Module):
    """The mask made in the graph from a boolean "attend" mask, as transformers does: ``where`` with
    ``finfo.min`` or BERT's ``(1 - mask) * finfo.min``."""

    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attend: torch.Tensor) -> torch.Tensor:
        lowest = torch.finfo(q.dtype).min
        if self.form == "where":
            mask = torch.where(attend, 0.0, lowest)
        else:
            mask = (1.0 - attend.to(q.dtype)) * lowest
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class RelativePositionBias(torch.nn.Module):
    """SAM's decomposed relative-position bias (``rel_h[..., None] + rel_w[..., None, :]``, both
    computed from the query): a mask no entry of which can be the lowest float."""

    def __init__(self) -> None:
        super().__init__()
        self.rel_h = torch.nn.Parameter(torch.randn(3, 3, 8))
        self.rel_w = torch.nn.Parameter(torch.randn(2, 2, 8))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        b, heads, _, dim = q.shape
        grid = q.reshape(b * heads, 3, 2, dim)
        rel_h = torch.einsum("bhwc,hkc->bhwk", grid, self.rel_h)
        rel_w = torch.einsum("bhwc,wkc->bhwk", grid, self.rel_w)
        bias = (rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]).reshape(b, heads, 6, 6)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)


@pytest.mark.parametrize("form", ["where", "bert"])
def test_mask_built_with_lowest_float_keeps_its_rows(form: str) -> None:
    """A mask the graph builds from ``finfo.min`` keeps the rewrite of its lowest entries (the
    hidden row gets the mean of V, as in torch)."""
    q, k, v = (torch.randn(2, 4, 6, 8) for _ in range(3))
    attend = torch.rand(2, 1, 6, 6) > 0.3
    attend[0, 0, 1, :] = False
    model = BuiltMask(form)
    program = onnxport.export(model, (q, k, v, attend), opset_version=23)
    ops = [n.op_type for n in program.model.graph]
    assert "Attention" in ops and "Equal" in ops, ops
    (out,) = program(q, k, v, attend)
    torch.testing.assert_close(out, model(q, k, v, attend), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(out[0, :, 1], v[0].mean(dim=-2), rtol=1e-4, atol=1e-5)


def test_computed_bias_is_not_copied() -> None:
    """A bias computed from the query (no mask fill in its lineage) goes to Attention as it is:
    no Equal/Where pair copying a [batch, heads, L, S] tensor (SAM's global attention at 1024²:
    3.0 GB instead of 4.9 GB peak in onnxruntime at batch 1)."""
    q, k, v = (torch.randn(2, 4, 6, 8) for _ in range(3))
    model = RelativePositionBias()
    program = onnxport.export(model, (q, k, v), opset_version=23)
    ops = [n.op_type for n in program.model.graph]
    assert "Attention" in ops and "Equal" not in ops and "Where" not in ops, ops
    (out,) = program(q, k, v)
    torch.testing.assert_close(out, model(q, k, v), rtol=1e-4, atol=1e-5)
