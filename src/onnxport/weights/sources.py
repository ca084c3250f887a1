"""Where a weight's bytes come from: a torch tensor in memory, one tensor of a ``.safetensors``
file (memory-mapped, read only when written), or nothing yet (a fake-mode/meta-device export).

A source answers ``dtype``/``shape`` without reading data, and ``tensor()`` hands back an
``onnx_ir`` tensor over the data with no copy (a ``TorchTensor`` over the torch storage, an
``ir.Tensor`` over a ``numpy.memmap`` of the file), so writing it to external data streams the
bytes straight from their origin.

The ``.safetensors`` layout (8-byte little-endian header length, a JSON header mapping each name to
``dtype``, ``shape`` and ``data_offsets`` relative to the end of the header, then the raw
little-endian data) is the format specification of huggingface/safetensors (README, "Format").
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx_ir as ir
import torch
from torch._subclasses.fake_tensor import FakeTensor

from onnxport.errors import InputError, MissingWeightsError

# safetensors dtype codes (huggingface/safetensors, src/tensor.rs ``Dtype``) → ONNX.
SAFETENSORS_DTYPES: dict[str, ir.DataType] = {
    "BOOL": ir.DataType.BOOL,
    "U8": ir.DataType.UINT8,
    "I8": ir.DataType.INT8,
    "U16": ir.DataType.UINT16,
    "I16": ir.DataType.INT16,
    "U32": ir.DataType.UINT32,
    "I32": ir.DataType.INT32,
    "U64": ir.DataType.UINT64,
    "I64": ir.DataType.INT64,
    "F16": ir.DataType.FLOAT16,
    "BF16": ir.DataType.BFLOAT16,
    "F32": ir.DataType.FLOAT,
    "F64": ir.DataType.DOUBLE,
    "F8_E4M3": ir.DataType.FLOAT8E4M3FN,
    "F8_E5M2": ir.DataType.FLOAT8E5M2,
}
INDEX_FILE = "model.safetensors.index.json"


def is_fake(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` has no data: on the meta device, or a ``FakeTensor``."""
    return tensor.is_meta or isinstance(tensor, FakeTensor)


class Source:
    """Base of weight sources: ``dtype`` and ``shape`` (no read), ``tensor()`` (the data)."""

    dtype: ir.DataType
    shape: tuple[int, ...]

    @property
    def has_data(self) -> bool:
        return True

    def tensor(self) -> ir.TensorProtocol:
        """The data as an ``onnx_ir`` tensor, without copying it where the origin allows."""
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


class TorchSource(Source):
    """A torch tensor in memory; read through a ``TorchTensor`` view (no copy)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.raw = tensor.detach()
        self.dtype = ir.tensor_adapters.from_torch_dtype(self.raw.dtype)
        self.shape = tuple(int(d) for d in self.raw.shape)

    def tensor(self) -> ir.TensorProtocol:
        return ir.tensor_adapters.TorchTensor(self.raw)

    def describe(self) -> str:
        return "a torch tensor"


class ArraySource(Source):
    """A numpy array in memory."""

    def __init__(self, array: np.ndarray, dtype: ir.DataType | None = None) -> None:
        self.raw = array
        self.dtype = dtype if dtype is not None else ir.DataType.from_numpy(array.dtype)
        self.shape = tuple(int(d) for d in array.shape)

    def tensor(self) -> ir.TensorProtocol:
        return ir.Tensor(self.raw, dtype=self.dtype)

    def describe(self) -> str:
        return "a numpy array"


class SafetensorsSource(Source):
    """One tensor of a ``.safetensors`` file, memory-mapped when written (page cache, no heap).

    Args:
        path: The ``.safetensors`` file.
        name: The tensor's key in the file.
        entry: Its header entry (``dtype``, ``shape``, ``data_offsets``).
        data_start: Byte offset of the data section (8 + header length).
    """

    def __init__(self, path: str | os.PathLike[str], name: str, entry: Mapping[str, Any], data_start: int) -> None:
        self.path = os.fspath(path)
        self.name = name
        code = str(entry["dtype"])
        if code not in SAFETENSORS_DTYPES:
            raise InputError(f"{self.path}: tensor {name} has dtype {code}, which ONNX cannot store.")
        self.dtype = SAFETENSORS_DTYPES[code]
        self.shape = tuple(int(d) for d in entry["shape"])
        begin, end = (int(x) for x in entry["data_offsets"])
        self.offset = data_start + begin
        self.nbytes = end - begin

    def tensor(self) -> ir.TensorProtocol:
        dtype = self.dtype.numpy()
        count = int(np.prod(self.shape, dtype=np.int64))
        if count == 0:
            return ir.Tensor(np.zeros(self.shape, dtype=dtype), dtype=self.dtype)
        try:
            raw = np.memmap(self.path, dtype=np.uint8, mode="r", offset=self.offset, shape=(self.nbytes,))
        except (OSError, ValueError) as e:
            raise InputError(f"Cannot read tensor {self.name} from {self.path}: {e}") from e
        return ir.Tensor(raw.view(dtype).reshape(self.shape), dtype=self.dtype)

    def describe(self) -> str:
        return f"{os.path.basename(self.path)}"


class MissingSource(Source):
    """No data yet: the model was built in fake mode or on the meta device."""

    def __init__(self, name: str, dtype: ir.DataType, shape: Sequence[int]) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)

    @property
    def has_data(self) -> bool:
        return False

    def tensor(self) -> ir.TensorProtocol:
        raise MissingWeightsError(
            f"Weight {self.name} has no data yet (the model was exported in fake mode or on the meta "
            "device). Call ONNXProgram.apply_weights(state_dict | '.safetensors' file | shard folder) "
            "first, or save with include_initializers=False.",
            [self.name],
        )

    def describe(self) -> str:
        return "no data (fake/meta)"


class CastSource(Source):
    """Another source's tensor converted to ``dtype`` when it is read (numpy ``astype``: round to
    nearest even, as ``torch.Tensor.to``), one tensor at a time: a float32 checkpoint exported in
    float16 is cast as it streams, never held converted.

    Args:
        inner: The source to read.
        dtype: The floating ONNX dtype to convert to.
    """

    def __init__(self, inner: Source, dtype: ir.DataType) -> None:
        self.inner = inner
        self.dtype = dtype
        self.shape = tuple(inner.shape)

    @property
    def has_data(self) -> bool:
        return self.inner.has_data

    def tensor(self) -> ir.TensorProtocol:
        array = self.inner.tensor().numpy().astype(self.dtype.numpy())
        return ir.Tensor(array, dtype=self.dtype)

    def blocks(self, block_bytes: int) -> Iterator[np.ndarray]:
        """The converted tensor as consecutive C-order blocks along its first axis, each about
        ``block_bytes`` of output: a writer never holds the whole converted tensor (a bfloat16
        table of 262144 x 8960 is 9.4 GB in float32). The inner tensor is read as it is (a
        memory-mapped checkpoint tensor: file pages)."""
        array = self.inner.tensor().numpy()
        target = self.dtype.numpy()
        if array.ndim == 0 or array.shape[0] == 0:
            yield array.astype(target)
            return
        row = max(1, array[0].size * target.itemsize)
        step = max(1, block_bytes // row)
        for start in range(0, array.shape[0], step):
            yield np.ascontiguousarray(array[start : start + step].astype(target))

    def describe(self) -> str:
        return f"{self.inner.describe()} cast to {self.dtype.name}"


def torch_source(tensor: torch.Tensor, name: str) -> Source:
    """A :class:`TorchSource`, or a :class:`MissingSource` for a meta/fake tensor."""
    if is_fake(tensor):
        return MissingSource(name, ir.tensor_adapters.from_torch_dtype(tensor.dtype), tuple(tensor.shape))
    return TorchSource(tensor)


def read_safetensors_header(path: str | os.PathLike[str]) -> dict[str, SafetensorsSource]:
    """Name → :class:`SafetensorsSource` for every tensor of one file; reads the header only.

    Raises:
        InputError: The file is missing or is not a ``.safetensors`` file.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise ValueError("shorter than 8 bytes")
            (length,) = struct.unpack("<Q", head)
            if length > 100 * 1024**2:
                raise ValueError(f"header of {length} bytes")
            header = json.loads(f.read(length))
    except FileNotFoundError as e:
        raise InputError(f"Weights file {path} not found.") from e
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not a readable .safetensors file: {e}") from e
    if not isinstance(header, dict):
        raise InputError(f"{path} is not a .safetensors file (its header is not a JSON object).")
    return {
        name: SafetensorsSource(path, name, entry, 8 + length)
        for name, entry in header.items()
        if name != "__metadata__"
    }


def read_shard_folder(folder: str | os.PathLike[str]) -> dict[str, SafetensorsSource]:
    """Name → source for a folder of safetensors shards listed by ``model.safetensors.index.json``
    (``weight_map``: name → shard file), or the folder's ``*.safetensors`` files without an index.

    Raises:
        InputError: No index and no ``.safetensors`` file, a malformed index, a shard missing, or
            a name the index places in a shard that does not hold it.
    """
    root = Path(folder)
    index = root / INDEX_FILE if root.is_dir() else root
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(f"{index} is not a safetensors index (no weight_map): {e}") from e
        base = index.parent
        shards = {str(s): read_safetensors_header(base / str(s)) for s in sorted(set(weight_map.values()))}
        out = {}
        for name, shard in weight_map.items():
            if name not in shards[str(shard)]:
                raise InputError(f"{index} places {name} in {shard}, which does not hold it.")
            out[name] = shards[str(shard)][name]
        return out
    files = sorted(root.glob("*.safetensors"))
    if not files:
        raise InputError(f"{root} holds neither {INDEX_FILE} nor any .safetensors file.")
    out = {}
    for file in files:
        out.update(read_safetensors_header(file))
    return out


def open_weights(weights: Any) -> dict[str, Source]:
    """Name → source for a state_dict (name → torch tensor / numpy array / :class:`Source`), a ``.safetensors``
    file, a shard folder or its ``model.safetensors.index.json``. Reads headers only.

    Raises:
        InputError: An unreadable path, or a state_dict value that is no tensor.
    """
    if isinstance(weights, (str, os.PathLike)):
        path = Path(weights)
        if path.is_dir() or path.name.endswith(".json"):
            return dict(read_shard_folder(path))
        return dict(read_safetensors_header(path))
    if isinstance(weights, Mapping):
        out: dict[str, Source] = {}
        for name, value in weights.items():
            if isinstance(value, torch.Tensor):
                out[str(name)] = torch_source(value, str(name))
            elif isinstance(value, np.ndarray):
                out[str(name)] = ArraySource(value)
            elif isinstance(value, Source):
                out[str(name)] = value
            else:
                raise InputError(f"Weight {name} is a {type(value).__name__}; give a torch.Tensor or a numpy array.")
        return out
    raise InputError(
        f"weights must be a state_dict (name → tensor), a .safetensors file or a folder of shards, "
        f"got {type(weights).__name__}."
    )
