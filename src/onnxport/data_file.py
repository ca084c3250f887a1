"""Write one external data file: the tensors one after another, large ones with direct I/O.

Layout (ONNX external data: each tensor's bytes at an ``offset`` with a ``length``, onnx
``external_data_helper``): tensors in the given order, densely packed, except that a tensor of
more than ``align_threshold`` bytes starts at a multiple of ``alignment`` (at least 4096, the rule
of ``onnx_ir.external_data``), so runtimes can memory-map it.

Those large tensors are written with ``O_DIRECT`` (Linux): their bytes go from an aligned staging
buffer of :data:`STAGING_BYTES` straight to the device instead of through the page cache. On this
project's machine (a virtual machine, ext4, 2 cores) buffered writes of freshly computed data --
transposed or quantized weights -- ran at 0.2-0.4 GB/s in the kernel, while the same 3.4 GB went
out in 1.6 s with ``O_DIRECT`` (``python /work/s35/wdirect.py direct|buffered``: 4.2 against
17.5 s with the transposes, session 35), and the kernel's writeback no longer competes with the
export for the CPU. The page cache keeps none of the written weights, which a streamed export of
a model larger than RAM does not want there anyway. Small tensors, and every tensor where the
file system refuses ``O_DIRECT`` (tmpfs before Linux 6.6, some FUSE file systems) or when
``ONNXPORT_DIRECT_IO=0``, use ordinary buffered writes. Reads of the file are coherent either
way: a direct write drops the cached pages of its range, and a buffered write into the padded
block after a direct one reads that block back first.

Writes go in offset order and each tensor's bytes come from its own ``tofile`` (``WeightTensor``
streams transforms block by block), so at most one tensor and the staging buffer are in memory.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnx_ir as ir

# Direct I/O needs the buffer, the file offset and the length aligned to the device's logical
# block size; 4096 covers 512-byte and 4K-sector devices.
BLOCK = 4096
# 16 MiB: a save of the 2.0 GB Llama of bench/api_memory.py took 3.07 / 3.33 s with 64 MiB (peak
# +139 / +96 MB), 3.07 / 3.30 s with 16 MiB (+88 / +48 MB), 2.81 / 3.08 s with 8 MiB (+40 / +39 MB):
# the disk sets the pace, the buffer only the memory (/work/s36/stage.py, session 36)
STAGING_BYTES = 16 * 1024**2
DIRECT_IO = os.environ.get("ONNXPORT_DIRECT_IO", "1") != "0" and hasattr(os, "O_DIRECT")
# Offsets of tensors over ALIGN_THRESHOLD bytes are multiples of ALIGNMENT (64 KiB, onnx_ir's
# rule): onnxruntime memory-maps such a tensor instead of reading it into its own buffer.
ALIGNMENT = 65536
ALIGN_THRESHOLD = 1024**2
# Tensors of at most this many bytes stay inside the .onnx file (onnx_ir.save's default
# ``size_threshold_bytes=256``): onnxruntime cannot read a shape or axes input from external data.
INLINE_BYTES = 256


def layout(tensors: Sequence[ir.TensorProtocol], alignment: int, align_threshold: int) -> list[tuple[int, int]]:
    """``(offset, length)`` of each tensor in the data file (module docstring)."""
    factor = max(BLOCK, alignment)
    places, end = [], 0
    for tensor in tensors:
        length = tensor.nbytes
        offset = -(-end // factor) * factor if length > align_threshold else end
        places.append((offset, length))
        end = offset + length
    return places


class _BufferedAt:
    """A write-only file object writing at increasing positions of ``fd`` from ``offset``
    (``lseek`` + ``write``: also on Windows, which has no ``pwrite``)."""

    def __init__(self, fd: int, offset: int) -> None:
        self.fd = fd
        os.lseek(fd, offset, os.SEEK_SET)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])
        return done


class _DirectAt:
    """A write-only file object gathering the bytes in an aligned ``staging`` buffer and writing
    them to the ``O_DIRECT`` descriptor ``fd`` in multiples of :data:`BLOCK` from the aligned
    ``offset``; :meth:`close` writes the rest, zero-padded to a block."""

    def __init__(self, fd: int, offset: int, staging: mmap.mmap) -> None:
        assert offset % BLOCK == 0
        self.fd, self.position, self.staging, self.filled = fd, offset, staging, 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            take = min(len(view) - done, len(self.staging) - self.filled)
            self.staging[self.filled : self.filled + take] = view[done : done + take]
            self.filled += take
            done += take
            if self.filled == len(self.staging):
                self._flush(self.filled)
        return done

    def close(self) -> None:
        if self.filled:
            padded = -(-self.filled // BLOCK) * BLOCK
            self.staging[self.filled : padded] = bytes(padded - self.filled)
            self._flush(padded)

    def _flush(self, length: int) -> None:
        # the views are released even when pwrite raises, so the staging buffer can be closed
        with memoryview(self.staging) as whole, whole[:length] as view:
            done = 0
            while done < length:
                done += os.pwrite(self.fd, view[done:], self.position + done)
        self.position += length
        self.filled = 0


def _tofile(tensor: ir.TensorProtocol, file: _BufferedAt | _DirectAt) -> None:
    """The tensor's bytes into ``file``: its own ``tofile`` (streamed transforms, torch storage)
    when it has one, else ``tobytes``."""
    tofile = getattr(tensor, "tofile", None)
    if tofile is not None:
        tofile(file)
    else:
        file.write(tensor.tobytes())


def _open_direct(path: Path) -> int | None:
    """An ``O_DIRECT`` write descriptor of ``path``, or ``None`` where the file system refuses it."""
    if not DIRECT_IO:
        return None
    try:
        return os.open(path, os.O_WRONLY | os.O_DIRECT)
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
            return None
        raise


def write_data_file(
    tensors: Sequence[ir.TensorProtocol],
    path: Path,
    *,
    alignment: int,
    align_threshold: int,
    callback: Callable[[ir.TensorProtocol, Any], None] | None = None,
) -> list[tuple[int, int]]:
    """Write ``tensors`` into a new file ``path`` (module docstring) and return each one's
    ``(offset, length)``.

    ``callback(tensor, onnx_ir.external_data.CallbackInfo)`` is called before each tensor is
    written (progress). Raises ``OSError`` when writing fails; the caller owns the file then.
    """
    places = layout(tensors, alignment, align_threshold)
    end = max((offset + length for offset, length in places), default=0)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
    direct: int | None = None
    staging: mmap.mmap | None = None
    tried = False
    try:
        for index, (tensor, (offset, length)) in enumerate(zip(tensors, places, strict=True)):
            if callback is not None:
                callback(tensor, ir.external_data.CallbackInfo(
                    total=len(tensors), index=index, offset=offset, filename=path.name,
                    shard_total=len(tensors), shard_index=index,
                ))  # fmt: skip
            large = length > align_threshold and offset % BLOCK == 0
            if large and not tried:  # the first large tensor opens the direct descriptor
                tried = True
                direct = _open_direct(path)
                staging = mmap.mmap(-1, STAGING_BYTES) if direct is not None else None
            if large and direct is not None and staging is not None:
                writer = _DirectAt(direct, offset, staging)
                try:
                    _tofile(tensor, writer)
                    writer.close()
                    continue
                except OSError as e:
                    if e.errno != errno.EINVAL:
                        raise
                    os.close(direct)  # the device wants another alignment: buffered from here on
                    direct = None
            _tofile(tensor, _BufferedAt(fd, offset))
        os.ftruncate(fd, end)  # the last direct write was padded to a block
    finally:
        if staging is not None:
            with contextlib.suppress(BufferError):  # a view still held by a traceback: freed with it
                staging.close()
        with contextlib.suppress(OSError):
            if direct is not None:
                os.close(direct)
        os.close(fd)
    return places


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # an earlier save of this process finished or failed: its files are stale
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def stale_entries(folder: Path, prefix: str) -> list[Path]:
    """The entries of ``folder`` named ``<prefix><pid>-...`` (the names of
    ``weights/save.py``'s temporary files and of ``runtime``'s session folders carry the writing
    process's id) whose process is gone: what a killed process left there."""
    found = []
    for entry in folder.glob(f"{prefix}*"):
        pid_text = entry.name[len(prefix) :].split("-", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            found.append(entry)
    return found
