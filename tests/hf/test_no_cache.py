"""A decoder whose cache cannot be graph inputs and outputs (MiniMax keeps its own cache class;
a BERT LM head without ``is_decoder`` returns none) is exported without its cache, with a warning:
``model.onnx`` maps the whole sequence to logits, as eager does (``hf/inputs.components``)."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import onnxport.hf
import onnxport.inference

transformers = pytest.importorskip("transformers")


def _minimax(folder: pathlib.Path) -> torch.nn.Module:
    config = transformers.MiniMaxConfig(
        vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, num_local_experts=2, num_experts_per_tok=1, block_size=4,
        layer_types=["linear_attention", "full_attention"], max_position_embeddings=64,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.MiniMaxForCausalLM(config).eval()
    model.save_pretrained(folder)
    return model


def test_a_decoder_with_its_own_cache_class_is_exported_without_its_cache(tmp_path: pathlib.Path) -> None:
    model = _minimax(tmp_path / "ckpt")
    with pytest.warns(UserWarning, match="without its cache"):
        result = onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out")
    assert result.task == "text-generation" and result.passed
    assert not (tmp_path / "out" / "genai_config.json").exists()
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    dims = ["batch_size", "sequence_length"]
    assert [(i.name, i.shape) for i in session.get_inputs()] == [
        ("input_ids", dims), ("attention_mask", dims), ("position_ids", dims),
    ]  # fmt: skip
    assert [o.name for o in session.get_outputs()] == ["logits"]
    ids = torch.randint(3, 99, (2, 11), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[0, :4] = 0  # left padding: positions count the unpadded tokens, as generate() makes them
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": positions.numpy()}
    (logits,) = session.run(None, feeds)
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False).logits
    assert logits.shape == (2, 11, 99)
    np.testing.assert_allclose(logits[:, 4:], expected[:, 4:].numpy(), rtol=1e-4, atol=1e-5)
    # generation feeds the whole sequence at each step (unpadded rows: transformers' own cache
    # handles left padding in the linear-attention state differently from its no-cache forward)
    ids = ids[:, 4:]
    got = onnxport.inference.load(tmp_path / "out").generate_ids(ids.numpy(), max_new_tokens=10)
    with torch.no_grad():
        want = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False)
    assert got.tolist() == want.tolist()
    assert len(set(got[:, 7:].flatten().tolist())) > 3, "degenerate decoding proves little"


def _runs_at_any_length(model: torch.nn.Module, folder: pathlib.Path, lengths: tuple[int, ...] = (1, 6, 13)) -> None:
    """Export ``model`` without its cache; the graph has a ``Scan`` and gives eager's logits at
    lengths other than the capture's."""
    model.save_pretrained(folder / "ckpt")
    with pytest.warns(UserWarning, match="without its cache"):
        result = onnxport.hf.export(folder / "ckpt", output_dir=folder / "out")
    assert result.passed
    session = ort.InferenceSession(str(folder / "out" / "onnx" / "model.onnx"))
    graph = onnx.load(str(folder / "out" / "onnx" / "model.onnx"), load_external_data=False).graph
    assert "Scan" in {n.op_type for n in graph.node}
    for length in lengths:
        ids = torch.randint(3, 99, (2, length), generator=torch.Generator().manual_seed(length))
        mask = torch.ones_like(ids)
        feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
        if "position_ids" in [i.name for i in session.get_inputs()]:  # a forward that takes them
            feeds["position_ids"] = np.broadcast_to(np.arange(length), (2, length))
        (logits,) = session.run(None, feeds)
        with torch.no_grad():
            expected = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        assert logits.shape == (2, length, 99)
        np.testing.assert_allclose(logits, expected.numpy(), rtol=1e-4, atol=1e-5)


def test_recurrent_gemma_runs_at_any_length_without_its_cache(tmp_path: pathlib.Path) -> None:
    """RecurrentGemma's cache is its own (a ``DynamicCache`` is refused), and its RG-LRU loops over
    the sequence: captured as a ``scan`` (capture/rg_lru.py), the graph runs at any length."""
    config = transformers.RecurrentGemmaConfig(
        vocab_size=99, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=1, lru_width=32, attention_window_size=4, conv1d_width=4, head_dim=8,
        block_types=["recurrent", "recurrent", "attention"],
    )  # fmt: skip
    torch.manual_seed(0)
    _runs_at_any_length(transformers.RecurrentGemmaForCausalLM(config).eval(), tmp_path)


def test_rwkv_runs_at_any_length_without_its_cache(tmp_path: pathlib.Path) -> None:
    """RWKV keeps its state in a format of its own, and its WKV attention loops over the sequence:
    captured as a ``scan`` (capture/wkv.py), the graph runs at any length (before, the capture
    fixed the sequence length to the example's)."""
    config = transformers.RwkvConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, attention_hidden_size=32, intermediate_size=64,
        context_length=64,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.RwkvForCausalLM(config).eval()
    with torch.no_grad():  # random time_decay/time_first of both signs, as trained checkpoints have
        for name, p in model.named_parameters():
            if "time_decay" in name or "time_first" in name:
                p.copy_(torch.randn(p.shape))
    _runs_at_any_length(model, tmp_path)


def test_xlstm_runs_at_any_length_without_its_cache(tmp_path: pathlib.Path) -> None:
    """xLSTM's forward takes its own cache class (a ``DynamicCache`` is refused), and its mLSTM
    loops over the sequence (chunks of 64 tokens, then one at a time): captured as a ``scan`` of
    its step kernel (capture/mlstm.py), the graph runs at any length, past one chunk too (70),
    where eager computes the chunk in parallel."""
    config = transformers.xLSTMConfig(vocab_size=99, hidden_size=64, num_heads=4, num_blocks=2, embedding_dim=64)
    torch.manual_seed(0)
    _runs_at_any_length(transformers.xLSTMForCausalLM(config).eval(), tmp_path, lengths=(1, 6, 13, 70))


def test_with_past_false_exports_a_decoder_without_its_cache(tmp_path: pathlib.Path) -> None:
    """``with_past=False``: Optimum's past-less text-generation graph (the whole sequence, with the
    positions of left-padded rows) for a decoder that has a cache; other tasks are refused."""
    from onnxport.errors import HFError
    from onnxport.testing.tiny_models import DECODER, _make

    model = _make("LlamaConfig", "LlamaForCausalLM", **DECODER)(initializer_range=0.2)
    result = onnxport.hf.export(model, with_past=False, output_dir=tmp_path / "out")
    assert result.passed and not (tmp_path / "out" / "genai_config.json").exists()
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"))
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask", "position_ids"]
    assert [o.name for o in session.get_outputs()] == ["logits"]
    ids = torch.randint(3, 99, (2, 9), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    (logits,) = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "position_ids": positions.numpy()})
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.numpy()
    np.testing.assert_allclose(logits[:, 3:], expected[:, 3:], rtol=1e-4, atol=1e-5)
    got = onnxport.inference.load(tmp_path / "out").generate_ids(ids.numpy(), mask.numpy(), max_new_tokens=8)
    with torch.no_grad():
        want = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=8, do_sample=False)
    assert got.tolist() == want.tolist()
    bert = _make("BertConfig", "BertModel", vocab_size=99, hidden_size=32, num_hidden_layers=1,
                 num_attention_heads=2, intermediate_size=37)()  # fmt: skip
    with pytest.raises(HFError, match="with_past=False exports a text-generation decoder"):
        onnxport.hf.export(bert, with_past=False)


def test_a_cache_layer_with_state_besides_keys_and_values_is_not_exported_as_a_cache() -> None:
    """DeepSeek-V4's cache layers (``DeepseekV4HCACache``, a ``DynamicSlidingWindowLayer`` of its
    modeling module) also keep the compressor's buffered tokens and compressed entries, which
    ``past_key_values`` inputs would not carry: its cache export gave a genai_config whose
    ``present.0.key`` the graph did not have, and a graph that restarted the compressor at every
    step. :func:`onnxport.hf.inputs.cache_layers_of` now refuses it (the export then goes without
    the cache, as for MiniMax above)."""
    from onnxport.hf.cache import CacheFormatError
    from onnxport.hf.inputs import cache_layers_of

    config = transformers.DeepseekV4Config(
        vocab_size=64, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, head_dim=16, q_lora_rank=32,
        o_lora_rank=32, o_groups=2, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
        index_n_heads=4, index_head_dim=16, index_topk=4, sliding_window=8,
        layer_types=["compressed_sparse_attention", "heavily_compressed_attention"],
        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.DeepseekV4ForCausalLM(config).eval()
    with pytest.raises(CacheFormatError, match=r"DeepseekV4\w+Cache\).*compressed_kv"):
        cache_layers_of(model)


def _big_bird(is_decoder: bool) -> torch.nn.Module:
    config = transformers.BigBirdConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
        max_position_embeddings=64, attention_type="original_full", is_decoder=is_decoder,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.BigBirdForCausalLM(config).eval()


def test_a_decoder_attending_to_later_tokens_is_exported_without_a_cache() -> None:
    """BigBirdForCausalLM without ``is_decoder=True`` attends both ways yet returns the cache it
    is given: a graph with past_key_values reproduced eager's cached forward, whose logits differ
    from the whole sequence's that ``generate`` (``use_cache`` forced off) computes, and the
    onnxruntime target's causal GroupQueryAttention failed validation. The probe
    (``hf/inputs._attends_ahead``) sees the first position depend on the second token; the same
    model with ``is_decoder=True`` keeps its cache."""
    from onnxport.hf.cache import CacheFormatError
    from onnxport.hf.inputs import cache_layers_of

    with pytest.raises(CacheFormatError, match="attends to later tokens"):
        cache_layers_of(_big_bird(is_decoder=False))
    assert len(cache_layers_of(_big_bird(is_decoder=True))) == 2
    model = _big_bird(is_decoder=False)
    with pytest.warns(UserWarning, match="attends to later tokens"):
        result = onnxport.hf.export(model, target="onnxruntime")
    program = result.programs["model"]
    names = [v.name for v in program.model.graph.inputs]
    assert result.passed and names == ["input_ids", "attention_mask", "token_type_ids", "position_ids"], names
    ids = torch.randint(3, 99, (1, 6), generator=torch.Generator().manual_seed(5))
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    ones = np.ones((1, 6), np.int64)
    feeds = {"input_ids": ids.numpy(), "attention_mask": ones, "token_type_ids": 0 * ones, "position_ids": np.arange(6)[None]}
    (logits,) = session.run(None, feeds)
    with torch.no_grad():
        expected = model(input_ids=ids).logits.numpy()
    assert logits.shape == (1, 6, 99)
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)
