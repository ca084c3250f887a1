"""onnxruntime-genai generates from onnxport's text-generation folders with no edits.

    python -m venv --system-site-packages /work/venv-genai
    /work/venv-genai/bin/pip install onnxruntime-genai==0.18.0
    PYTHONPATH=src /work/venv-genai/bin/python bench/clients/genai.py [llama qwen2 ...]

(A separate venv keeps the pinned torch/transformers of the main environment untouched.) For each
tiny model of ``onnxport.testing.tiny_models`` (default: llama, qwen2, mistral, qwen3, gemma, gpt2, opt, and
llama saved in float16 and in bfloat16): save it, export it with
``onnxport.hf.export`` (hub layout: ``genai_config.json`` at the root naming ``onnx/model.onnx``),
open the folder with ``onnxruntime_genai.Model(folder)`` and generate 20 greedy tokens from a
6-token prompt (``min_length`` keeps eos from stopping early), then compare them with
transformers' ``generate(do_sample=False, min_new_tokens=20)``. Prints one row per model; exit
status 1 when a row differs.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile

import numpy as np
import torch

import onnxport.hf
from onnxport.testing import tiny_models

PROMPT = [5, 17, 42, 9, 33, 71]
NEW_TOKENS = 20
DEFAULT = ["llama", "qwen2", "mistral", "qwen3", "gemma", "gpt2", "opt", "llama-fp16", "llama-bf16"]
HALF = {"fp16": torch.float16, "bf16": torch.bfloat16}


def genai_tokens(folder: pathlib.Path) -> list[int]:
    """20 greedy tokens from onnxruntime-genai for :data:`PROMPT`."""
    import onnxruntime_genai as og  # optional: installed in its own venv

    model = og.Model(str(folder))
    params = og.GeneratorParams(model)
    total = len(PROMPT) + NEW_TOKENS
    params.set_search_options(max_length=total, min_length=total, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(np.array([PROMPT], dtype=np.int32))
    tokens = []
    while not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
    return tokens


def check(name: str, work: pathlib.Path) -> tuple[list[int], list[int]]:
    """(genai tokens, transformers tokens) for tiny model ``name`` (``llama-fp16``, ``llama-bf16``:
    saved in that dtype, transformers generating in it too)."""
    base, _, dtype = name.partition("-")
    model = tiny_models.build(base).to(HALF.get(dtype, torch.float32))
    model.save_pretrained(work / f"{name}-src")
    onnxport.hf.export(work / f"{name}-src", output_dir=work / name)
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        reference = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
        )
    return genai_tokens(work / name), reference[0, len(PROMPT) :].tolist()


def main(names: list[str]) -> int:
    import onnxruntime_genai as og  # optional: installed in its own venv

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    failed = 0
    print(f"onnxruntime-genai {og.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or DEFAULT:
            actual, expected = check(name, pathlib.Path(tmp))
            same = actual == expected
            failed += not same
            print(
                f"{name}: {len(actual)} greedy tokens {'equal to' if same else 'DIFFERENT from'} transformers.generate"
            )
            if not same:
                print(f"  genai:        {actual}\n  transformers: {expected}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
