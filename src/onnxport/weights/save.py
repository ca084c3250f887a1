"""Write a model with its weights streamed tensor by tensor into external data, atomically.

Each tensor goes from its source (torch storage, memory-mapped safetensors) through its
transforms straight into the data file (:func:`onnxport.data_file.write_data_file`: one
tensor at a time, large ones with direct I/O), so the peak memory is about the largest tensor plus
a 16 MiB staging buffer, never the model.

Durability: the atomic renames below hold against a failure or a killed process without any
``fsync`` (the written pages are the kernel's once ``write`` returns). Against a power loss or an
OS crash, set ``ONNXPORT_FSYNC=1``: the data files are then fsynced before the graph naming them
is renamed into place, and the graph before its rename. It is off by default, as in
``torch.save``, safetensors, ``onnx.save`` and onnxruntime-genai's model builder: on this
machine's disk (~160 MB/s with fsync) it added ~3 s to a 3.4 GB export and scales with the size.

File layout: ``model.onnx`` and ``model.onnx.data`` (``model.onnx.data_1``, ``_2``... when
sharded by size, the chunk numbering of transformers.js ``src/models.js``); onnxruntime,
onnxruntime-genai and Optimum follow each tensor's ``location``, so any name loads; the data
suffix is :data:`DATA_SUFFIX` (transformers.js' own exports use ``.onnx_data``: a deployable
folder may rename through :func:`data_file_names`). Offsets of tensors over 1 MiB are aligned
to 64 KiB so runtimes can memory-map them. Tied weights (one tensor
behind several initializers) are stored once.

Atomicity — a failure or a kill never leaves a partial model nor destroys the previous one:

1. the data is written beside the destination under a fresh name
   (``model.onnx.onnxport-<pid>-<token>.data<i>``, created exclusively);
2. the graph pointing at those fresh names is written to a temporary file and renamed onto
   ``model.onnx`` (a rename within one folder is atomic): the new model is complete;
3. the fresh data files are hard-linked to their final names (``model.onnx.data``), the graph is
   rewritten to point at them (renamed again), and the fresh names are unlinked;
4. data files of the previous model the new one no longer uses are removed.

A kill at any step leaves ``model.onnx`` pointing at files that exist; leftovers of a killed run
(names carrying ``.onnxport-<pid>-`` of a process that is gone) are removed by the next save to
the same place.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir

from onnxport.data_file import (
    ALIGN_THRESHOLD,
    ALIGNMENT,
    INLINE_BYTES,
    stale_entries,
    write_data_file,
)
from onnxport.errors import MissingWeightsError, OnnxportError, SaveError
from onnxport.runtime import PROTOBUF_LIMIT  # protobuf's 2 GiB limit
from onnxport.weights.tensor import WeightTensor

# External data is chosen when the estimated protobuf exceeds this share of the limit.
EXTERNAL_MARGIN = 0.9
TEMP_TAG = ".onnxport-"
DATA_SUFFIX = ".data"
# Flush data and graph files to the disk before their renames (module docstring, "Durability").
DURABLE = os.environ.get("ONNXPORT_FSYNC", "") == "1"


def data_file_names(onnx_name: str, shards: int, suffix: str | None = None) -> list[str]:
    """Final external data file names: ``model.onnx.data``, ``model.onnx.data_1``, ..."""
    suffix = DATA_SUFFIX if suffix is None else suffix
    return [f"{onnx_name}{suffix}" + (f"_{i}" if i else "") for i in range(shards)]


def estimated_proto_bytes(model: ir.Model) -> int:
    """The serialized size of ``model`` with everything inline: initializers, tensor attributes
    (``Constant`` nodes) and ~200 bytes per node, in bytes."""
    total = 0
    for graph in model.graphs():
        total += sum(v.const_value.nbytes for v in graph.initializers.values() if v.const_value is not None)
        for node in graph:
            total += 200
            for attr in node.attributes.values():
                if attr.type == ir.AttributeType.TENSOR and attr.value is not None:
                    total += attr.value.nbytes
    return total


def missing_weights(model: ir.Model) -> list[str]:
    """The module's weight names (state_dict keys) the model uses whose data is not there yet."""
    return sorted(
        {
            slot.name
            for g in model.graphs()
            for v in g.initializers.values()
            if isinstance(v.const_value, WeightTensor)
            for slot in v.const_value.slots()
            if not slot.source.has_data
        }
    )


def check_weights_present(model: ir.Model, what: str) -> None:
    """Raise :class:`MissingWeightsError` naming the initializers still without data.

    Args:
        what: What needs them, for the message (``"save the initializers"``, ``"run"``).
    """
    missing = missing_weights(model)
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        raise MissingWeightsError(
            f"Cannot {what}: {len(missing)} weights have no data yet ({shown}); the model was exported "
            "in fake mode or on the meta device. Call ONNXProgram.apply_weights(state_dict | "
            "'.safetensors' file | shard folder) first, or save with include_initializers=False.",
            missing,
        )


@contextlib.contextmanager
def initializer_layout(model: ir.Model, include: bool, as_inputs: bool) -> Iterator[None]:
    """The main graph with its initializers kept or dropped, and listed as graph inputs or not
    (``torch.onnx.ONNXProgram.save``'s ``include_initializers``/``keep_initializers_as_inputs``);
    restored on exit."""
    graph = model.graph
    saved = dict(graph.initializers)
    added = [v for v in saved.values() if not v.is_graph_input()] if as_inputs else []
    graph.inputs.extend(added)
    if not include:
        graph.initializers.clear()
    try:
        yield
    finally:
        for value in added:
            graph.inputs.remove(value)
        if not include:
            for value in saved.values():
                graph.register_initializer(value)


def _storage_key(tensor: ir.TensorProtocol) -> Any:
    """Equal for tensors that are the same bytes (tied weights), else unique."""
    if isinstance(tensor, WeightTensor) and tensor.slot is not None:
        return ("slot", id(tensor.slot))
    if isinstance(tensor, ir.tensor_adapters.TorchTensor):
        raw = tensor.raw
        if not raw.is_meta:
            return ("torch", raw.data_ptr(), tuple(raw.shape), tuple(raw.stride()), raw.dtype)
    return ("object", id(tensor))


def _referenced_locations(path: Path) -> set[str]:
    """External data locations the ONNX file at ``path`` points to (empty if none/unreadable)."""
    if not path.is_file():
        return set()
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception:  # not an ONNX file: nothing of it to keep or remove
        return set()
    out: set[str] = set()
    for tensor in onnx.external_data_helper._get_all_tensors(proto):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            out.update(e.value for e in tensor.external_data if e.key == "location")
    return out


def sweep_stale(folder: Path, name: str, keep: set[str]) -> list[str]:
    """Remove leftovers of killed saves of ``name`` in ``folder`` (temporary graphs, fresh data
    files, onnx_ir's temporary folders) whose process is gone and that ``keep`` does not list.

    Returns:
        The names removed.
    """
    removed = []
    for prefix in (f"{name}{TEMP_TAG}", f".{name}{TEMP_TAG}"):
        for entry in stale_entries(folder, prefix):
            if entry.name in keep:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()
            removed.append(entry.name)
    return removed


def _write_graph(model: ir.Model, path: Path, tmp: Path, before_rename: Callable[[Path], None] | None = None) -> None:
    """Serialize ``model`` (external tensors stay references) to ``tmp`` (fsynced when
    :data:`DURABLE`), call ``before_rename(tmp)``, rename to ``path``."""
    data = ir.serde.serialize_model(model).SerializeToString()
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if DURABLE:
            os.fsync(f.fileno())
    del data
    if before_rename is not None:
        try:
            before_rename(tmp)
        except Exception as e:  # whatever the hook raises is the caller's to see, not a SaveError
            raise _CommitRefused(e) from e
    os.replace(tmp, path)


class _CommitRefused(Exception):
    """``before_commit`` raised ``error``: :func:`save_model` re-raises it once its files are gone."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def uses_external_data(model: ir.Model, external_data: bool | None, max_shard_bytes: int | None = None) -> bool:
    """Whether :func:`save_model` writes external data: as forced, else when the estimated protobuf
    (graph + weights) passes :data:`EXTERNAL_MARGIN` of the 2 GiB limit or shards are asked for."""
    if external_data is not None:
        return external_data
    return estimated_proto_bytes(model) > EXTERNAL_MARGIN * PROTOBUF_LIMIT or max_shard_bytes is not None


def _fsync(path: Path) -> None:
    """Flush ``path``'s bytes to the disk (before a graph naming it is renamed into place), when
    :data:`DURABLE`."""
    if not DURABLE:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _shards(tensors: list[ir.TensorProtocol], max_bytes: int | None) -> list[list[ir.TensorProtocol]]:
    groups: list[list[ir.TensorProtocol]] = [[]]
    size = 0
    for tensor in tensors:
        if max_bytes is not None and groups[-1] and size + tensor.nbytes > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(tensor)
        size += tensor.nbytes
    return [g for g in groups if g]


def _point_at(values: list[tuple[ir.Value, tuple[int, int, int]]], names: list[str], folder: Path) -> None:
    """Make each value's tensor an ExternalTensor in shard ``names[i]`` at (shard, offset, length)."""
    for value, (shard, offset, length) in values:
        tensor = value.const_value
        assert tensor is not None and value.name is not None  # externalized initializers have both
        value.const_value = ir.ExternalTensor(
            names[shard], offset, length, tensor.dtype, shape=ir.Shape(tuple(tensor.shape.numpy())),
            name=value.name, base_dir=folder,
        )


def save_model(
    model: ir.Model,
    destination: str | os.PathLike[str],
    *,
    external_data: bool | None = None,
    max_shard_bytes: int | None = None,
    callback: Callable[[ir.TensorProtocol, Any], None] | None = None,
    before_commit: Callable[[Path], None] | None = None,
) -> list[Path]:
    """Write ``model`` to ``destination`` (and its external data beside it), atomically.

    Args:
        model: The model as it should be saved (graph inputs/initializers already laid out);
            not changed.
        destination: The ``.onnx`` file path; its folder must exist.
        external_data: Force (True) or forbid (False) external data; ``None``: external when the
            estimated protobuf (graph + weights) exceeds 90% of the 2 GiB protobuf limit. Tensors
            of at most 256 bytes stay inline (onnxruntime cannot read a shape or axes input from
            external data); with ``True`` and no larger tensor, the data file is written empty.
        max_shard_bytes: Split the external data into files of at most this many bytes
            (a larger tensor gets a file of its own); ``None``: one file.
        callback: Called per tensor written (``onnx_ir.external_data.CallbackInfo``), for progress.
        before_commit: Called with the path of the complete model under its temporary name (its
            data files written, nothing of the destination replaced yet); if it raises, the save
            stops there, its files are removed and the previous model stays (the export's runtime
            check of the written files). Its error propagates as it is.

    Returns:
        The files of the saved model: the ``.onnx`` first, then its data files.

    Raises:
        SaveError: The folder is missing or not writable, the model exceeds 2 GiB with
            ``external_data=False``, ``max_shard_bytes`` is not positive, or writing failed.
        MissingWeightsError: An initializer has no data yet (fake/meta export).
    """
    path = Path(destination)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise SaveError(f"Cannot save the ONNX model to {path}: it is a directory; give a file path such as {path / 'model.onnx'}.")
    if not folder.is_dir():
        raise SaveError(f"Cannot save the ONNX model to {path}: folder {folder} does not exist. Create it first.")
    if not os.access(folder, os.W_OK):
        raise SaveError(f"Cannot save the ONNX model to {path}: folder {folder} is not writable. Choose another path.")
    if max_shard_bytes is not None and max_shard_bytes <= 0:
        raise SaveError(f"max_shard_bytes must be a positive number of bytes, got {max_shard_bytes}.")
    check_weights_present(model, "save the initializers")
    estimate = estimated_proto_bytes(model)
    forced = external_data is True
    if external_data is None:
        external_data = uses_external_data(model, None, max_shard_bytes)
    elif not external_data and estimate > PROTOBUF_LIMIT:
        raise SaveError(
            f"The model is about {estimate / 1024**3:.2f} GiB, past protobuf's 2 GiB limit: save it with "
            "external_data=True (or None)."
        )
    old = _referenced_locations(path)
    sweep_stale(folder, path.name, keep=old)
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp_graph = folder / f".{path.name}{TEMP_TAG}{token}.onnx"
    fresh: list[str] = []
    finals: list[str] = []
    committed = False
    values = [v for g in model.graphs() for v in g.initializers.values()]
    originals = [v.const_value for v in values]
    try:
        placed: list[tuple[ir.Value, tuple[int, int, int]]] = []
        if external_data:
            big = [v for v in values if v.const_value is not None and v.const_value.nbytes > INLINE_BYTES]
            unique: dict[Any, ir.TensorProtocol] = {}
            for v in big:
                unique.setdefault(_storage_key(v.const_value), v.const_value)  # type: ignore[arg-type]
            where: dict[Any, tuple[int, int, int]] = {}
            # asked for external data, a tiny model still gets its (empty) data file, as
            # torch.onnx.export writes one; its small tensors stay inline: onnxruntime's shape
            # inference cannot read a shape or an axes input from external data
            groups = _shards(list(unique.values()), max_shard_bytes) or ([[]] if forced else [])
            for i, group in enumerate(groups):
                fresh.append(f"{path.name}{TEMP_TAG}{token}.data{i}")
                written = write_data_file(
                    group, folder / fresh[-1], alignment=ALIGNMENT, align_threshold=ALIGN_THRESHOLD, callback=callback
                )
                _fsync(folder / fresh[-1])
                for src, (offset, length) in zip(group, written):
                    where[_storage_key(src)] = (i, offset, length)
            placed = [(v, where[_storage_key(v.const_value)]) for v in big]  # type: ignore[arg-type]
            _point_at(placed, fresh, folder)
        _write_graph(model, path, tmp_graph, before_commit)
        committed = True
        finals = data_file_names(path.name, len(fresh))
        if fresh:
            with contextlib.suppress(OSError):  # no hard links here: the fresh names stay valid
                for i, (new, dst) in enumerate(zip(fresh, finals)):
                    link = folder / f".{path.name}{TEMP_TAG}{token}.link{i}"
                    os.link(folder / new, link)
                    os.replace(link, folder / dst)
                for v, orig in zip(values, originals):
                    v.const_value = orig
                _point_at(placed, finals, folder)
                _write_graph(model, path, tmp_graph)
                for new in fresh:
                    os.unlink(folder / new)
                fresh = []
        # initializers that were read from files of this folder now point at the new files (the
        # old ones may be replaced or removed below); small ones were inlined: keep them in memory
        for i, (v, orig) in enumerate(zip(values, originals)):
            if isinstance(orig, ir.ExternalTensor) and v.const_value is not None:
                kept = v.const_value
                originals[i] = kept if isinstance(kept, ir.ExternalTensor) else ir.Tensor(orig.numpy(), name=orig.name)
        current = set(fresh or finals)
        for name in old - current:
            stale = folder / name
            if stale.parent.resolve() == folder.resolve() and stale.is_file():
                with contextlib.suppress(OSError):
                    stale.unlink()
        return [path, *(folder / n for n in (fresh or finals))]
    except _CommitRefused as e:
        raise e.error from None
    except OnnxportError:
        raise
    except OSError as e:
        raise SaveError(f"Writing the ONNX model to {path} failed: {e}") from e
    except Exception as e:  # a transform or onnx_ir failing mid-write: still onnxport's error
        raise SaveError(f"Writing the ONNX model to {path} failed: {type(e).__name__}: {e}") from e
    finally:
        for v, orig in zip(values, originals):
            v.const_value = orig
        with contextlib.suppress(FileNotFoundError):
            tmp_graph.unlink()
        if not committed:
            for name in fresh:
                with contextlib.suppress(FileNotFoundError):
                    (folder / name).unlink()
