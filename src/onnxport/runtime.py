"""onnxruntime I/O shared by ONNXProgram, verify/ and hf/: one session factory, feeds, outputs.

- :func:`create_session`: the one way onnxport builds an ``onnxruntime.InferenceSession``. The model
  is serialized once; with ``check=True`` the same bytes go to
  ``onnx.checker.check_model(full_check=True)`` first. From :data:`SESSION_FILE_MIN_BYTES` of
  weights, past the 2 GB protobuf limit, or while the weights are still in an external data file (a
  loaded model), the model is written once to a temporary folder (the weights through
  :func:`onnxport.data_file.write_data_file`, offsets aligned) and both read the file: onnxruntime
  memory-maps the aligned weights instead of copying them into its own memory. A ``transient``
  session (the export's checks: a few runs, then released) keeps those pages out of the process's
  resident set while it runs (:mod:`onnxport.mapped_pages`).
- :func:`feeds` binds torch inputs to graph input names; :func:`run_session` runs and returns torch
  tensors, through ``OrtValue`` when bfloat16 flows in or out (numpy has no bfloat16).
- :func:`restore_complex` turns outputs carried as real ``[..., 2]`` back into complex tensors.
- :func:`refusal_parts` reads onnxruntime's reason and failing node from a run error.

onnxruntime is imported inside the functions that need it: it is heavy and only needed to run.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.helper
import onnx_ir as ir
import torch

from onnxport import draws, mapped_pages
from onnxport.data_file import (
    ALIGN_THRESHOLD,
    ALIGNMENT,
    INLINE_BYTES,
    stale_entries,
    write_data_file,
)
from onnxport.errors import InputError, MissingWeightsError, ModelCheckError
from onnxport.metadata import complex_outputs

# Protobuf cannot serialize a message over 2 GiB; past this the weights go to external data.
PROTOBUF_LIMIT = 2 * 1024**3

CHECKER = "onnx.checker (full_check)"
ORT_LOAD = "onnxruntime load"


@dataclasses.dataclass
class CheckResult:
    """One model check (``onnx.checker`` full check, onnxruntime load): truthful outcome and time."""

    name: str
    passed: bool
    seconds: float
    detail: str = ""


def available_memory() -> int:
    """``MemAvailable`` from ``/proc/meminfo`` in bytes (total physical memory elsewhere): what a
    session or an eager reference can take without swapping."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def initializer_bytes(model: ir.Model) -> int:
    """Total size of the main graph's initializers, in bytes."""
    return sum(v.const_value.nbytes for v in model.graph.initializers.values() if v.const_value is not None)


def needs_external_data(model: ir.Model, external_data: bool | None, include_initializers: bool = True) -> bool:
    """The external-data rule of ``torch.onnx.ONNXProgram.save``: ``external_data`` when given,
    else whether the weights exceed the 2 GB protobuf limit."""
    if external_data is not None:
        return external_data
    return include_initializers and initializer_bytes(model) > PROTOBUF_LIMIT


def on_disk(model: ir.Model) -> bool:
    """Whether some initializer is still in an external data file (a model loaded from disk)."""
    return any(isinstance(v.const_value, ir.ExternalTensor) for v in model.graph.initializers.values())


# From this many bytes of weights in memory, a session reads them from a temporary external data
# file: onnxruntime 1.31 memory-maps the tensors whose offsets are aligned (tensorprotoutils.cc,
# external data read through ``Env::MapFileIntoMemory``) and keeps no copy of its own. Handed as
# arrays instead (below), it copies them: a 0.51 B-parameter Llama (2.0 GB float32) took 15.5 s and
# +2.0x the weights at its peak to open, against 3.1 s to write the file and +0.9x of mapped file
# pages (RssAnon +0.002x) without pre-packing (``/work/s36/llama_sess2.py``, session 36).
SESSION_FILE_MIN_BYTES = 32 * 1024**2
_SESSION_DATA = "model.onnx.data"
# The session folders' names carry the process id: a killed process's folder is removed by the next one.
_SESSION_PREFIX = "onnxport-session-"
# Room left on the temporary folder's file system after the session file is written.
_FREE_MARGIN_BYTES = 256 * 1024**2

# Initializers at least this large go to onnxruntime as arrays (SessionOptions.add_external_initializers)
# instead of inside the serialized model: no protobuf copy of the weights, no temporary file past
# 2 GB. onnxruntime 1.31 copies them into the session as it is created (measured: +512 MB for
# 512 MB of weights; outputs unchanged after the arrays are overwritten), so they are released then.
_HANDED_MIN_BYTES = 1024
_HANDED_LOCATION = "onnxport-in-memory"  # a placeholder: onnxruntime takes the arrays instead
_NUMPY_NATIVE = frozenset({
    ir.DataType.FLOAT, ir.DataType.DOUBLE, ir.DataType.FLOAT16, ir.DataType.INT8, ir.DataType.UINT8,
    ir.DataType.INT16, ir.DataType.UINT16, ir.DataType.INT32, ir.DataType.UINT32, ir.DataType.INT64,
    ir.DataType.UINT64, ir.DataType.BOOL,
})  # fmt: skip


def _in_memory_weights(model: ir.Model) -> list[tuple[ir.Value, Any]]:
    """The main graph's initializers handed to onnxruntime as arrays: in memory, at least
    :data:`_HANDED_MIN_BYTES`, of a dtype numpy holds natively (bfloat16, float8 and 4-bit types
    stay in the model bytes), and read by some node or graph output: onnxruntime drops an unused
    initializer when it loads the graph, then refuses it as an external initializer ("Failed to
    find existing initializer"; an unoptimized export keeps the weights of modules its forward
    skips, a codec decoder's encoder)."""
    handed = []
    for value in model.graph.initializers.values():
        tensor = value.const_value
        if tensor is None or isinstance(tensor, ir.ExternalTensor) or not value.name:
            continue
        if not value.uses() and not value.is_graph_output():
            continue
        if tensor.dtype in _NUMPY_NATIVE and tensor.nbytes >= _HANDED_MIN_BYTES:
            handed.append((value, tensor))
    return handed


@contextlib.contextmanager
def _data_elsewhere(handed: Sequence[tuple[ir.Value, Any]],
                    places: Sequence[tuple[str, int, int]] | None = None) -> Iterator[None]:
    """Inside, the ``handed`` initializers are external-data references to ``places``
    (``(location, offset, length)`` each; placeholders in :data:`_HANDED_LOCATION` by default),
    serialized without their bytes; their tensors come back on exit."""
    for i, (value, tensor) in enumerate(handed):
        location, offset, length = places[i] if places is not None else (_HANDED_LOCATION, 0, tensor.nbytes)
        value.const_value = ir.ExternalTensor(
            location, offset, length, tensor.dtype, shape=tensor.shape, name=value.name or ""
        )
    try:
        yield
    finally:
        for value, tensor in handed:
            value.const_value = tensor


def _in_memory_bytes(model: ir.Model) -> int:
    """Bytes of the main graph's initializers held in memory (not in an external data file)."""
    return sum(v.const_value.nbytes for v in model.graph.initializers.values()
               if v.const_value is not None and not isinstance(v.const_value, ir.ExternalTensor))


def write_session_file(model: ir.Model, folder: str, *, link: bool = True) -> str:
    """Write ``model`` to ``folder/model.onnx`` for onnxruntime; ``model`` is not changed. Returns
    the ``.onnx`` path.

    - Initializers still in an external data file (a loaded model) keep their bytes where they
      are (``link``): the file is hard-linked into ``folder`` (no copy; onnxruntime refuses
      external data outside the model's folder, symbolic links included). Where it cannot be
      linked (another file system, ``protected_hardlinks``), or without ``link`` (for
      ``onnx.checker``, which refuses a data file with several hard links as "a potential
      hardlink attack"), they are copied as below.
    - The others over 256 bytes go to ``model.onnx.data`` one tensor at a time
      (:func:`onnxport.data_file.write_data_file`: those over 1 MiB at 64 KiB-aligned offsets,
      which onnxruntime memory-maps).

    Raises:
        OSError: The folder cannot be written (no room, read-only).
    """
    links: dict[str, str | None] = {}
    linked, moved = [], []
    for value in (v for g in model.graphs() for v in g.initializers.values()):
        tensor = value.const_value
        if not value.name or tensor is None:
            continue
        if link and isinstance(tensor, ir.ExternalTensor):
            name = _linked(tensor, folder, links)
            if name is not None:
                offset = tensor.offset or 0
                linked.append(((value, tensor), (name, offset, tensor.length if tensor.length is not None else tensor.nbytes)))
                continue
        if tensor.nbytes > INLINE_BYTES or isinstance(tensor, ir.ExternalTensor):
            moved.append((value, tensor))
    places = write_data_file([t for _, t in moved], Path(folder, _SESSION_DATA), alignment=ALIGNMENT,
                             align_threshold=ALIGN_THRESHOLD)
    refs = [pair for pair, _ in linked] + moved
    where = [ref for _, ref in linked] + [(_SESSION_DATA, offset, length) for offset, length in places]
    path = os.path.join(folder, "model.onnx")
    with _data_elsewhere(refs, where):
        proto = ir.serde.serialize_model(model)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())
    return path


def _linked(tensor: ir.ExternalTensor, folder: str, links: dict[str, str | None]) -> str | None:
    """The name in ``folder`` of a hard link to ``tensor``'s data file (made once per file), or
    ``None`` when it cannot be linked."""
    source = os.path.join(os.fspath(tensor.base_dir), os.fspath(tensor.location))
    if source not in links:
        name = f"linked{len(links)}.data"
        try:
            os.link(source, os.path.join(folder, name))
            links[source] = name
        except OSError:  # another file system, no permission to link, no hard links at all
            links[source] = None
    return links[source]


def _session_folder(model: ir.Model, needed: bool, checked: bool) -> tuple[tempfile.TemporaryDirectory[str], str] | None:
    """A temporary folder holding ``model`` (:func:`write_session_file`, its data files linked
    unless ``checked`` by onnx.checker) and the ``.onnx`` path, or
    ``None`` when the temporary folder cannot take it and the model can go to onnxruntime from
    memory (not ``needed``).

    Raises:
        ModelCheckError: ``needed`` and the temporary folder cannot take the model.
    """
    # a loaded model's data files are linked, not copied, unless checked (else ENOSPC below)
    size = initializer_bytes(model) if checked else _in_memory_bytes(model)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    own = f"{_SESSION_PREFIX}{os.getpid()}-"
    for entry in stale_entries(Path(tempfile.gettempdir()), _SESSION_PREFIX):
        if not entry.name.startswith(own):  # a killed process's folder (this one's may be in use)
            shutil.rmtree(entry, ignore_errors=True)
    try:
        tmp = tempfile.TemporaryDirectory(prefix=own)
        free = shutil.disk_usage(tmp.name).free
        if free < size + _FREE_MARGIN_BYTES:
            raise OSError(errno.ENOSPC, f"{free / 1024**3:.2f} GiB free there, the model needs {size / 1024**3:.2f} GiB")
        return tmp, write_session_file(model, tmp.name, link=not checked)
    except OSError as e:
        where = tmp.name if tmp is not None else tempfile.gettempdir()
        if tmp is not None:
            tmp.cleanup()
        if not needed:
            return None
        raise ModelCheckError(
            f"onnxruntime reads this model from a file (past protobuf's 2 GB, or weights in an external "
            f"data file), and writing it to the temporary folder {where} failed: {e}. Set TMPDIR to a "
            f"folder with {(size + _FREE_MARGIN_BYTES) / 1024**3:.1f} GiB free.",
            ORT_LOAD,
        ) from e


def _first_lines(error: BaseException, n: int = 6) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


@contextlib.contextmanager
def _with_outputs(model: ir.Model, extra: Sequence[ir.Value]) -> Iterator[ir.Model]:
    """``model`` with ``extra`` values appended as graph outputs, restored on exit."""
    graph = model.graph
    graph.outputs.extend(extra)
    try:
        yield model
    finally:
        for _ in extra:
            graph.outputs.pop()


def create_session(
    model: ir.Model,
    *,
    check: bool = False,
    extra_outputs: Sequence[ir.Value] = (),
    checks: list[CheckResult] | None = None,
    providers: Iterable[str] = ("CPUExecutionProvider",),
    tempdir_owner: Any = None,
    initializer: Callable[[str | bytes], Any] | None = None,
    draws_at_mean: bool = False,
    prepack: bool = True,
    transient: bool = False,
) -> Any:
    """Serialize once, optionally run the full ONNX checker, and load the model in onnxruntime.

    Args:
        model: The model to load (not modified).
        check: Run ``onnx.checker.check_model(full_check=True)`` on the same bytes first.
        extra_outputs: Values of ``model.graph`` to expose as extra graph outputs in the session
            (intermediate values for localization).
        checks: Receives one :class:`CheckResult` per check run, pass or fail.
        providers: onnxruntime execution providers.
        tempdir_owner: An object whose ``_tempdir`` keeps the temporary folder alive (the model read
            from a file).
        initializer: Builds the session from the model bytes or path (the model read from a
            file: :data:`SESSION_FILE_MIN_BYTES` of weights, past 2 GB, weights on disk) instead of
            ``onnxruntime.InferenceSession(data, options, providers)`` (seed 003's
            ``initialize_inference_session(initializer=...)``).
        draws_at_mean: Load the model with its normal and uniform draws at their mean
            (:func:`onnxport.draws.onnx_draws_at_mean`: verification of a model that draws noise).
        prepack: Let onnxruntime's kernels pre-pack constant weights as the session opens
            (MatMul's packed panels: a copy of every MatMul weight, and 8 s for the 2.0 GB Llama of
            ``SESSION_FILE_MIN_BYTES``'s comment). ``False`` (``session.disable_prepacking``) opens
            at once and keeps no copy, for a session that runs a few times (the export's runtime
            check of a model whose session is released after it).
        transient: The session runs a few times and is then released (the export's checks): the
            weights onnxruntime memory-maps from the temporary file are dropped from the process's
            resident set during and after each :func:`run_session` (:mod:`onnxport.mapped_pages`:
            the runtime check of a 0.51 B-parameter Llama in RAM peaked at +0.94x its weights
            without, +0.13x with). Implies ``prepack=False``: a pre-packed copy is anonymous memory
            the drop cannot release.

    Returns:
        The ``onnxruntime.InferenceSession``.

    Raises:
        MissingWeightsError: Some initializer has no data yet (fake/meta export, no
            ``apply_weights``).
        ModelCheckError: The checker rejected the model (``check="onnx.checker"``), onnxruntime
            refused to load it (``check="onnxruntime load"``), or the model must be read from a
            file (past 2 GB, or weights in an external data file) and the temporary folder could
            not take it.
    """
    import onnxruntime as ort  # heavy optional runtime

    missing = sorted(v.name or "?" for v in model.graph.initializers.values() if getattr(v.const_value, "has_data", True) is False)
    if missing:  # weights.WeightTensor.has_data, read without importing the layer above
        raise MissingWeightsError(
            f"Cannot run the model: {len(missing)} initializers have no data yet ({', '.join(missing[:20])}); "
            "the model was exported in fake mode or on the meta device. Call "
            "ONNXProgram.apply_weights(state_dict | '.safetensors' file | shard folder) first.",
            missing,
        )
    checks = checks if checks is not None else []
    start = time.perf_counter()
    data: Any
    loaded = on_disk(model)
    file_first = loaded or _in_memory_bytes(model) >= SESSION_FILE_MIN_BYTES
    handed = [] if check or initializer is not None or loaded else _in_memory_weights(model)
    # the bytes cannot hold what is not handed past 2 GB; weights in another file are read from a file
    needs_file = loaded or initializer_bytes(model) - sum(t.nbytes for _, t in handed) >= PROTOBUF_LIMIT
    at_mean = draws.onnx_draws_at_mean(model) if draws_at_mean else contextlib.nullcontext()
    with _with_outputs(model, extra_outputs), at_mean:
        folder = _session_folder(model, needs_file, check) if file_first or needs_file else None
        if folder is not None:  # onnxruntime memory-maps the weights from the file
            handed = []
            data = folder[1]
        else:
            with _data_elsewhere(handed):
                data = ir.serde.serialize_model(model).SerializeToString()
    if check:
        try:
            onnx.checker.check_model(data, full_check=True)  # bytes or path: no second serialization
        except Exception as e:  # onnx raises ValidationError / InferenceError
            checks.append(CheckResult(CHECKER, False, time.perf_counter() - start, _first_lines(e)))
            raise ModelCheckError(
                f"onnx.checker.check_model(full_check=True) rejected the exported model:\n{_first_lines(e)}\n"
                "This is an onnxport bug (a translation emitted an invalid node): please report it with "
                "the model.",
                "onnx.checker",
            ) from e
        checks.append(CheckResult(CHECKER, True, time.perf_counter() - start))
        start = time.perf_counter()
    options = _session_options(prepack and not transient)
    arrays = [np.ascontiguousarray(tensor.numpy()) for _, tensor in handed]
    values = [ort.OrtValue.ortvalue_from_numpy(a) for a in arrays]
    if handed:
        options.add_external_initializers([value.name for value, _ in handed], values)
    mapped = mapped_pages.file_mappings(folder[0].name) if transient and folder is not None else None
    try:
        if initializer is not None:
            session = initializer(data)
        else:
            session = ort.InferenceSession(data, options, providers=list(providers))
    except Exception as e:  # onnxruntime raises its own exception types
        if folder is not None:
            folder[0].cleanup()
        checks.append(CheckResult(ORT_LOAD, False, time.perf_counter() - start, _first_lines(e)))
        raise _load_error(e, check) from e
    if mapped is not None and folder is not None:
        mapped_pages.track(session, folder[0].name, mapped)
    del arrays, values  # onnxruntime copied them into the session (tests/test_runtime.py checks it)
    if folder is not None:
        if initializer is None and os.name == "posix":
            # onnxruntime read or memory-mapped every weight as the session opened; a mapping
            # outlives its file's name, so nothing stays behind on disk, even if the process dies
            folder[0].cleanup()
        elif tempdir_owner is not None:
            tempdir_owner._tempdir = folder[0]
    checks.append(CheckResult(ORT_LOAD, True, time.perf_counter() - start))
    return session


def _session_options(prepack: bool) -> Any:
    """onnxport's ``onnxruntime.SessionOptions`` (:func:`create_session`'s ``prepack``)."""
    import onnxruntime as ort  # heavy optional runtime

    options = ort.SessionOptions()
    options.log_severity_level = 4  # failures reach the user as onnxport errors, not as onnxruntime log lines
    # no CPU memory arena: each run's buffers go back to the system instead of staying at the
    # largest run's peak (SAM ViT-B at 1024², batch 3: 7.4 GB peak and 1 GB after, against 11.5
    # GB kept with the arena); verification runs a few sizes once each, where the arena saves little
    options.enable_cpu_mem_arena = False
    if not prepack:  # kernels read the weights as they are (MatMul packs its panels per run)
        options.add_session_config_entry("session.disable_prepacking", "1")
    return options


def _load_error(error: BaseException, checked: bool) -> ModelCheckError:
    hint = (
        "The model passed onnx.checker; an op or type onnxruntime does not implement is the "
        "usual cause: try another opset_version."
        if checked
        else "Run onnxport.verify(program, ...) for the onnx.checker verdict."
    )
    return ModelCheckError(
        f"onnxruntime refused to load the exported model:\n{_first_lines(error)}\n{hint}", ORT_LOAD
    )


def open_saved(path: str | os.PathLike[str], *, prepack: bool = True, transient: bool = False) -> Any:
    """An onnxruntime CPU session on a model file as written (its external data memory-mapped
    where aligned), with :func:`create_session`'s options (``transient`` as there, pre-packing
    off: the pages of the files mapped from ``path``'s folder): the export's runtime check of the
    files it is about to commit.

    Raises:
        ModelCheckError: onnxruntime refused to load it (``check="onnxruntime load"``).
    """
    import onnxruntime as ort  # heavy optional runtime

    folder = os.path.dirname(os.path.abspath(path))
    mapped = mapped_pages.file_mappings(folder) if transient else None
    try:
        session = ort.InferenceSession(os.fspath(path), _session_options(prepack and not transient),
                                       providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise _load_error(e, False) from e
    if mapped is not None:
        mapped_pages.track(session, folder, mapped)
    return session


# -- feeds -------------------------------------------------------------------------------------
def _tensor_leaves(value: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    paths, _ = torch.utils._pytree.tree_flatten_with_path(value)
    out = []
    for path, leaf in paths:
        if isinstance(leaf, torch.Tensor):
            keys = [str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path]
            out.append((".".join([prefix, *keys]), leaf))
    return out


def feeds(names: list[str], args: tuple, kwargs: dict) -> dict[str, Any]:
    """Graph input name → array. Keyword tensors bind by name (``input_dict.tensor_x``) when the
    graph's inputs carry the default names; otherwise every tensor binds in order, as torch.export
    flattens ``(args, kwargs)``.

    Raises:
        InputError: The number of tensors does not match the graph inputs.
    """
    positional = [t for t in torch.utils._pytree.tree_leaves(args) if isinstance(t, torch.Tensor)]
    keyword = [item for key, value in kwargs.items() for item in _tensor_leaves(value, key)]
    if len(positional) + len(keyword) != len(names):
        raise InputError(
            f"The ONNX model takes {len(names)} tensor inputs {names}; got {len(positional) + len(keyword)} tensors."
        )
    result = {name: to_numpy(t) for name, t in zip(names, positional)}
    rest = names[len(positional) :]
    if {k for k, _ in keyword} == set(rest):
        result.update({k: to_numpy(t) for k, t in keyword})
    else:
        result.update({name: to_numpy(t) for name, (_, t) in zip(rest, keyword)})
    return result


def _feed_signature(value: Any) -> tuple[str, tuple[int, ...]]:
    """(onnxruntime type string, shape) of a feed: a numpy array or an OrtValue."""
    if hasattr(value, "data_type") and callable(value.data_type):  # an OrtValue (bfloat16)
        return str(value.data_type()), tuple(value.shape())
    name = onnx.helper.tensor_dtype_to_string(onnx.helper.np_dtype_to_tensor_dtype(value.dtype))
    ort_name = {"FLOAT": "float", "DOUBLE": "double"}.get(name.removeprefix("TensorProto."), name.removeprefix("TensorProto.").lower())
    return f"tensor({ort_name})", tuple(value.shape)


def check_feeds(session: Any, inputs: Mapping[str, Any]) -> None:
    """Compare the feeds with the session's declared inputs before running: dtype, rank, fixed
    sizes, and equal sizes for axes sharing a dim name (``batch_size``), so that a mistake is an
    :class:`InputError` naming the input, what the model expects and what it got, instead of
    onnxruntime's ``InvalidArgument``.

    Raises:
        InputError: A feed of the wrong dtype or shape, or a missing feed.
    """
    dims: dict[str, tuple[str, int, int]] = {}
    for meta in session.get_inputs():
        if meta.name not in inputs:
            raise InputError(f"The ONNX model's input {meta.name!r} was not given.")
        dtype, shape = _feed_signature(inputs[meta.name])
        expected = list(meta.shape) if meta.shape is not None else None
        if dtype != meta.type:
            raise InputError(
                f"Input {meta.name!r}: the model expects {meta.type} of shape {expected}, got {dtype} "
                f"of shape {list(shape)}. Convert it, e.g. x.to(torch.{_torch_name(meta.type)})."
            )
        if expected is None:
            continue
        if len(expected) != len(shape):
            raise InputError(
                f"Input {meta.name!r}: the model expects rank {len(expected)} (shape {expected}), got rank "
                f"{len(shape)} (shape {list(shape)})."
            )
        for axis, (want, got) in enumerate(zip(expected, shape)):
            if isinstance(want, int) and want >= 0 and want != got:
                raise InputError(
                    f"Input {meta.name!r} axis {axis}: the model expects size {want} (shape {expected}), "
                    f"got {got} (shape {list(shape)}). Only named axes are dynamic; re-export with "
                    f"dynamic_shapes naming this axis to accept other sizes."
                )
            if isinstance(want, str) and want:
                first = dims.setdefault(want, (meta.name, axis, got))
                if first[2] != got:
                    raise InputError(
                        f"Dim {want!r} is {first[2]} in input {first[0]!r} axis {first[1]} but {got} in input "
                        f"{meta.name!r} axis {axis}: axes sharing a dim name must have equal sizes."
                    )


def _torch_name(ort_type: str) -> str:
    name = ort_type.removeprefix("tensor(").removesuffix(")")
    return {"float": "float32", "double": "float64"}.get(name, name)


def to_numpy(tensor: torch.Tensor) -> Any:
    """A feed for onnxruntime: a numpy array, or for bfloat16 (which numpy cannot carry into
    onnxruntime) an OrtValue holding the bits. A complex tensor is fed as its real view [..., 2]."""
    tensor = tensor.detach().cpu()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor.resolve_conj())
    tensor = tensor.contiguous()
    if tensor.dtype == torch.bfloat16:
        import onnxruntime as ort  # heavy optional runtime

        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(tensor.view(torch.int16).numpy(), 16)
    return tensor.numpy()


# -- outputs -----------------------------------------------------------------------------------
def to_torch(array: Any) -> torch.Tensor:
    """An onnxruntime output as a torch tensor (bfloat16 arrives as an ml_dtypes array)."""
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _ortvalue_to_torch(value: Any) -> torch.Tensor:
    if value.data_type() == "tensor(bfloat16)":
        n = int(np.prod(value.shape()))
        buffer = memoryview((ctypes.c_int16 * n).from_address(value.data_ptr())).cast("B")
        bits = np.frombuffer(buffer, dtype=np.int16).copy()
        return torch.from_numpy(bits.reshape(value.shape())).view(torch.bfloat16)
    return torch.from_numpy(np.asarray(value.numpy()))


def run_session(session: Any, inputs: dict[str, Any], names: Sequence[str] | None = None) -> list[torch.Tensor]:
    """Run an onnxruntime session (outputs ``names``, default all); through OrtValues when
    bfloat16 flows in or out. The mapped weights of a ``transient`` session
    (:func:`create_session`) leave the resident set during and after the run."""
    import onnxruntime as ort  # heavy optional runtime

    wanted = list(names) if names is not None else None
    outputs = session.get_outputs()
    bf16_out = any(o.type == "tensor(bfloat16)" for o in outputs)
    with mapped_pages.released(session):
        if bf16_out or any(isinstance(v, ort.OrtValue) for v in inputs.values()):
            ort_feeds = {k: v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(v) for k, v in inputs.items()}
            return [_ortvalue_to_torch(v) for v in session.run_with_ort_values(wanted, ort_feeds)]
        return [to_torch(o) for o in session.run(wanted, inputs)]


def restore_complex(model: ir.Model, outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Turn the outputs the graph marks complex-as-real (``[..., 2]`` real tensors; graph
    ``pkg.onnxport.complex_outputs``, else each output's ``pkg.onnxport.complex_as_real``) back into
    complex tensors (``torch.view_as_complex``); the others are returned unchanged."""
    restored = list(outputs)
    for i in complex_outputs(model.graph):
        if i < len(restored) and restored[i].shape[-1:] == (2,):
            # a fresh row-major copy: numpy's strides of empty or 0-d arrays may not suit view_as_complex
            real = torch.empty(restored[i].shape, dtype=restored[i].dtype).copy_(restored[i])
            restored[i] = torch.view_as_complex(real)
    return restored


_NODE_IN_MESSAGE = re.compile(r"running (\w+) node\. Name:'([^']*)'")


def refusal_parts(error: BaseException) -> tuple[str, str | None, str | None]:
    """``(reason, op type, node name)`` of onnxruntime's refusal to run a model: the first line after
    "Status Message:" in its message (else the message's first line, else the exception type; with
    the ``index: 2 Got: 160 Expected: 128`` lines of an input of other dimensions), and
    the node of "... while running <Op> node. Name:'<name>'" (``None`` when it names none)."""
    text = str(error).strip()
    lines = text.split("Status Message:")[-1].strip().splitlines() or [type(error).__name__]
    # "Got invalid dimensions for input: x for the following indices" lists them on the next lines
    details = [line.strip() for line in lines[1:] if line.strip().startswith("index:")]
    reason = lines[0] + (": " + "; ".join(details) if details else "")
    match = _NODE_IN_MESSAGE.search(text)
    return (reason, match.group(1), match.group(2)) if match else (reason, None, None)


__all__ = [
    "CHECKER",
    "ORT_LOAD",
    "PROTOBUF_LIMIT",
    "CheckResult",
    "check_feeds",
    "create_session",
    "feeds",
    "initializer_bytes",
    "needs_external_data",
    "on_disk",
    "refusal_parts",
    "restore_complex",
    "run_session",
    "to_numpy",
    "to_torch",
]
