"""``Attention`` over transformers' ``repeat_kv`` copies reads the KV heads themselves
(passes/fusions/repeat_kv.py); a tiled repeat (other heads pairing) is left alone."""

from __future__ import annotations

import collections

import torch

import onnxport


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """transformers' ``repeat_kv`` (``modeling_llama.py``)."""
    batch, kv_heads, length, size = x.shape
    return x[:, :, None, :, :].expand(batch, kv_heads, n_rep, length, size).reshape(batch, kv_heads * n_rep, length, size)


class Grouped(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, repeat_kv(k, 3), repeat_kv(v, 3), attn_mask=mask)


class Tiled(torch.nn.Module):
    """JetMoE's pairing: head ``h`` reads KV head ``h mod kv_heads``, which ONNX Attention's
    grouping (``h // n_rep``) is not."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k.repeat(1, 3, 1, 1), v.repeat(1, 3, 1, 1), attn_mask=mask)


def _inputs(length: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(length)
    q = torch.randn(2, 6, 3, 16, generator=g)
    k, v = torch.randn(2, 2, length, 16, generator=g), torch.randn(2, 2, length, 16, generator=g)
    mask = torch.rand(2, 1, 3, length, generator=g) > 0.3
    mask[..., 0] = True
    return q, k, v, mask


DYNAMIC = ({0: "batch"}, {0: "batch", 2: "length"}, {0: "batch", 2: "length"}, {0: "batch", 3: "length"})


def _assert_equals_eager(program: onnxport.ONNXProgram, module: torch.nn.Module) -> None:
    """The program's output equals ``module``'s at two KV lengths, ``[2, 6, 3, 16]``."""
    for length in (5, 9):
        inputs = _inputs(length)
        (got,) = program(*inputs)
        want = module(*inputs)
        assert got.shape == want.shape == (2, 6, 3, 16)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_attention_reads_the_kv_heads_and_matches_eager() -> None:
    program = onnxport.export(Grouped(), _inputs(5), dynamic_shapes=DYNAMIC)
    graph = program.model.graph
    (attention,) = [n for n in graph if n.op_type == "Attention"]
    assert attention.inputs[1] is graph.inputs[1] and attention.inputs[2] is graph.inputs[2]
    assert collections.Counter(n.op_type for n in graph)["Expand"] == 0
    _assert_equals_eager(program, Grouped())


def test_tiled_heads_keep_their_repeat() -> None:
    program = onnxport.export(Tiled(), _inputs(5), dynamic_shapes=DYNAMIC)
    graph = program.model.graph
    (attention,) = [n for n in graph if n.op_type == "Attention"]
    assert attention.inputs[1] is not graph.inputs[1]
    inputs = _inputs(7)
    (got,) = program(*inputs)
    torch.testing.assert_close(got, Tiled()(*inputs), rtol=1e-5, atol=1e-6)


class Eager(torch.nn.Module):
    """transformers' ``eager_attention_forward`` with Gemma 2's logit softcapping (softcap 50,
    ``modeling_gemma2.py``) over ``repeat_kv`` copies, the query scaled by 1/4."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, repeat_kv(k, 3).transpose(2, 3)) * 0.25
        scores = torch.tanh(scores / 50.0) * 50.0
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.matmul(torch.softmax(scores, dim=-1), repeat_kv(v, 3))


def test_eager_products_read_the_kv_heads_and_match_eager() -> None:
    program = onnxport.export(Eager(), _inputs(5), dynamic_shapes=DYNAMIC)
    graph = program.model.graph
    ops = collections.Counter(n.op_type for n in graph)
    assert ops["Expand"] == 0 and ops["MatMul"] == 2
    scores, output = [n for n in graph if n.op_type == "MatMul"]
    keys = scores.inputs[1].producer()
    assert keys is not None and keys.op_type == "Transpose" and keys.inputs[0] is graph.inputs[1]
    assert output.inputs[1] is graph.inputs[2]
    # the three query heads of a KV head are one product: [B, kv_heads, n_rep * S, .]
    grouped_query = scores.inputs[0].producer()
    assert grouped_query is not None and grouped_query.op_type == "Reshape"
    assert grouped_query.inputs[1].const_value.numpy().tolist() == [0, 2, -1, 0]
    _assert_equals_eager(program, Eager())


class EagerTiled(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.repeat(1, 3, 1, 1).transpose(2, 3)).masked_fill(~mask, -1e9)
        return torch.matmul(torch.softmax(scores, dim=-1), v.repeat(1, 3, 1, 1))


def test_eager_tiled_heads_keep_their_products() -> None:
    program = onnxport.export(EagerTiled(), _inputs(5), dynamic_shapes=DYNAMIC)
    graph = program.model.graph
    for product in [n for n in graph if n.op_type == "MatMul"]:
        assert product.inputs[0] is graph.inputs[0] or product.inputs[0].producer().op_type != "Reshape"
    inputs = _inputs(7)
    (got,) = program(*inputs)
    torch.testing.assert_close(got, EagerTiled()(*inputs), rtol=1e-5, atol=1e-6)
