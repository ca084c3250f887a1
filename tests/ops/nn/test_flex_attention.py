"""FlexAttention (``torch.nn.attention.flex_attention``) exports as dense attention that matches
torch's CPU implementation: score_mod and mask_mod (with captured buffers and inputs), block masks
from ``create_block_mask`` with a dynamic batch and sequence, grouped-query heads, fully masked
rows, the log-sum-exp output; a per-position op it cannot broadcast is refused by name."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention.flex_attention import (
    AuxRequest,
    BlockMask,
    create_block_mask,
    flex_attention,
)

import onnxport
from _eager import check_against_eager
from onnxport import draws
from onnxport.testing.flex_models import MaskedSelfAttention, padding_keep


def _causal(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
    return q_idx >= kv_idx


def test_block_mask_and_score_mod_match_eager_at_other_sizes() -> None:
    torch.manual_seed(0)
    model = MaskedSelfAttention().eval()
    dims = {0: "batch_size", 1: "sequence_length"}
    program = onnxport.export(model, (torch.randn(2, 8, 16), padding_keep(2, 8)), dynamic_shapes=(dims, dims))
    assert [n.op_type for n in program.model.graph if n.op_type == "Softmax"] == ["Softmax"]
    # No re-trace: the one-block mask adds no vmapped ops, and x[i] in the subgraphs (flat_apply) translates.
    assert program.status.decomposed is False
    for batch, length in [(2, 8), (3, 50), (1, 1), (1, 64)]:
        x, keep = torch.randn(batch, length, 16), padding_keep(batch, length)
        with torch.no_grad():
            expected = model(x, keep)
        (got,) = program(x, keep)
        assert got.shape == (batch, 2, length, 8) and got.dtype == torch.float32
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_grouped_query_heads_softcap_and_no_block_mask() -> None:
    def softcap(score: torch.Tensor, b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                kv_idx: torch.Tensor) -> torch.Tensor:
        return 5.0 * torch.tanh(score / 5.0)

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return flex_attention(q, k, v, score_mod=softcap, enable_gqa=True, scale=0.7)

    torch.manual_seed(1)
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 2, 7, 8), torch.randn(2, 2, 7, 6)
    (out,) = check_against_eager(fn, q, k, v, rtol=1e-5, atol=1e-5)
    assert out.shape == (2, 4, 5, 6)


def test_fully_masked_rows_give_zero_and_the_log_sum_exp_minus_inf() -> None:
    def late(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return (q_idx >= 2) & (kv_idx <= q_idx)  # query rows 0 and 1 see no key

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask = create_block_mask(late, None, None, q.shape[2], k.shape[2], device="cpu")
        out, aux = flex_attention(q, k, v, block_mask=mask, return_aux=AuxRequest(lse=True))
        return out, aux.lse

    torch.manual_seed(2)
    q, k, v = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    out, lse = check_against_eager(fn, q, k, v, rtol=1e-5, atol=1e-5)
    assert torch.equal(out[:, :, :2], torch.zeros(1, 2, 2, 8)) and out[:, :, 2:].abs().sum() > 0
    assert torch.isneginf(lse[:, :, :2]).all() and torch.isfinite(lse[:, :, 2:]).all()


def test_document_mask_from_an_input_and_float64() -> None:
    def fn(q: torch.Tensor, document: torch.Tensor) -> torch.Tensor:
        def same_document(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
            return (document[q_idx] == document[kv_idx]) & _causal(b, h, q_idx, kv_idx)

        mask = create_block_mask(same_document, None, None, q.shape[2], q.shape[2], device="cpu")
        return flex_attention(q, q, q, block_mask=mask)

    torch.manual_seed(3)
    q = torch.randn(2, 2, 9, 4, dtype=torch.float64)
    document = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2])
    check_against_eager(fn, q, document, rtol=1e-10, atol=1e-10)


class PrefixAlibi(torch.nn.Module):
    """Keys and values of batch 1 shared by every query (a block mask made per batch entry), a
    window-or-prefix mask from an input, ALiBi slopes from a buffer and the log-sum-exp."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("slopes", torch.tensor([0.5, 0.25, 0.125, 0.0625]))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                prefix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
            return ((q_idx - kv_idx).abs() <= 3) | (kv_idx < prefix[b])

        def score_mod(score: torch.Tensor, b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                      kv_idx: torch.Tensor) -> torch.Tensor:
            return torch.where(q_idx >= kv_idx, score - self.slopes[h] * (q_idx - kv_idx), score + 0.5)

        mask = create_block_mask(mask_mod, q.shape[0], None, q.shape[2], k.shape[2], device="cpu")
        out, aux = flex_attention(q, k, v, score_mod=score_mod, block_mask=mask, return_aux=AuxRequest(lse=True))
        return out, aux.lse


def test_shared_keys_prefix_mask_alibi_and_lse_at_other_sizes() -> None:
    torch.manual_seed(5)
    model = PrefixAlibi()
    example = (torch.randn(2, 4, 10, 8), torch.randn(1, 4, 12, 8), torch.randn(1, 4, 12, 8), torch.tensor([2, 5]))
    program = onnxport.export(model, example, dynamic_shapes=({0: "batch", 2: "q"}, {2: "kv"}, {2: "kv"}, {0: "batch"}))
    other = (torch.randn(3, 4, 7, 8), torch.randn(1, 4, 20, 8), torch.randn(1, 4, 20, 8), torch.tensor([0, 9, 3]))
    for inputs in (example, other):
        with torch.no_grad():
            expected = model(*inputs)
        got = program(*inputs)
        assert got[0].shape == expected[0].shape and got[1].shape == expected[1].shape == inputs[0].shape[:3]
        for a, e in zip(got, expected):
            torch.testing.assert_close(torch.as_tensor(a), e, rtol=1e-5, atol=1e-5)


class BlockTables(torch.nn.Module):
    """Sparsity in the block tables only (``from_kv_blocks`` without mask_mod, as Kandinsky 5's NABLA)."""

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        kv_num_blocks = torch.ones(1, 1, 2, dtype=torch.int32)
        kv_indices = torch.tensor([[[[0, 1], [1, 0]]]], dtype=torch.int32)
        mask = BlockMask.from_kv_blocks(kv_num_blocks, kv_indices, BLOCK_SIZE=128, mask_mod=None)
        return flex_attention(q, q, q, block_mask=mask)


def test_a_block_sparse_mask_warns_and_matches_cpu_eager() -> None:
    q = torch.randn(1, 2, 256, 16)
    with pytest.warns(UserWarning, match="block-sparse BlockMask .* dense attention"):
        program = onnxport.export(BlockTables(), (q,))
    with torch.no_grad():
        expected = BlockTables()(q)  # torch's CPU implementation attends to every block as well
    torch.testing.assert_close(torch.as_tensor(program(q)[0]), expected, rtol=1e-5, atol=1e-5)


class ChainedIndex(torch.nn.Module):
    def forward(self, q: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        def chained(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
            return keep[b][kv_idx]  # one index at a time: keep[b] is a row per position

        mask = create_block_mask(chained, None, None, q.shape[2], q.shape[2], device="cpu")
        return flex_attention(q, q, q, block_mask=mask)


def test_an_index_per_dimension_of_a_per_position_value_is_refused_by_name() -> None:
    with pytest.raises(onnxport.UnsupportedOpError, match=r"mask_mod applies aten\.index\.Tensor to a per-position") as info:
        onnxport.export(ChainedIndex(), (torch.randn(2, 2, 4, 8), torch.ones(2, 4, dtype=torch.bool)))
    # The user's flex_attention call, not the graph Dynamo compiled it into ("<eval_with_key>").
    assert info.value.source_line is not None and "test_flex_attention.py" in info.value.source_line
    assert "return flex_attention(q, q, q, block_mask=mask)" in info.value.source_line


def test_a_transformers_model_set_to_flex_attention_exports_with_sdpa_and_keeps_its_setting() -> None:
    transformers = pytest.importorskip("transformers", reason="the hf extra is not installed")
    config = transformers.LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      attn_implementation="flex_attention")
    torch.manual_seed(4)
    model = transformers.LlamaForCausalLM(config).eval()
    dims = {0: "batch_size", 1: "sequence_length"}
    ids, mask = torch.randint(0, 100, (2, 9)), torch.ones(2, 9, dtype=torch.long)
    mask[1, :3] = 0
    program = onnxport.export(model, (), {"input_ids": ids, "attention_mask": mask, "use_cache": False},
                              dynamic_shapes={"input_ids": dims, "attention_mask": dims, "use_cache": None})
    assert model.config._attn_implementation == "flex_attention"
    assert "Attention" in {n.op_type for n in program.model.graph}  # SDPA's ONNX Attention
    ids, mask = torch.randint(0, 100, (3, 17)), torch.ones(3, 17, dtype=torch.long)
    mask[0, :5] = 0
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    (logits,) = program(input_ids=ids, attention_mask=mask)
    assert logits.shape == (3, 17, 100)
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # ~16 s: a diffusers model end to end; test_draws covers the same mechanisms fast
def test_ltx2_diffusion_decoder_exports_with_dynamic_sizes_and_matches_at_the_mean() -> None:
    """diffusers' LTX-2 diffusion decoder: 3-D neighborhood attention as a FlexAttention block mask,
    noise drawn with ``randn_tensor(generator=None)`` at the latent's size."""
    ltx2 = pytest.importorskip("diffusers.models.autoencoders.ltx2_diffusion_decoder", reason="diffusers < 0.42")
    torch.manual_seed(0)
    model = ltx2.LTX2VideoDiffusionDecoderModel(
        latent_channels=8, patch_size=2, decoder_head_dim=16, decoder_stage_channels=(32, 16, 16, 16, 16),
        decoder_stage_depths=(1, 1, 1, 1, 1), decoder_stage_kernels=((3, 3, 3),) * 4,
        decoder_upsample_strides=((1, 1, 1), (1, 1, 1), (1, 2, 2), (2, 1, 1)),
        decoder_upsample_channel_reductions=(2, 1, 1, 1), decoder_stage5_kernel=(3, 3, 3), decoder_t_emb_dim=32,
        spatial_compression_ratio=4, temporal_compression_ratio=2,
    ).eval()

    class Decode(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            return self.model(z, return_dict=False)[0]

    program = onnxport.export(Decode(), (torch.randn(2, 8, 2, 3, 3),),
                              dynamic_shapes=({0: "batch_size", 3: "height", 4: "width"},), verify=True)
    z = torch.randn(1, 8, 2, 4, 5)
    with torch.no_grad(), draws.EagerDrawsAtMean():
        expected = Decode()(z)
    with draws.onnx_draws_at_mean(program.model):
        program.release()
        (got,) = program(z)
    program.release()
    assert got.shape == expected.shape == (1, 3, 3, 16, 20)
    torch.testing.assert_close(torch.as_tensor(got), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # ~20 s: a diffusers model whose sparsity is in BlockMask tables (NABLA)
def test_kandinsky6_sr_exports_densely_with_a_warning_and_matches_cpu_eager_at_other_sizes() -> None:
    """diffusers' Kandinsky 6 SR builds a NABLA ``BlockMask.from_kv_blocks(mask_mod=None)`` in every
    block: exported with dynamic batch, frames, height and width, with the block-sparse warning,
    it matches CPU eager (which is dense too) at another size."""
    sr = pytest.importorskip("diffusers.models.transformers.transformer_kandinsky6_sr", reason="diffusers < 0.42")
    torch.manual_seed(0)
    model = sr.Kandinsky6SRTransformer3DModel(
        in_visual_dim=4, out_visual_dim=4, time_dim=16, patch_size=(1, 1, 1), model_dim=32, ff_dim=32,
        num_visual_blocks=2, axes_dims=(4, 6, 6), scale_factor=(1.0, 2.0, 2.0), nabla_threshold=0.8,
        nabla_window=(3, 3, 3),
    ).eval()  # fmt: skip
    with torch.no_grad():
        model.pooled_bias.normal_(0, 0.5)  # zero at initialization: every block would be the identity

    class Upscale(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, hidden_states: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
            return self.model(hidden_states, timestep, return_dict=False)[0]

    batch = torch.export.Dim("batch", min=1, max=64)
    frames, height, width = (torch.export.Dim(n, min=2, max=16) for n in ("frames", "h8", "w8"))
    dynamic = ({0: batch, 1: frames, 2: 8 * height, 3: 8 * width}, {0: batch})
    with pytest.warns(UserWarning, match="block-sparse BlockMask"):
        program = onnxport.export(Upscale(), (torch.randn(2, 2, 16, 16, 9), torch.rand(2) * 1000),
                                  dynamic_shapes=dynamic, verify=True)
    other = (torch.randn(3, 3, 24, 16, 9), torch.rand(3) * 1000)
    with torch.no_grad():
        expected = Upscale()(*other)
    (got,) = program(*other)
    assert got.shape == expected.shape
    torch.testing.assert_close(torch.as_tensor(got), expected, rtol=1e-4, atol=1e-4)
