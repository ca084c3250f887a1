"""onnxport.hf's validation runs each component in a transient session (its memory-mapped weights
leave the resident set as it runs) and releases it: no session holds a copy of the weights once
the export returns (a 0.5B Llama in memory: +1.03x at the peak and +0.93x after, before)."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import torch

import onnxport.hf
from _checkpoints import llama_checkpoint
from onnxport import _export, runtime

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("kv_cache", ["concat", "shared"])
def test_validation_sessions_are_transient_and_released(kv_cache: str, tmp_path: pathlib.Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    model = llama_checkpoint(tmp_path / "ckpt")
    monkeypatch.setattr(runtime, "SESSION_FILE_MIN_BYTES", 1024)  # the tiny weights go to a mapped file
    monkeypatch.setattr(_export, "KEEP_SESSION_MAX_BYTES", 1024)  # and the runtime check's session is released
    opened: list[dict[str, Any]] = []
    create = runtime.create_session

    def recording(*args: Any, **kwargs: Any) -> Any:
        session = create(*args, **kwargs)
        options = session.get_session_options()
        try:  # onnxruntime raises for an entry never set: pre-packing on
            prepacks = options.get_session_config_entry("session.disable_prepacking") != "1"
        except Exception:
            prepacks = True
        opened.append({"transient": kwargs.get("transient"), "prepack": prepacks})
        return session

    monkeypatch.setattr(runtime, "create_session", recording)
    target = "onnxruntime" if kv_cache == "shared" else None
    result = onnxport.hf.export(model, output_dir=tmp_path / "out", target=target, kv_cache=kv_cache)
    assert result.passed and result.checks
    # the runtime check's and the validation's sessions, then none kept
    assert len(opened) >= 2 and all(k.get("transient") and k.get("prepack") is False for k in opened), opened
    program = result.programs["model"]
    assert program._session is None
    if kv_cache == "shared":  # its past is a fixed buffer (onnxport.hf.shared_cache); the concat graph runs below
        return
    (logits, *_) = program(**_feeds(program))  # a later call opens a session of its own
    with torch.no_grad():
        expected = model(input_ids=torch.tensor([[5, 6, 7]])).logits
    torch.testing.assert_close(logits, expected, rtol=1e-4, atol=1e-5)


def _feeds(program: Any) -> dict[str, torch.Tensor]:
    """A 3-token prompt with an empty past for the decoder ``program`` (its past inputs' dims)."""
    feeds = {"input_ids": torch.tensor([[5, 6, 7]]), "attention_mask": torch.ones(1, 3, dtype=torch.int64),
             "position_ids": torch.arange(3).unsqueeze(0)}
    for value in program.model.graph.inputs[3:]:
        shape = [1 if str(d) == "batch_size" else 0 if str(d) == "past_sequence_length" else int(d) for d in value.shape]
        feeds[value.name] = torch.zeros(shape)
    return feeds
