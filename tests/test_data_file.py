"""``data_file.write_data_file``: the bytes at each (offset, length) are the tensor's,
large tensors aligned and written with direct I/O (or buffered where the file system refuses
it), small ones packed between them, the file ending at the last tensor's last byte."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import onnx_ir as ir
import pytest
import torch

from onnxport import data_file
from onnxport.weights.tensor import transposed

ALIGNMENT, THRESHOLD = 65536, 1024**2


def _tensors() -> list[ir.TensorProtocol]:
    """Large and small, sizes not multiples of a block, a transposed (streamed) one, a bfloat16
    torch tensor and one spanning more than one staging buffer when it is made small."""
    rng = np.random.default_rng(0)
    big = rng.standard_normal((700, 513)).astype(np.float32)  # 1 436 400 bytes: past the threshold
    return [
        ir.Tensor(rng.standard_normal(37).astype(np.float32), name="small0"),
        ir.Tensor(big, name="big"),
        ir.Tensor(rng.integers(0, 255, 1001).astype(np.uint8), name="small1"),
        transposed(ir.Tensor(rng.standard_normal((611, 1000)).astype(np.float32), name="base"), [1, 0], "base.T"),
        ir.tensor_adapters.TorchTensor(torch.randn(1100, 600, dtype=torch.bfloat16), name="bf16"),
        ir.Tensor(rng.standard_normal(3).astype(np.float32), name="small2"),
    ]


def _check(path: Path, tensors: list[ir.TensorProtocol], places: list[tuple[int, int]]) -> None:
    data = path.read_bytes()
    assert len(data) == places[-1][0] + places[-1][1]
    for tensor, (offset, length) in zip(tensors, places, strict=True):
        assert length == tensor.nbytes
        assert data[offset : offset + length] == tensor.tobytes(), tensor.name
        if length > THRESHOLD:
            assert offset % ALIGNMENT == 0
    small = [p for t, p in zip(tensors, places) if t.nbytes <= THRESHOLD]
    assert small[0][0] == 0 and small[1][0] == places[1][0] + places[1][1]  # packed right after "big"


@pytest.mark.parametrize("staging", [data_file.STAGING_BYTES, 3 * data_file.BLOCK])
def test_bytes_at_their_offsets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, staging: int) -> None:
    monkeypatch.setattr(data_file, "STAGING_BYTES", staging)  # 12 KiB: many staged writes per tensor
    tensors = _tensors()
    calls = []
    places = data_file.write_data_file(
        tensors, tmp_path / "w.data", alignment=ALIGNMENT, align_threshold=THRESHOLD,
        callback=lambda t, info: calls.append((t.name, info.index, info.offset)),
    )  # fmt: skip
    _check(tmp_path / "w.data", tensors, places)
    assert calls == [(t.name, i, p[0]) for i, (t, p) in enumerate(zip(tensors, places))]


def test_large_tensors_go_through_o_direct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "probe").touch()
    probe = data_file._open_direct(tmp_path / "probe")
    if probe is None:
        pytest.skip("no O_DIRECT here (platform, file system or ONNXPORT_DIRECT_IO=0)")
    os.close(probe)
    opened = []
    original = os.open

    def recording(path: object, flags: int, *args: object) -> int:
        opened.append(flags & getattr(os, "O_DIRECT", 0))
        return original(path, flags, *args)

    monkeypatch.setattr(data_file.os, "open", recording)
    tensors = _tensors()
    places = data_file.write_data_file(tensors, tmp_path / "w.data", alignment=ALIGNMENT, align_threshold=THRESHOLD)
    _check(tmp_path / "w.data", tensors, places)
    assert opened[0] == 0 and len(opened) == 2 and opened[1] != 0  # the file, then its direct descriptor


@pytest.mark.parametrize("refusal", ["open", "write"])
def test_buffered_where_direct_io_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: str) -> None:
    """A file system without O_DIRECT (EINVAL at open, as tmpfs before Linux 6.6) or a device
    wanting another alignment (EINVAL at the first direct write): the same bytes, buffered."""
    direct_flag = getattr(os, "O_DIRECT", 0)
    original_open, original_pwrite = os.open, os.pwrite
    direct_fds: set[int] = set()

    def opening(path: object, flags: int, *args: object) -> int:
        if flags & direct_flag and direct_flag:
            if refusal == "open":
                raise OSError(errno.EINVAL, "Invalid argument")
            fd = original_open(path, flags, *args)
            direct_fds.add(fd)
            return fd
        return original_open(path, flags, *args)

    def writing(fd: int, data: object, offset: int) -> int:  # the direct writes' call
        if fd in direct_fds:
            raise OSError(errno.EINVAL, "Invalid argument")
        return original_pwrite(fd, data, offset)

    monkeypatch.setattr(data_file, "DIRECT_IO", True)
    monkeypatch.setattr(data_file.os, "open", opening)
    monkeypatch.setattr(data_file.os, "pwrite", writing)
    tensors = _tensors()
    places = data_file.write_data_file(tensors, tmp_path / "w.data", alignment=ALIGNMENT, align_threshold=THRESHOLD)
    _check(tmp_path / "w.data", tensors, places)


def test_an_existing_file_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "w.data").write_bytes(b"previous")
    with pytest.raises(FileExistsError):
        data_file.write_data_file(_tensors(), tmp_path / "w.data", alignment=ALIGNMENT, align_threshold=THRESHOLD)
    assert (tmp_path / "w.data").read_bytes() == b"previous"


def test_a_write_error_reaches_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk during a direct write raises its own OSError (not a BufferError from closing the
    staging buffer while a view of it is held by the failing frame)."""
    (tmp_path / "probe").touch()
    probe = data_file._open_direct(tmp_path / "probe")
    if probe is None:
        pytest.skip("no O_DIRECT here (platform, file system or ONNXPORT_DIRECT_IO=0)")
    os.close(probe)

    def full(fd: int, data: object, offset: int) -> int:
        del data  # as os.pwrite, keep no reference to the buffer in the traceback
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(data_file.os, "pwrite", full)
    with pytest.raises(OSError, match="No space left") as info:
        data_file.write_data_file(_tensors(), tmp_path / "w.data", alignment=ALIGNMENT, align_threshold=THRESHOLD)
    assert info.value.errno == errno.ENOSPC
