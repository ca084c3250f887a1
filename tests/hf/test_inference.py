"""``onnxport.inference`` on export folders: generation equals transformers' ``generate``,
pooling equals sentence-transformers' (the MiniLM embeddings are checked in test_minilm.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import onnxport.hf
import onnxport.inference
from onnxport.errors import InputError
from onnxport.hf.genai_config import FILE_NAME
from onnxport.testing.tiny_models import VOCAB

from .zoo import BY_NAME, save

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")


def write_word_tokenizer(folder: Path) -> None:
    """A word-level tokenizer.json over the tiny vocabulary: [PAD]=0, <s>=1, </s>=2, w3..w98;
    ``<s>`` prepended like Llama's."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {"[PAD]": 0, "<s>": 1, "</s>": 2} | {f"w{i}": i for i in range(3, VOCAB)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[PAD]"))
    tokenizer.add_special_tokens(["[PAD]", "<s>", "</s>"])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", 1)]
    )
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": "<s>", "eos_token": "</s>", "pad_token": "[PAD]"})
    )


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> tuple[torch.nn.Module, Path]:
    tmp = tmp_path_factory.mktemp("llama")
    folder = save(BY_NAME["llama"], tmp)
    write_word_tokenizer(folder)
    result = onnxport.hf.export(folder, output_dir=tmp / "out")
    assert result.passed
    return result.model, tmp / "out"


def test_generate_ids_equals_transformers_greedy(llama: tuple[torch.nn.Module, Path]) -> None:
    model, out = llama
    ids = torch.randint(3, VOCAB, (2, 7), generator=torch.Generator().manual_seed(7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[0, :3], ids[0, :3] = 0, 0  # row 0 left-padded
    with torch.no_grad():
        expected = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=20, do_sample=False
        )
    runner = onnxport.inference.load(out)
    actual = runner.generate_ids(ids.numpy(), mask.numpy(), max_new_tokens=20)
    assert actual.dtype == np.int64
    np.testing.assert_array_equal(actual, expected.numpy())
    assert len(set(actual[1, 7:].tolist())) > 3  # a non-degenerate continuation


def test_generate_text_equals_transformers(llama: tuple[torch.nn.Module, Path]) -> None:
    model, out = llama
    prompts = ["w5 w17 w42 w9 w60", "w33 w71"]
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(out / "tokenizer.json"), pad_token="[PAD]", eos_token="</s>"
    )
    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = model.generate(**batch, max_new_tokens=12, do_sample=False)
    texts = tokenizer.batch_decode(
        expected[:, batch["input_ids"].shape[1] :], skip_special_tokens=True
    )
    runner = onnxport.inference.load(out)
    assert runner.generate(prompts, max_new_tokens=12) == texts
    assert runner.generate(prompts[0], max_new_tokens=12) == texts[0] != ""


def test_sampling_top_k_1_is_greedy_and_seeded(llama: tuple[torch.nn.Module, Path]) -> None:
    _, out = llama
    runner = onnxport.inference.load(out)
    ids = np.array([[1, 5, 17, 42]], dtype=np.int64)
    greedy = runner.generate_ids(ids, max_new_tokens=10)
    top1 = onnxport.inference.Sampling(do_sample=True, top_k=1, seed=0)
    np.testing.assert_array_equal(
        runner.generate_ids(ids, max_new_tokens=10, sampling=top1), greedy
    )
    hot = onnxport.inference.Sampling(do_sample=True, temperature=5.0, top_k=0, seed=3)
    first = runner.generate_ids(ids, max_new_tokens=10, sampling=hot)
    np.testing.assert_array_equal(runner.generate_ids(ids, max_new_tokens=10, sampling=hot), first)
    assert first.shape[0] == 1 and ((first >= 0) & (first < VOCAB)).all()
    assert not np.array_equal(first, greedy)  # temperature 5 over 99 tokens leaves argmax


def test_genai_config_of_the_export(llama: tuple[torch.nn.Module, Path]) -> None:
    model, out = llama
    content = json.loads((out / FILE_NAME).read_text())
    decoder = content["model"]["decoder"]
    assert decoder["filename"] == "onnx/model.onnx" and (out / decoder["filename"]).is_file()
    assert (decoder["num_hidden_layers"], decoder["num_attention_heads"]) == (2, 4)
    assert (decoder["num_key_value_heads"], decoder["head_size"], decoder["hidden_size"]) == (
        2,
        8,
        32,
    )
    assert decoder["inputs"]["past_key_names"] == "past_key_values.%d.key"
    assert decoder["outputs"]["present_value_names"] == "present.%d.value"
    assert content["model"]["type"] == "llama" and content["model"]["vocab_size"] == VOCAB
    assert (content["model"]["eos_token_id"], content["model"]["pad_token_id"]) == (2, 0)
    assert content["search"]["past_present_share_buffer"] is False
    assert content["search"]["max_length"] == model.config.max_position_embeddings


def test_pool_modes_match_torch() -> None:
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((2, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=np.int64)
    h, m = torch.from_numpy(hidden), torch.from_numpy(mask).unsqueeze(-1).float()
    mean = onnxport.inference.pool(hidden, mask, onnxport.inference.Pooling("mean", True))
    expected = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=1)
    np.testing.assert_allclose(mean, expected.numpy(), rtol=1e-5, atol=1e-6)
    maxed = onnxport.inference.pool(hidden, mask, onnxport.inference.Pooling("max"))
    np.testing.assert_allclose(maxed, h.masked_fill(m == 0, -1e9).max(1).values.numpy())
    cls = onnxport.inference.pool(hidden, mask, onnxport.inference.Pooling("cls"))
    np.testing.assert_array_equal(cls, hidden[:, 0])


def test_errors(llama: tuple[torch.nn.Module, Path], tmp_path: Path) -> None:
    _, out = llama
    with pytest.raises(InputError, match="not a folder"):
        onnxport.inference.load(tmp_path / "missing")
    with pytest.raises(InputError, match="has no model.onnx"):
        onnxport.inference.load(tmp_path)
    with pytest.raises(InputError, match="feature-extraction export"):
        onnxport.inference.load(out).encode(["w5"])


@pytest.mark.parametrize("prune", [False, True], ids=["full-logits", "pruned"])
def test_generate_ids_on_a_shared_buffer_folder_with_left_padding(tmp_path: Path, prune: bool) -> None:
    """The in-place cache graph (``kv_cache="shared"``) reads each row's length from the mask
    (GroupQueryAttention's ``seqlens_k``): a left-padded batch goes in with its pads moved after
    the prompts, as onnxruntime-genai pads, and comes back as given, with transformers' tokens."""
    from _checkpoints import llama_checkpoint

    model = llama_checkpoint(tmp_path / "src", tied=False)
    result = onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out", target="onnxruntime",
                                kv_cache="shared", prune_lm_head=prune)  # fmt: skip
    assert result.passed
    runner = onnxport.inference.load(tmp_path / "out")
    assert runner.shared_buffer
    ids = torch.randint(3, 99, (2, 7), generator=torch.Generator().manual_seed(7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[0, :3], ids[0, :3] = 0, 0  # row 0 left-padded
    with torch.no_grad():
        expected = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=20, do_sample=False)
    actual = runner.generate_ids(ids.numpy(), mask.numpy(), max_new_tokens=20)
    np.testing.assert_array_equal(actual, expected.numpy())
    assert len(set(actual[0, 7:].tolist())) > 3  # a non-degenerate continuation of the padded row


def test_phi3_longrope_generation_restarts_at_the_switch_as_transformers(tmp_path: Path) -> None:
    """Phi-3's LongRoPE uses its long factors once the sequence passes
    ``original_max_position_embeddings`` (8 here), and transformers' ``generate`` then feeds the
    whole sequence again over an empty cache. ``generate_ids`` does the same (before: it kept the
    keys cached with the short factors, and the tokens differed from the 9th on)."""
    from onnxport.hf.generate import longrope_restart

    rope = {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 8,
            "short_factor": [1.0 + 0.1 * i for i in range(4)], "long_factor": [2.0 + 0.5 * i for i in range(4)]}
    config = transformers.Phi3Config(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, original_max_position_embeddings=8, rope_parameters=rope,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, initializer_range=0.2,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.Phi3ForCausalLM(config).eval()
    result = onnxport.hf.export(model, output_dir=tmp_path / "out")
    assert result.passed
    assert longrope_restart(json.loads((tmp_path / "out" / "config.json").read_text())) == 8
    ids = torch.tensor([[5, 17, 42, 9, 33, 71]])
    with torch.no_grad():
        want = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False)
    got = onnxport.inference.load(tmp_path / "out").generate_ids(ids.numpy(), max_new_tokens=12)
    assert got.shape == (1, 18)
    np.testing.assert_array_equal(got, want.numpy())
