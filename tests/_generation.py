"""Greedy generation through an exported causal-LM graph (onnxruntime, onnxruntime-genai) compared with
transformers' ``generate``."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

import onnxport.hf


def assert_greedy_equals_transformers(model: Any, program: Any, new_tokens: int = 20) -> None:
    """20 greedy tokens from ``program`` (batch 2, row 0 left-padded by 3) equal ``model.generate``
    (a row ending at the eos id is padded after it in both)."""
    session = ort.InferenceSession(
        program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    generator = torch.Generator().manual_seed(7)
    ids = torch.randint(3, 99, (2, 7), generator=generator)
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[0, :3] = 0
    ids[0, :3] = 0
    # Both stop a row at the end-of-sequence id and pad it after (``min_new_tokens`` would make
    # generate pick the runner-up where eos is the argmax, which a greedy loop does not do).
    eos, pad = model.generation_config.eos_token_id, model.generation_config.pad_token_id
    with torch.no_grad():
        expected = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens, do_sample=False,
        )
    actual = onnxport.hf.greedy_causal_lm(
        session, ids, mask, new_tokens, eos_token_id=eos, pad_token_id=pad
    )
    assert actual.tolist() == expected.tolist()
    assert len(set(actual[:, 7:].flatten().tolist())) > 3, "degenerate decoding proves little"


PADDED_PROMPTS = [[5, 17, 42, 9, 33, 71, 12, 4], [8, 3, 61]]


def genai_greedy(og: Any, folder: Any, prompts: list[list[int]], new_tokens: int = 20) -> list[list[int]]:
    """Each prompt's ``new_tokens`` greedy tokens from onnxruntime-genai on ``folder`` (its
    genai_config as written): one batch, shorter prompts padded on the right with the config's
    ``pad_token_id`` (genai's ``PadInputs`` layout)."""
    longest = max(map(len, prompts))
    genai = og.Model(str(folder))
    pad = json.loads((pathlib.Path(folder) / "genai_config.json").read_text())["model"]["pad_token_id"]
    assert pad not in {t for p in prompts for t in p}, "a prompt token equal to the pad id would be masked"
    params = og.GeneratorParams(genai)
    total = longest + new_tokens
    params.set_search_options(max_length=total, min_length=total, do_sample=False, batch_size=len(prompts))
    generator = og.Generator(genai, params)
    generator.append_tokens(np.array([p + [pad] * (longest - len(p)) for p in prompts], dtype=np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return [[int(t) for t in list(generator.get_sequence(i))[longest:]] for i in range(len(prompts))]


def assert_genai_equals_transformers(og: Any, model: Any, folder: Any, *, padded: bool = False) -> None:
    """20 greedy tokens from onnxruntime-genai (``folder``'s genai_config: shared buffer) for two
    prompts equal transformers' ``generate``: two unpadded prompts of one length, or with
    ``padded`` prompts of 8 and 3 tokens, which genai pads on the right (``PadInputs``) and
    transformers generates one at a time."""
    prompts = PADDED_PROMPTS if padded else [[5, 17, 42, 9, 33, 71], [8, 3, 61, 27, 90, 14]]
    new = 20
    actual = genai_greedy(og, folder, prompts, new)
    expected = []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                                 min_new_tokens=new, do_sample=False)  # fmt: skip
        expected.append(out[0, len(prompt):].tolist())
    assert actual == expected
    assert len({t for row in expected for t in row}) > 3, "degenerate decoding proves little"
