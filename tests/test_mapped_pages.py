"""mapped_pages.py: a transient session's memory-mapped weights leave the resident set as it runs."""

from __future__ import annotations

import mmap
import sys
import time
from pathlib import Path

import numpy as np
import onnx_ir as ir
import pytest
import torch

import onnxport
from _memory import resident, settled
from onnxport import _export, mapped_pages, runtime

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps and madvise are Linux's")


class Token:
    """Stands for a session: weakly referenced by the record."""


def test_pages_of_a_tracked_mapping_are_dropped_while_in_use_and_read_back_intact(tmp_path: Path) -> None:
    data = np.arange(4 * 1024**2, dtype=np.int32)  # 16 MiB
    path = tmp_path / "weights.data"
    data.tofile(path)
    before = mapped_pages.file_mappings(tmp_path)
    with open(path, "rb") as f:
        view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    untracked, tracked = Token(), Token()
    mapped_pages.track(tracked, tmp_path, before)
    ranges = mapped_pages.tracked(tracked)
    assert sum(length for _, length in ranges) == data.nbytes
    try:
        with mapped_pages.released(untracked):  # not tracked: pages stay
            assert np.array_equal(np.frombuffer(view, dtype=np.int32), data)
        assert resident(ranges) == data.nbytes
        with mapped_pages.released(tracked):
            during = settled(lambda: resident(ranges), 0)
            assert np.array_equal(np.frombuffer(view, dtype=np.int32), data)  # re-read from the file
        assert during == 0
        assert resident(ranges) == 0
        assert np.array_equal(np.frombuffer(view, dtype=np.int32), data)
    finally:
        view.close()


def test_mappings_made_before_are_not_tracked(tmp_path: Path) -> None:
    path = tmp_path / "w.data"
    path.write_bytes(bytes(range(256)) * 4096)
    with open(path, "rb") as f:
        view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        token = Token()
        mapped_pages.track(token, tmp_path, mapped_pages.file_mappings(tmp_path))
        assert mapped_pages.tracked(token) == frozenset()
        assert mapped_pages.tracked(Token()) == frozenset()
    finally:
        view.close()


def _wide_linear_program() -> tuple[torch.nn.Module, torch.Tensor, onnxport.ONNXProgram]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024)).eval()
    x = torch.randn(3, 256)
    return model, x, onnxport.export(model, (x,), check_runtime=False)


def test_a_transient_session_gives_the_same_outputs_with_its_weights_out_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """The weights (10 MiB) go to a temporary file onnxruntime maps; after each run of a transient
    session none of its mapped pages is resident, while a session that is not transient keeps them
    all; the outputs of both are eager's, on two runs."""
    monkeypatch.setattr(runtime, "SESSION_FILE_MIN_BYTES", 1024**2)
    model, x, program = _wide_linear_program()
    with torch.no_grad():
        expected = model(x)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    kept = runtime.create_session(program.model, prepack=False)
    transient = runtime.create_session(program.model, prepack=False, transient=True)
    names = [i.name for i in kept.get_inputs()]
    ranges = mapped_pages.tracked(transient)
    assert weights <= sum(length for _, length in ranges) < 2 * weights
    assert mapped_pages.tracked(kept) == frozenset()
    for _ in range(2):
        (out_kept,) = runtime.run_session(kept, runtime.feeds(names, (x,), {}))
        (out,) = runtime.run_session(transient, runtime.feeds(names, (x,), {}))
        assert resident(ranges) == 0
        assert torch.equal(out, out_kept)
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_the_exports_runtime_check_session_is_transient(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The export's runtime check of a model whose session is released (weights from
    KEEP_SESSION_MAX_BYTES), in memory and on the files being saved, runs transient sessions whose
    mappings are the weights."""
    monkeypatch.setattr(runtime, "SESSION_FILE_MIN_BYTES", 1024**2)
    monkeypatch.setattr(_export, "KEEP_SESSION_MAX_BYTES", 1024**2)
    seen: list[int] = []
    track = mapped_pages.track

    def spy(session: object, folder: str, before: mapped_pages.Ranges) -> None:
        track(session, folder, before)
        seen.append(sum(length for _, length in mapped_pages.tracked(session)))

    monkeypatch.setattr(mapped_pages, "track", spy)
    model, x, _ = _wide_linear_program()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    program = onnxport.export(model, (x,))
    onnxport.export(model, (x,), f=tmp_path / "m.onnx")
    assert len(seen) == 2 and all(weights <= n < 2 * weights for n in seen), seen
    (out,) = program(x)
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
    assert ir.load(tmp_path / "m.onnx").graph.initializers


def test_a_range_whose_mapping_went_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tracked range no longer in a mapping of the tracked folder's files (its owner let it go:
    the addresses may hold other memory now) is not dropped."""
    path = tmp_path / "w.data"
    path.write_bytes(bytes(1 << 20))
    before = mapped_pages.file_mappings(tmp_path)
    with open(path, "rb") as f:
        view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    token = Token()
    mapped_pages.track(token, tmp_path, before)
    assert mapped_pages.tracked(token)
    view.close()
    dropped: list[mapped_pages.Ranges] = []
    monkeypatch.setattr(mapped_pages, "_drop", dropped.append)
    with mapped_pages.released(token):
        time.sleep(10 * mapped_pages.INTERVAL_SECONDS)
    assert dropped == []


def test_tensor_ranges_are_the_pages_a_mapped_tensor_reads(tmp_path: Path) -> None:
    """A tensor over part of a mapped file gives the page-aligned range of its bytes; a tensor in
    anonymous memory gives none."""
    path = tmp_path / "w.data"
    np.arange(300_000, dtype=np.float32).tofile(path)
    before = mapped_pages.file_mappings(tmp_path)
    whole = np.memmap(path, dtype=np.float32, mode="c")  # private, as safetensors maps
    try:
        mappings = mapped_pages.file_mappings(tmp_path) - before
        (start, length), = mappings
        part = torch.from_numpy(np.asarray(whole[5000:105_000]))
        ranges = mapped_pages.tensor_ranges([part, torch.zeros(1000)], mappings)
        (low, size), = ranges
        page = mmap.PAGESIZE
        assert low % page == 0 and low <= part.data_ptr() < low + page and low >= start
        assert low + size == part.data_ptr() + 100_000 * 4 <= start + length
    finally:
        del whole


def test_touching_ranges_are_joined_and_gaps_kept() -> None:
    """One madvise call covers mappings laid side by side; a gap between two (other memory) is
    never covered."""
    ranges = frozenset({(4096, 4096), (8192, 8192), (24576, 4096), (40960, 4096)})
    assert mapped_pages._joined(ranges) == frozenset({(4096, 12288), (24576, 4096), (40960, 4096)})
