"""Rotary fused into GroupQueryAttention and the in-place (shared-buffer) KV cache.

- the fused rotary (``do_rotary=1``, cos/sin caches from ``inv_freq``) equals the standard graph
  on unpadded inputs (prompt, decode steps, a continued prompt); with left padding it equals the
  standard graph fed the kernel's positions (``past + i``): same logits as with transformers'
  positions (a per-row shift), other cached keys (the documented rule);
- ``kv_cache="shared"``: fixed-length past buffers, present aliasing them, a greedy decode loop
  feeding present back as past equals eager; onnxruntime-genai 0.18 with
  ``past_present_share_buffer: true`` generates the same 20 tokens as transformers.
"""

from __future__ import annotations

import collections
import json
import pathlib

import numpy as np
import onnx_ir as ir
import pytest
import torch

import onnxport.hf
from _generation import assert_genai_equals_transformers
from onnxport.errors import HFError
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.inputs import CHECK_SIZES
from onnxport.hf.loading import from_model
from onnxport.hf.shared_cache import buffered, unpadded
from onnxport.passes.ort import optimize_for_onnxruntime

from ._models import llama

pytest.importorskip("transformers")

# prompt (batch 3), decode steps (batch 1 and 2), a continued prompt (batch 1: onnxruntime's GQA
# refuses batch > 1 with several new tokens and a past)
SIZES = [
    hf_inputs.Sizes(3, 5, 0, seed=1),
    hf_inputs.Sizes(1, 1, 9, seed=2),
    hf_inputs.Sizes(2, 1, 7, seed=3),
    hf_inputs.Sizes(1, 4, 6, seed=4),
]


def _ops(model: ir.Model) -> collections.Counter:
    return collections.Counter(n.op_type for n in model.graph)


def _assert_close(got, want, names, what) -> None:
    assert len(got) == len(want)
    for name, a, b in zip(names, got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (name, what)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5, err_msg=f"{name} {what}")


@pytest.fixture(scope="module")
def rotary_fused():
    """(model, part, standard program, concat-cache program with the rotary fused)."""
    model = llama()
    standard = onnxport.hf.export(model, validate=False).programs["model"]
    fused = onnxport.hf.export(model, validate=False).programs["model"]
    optimize_for_onnxruntime(fused.model, rotary_positions=model.config.max_position_embeddings)
    fused.release()
    part = hf_inputs.components(from_model(model, None))[0]
    return model, part, standard, fused


def test_rotary_fused_equals_standard_graph(rotary_fused) -> None:
    model, part, standard, fused = rotary_fused
    ops = _ops(fused.model)
    assert ops["GroupQueryAttention"] == 2 and ops["Cos"] == ops["Sin"] == ops["Neg"] == 0
    gqa = [n for n in fused.model.graph if n.op_type == "GroupQueryAttention"]
    assert all(n.attributes["do_rotary"].as_int() == 1 for n in gqa)
    assert gqa[0].inputs[7] is gqa[1].inputs[7]  # one cos cache for all layers
    for sizes in SIZES:
        feeds = unpadded(part.make_inputs(sizes))
        _assert_close(fused(**feeds), standard(**feeds), part.output_names, sizes)


def test_rotary_caches_equal_transformers_rotary_embedding(rotary_fused) -> None:
    model, _, _, fused = rotary_fused
    positions = model.config.max_position_embeddings
    cos_cache = fused.model.graph.initializers["cos_cache"].const_value.numpy()
    sin_cache = fused.model.graph.initializers["sin_cache"].const_value.numpy()
    half = model.config.hidden_size // model.config.num_attention_heads // 2
    assert cos_cache.shape == sin_cache.shape == (positions, half)
    x = torch.zeros(1, positions, 1)
    with torch.no_grad():
        cos, sin = model.model.rotary_emb(x, torch.arange(positions)[None])
    # transformers' cos/sin are [cos(p * inv_freq)] * 2 along the last axis
    np.testing.assert_allclose(cos_cache, cos[0, :, :half].numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(sin_cache, sin[0, :, :half].numpy(), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(cos[0, :, half:].numpy(), cos[0, :, :half].numpy())


def test_positions_come_from_lengths(rotary_fused) -> None:
    """The kernel rotates by ``past + i`` for every row, whatever ``position_ids`` says: the
    whole output equals the standard graph fed those positions. Rotary scores depend only on
    position differences, so with transformers' left-padded positions (a per-row shift) the
    prompt's logits agree too, but the cached keys do not, so a cache made by transformers does
    not continue correctly (why only the unpadded shared graph fuses it);
    positions that are no shift of the arange change the logits."""
    _, part, standard, fused = rotary_fused
    for sizes in (hf_inputs.Sizes(3, 5, 0, seed=5), hf_inputs.Sizes(2, 1, 8, seed=6)):
        feeds = part.make_inputs(sizes)  # row 0 left-padded, transformers' positions
        total, new = feeds["attention_mask"].shape[1], feeds["input_ids"].shape[1]
        kernel = torch.arange(total - new, total).expand_as(feeds["position_ids"]).contiguous()
        assert not torch.equal(kernel, feeds["position_ids"])
        got = fused(**feeds)
        _assert_close(got, standard(**{**feeds, "position_ids": kernel}), part.output_names, sizes)
        transformers_positions = standard(**feeds)
        key, want = np.asarray(got[1]), np.asarray(transformers_positions[1])
        assert np.abs(key[0] - want[0]).max() > 1e-3  # row 0: padded, keys rotated otherwise
        np.testing.assert_allclose(key[1:], want[1:], rtol=1e-4, atol=2e-5)
        if sizes.past == 0:  # the same logits; a past cached by transformers would not match
            _assert_close(got[:1], transformers_positions[:1], ["logits"], sizes)
        stretched = standard(**{**feeds, "position_ids": 3 * kernel})[0]
        assert np.abs(np.asarray(got[0]) - np.asarray(stretched)).max() > 1e-3


ROTARY_FORMS = {
    # rotary on 16 of 32 dims: Concat(rotation(Slice(x, 0, 16)), Slice(x, 16, 32))
    "phi-partial": ("PhiConfig", "PhiForCausalLM", {"partial_rotary_factor": 0.5, "hidden_size": 128}),
    "nemotron-partial": ("NemotronConfig", "NemotronForCausalLM", {"partial_rotary_factor": 0.5, "hidden_size": 128}),
    # q/k/v sliced from the fused qkv_proj; Concat(rotation(x), Slice(x, 16, 16)): an empty pass part
    "phi3": ("Phi3Config", "Phi3ForCausalLM", {}),
    "phi3-partial": ("Phi3Config", "Phi3ForCausalLM", {"partial_rotary_factor": 0.5, "hidden_size": 128}),
    # torch.chunk halves: Concat(x1·cos − x2·sin, x2·cos + x1·sin), sinks, a sliding-window layer
    "gpt-oss": ("GptOssConfig", "GptOssForCausalLM", {"head_dim": 16, "num_local_experts": 4,
                "num_experts_per_tok": 2, "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]}),
    # interleaved pairs (rotary_interleaved=1): Cos(repeat_interleave(f)) (Cohere); the first half of
    # Cos(Concat(f, f)) repeated (Helium); and that on 16 of 32 dims (GLM-4)
    "cohere": ("CohereConfig", "CohereForCausalLM", {}),
    "helium": ("HeliumConfig", "HeliumForCausalLM", {"head_dim": 16}),
    "glm4-partial": ("Glm4Config", "Glm4ForCausalLM", {"hidden_size": 128, "head_dim": 32, "partial_rotary_factor": 0.5}),
}  # fmt: skip


@pytest.mark.parametrize("form", sorted(ROTARY_FORMS))
def test_rotary_spellings_fuse_and_equal_standard_graph(form: str) -> None:
    """Partial rotary (the kernel's ``rotary_dim`` from the caches' width) and gpt-oss's split
    halves fold into the kernel like Llama's rotate-half, and equal the standard graph."""
    from onnxport.testing.tiny_models import _make

    from ._models import GQA_DECODER

    config_class, model_class, extra = ROTARY_FORMS[form]
    model = _make(config_class, model_class, **{**GQA_DECODER, **extra})()
    standard = onnxport.hf.export(model, validate=False).programs["model"]
    fused = onnxport.hf.export(model, validate=False).programs["model"]
    optimize_for_onnxruntime(fused.model, rotary_positions=model.config.max_position_embeddings)
    fused.release()
    gqa = [n for n in fused.model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == 2 and all(n.attributes["do_rotary"].as_int() == 1 for n in gqa)
    interleaved = form in ("cohere", "helium", "glm4-partial")
    assert all(n.attributes.get_int("rotary_interleaved", 0) == int(interleaved) for n in gqa)
    assert _ops(fused.model)["Cos"] == _ops(fused.model)["Sin"] == 0
    rotary_dim = 16  # the partial ones: half of 32
    assert fused.model.graph.initializers["cos_cache"].shape == ir.Shape([model.config.max_position_embeddings, rotary_dim // 2])
    part = hf_inputs.components(from_model(model, None))[0]
    for sizes in SIZES:
        feeds = unpadded(part.make_inputs(sizes))
        _assert_close(fused(**feeds), standard(**feeds), part.output_names, sizes)


LONGROPE = {
    "rope_type": "longrope", "original_max_position_embeddings": 32,
    "short_factor": [1.0 + 0.1 * i for i in range(8)], "long_factor": [2.0 + 0.3 * i for i in range(8)],
}  # fmt: skip


def test_longrope_rows_follow_the_sequence_length() -> None:
    """Phi-3's LongRoPE (long factors past 32 positions here): one table of the short rows then
    the long ones, the step's rows sliced from the half the graph's own condition picks; equal to
    the standard graph below, across and above the switch."""
    from onnxport.testing.tiny_models import _make

    from ._models import GQA_DECODER

    config = {**GQA_DECODER, "max_position_embeddings": 64, "rope_scaling": LONGROPE, "original_max_position_embeddings": 32}
    model = _make("Phi3Config", "Phi3ForCausalLM", **config)()
    standard = onnxport.hf.export(model, validate=False).programs["model"]
    fused = onnxport.hf.export(model, validate=False).programs["model"]
    optimize_for_onnxruntime(fused.model, rotary_positions=64)
    fused.release()
    ops = _ops(fused.model)
    assert ops["Cos"] == ops["Sin"] == 0 and ops["GroupQueryAttention"] == 2
    table = fused.model.graph.initializers["cos_cache"]
    assert table.shape == ir.Shape([32 + 64, 8])
    (rows,) = [use.node for use in table.uses()]  # one Slice for all layers
    assert rows.op_type == "Slice" and {use.node.op_type for use in rows.outputs[0].uses()} == {"GroupQueryAttention"}
    part = hf_inputs.components(from_model(model, None))[0]
    # short; a prompt past the switch; decode steps at 33 and 40 positions; a prompt ending at 32
    for sizes in [*SIZES, hf_inputs.Sizes(1, 40, 0, seed=7), hf_inputs.Sizes(1, 1, 32, seed=8),
                  hf_inputs.Sizes(2, 1, 39, seed=9), hf_inputs.Sizes(1, 4, 28, seed=10)]:  # fmt: skip
        feeds = unpadded(part.make_inputs(sizes))
        _assert_close(fused(**feeds), standard(**feeds), part.output_names, sizes)
    long_feeds = unpadded(part.make_inputs(hf_inputs.Sizes(1, 1, 39, seed=9)))
    short_table = {**long_feeds, "position_ids": long_feeds["position_ids"] - 20}  # the graph picks by position
    assert np.abs(np.asarray(standard(**short_table)[0]) - np.asarray(standard(**long_feeds)[0])).max() > 1e-3


def test_a_rotary_dim_the_kernel_refuses_stays_unfused() -> None:
    """onnxruntime's kernel wants ``R/2`` a multiple of 8: rotary on 8 of 16 dims keeps its ops."""
    from onnxport.testing.tiny_models import _make

    from ._models import GQA_DECODER

    model = _make("PhiConfig", "PhiForCausalLM", **{**GQA_DECODER, "partial_rotary_factor": 0.5})()
    program = onnxport.hf.export(model, validate=False).programs["model"]
    optimize_for_onnxruntime(program.model, rotary_positions=model.config.max_position_embeddings)
    gqa = [n for n in program.model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == 2 and all(n.attributes["do_rotary"].as_int() == 0 for n in gqa)
    assert _ops(program.model)["Cos"] == 1


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """(model, export folder) of ``kv_cache="shared"`` (validated against eager)."""
    work = tmp_path_factory.mktemp("shared")
    model = llama()
    model.save_pretrained(work / "src")
    result = onnxport.hf.export(
        work / "src", output_dir=work / "out", target="onnxruntime", kv_cache="shared"
    )
    assert result.passed and len(result.checks) == len(CHECK_SIZES) * 5
    return model, result, work / "out"


def test_shared_buffer_graph_and_genai_config(shared) -> None:
    model, result, folder = shared
    graph = result.programs["model"].model.graph
    ops = _ops(result.programs["model"].model)
    assert ops["GroupQueryAttention"] == 2 and ops["Concat"] == 0 and ops["Cos"] == 0
    assert ops["ReduceSum"] == 1  # seqlens_k from attention_mask, shared by the layers
    for node in graph:
        if node.op_type == "GroupQueryAttention":
            assert len(node.inputs) < 11 or node.inputs[10] is None  # no attention_bias
            assert node.attributes["do_rotary"].as_int() == 1
            # packed q|k|v straight in (the builder's form): no Split, key and value empty
            assert node.inputs[0].producer().op_type in ("MatMul", "Add")
            assert node.inputs[1] is None and node.inputs[2] is None
    assert ops["Split"] == 0  # gate and up stay two MatMuls (the builder's form)
    inputs = {v.name: v for v in graph.inputs}
    outputs = {v.name: v for v in graph.outputs}
    assert outputs["present.0.key"].shape == inputs["past_key_values.0.key"].shape
    config = json.loads((folder / "genai_config.json").read_text())
    assert config["search"]["past_present_share_buffer"] is True
    assert config["search"]["max_length"] == model.config.max_position_embeddings


def test_shared_buffer_decode_loop_equals_eager(shared) -> None:
    """Prompt, then 4 steps feeding present (the whole buffer) back as past."""
    model, result, _ = shared
    program = result.programs["model"]
    ids = torch.randint(3, 99, (2, 6), generator=torch.Generator().manual_seed(3))
    layers = model.config.num_hidden_layers
    buffer = torch.zeros(2, 2, 16, 16)
    past = [(buffer, buffer) for _ in range(layers)]
    cache, new = None, ids
    for step in range(5):
        total = 6 + step
        feeds = {
            "input_ids": new,
            "attention_mask": torch.ones(2, total, dtype=torch.int64),
            "position_ids": torch.arange(total - new.shape[1], total).expand(2, -1),
            "past_key_values": past,
        }
        out = program(**feeds)
        with torch.no_grad():
            eager = model(input_ids=new, past_key_values=cache, use_cache=True)
        np.testing.assert_allclose(out[0].numpy(), eager.logits.numpy(), rtol=1e-4, atol=2e-5)
        assert out[1].shape == (2, 2, 16, 16)  # the buffer, not a grown cache
        cache = eager.past_key_values
        key = cache.layers[0].keys
        np.testing.assert_allclose(out[1][:, :, :total].numpy(), key.numpy(), atol=2e-5)
        past = [(out[1 + 2 * i], out[2 + 2 * i]) for i in range(layers)]
        new = eager.logits[:, -1:].argmax(-1)


def test_shared_buffer_feeds_helpers() -> None:
    part = hf_inputs.components(from_model(llama(num_hidden_layers=1), None))[0]
    feeds = unpadded(part.make_inputs(hf_inputs.Sizes(2, 3, 4, seed=0)))
    assert feeds["attention_mask"].all() and feeds["position_ids"].tolist() == [[4, 5, 6]] * 2
    assert part.input_names is not None
    grown = buffered(feeds, 9, part.input_names)
    key = grown["past_key_values"][0][0]
    assert key.shape[2] == 9 and torch.equal(key[:, :, :4], feeds["past_key_values"][0][0])
    assert not key[:, :, 4:].any()
    with pytest.raises(ValueError, match="max_length 6"):
        buffered(feeds, 6, part.input_names)


@pytest.mark.parametrize("padded", [False, True], ids=["one-length", "right-padded"])
def test_genai_generates_like_transformers_with_shared_buffer(shared, padded) -> None:
    og = pytest.importorskip("onnxruntime_genai")
    model, _, folder = shared
    assert_genai_equals_transformers(og, model, folder, padded=padded)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"kv_cache": "shared"}, "target='onnxruntime'"),
     ({"kv_cache": "static", "target": "onnxruntime"}, "'concat' or 'shared'")],
)  # fmt: skip
def test_shared_buffer_bad_options(kwargs, message) -> None:
    with pytest.raises(HFError, match=message):
        onnxport.hf.export(llama(num_hidden_layers=1), **kwargs)


def test_shared_buffer_refuses_chunked_attention() -> None:
    model = llama(num_hidden_layers=1, attention_chunk_size=4)  # Llama 4's chunks live in the mask
    with pytest.raises(HFError, match="attention_chunk_size"):
        onnxport.hf.export(model, target="onnxruntime", kv_cache="shared", validate=False)


SLIDING = {
    # every layer slides (window 4 < the validation and generation lengths)
    "mistral-sliding": (
        "MistralConfig", "MistralForCausalLM", {"sliding_window": 4, "initializer_range": 0.2}
    ),  # fmt: skip
    # eager attention (logit softcapping 50), alternating sliding/full layers, tanh GELU
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {"sliding_window": 4, "head_dim": 16}),
    # eager attention with sinks (head_sink), alternating sliding/full layers, mixture of experts
    "gpt-oss": (
        "GptOssConfig", "GptOssForCausalLM",
        {"sliding_window": 4, "head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "initializer_range": 0.2},
    ),  # fmt: skip
}


@pytest.mark.slow  # an export from a folder, validation and 20 genai steps per family (~15 s idle)
@pytest.mark.parametrize("name", list(SLIDING))
def test_sliding_window_shared_buffer_generates_like_transformers(name, tmp_path) -> None:
    """The window as the kernel's ``local_window_size`` (no mask in the shared graph): validated
    against eager at lengths past the window, and onnxruntime-genai with the shared buffer
    generates transformers' 20 greedy tokens."""
    og = pytest.importorskip("onnxruntime_genai")
    from onnxport.testing.tiny_models import _make

    from ._models import GQA_DECODER

    config_class, model_class, extra = SLIDING[name]
    model = _make(config_class, model_class, **GQA_DECODER, **extra)()  # inits that do not repeat
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(
        tmp_path / "src", output_dir=tmp_path / "out", target="onnxruntime", kv_cache="shared"
    )
    assert result.passed
    gqa = [n for n in result.programs["model"].model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == GQA_DECODER["num_hidden_layers"]
    windows = [n.attributes["local_window_size"].as_int() for n in gqa if "local_window_size" in n.attributes]
    assert windows == ([4, 4] if name == "mistral-sliding" else [4])  # gemma2, gpt-oss: layer 1 is full
    if name == "gemma2":
        assert all(n.attributes["softcap"].as_float() == 50.0 for n in gqa)
    if name == "gpt-oss":
        assert all(len(n.inputs) == 12 and n.inputs[11] is not None for n in gqa)  # head_sink
    assert_genai_equals_transformers(og, model, tmp_path / "out")


def test_phi3_packed_projection_fed_whole(tmp_path) -> None:
    """Phi-3's checkpoint packs q|k|v (``qkv_proj``): its three Slices go, the projection is the
    kernel's packed query (the builder's graph); rotary folded in; its ``gate_up_proj`` becomes two
    MatMuls; validated against eager (float32 and int4 weights)."""
    from onnxport.testing.tiny_models import _make

    from ._models import GQA_DECODER

    model = _make("Phi3Config", "Phi3ForCausalLM", **GQA_DECODER, initializer_range=0.2)()
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out", target="onnxruntime", kv_cache="shared")
    assert result.passed and len(result.checks) == len(CHECK_SIZES) * 5
    graph = result.programs["model"].model.graph
    ops = _ops(result.programs["model"].model)
    assert ops["Slice"] == ops["Cos"] == ops["Concat"] == 0
    # gate_up_proj as two MatMuls over its column halves (unpacked_gate_up): q|k|v, o, gate, up, down + head
    assert ops["Split"] == 0 and ops["MatMul"] == 2 * 5 + 1
    for node in graph:
        if node.op_type == "GroupQueryAttention":
            assert node.attributes["do_rotary"].as_int() == 1
            assert node.inputs[0].producer().op_type == "MatMul" and node.inputs[1] is None and node.inputs[2] is None


@pytest.mark.slow  # an export from a folder, validation and 20 genai steps per family (~15 s idle)
@pytest.mark.parametrize("form", ["phi3", "phi-partial", "nemotron-partial", "cohere", "helium", "glm4-partial"])
def test_rotary_spellings_generate_like_transformers_with_shared_buffer(form, tmp_path) -> None:
    og = pytest.importorskip("onnxruntime_genai")
    from onnxport.testing.tiny_models import _make

    from ._models import GQA_DECODER

    config_class, model_class, extra = ROTARY_FORMS[form]
    model = _make(config_class, model_class, **{**GQA_DECODER, **extra, "initializer_range": 0.2})()
    model.save_pretrained(tmp_path / "src")
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out", target="onnxruntime", kv_cache="shared")
    assert result.passed
    gqa = [n for n in result.programs["model"].model.graph if n.op_type == "GroupQueryAttention"]
    assert len(gqa) == 2 and all(n.attributes["do_rotary"].as_int() == 1 for n in gqa)
    assert_genai_equals_transformers(og, model, tmp_path / "out", padded=True)


def test_shared_buffer_needs_every_attention_fused() -> None:
    model = llama(hidden_size=32, num_hidden_layers=1)  # head size 8: the CPU kernel needs 16k
    with pytest.raises(HFError, match="not fused for: past_key_values.0.key"):
        onnxport.hf.export(model, target="onnxruntime", kv_cache="shared")


def test_cli_kv_cache_shared(tmp_path: pathlib.Path) -> None:
    from typer.testing import CliRunner

    from onnxport.cli import app

    llama(num_hidden_layers=1).save_pretrained(tmp_path / "src")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["export", "--hf", str(tmp_path / "src"), "-o", str(out), "--target", "onnxruntime",
              "--kv-cache", "shared", "--layout", "flat"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    config = json.loads((out / "genai_config.json").read_text())
    assert config["search"]["past_present_share_buffer"] is True
