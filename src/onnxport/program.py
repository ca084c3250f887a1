"""The exported ``onnx_ir.Model`` with its ExportedProgram and its weights: applying weights
(:mod:`onnxport.weights`), saving (streamed, atomic: :mod:`onnxport.weights.save`), optimizing,
and running it in onnxruntime (through :mod:`onnxport.runtime`)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import onnx.reference
import onnx_ir as ir
import torch
from torch.export import ExportedProgram

from onnxport import runtime
from onnxport import weights as weights_mod
from onnxport.errors import InputError, OnnxportError, SaveError
from onnxport.options import check_destination
from onnxport.passes import optimize as run_passes
from onnxport.passes.graphs import all_values
from onnxport.weights.save import (
    check_weights_present,
    initializer_layout,
    missing_weights,
    save_model,
)

if TYPE_CHECKING:
    import onnx


def external_data_problems(model: ir.Model, folder: Path) -> tuple[list[str], list[str]]:
    """Check every external-data reference of a loaded model against ``folder`` (the model's).

    ONNX's rule (``onnx/external_data_helper.py``, and onnxruntime's loader) is that a location is
    a relative path inside the model's folder; onnx_ir resolves it as given, so a hostile file
    could otherwise point at ``../../etc/passwd`` or an absolute path.

    Returns:
        ``(outside, broken)``: locations that are absolute or escape ``folder``; and tensors whose
        file is missing or shorter than ``offset + length``.
    """
    outside: list[str] = []
    broken: list[str] = []
    root = folder.resolve()
    for value in model.graph.initializers.values():
        tensor = value.const_value
        if not isinstance(tensor, ir.ExternalTensor):
            continue
        location = str(tensor.location)
        target = (folder / location).resolve()
        if os.path.isabs(location) or not target.is_relative_to(root):
            if location not in outside:
                outside.append(location)
            continue
        if not target.is_file():
            broken.append(f"{value.name}: {location} is missing")
        elif tensor.length is not None and (tensor.offset or 0) + tensor.length > target.stat().st_size:
            broken.append(
                f"{value.name}: {location} has {target.stat().st_size} bytes, the tensor needs "
                f"{(tensor.offset or 0) + tensor.length} (truncated)"
            )
    return outside, broken


def read_onnx_file(path: str | os.PathLike[str]) -> ir.Model:
    """Read an ONNX file that may be empty, truncated, not ONNX at all, or hostile; weights in
    external data stay on disk.

    Raises:
        InputError: The path is missing or a folder, the file is empty, protobuf cannot parse it
            (truncated or another format), or it parses but is no model (no ``ir_version``, no
            graph output) — the message names the file and the cause.
    """
    file = Path(path)
    if not file.exists():
        raise InputError(f"ONNX file {file} not found.")
    if not file.is_file():
        raise InputError(f"{file} is not a file: give the path of a .onnx file.")
    if file.stat().st_size == 0:
        raise InputError(f"{file} is empty (0 bytes): not an ONNX model. Re-export or re-download it.")
    try:
        model = ir.load(file)
    except Exception as e:  # protobuf DecodeError (truncated or not protobuf), onnx_ir errors
        raise InputError(
            f"{file} is not a readable ONNX model (truncated, or another file format): "
            f"{type(e).__name__}: {str(e)[:200]}"
        ) from e
    if not model.ir_version or not len(model.graph.outputs):
        raise InputError(
            f"{file} is not an ONNX model: it parses as protobuf but has no "
            f"{'ir_version' if not model.ir_version else 'graph output'} (truncated, or another file format)."
        )
    return model


class ONNXProgramBase:
    """An exported ONNX model with the ExportedProgram it came from: save, load, run.

    :class:`onnxport.ONNXProgram` (``verify/api.py``) is this class plus ``.verify()``; the
    verification layer sits above this one, so the method is added there.

    Attributes:
        model: The ONNX model (``onnx_ir.Model``); initializers share memory with the torch weights.
        exported_program: The ``torch.export.ExportedProgram`` that was translated (``None`` when
            loaded from a file).
        status: The :class:`onnxport.status.ExportStatus` of the export (steps, timings, errors).
    """

    def __init__(
        self,
        model: ir.Model,
        exported_program: ExportedProgram | None,
        status: Any = None,
        *,
        weights: weights_mod.WeightTable | None = None,
    ) -> None:
        self.model = model
        self.weights = weights if weights is not None else weights_mod.WeightTable()
        self.exported_program = exported_program
        self.status = status
        self._session: Any = None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None

    def __repr__(self) -> str:
        return f"ONNXProgram(\n{self.model}\n)"

    @property
    def model_proto(self) -> onnx.ModelProto:
        """The model as an ``onnx.ModelProto`` (a full copy, weights included).

        Raises:
            MissingWeightsError: Weights have no data yet (call :meth:`apply_weights`).
        """
        check_weights_present(self.model, "build the ModelProto with its weights")
        return ir.serde.serialize_model(self.model)

    # -- weights ------------------------------------------------------------------------------
    @property
    def missing_weights(self) -> list[str]:
        """Names of the initializers without data yet (a fake-mode or meta-device export)."""
        return missing_weights(self.model)

    def apply_weights(self, state_dict: Any, *, strict: bool = True) -> None:
        """Use ``state_dict`` for the initializers, by the module's own state_dict names (seed 003's
        ``torch.onnx.ONNXProgram.apply_weights``). Lazy: nothing is read until save or run.

        Args:
            state_dict: A state_dict (name → ``torch.Tensor``/``numpy.ndarray``; meta/fake tensors
                keep the weight missing), a ``.safetensors`` file, a folder of safetensors shards
                (``model.safetensors.index.json``) or that index file. Tied weights may be given
                under any of their names.
            strict: Every parameter and persistent buffer the model uses must be given (as
                ``torch.nn.Module.load_state_dict``); ``False``: only those still without data.

        Raises:
            WeightsError: Every missing, unexpected and shape/dtype-mismatched name, in one error;
                nothing is applied then.
            InputError: The file or folder cannot be read.
        """
        self.release()
        weights_mod.apply(self.weights, self.model, state_dict, strict=strict)

    # -- names -------------------------------------------------------------------------------
    def rename_axes(self, rename_mapping: Mapping[str | ir.SymbolicDim, str]) -> None:
        """Rename symbolic dims everywhere in the model (``torch.onnx.ONNXProgram.rename_axes``):
        graph inputs, outputs, intermediate values, subgraphs and functions. A dim whose name is a
        key is renamed; in a dim that is an expression (``2*s1``, ``s1 + s11``) each whole
        identifier that is a key is replaced.

        Args:
            rename_mapping: Old name (a string, or an ``onnx_ir.SymbolicDim`` read from the model,
                ``program.model.graph.inputs[0].shape[0]``) → new name.

        Raises:
            InputError: A key or value is not a string (or a named ``SymbolicDim`` key).
        """
        mapping: dict[str, str] = {}
        for key, new in rename_mapping.items():
            old = key.value if isinstance(key, ir.SymbolicDim) else key
            if not isinstance(old, str) or not isinstance(new, str) or not new:
                raise InputError(
                    f"rename_axes maps dim names to new names: got {key!r} -> {new!r}. Keys are strings or "
                    "named onnx_ir.SymbolicDim (program.model.graph.inputs[0].shape[0]), values non-empty strings."
                )
            mapping[old] = new
        self.release()
        for value in all_values(self.model):
            shape = value.shape
            if shape is None or not any(isinstance(d, ir.SymbolicDim) and d.value for d in shape.dims):
                continue
            value.shape = ir.Shape([_renamed(d, mapping) for d in shape.dims])

    # -- save --------------------------------------------------------------------------------
    def save(
        self,
        destination: str | os.PathLike[str] | BinaryIO,
        *,
        include_initializers: bool = True,
        keep_initializers_as_inputs: bool = False,
        external_data: bool | None = None,
        max_shard_size: int | None = None,
        callback: Callable[[ir.TensorProtocol, Any], None] | None = None,
        before_commit: Callable[[Path], None] | None = None,
    ) -> list[Path]:
        """Write the model to ``destination``; weights stream one tensor at a time into external
        data (``model.onnx.data``), so memory stays about the largest tensor.

        Behaviour as ``torch.onnx.ONNXProgram.save`` (seed 003): ``include_initializers`` ×
        ``keep_initializers_as_inputs`` choose whether the weights are stored and whether they are
        also graph inputs (overridable at run time). ``external_data=None`` stores the weights
        externally when the serialized model (graph + weights) would come near protobuf's 2 GiB
        limit. The write is atomic (temporary files beside ``destination``, then renames; see
        :mod:`onnxport.weights.save`): a failure or kill leaves the previous model intact.

        Args:
            max_shard_size: Split the external data into files of at most this many bytes
                (``model.onnx.data``, ``model.onnx.data_1``, ...).
            callback: Called for each tensor written (tensor, ``onnx_ir.external_data.CallbackInfo``).
            before_commit: Called with the path of the complete model under its temporary name,
                before it replaces ``destination``; if it raises, nothing is saved and its error
                propagates (``weights.save.save_model``).

        Returns:
            The files written: the ``.onnx`` first, then its external data files.

        ``destination`` may also be a binary file object (``io.BytesIO``, ``open(..., "wb")``), as
        in ``torch.onnx.export(f=io.BytesIO())``: the whole model is written to it as one protobuf
        (no external data, so at most 2 GB).

        Raises:
            InputError: ``destination`` is neither a path nor a binary file object.
            SaveError: The destination folder does not exist or is not writable, or writing failed;
                a file object with a model past 2 GB or ``external_data=True``.
            MissingWeightsError: ``include_initializers=True`` while weights have no data yet.
        """
        check_destination(destination)
        if not isinstance(destination, (str, os.PathLike)):
            self._save_to_file_object(destination, include_initializers, keep_initializers_as_inputs, external_data)
            return []
        with initializer_layout(self.model, include_initializers, keep_initializers_as_inputs):
            return save_model(self.model, destination, external_data=external_data,
                              max_shard_bytes=max_shard_size, callback=callback, before_commit=before_commit)

    def _save_to_file_object(self, file: BinaryIO, include: bool, as_inputs: bool, external_data: bool | None) -> None:
        if external_data:
            raise SaveError("external_data=True needs a path: a file object holds one protobuf. Pass f='model.onnx'.")
        if include and runtime.initializer_bytes(self.model) >= runtime.PROTOBUF_LIMIT:
            raise SaveError(
                "The weights exceed 2 GB, the protobuf limit of a single ONNX file: save to a path "
                "(weights go to external data) instead of a file object."
            )
        with initializer_layout(self.model, include, as_inputs):
            try:
                data = ir.serde.serialize_model(self.model).SerializeToString()
            except Exception as e:  # protobuf EncodeError / onnx_ir SerdeError: the graph cannot be serialized
                raise SaveError(f"The ONNX model cannot be serialized: {type(e).__name__}: {e}") from e
        try:
            file.write(data)
        except (OSError, ValueError, TypeError) as e:
            raise SaveError(f"Writing the ONNX model to the file object failed: {type(e).__name__}: {e}") from e
    def optimize(self) -> ONNXProgramBase:
        """Run onnxport's graph passes (folding, fusions, cleanup) in place; idempotent (seed 003).

        Weights are not read: passes record transforms applied when the weights are written.

        Returns:
            ``self``.

        Raises:
            OnnxportError: A pass failed (the pass is named).
        """
        self.release()
        run_passes(self.model)
        return self

    # -- run ---------------------------------------------------------------------------------
    def initialize_inference_session(self, initializer: Callable[[str | bytes], Any] | None = None, *,
                                     prepack: bool = True, transient: bool = False) -> None:
        """Create the onnxruntime session :meth:`__call__` uses (seed 003).

        Args:
            initializer: Builds the session from the serialized model (``bytes``) or a model path
                (from 32 MiB of weights, which onnxruntime then memory-maps:
                ``runtime.SESSION_FILE_MIN_BYTES``); default: an ``onnxruntime.InferenceSession``
                on the CPU provider.
            prepack: ``False``: onnxruntime's kernels do not pre-pack the weights
                (``session.disable_prepacking``): the session opens faster and keeps no packed
                copy, and each MatMul packs its panels as it runs (slower runs).
            transient: For a session that runs a few times before :meth:`release` (the export's
                runtime check, ``onnxport.hf``'s validation): the weights onnxruntime memory-maps
                leave the process's resident set as each run goes (``runtime.create_session``'s
                ``transient``; every later run reads them back from the page cache). Implies
                ``prepack=False``.

        Raises:
            MissingWeightsError: Weights have no data yet (call :meth:`apply_weights`).
            ModelCheckError: onnxruntime refused the model.
        """
        check_weights_present(self.model, "run the model")
        self.release()
        self._session = runtime.create_session(self.model, tempdir_owner=self, initializer=initializer, prepack=prepack,
                                               transient=transient)

    def _inference_session(self) -> Any:
        if self._session is None:
            self.initialize_inference_session()
        return self._session

    def __call__(self, *args: Any, **kwargs: Any) -> list[torch.Tensor]:
        """Run the model in onnxruntime: torch tensors in (nested as for the model), tensors out.

        Complex tensors go in as their real view ``[..., 2]`` (``torch.view_as_real``); outputs the
        graph marks complex-as-real (``pkg.onnxport.complex_as_real``) come back complex.

        Raises:
            InputError: The number of tensors does not match the graph inputs, or a tensor's dtype
                or shape does not match its input (the input, expected and given are named).
            OnnxportError: onnxruntime failed while running the model (its message kept).
        """
        session = self._inference_session()
        names = [i.name for i in session.get_inputs()]
        inputs = runtime.feeds(names, args, kwargs)
        runtime.check_feeds(session, inputs)
        try:
            outputs = runtime.run_session(session, inputs)
        except Exception as e:  # onnxruntime's InvalidArgument/Fail/RuntimeException (pybind types)
            kind = InputError if "INVALID_ARGUMENT" in str(e) or type(e).__name__ == "InvalidArgument" else OnnxportError
            raise kind(f"onnxruntime could not run the model on these inputs: {type(e).__name__}: {e}") from e
        return runtime.restore_complex(self.model, outputs)

    def compute_values(self, value_names: Sequence[str], args: Any = (), kwargs: Mapping[str, Any] | None = None) -> list[torch.Tensor]:
        """Run the model in onnxruntime and return the named values of the main graph
        (``torch.onnx.ONNXProgram.compute_values``): graph inputs, initializers or node outputs,
        in the order asked. The graph's outputs are restored afterwards.

        Raises:
            InputError: A name is not a value of the main graph (the names are listed), or the
                inputs do not match the graph (as :meth:`__call__`).
            OnnxportError: onnxruntime failed while running the model.
        """
        values = {v.name: v for v in (*self.model.graph.inputs, *self.model.graph.initializers.values(),
                                      *(out for node in self.model.graph for out in node.outputs))}
        unknown = [name for name in value_names if name not in values]
        if unknown or not value_names:
            raise InputError(
                f"compute_values: {unknown or 'no names'} {'are' if len(unknown) > 1 else 'is'} not a value of the "
                "main graph: name graph inputs, initializers or node outputs (program.model.graph)."
            )
        outputs = list(self.model.graph.outputs)
        self.release()
        self.model.graph.outputs.clear()
        self.model.graph.outputs.extend(values[name] for name in value_names)
        try:
            return self(*args, **dict(kwargs or {}))
        finally:
            self.release()
            self.model.graph.outputs.clear()
            self.model.graph.outputs.extend(outputs)

    def call_reference(self, *args: Any, **kwargs: Any) -> list[torch.Tensor]:
        """Run the model with onnx's reference evaluator (``onnx.reference.ReferenceEvaluator``,
        pure Python, slow; ``torch.onnx.ONNXProgram.call_reference``): torch tensors in, out.

        Raises:
            MissingWeightsError: Weights have no data yet.
            InputError: The number of tensors does not match the graph inputs.
            OnnxportError: The evaluator failed (an op it lacks, such as com.microsoft's).
        """
        proto = self.model_proto
        names = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
        inputs = runtime.feeds(names, args, kwargs)
        try:
            outputs = onnx.reference.ReferenceEvaluator(proto).run(None, inputs)
        except Exception as e:  # the evaluator raises whatever its op implementations raise
            raise OnnxportError(f"onnx's reference evaluator could not run the model: {type(e).__name__}: {e}") from e
        return runtime.restore_complex(self.model, [torch.from_numpy(np.asarray(out)) for out in outputs])

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Load an ONNX file (external data included) as a program without ExportedProgram.

        Raises:
            InputError: The file does not exist, is empty, truncated or not an ONNX model, or its
                external data points outside the model's folder (onnxruntime refuses such
                locations; onnxport does not read them).
        """
        model = read_onnx_file(path)
        outside, _ = external_data_problems(model, Path(path).parent)
        if outside:
            raise InputError(
                f"{path} points its external data outside its folder ({', '.join(outside)}): onnxport "
                "does not read such files. Move the data file beside the model and set its location "
                "to the file name."
            )
        return cls(model, None)

    def release(self) -> None:
        """Drop the onnxruntime session (and any temporary file it needed); seed 003."""
        self._session = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _renamed(dim: Any, mapping: Mapping[str, str]) -> Any:
    """``dim`` with its name (or the identifiers of its expression) renamed by ``mapping``."""
    if not isinstance(dim, ir.SymbolicDim) or not dim.value:
        return dim
    if dim.value in mapping:
        return mapping[dim.value]
    return _IDENTIFIER.sub(lambda m: mapping.get(m.group(0), m.group(0)), dim.value)


__all__ = ["ONNXProgramBase", "external_data_problems", "read_onnx_file"]
