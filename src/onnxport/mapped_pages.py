"""Keeping the weights a short-lived onnxruntime session memory-maps out of the process's resident set.

onnxruntime 1.31 memory-maps the external data tensors stored at aligned offsets instead of copying
them (``tensorprotoutils.cc``, external data read through ``Env::MapFileIntoMemory``; the mappings
show in ``/proc/self/maps`` as private, ``rw-p``). A run reads every weight, so by its end every page
of the weights is resident in the process: the export's runtime check of a model already in RAM
peaked at +0.94x the weights' bytes (a 0.51 B-parameter Llama, ``bench/api_memory.py``, session 36),
all of it file-backed pages the kernel could reclaim but that RSS, ``ru_maxrss`` and most memory
monitors count.

For a session that runs a few times and is then released (the export's checks, opened with
``transient=True`` in :mod:`onnxport.runtime`; the ``--hf`` validation's sessions and its eager
reference model, whose parameters are mapped checkpoint tensors: ``hf/streamed.py``), :func:`track`
records the mappings the session made, and :func:`released` drops their pages from the process every
:data:`INTERVAL_SECONDS` while a run is under way, and once more after it, with
``madvise(MADV_DONTNEED)``. For a private file mapping the next access re-reads the page from the
file (madvise(2): "repopulating the memory contents from the up-to-date contents of the underlying
mapped file"), here from the page cache; a file already unlinked stays readable while it is mapped.
Nothing writes to these pages (onnxruntime's sessions are opened without pre-packing; eager
inference does not write its parameters), so nothing is lost. The remaining peak is about the
largest weight one kernel reads at once; the cost is the page faults that read the pages back on
the next run and the ``madvise`` calls (the 0.85B Llama's ``--hf`` export with its full
validation, dropping every 1 ms: 18.6-19.0 s against 15.8-17.6 s with nothing dropped,
``/work/s38/ab_hf.py``; see :data:`INTERVAL_SECONDS`).

Linux only: elsewhere (no ``/proc/self/maps`` or no ``madvise`` in the C library) nothing is tracked
and runs are unchanged.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import functools
import mmap
import os
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

import torch

MADV_DONTNEED = 4  # <bits/mman-linux.h>
# How often the pages are dropped while a run is under way: at ~10 GB/s a kernel reads ~50 MB in
# 5 ms, so little more than the weight being read stays resident. Every 1 ms, the calls took CPU
# from the run on 2 cores (the 2.0 GB Llama's check: 6.3-7.0 s against 5.8 s with nothing dropped).
INTERVAL_SECONDS = 0.005
_MAPS = "/proc/self/maps"

Ranges = frozenset[tuple[int, int]]
# owner → (the folder whose files it maps, its ranges)
_tracked: weakref.WeakKeyDictionary[Any, tuple[str, Ranges]] = weakref.WeakKeyDictionary()


@functools.cache
def _madvise() -> Any:
    """libc's ``madvise`` through ctypes, or ``None`` where there is none."""
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def file_mappings(folder: str | os.PathLike[str]) -> Ranges:
    """``(start address, length in bytes)`` of this process's mappings of files under ``folder``
    (a deleted file's too: ``/proc/self/maps`` marks it `` (deleted)``); empty where
    ``/proc/self/maps`` cannot be read."""
    prefix = os.path.join(os.path.abspath(folder), "")
    try:
        with open(_MAPS) as f:
            lines = f.readlines()
    except OSError:
        return frozenset()
    ranges = set()
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith(prefix):
            start, end = (int(address, 16) for address in fields[0].split("-"))
            ranges.add((start, end - start))
    return frozenset(ranges)


def track(owner: Any, folder: str | os.PathLike[str], before: Ranges,
          tensors: Iterable[torch.Tensor] | None = None) -> None:
    """Record as ``owner``'s the mappings of files under ``folder`` made since ``before``
    (:func:`file_mappings` taken just before ``owner`` mapped them), or with ``tensors`` only the
    parts of them those tensors occupy (:func:`tensor_ranges`); :func:`released` drops their pages
    while ``owner`` runs. ``owner`` is what keeps them mapped as long as it lives (an onnxruntime
    session; a model whose parameters are mapped checkpoint tensors, which must not be replaced
    afterwards); the record goes with it."""
    ranges = file_mappings(folder) - before
    if tensors is not None:
        ranges = tensor_ranges(tensors, ranges)
    if ranges and _madvise() is not None:
        _tracked[owner] = (os.fspath(folder), ranges)


def tracked(owner: Any) -> Ranges:
    """The ranges :func:`track` recorded for ``owner`` (empty if none)."""
    return _tracked.get(owner, ("", frozenset()))[1]


def tensor_ranges(tensors: Iterable[torch.Tensor], mappings: Ranges) -> Ranges:
    """The page-aligned ``(start, length)`` of each tensor's storage that lies in one of
    ``mappings``: the part of a mapping a tensor reads (safetensors maps a whole shard for each
    tensor it hands out, ``safe_open(...).get_tensor``, whose storage is that tensor's bytes)."""
    page = mmap.PAGESIZE
    inside = _Containing(mappings)
    out = set()
    for tensor in tensors:
        storage = tensor.untyped_storage()
        begin, size = storage.data_ptr(), storage.nbytes()
        span = inside.span(begin, size) if size else None
        if span is not None:
            low = max(span[0], begin - begin % page)
            out.add((low, begin + size - low))
    return frozenset(out)


class _Containing:
    """Which of ``mappings`` holds an address range (they do not overlap: mappings of one process)."""

    def __init__(self, mappings: Ranges) -> None:
        self.spans = sorted(mappings)
        self.starts = [start for start, _ in self.spans]

    def span(self, start: int, length: int) -> tuple[int, int] | None:
        """The mapping that holds ``[start, start + length)`` whole, else ``None``."""
        i = bisect.bisect_right(self.starts, start) - 1
        if i >= 0 and start + length <= self.spans[i][0] + self.spans[i][1]:
            return self.spans[i]
        return None


def _within(ranges: Ranges, mappings: Ranges) -> Ranges:
    """The ``ranges`` that lie inside one of ``mappings``."""
    inside = _Containing(mappings)
    return frozenset(r for r in ranges if inside.span(*r) is not None)


def _joined(ranges: Ranges) -> Ranges:
    """``ranges`` with those that touch (one ends where the next starts) joined into one, so a
    session's mappings laid side by side (onnxruntime maps tensor by tensor) take one ``madvise``
    call instead of one per tensor. Ranges with a gap between them stay apart: the gap may hold
    other memory."""
    out: list[tuple[int, int]] = []
    for start, length in sorted(ranges):
        if out and out[-1][0] + out[-1][1] == start:
            out[-1] = (out[-1][0], out[-1][1] + length)
        else:
            out.append((start, length))
    return frozenset(out)


def _drop(ranges: Ranges) -> None:
    madvise = _madvise()
    for start, length in ranges:
        madvise(start, length, MADV_DONTNEED)


@contextlib.contextmanager
def released(owner: Any) -> Iterator[None]:
    """Around a run of ``owner``: its tracked mappings' pages are dropped from the process every
    :data:`INTERVAL_SECONDS` by a thread, and once more when the run ends (or fails). Only the
    tracked ranges that still lie in mappings of the tracked folder's files as the run starts are
    touched (a range whose mapping went and whose addresses now hold other memory is left alone).
    Nothing happens for an ``owner`` :func:`track` did not record."""
    folder, ranges = _tracked.get(owner, ("", frozenset()))
    if ranges:
        ranges = _joined(_within(ranges, file_mappings(folder)))
    if not ranges:
        yield
        return
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(INTERVAL_SECONDS):
            _drop(ranges)

    thread = threading.Thread(target=loop, name="onnxport-mapped-pages", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        _drop(ranges)
