"""Greedy generation through an exported causal-LM graph (onnxruntime, onnxruntime-genai) compared with
transformers' ``generate``."""

from __future__ import annotations

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


def assert_genai_equals_transformers(og: Any, model: Any, folder: Any) -> None:
    """20 greedy tokens from onnxruntime-genai (``folder``'s genai_config: shared buffer) for two
    unpadded prompts equal transformers' ``generate``."""
    prompts = [[5, 17, 42, 9, 33, 71], [8, 3, 61, 27, 90, 14]]  # equal lengths: no padding
    genai = og.Model(str(folder))
    params = og.GeneratorParams(genai)
    total = len(prompts[0]) + 20
    params.set_search_options(max_length=total, min_length=total, do_sample=False, batch_size=2)
    generator = og.Generator(genai, params)
    generator.append_tokens(np.array(prompts, dtype=np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    ids = torch.tensor(prompts)
    with torch.no_grad():
        expected = model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=20,
            min_new_tokens=20, do_sample=False,
        )  # fmt: skip
    actual = [list(generator.get_sequence(i)) for i in range(2)]
    assert actual == expected.tolist()
    assert len(set(expected[:, 6:].flatten().tolist())) > 3, "degenerate decoding proves little"
