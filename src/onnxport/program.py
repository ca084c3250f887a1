"""The exported ``onnx_ir.Model`` with its ExportedProgram: saving it (atomic, external data past
2 GB) and running it in onnxruntime (through :mod:`onnxport.runtime`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import onnx_ir as ir
import torch
from torch.export import ExportedProgram

from onnxport import runtime
from onnxport.errors import InputError, OnnxportError, SaveError
from onnxport.options import check_destination

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

    def __init__(self, model: ir.Model, exported_program: ExportedProgram | None, status: Any = None) -> None:
        self.model = model
        self.exported_program = exported_program
        self.status = status
        self._session: Any = None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None

    def __repr__(self) -> str:
        return f"ONNXProgram(\n{self.model}\n)"

    @property
    def model_proto(self) -> onnx.ModelProto:
        """The model as an ``onnx.ModelProto`` (a full copy, weights included)."""
        return ir.serde.serialize_model(self.model)

    # -- save --------------------------------------------------------------------------------
    def save(
        self,
        destination: str | os.PathLike[str] | BinaryIO,
        *,
        include_initializers: bool = True,
        keep_initializers_as_inputs: bool = False,
        external_data: bool | None = None,
    ) -> None:
        """Write the model to ``destination`` (and ``<destination>.data`` with external data).

        Behaviour as ``torch.onnx.ONNXProgram.save``: ``external_data=None`` writes the weights to
        a separate file when they exceed 2 GB (the protobuf limit). Weights are streamed tensor by
        tensor (``onnx_ir.save``), never gathered into one protobuf. The files are written in a
        temporary folder beside ``destination`` and moved into place, so a failure leaves nothing.

        ``destination`` may also be a binary file object (``io.BytesIO``, ``open(..., "wb")``), as
        in ``torch.onnx.export(f=io.BytesIO())``: the whole model is written to it as one protobuf
        (no external data, so at most 2 GB).

        Raises:
            InputError: ``destination`` is neither a path nor a binary file object.
            SaveError: The destination folder does not exist or is not writable, or writing failed;
                a file object with a model past 2 GB or ``external_data=True``.
        """
        if not isinstance(destination, (str, os.PathLike)):
            check_destination(destination)
            self._save_to_file_object(destination, include_initializers, keep_initializers_as_inputs, external_data)
            return
        check_destination(destination)
        path = Path(destination)
        folder = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            raise SaveError(f"Cannot save the ONNX model to {path}: it is a directory; give a file path such as {path / 'model.onnx'}.")
        if not folder.is_dir():
            raise SaveError(f"Cannot save the ONNX model to {path}: folder {folder} does not exist. Create it first.")
        if not os.access(folder, os.W_OK):
            raise SaveError(f"Cannot save the ONNX model to {path}: folder {folder} is not writable. Choose another path.")
        external_data = runtime.needs_external_data(self.model, external_data, include_initializers)
        data_name = f"{path.name}.data"
        try:
            tmp = tempfile.mkdtemp(prefix=".onnxport-", dir=folder)
        except OSError as e:
            raise SaveError(f"Cannot write in {folder}: {e}") from e
        try:
            with self._initializers_for_save(include_initializers, keep_initializers_as_inputs):
                ir.save(self.model, os.path.join(tmp, path.name), external_data=data_name if external_data else None)
            if external_data:
                os.replace(os.path.join(tmp, data_name), folder / data_name)
            os.replace(os.path.join(tmp, path.name), path)
        except OSError as e:
            raise SaveError(f"Writing the ONNX model to {path} failed: {e}") from e
        except Exception as e:  # protobuf EncodeError / onnx_ir SerdeError: nothing was moved into place
            raise SaveError(f"The ONNX model cannot be serialized to {path}: {type(e).__name__}: {e}") from e
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _save_to_file_object(self, file: BinaryIO, include: bool, as_inputs: bool, external_data: bool | None) -> None:
        if external_data:
            raise SaveError("external_data=True needs a path: a file object holds one protobuf. Pass f='model.onnx'.")
        if include and runtime.initializer_bytes(self.model) >= runtime.PROTOBUF_LIMIT:
            raise SaveError(
                "The weights exceed 2 GB, the protobuf limit of a single ONNX file: save to a path "
                "(weights go to external data) instead of a file object."
            )
        with self._initializers_for_save(include, as_inputs):
            try:
                data = ir.serde.serialize_model(self.model).SerializeToString()
            except Exception as e:  # protobuf EncodeError / onnx_ir SerdeError: the graph cannot be serialized
                raise SaveError(f"The ONNX model cannot be serialized: {type(e).__name__}: {e}") from e
        try:
            file.write(data)
        except (OSError, ValueError, TypeError) as e:
            raise SaveError(f"Writing the ONNX model to the file object failed: {type(e).__name__}: {e}") from e

    @contextlib.contextmanager
    def _initializers_for_save(self, include: bool, as_inputs: bool) -> Iterator[None]:
        graph = self.model.graph
        saved = dict(graph.initializers)
        added: list[ir.Value] = []
        if as_inputs:
            added = [v for v in saved.values() if not v.is_graph_input()]
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

    # -- run ---------------------------------------------------------------------------------
    def _inference_session(self) -> Any:
        if self._session is None:
            self._session = runtime.create_session(self.model, tempdir_owner=self)
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
        """Drop the onnxruntime session (and any temporary file it needed)."""
        self._session = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None


__all__ = ["ONNXProgramBase", "external_data_problems", "read_onnx_file"]
