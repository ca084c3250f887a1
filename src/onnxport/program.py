"""The exported ``onnx_ir.Model`` with its ExportedProgram: saving it (atomic, external data past
2 GB) and running it in onnxruntime (through :mod:`onnxport.runtime`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx_ir as ir
import torch
from torch.export import ExportedProgram

from onnxport import runtime
from onnxport.errors import InputError, SaveError

if TYPE_CHECKING:
    import onnx


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
        destination: str | os.PathLike[str],
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

        Raises:
            SaveError: The destination folder does not exist or is not writable, or writing failed.
        """
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
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

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
            InputError: The number of tensors does not match the graph inputs.
        """
        session = self._inference_session()
        names = [i.name for i in session.get_inputs()]
        return runtime.restore_complex(self.model, runtime.run_session(session, runtime.feeds(names, args, kwargs)))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Load an ONNX file (external data included) as a program without ExportedProgram.

        Raises:
            InputError: The file does not exist or is not an ONNX model.
        """
        if not Path(path).is_file():
            raise InputError(f"ONNX file {path} not found.")
        try:
            return cls(ir.load(path), None)
        except Exception as e:  # protobuf's DecodeError and others
            raise InputError(f"{path} is not a readable ONNX model: {type(e).__name__}: {e}") from e

    def release(self) -> None:
        """Drop the onnxruntime session (and any temporary file it needed)."""
        self._session = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None


__all__ = ["ONNXProgramBase"]
