"""ONNXProgram: the exported ``onnx_ir.Model``, saving it, and running it in onnxruntime."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.errors import InputError, ModelCheckError, SaveError

if TYPE_CHECKING:
    import onnx
    import onnxruntime as ort
    from torch.export import ExportedProgram

# Protobuf cannot serialize a message over 2 GiB; past this the weights go to external data.
PROTOBUF_LIMIT = 2 * 1024**3


def initializer_bytes(model: ir.Model) -> int:
    """Total size of the main graph's initializers, in bytes."""
    return sum(v.const_value.nbytes for v in model.graph.initializers.values() if v.const_value is not None)


class ONNXProgram:
    """An exported ONNX model with the ExportedProgram it came from.

    Attributes:
        model: The ONNX model (``onnx_ir.Model``); initializers share memory with the torch weights.
        exported_program: The ``torch.export.ExportedProgram`` that was translated (``None`` when
            loaded from a file).
        status: The :class:`onnxport._export.ExportStatus` of the export (steps, timings, errors).
    """

    def __init__(self, model: ir.Model, exported_program: ExportedProgram | None, status: Any = None) -> None:
        self.model = model
        self.exported_program = exported_program
        self.status = status
        self._session: ort.InferenceSession | None = None
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
        if external_data is None:
            external_data = include_initializers and initializer_bytes(self.model) > PROTOBUF_LIMIT
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
    def _inference_session(self) -> ort.InferenceSession:
        if self._session is None:
            self._session = make_session(self.model, self)
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
        return restore_complex(self.model, run_session(session, _feeds(names, args, kwargs)))

    def verify(
        self,
        args: Any = (),
        kwargs: dict[str, Any] | None = None,
        *,
        inputs: Sequence[Any] | None = None,
        rtol: float | None = None,
        atol: float | None = None,
        localize: bool = False,
        reference: Any = None,
    ) -> Any:
        """Compare with eager PyTorch; see :func:`onnxport.verify` (same arguments and result).

        Returns:
            A :class:`onnxport.verify.compare.VerificationResult` (``.passed``, ``.input_sets``,
            ``.localization``).

        Raises:
            ModelCheckError: onnx.checker or onnxruntime refused the model.
            InputError: No eager reference, or inputs that do not fit.
        """
        from onnxport.verify.api import verify

        return verify(self, args, kwargs, inputs=inputs, rtol=rtol, atol=atol, localize=localize,
                      reference=reference)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ONNXProgram:
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


def _tensor_leaves(value: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    paths, _ = torch.utils._pytree.tree_flatten_with_path(value)
    out = []
    for path, leaf in paths:
        if isinstance(leaf, torch.Tensor):
            keys = [str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path]
            out.append((".".join([prefix, *keys]), leaf))
    return out


def _feeds(names: list[str], args: tuple, kwargs: dict) -> dict[str, np.ndarray]:
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
    feeds = {name: _to_numpy(t) for name, t in zip(names, positional)}
    rest = names[len(positional) :]
    if {k for k, _ in keyword} == set(rest):
        feeds.update({k: _to_numpy(t) for k, t in keyword})
    else:
        feeds.update({name: _to_numpy(t) for name, (_, t) in zip(rest, keyword)})
    return feeds


def restore_complex(model: ir.Model, outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Turn the outputs the graph marks complex-as-real (``[..., 2]`` real tensors; graph
    ``pkg.onnxport.complex_outputs``, else each output's ``pkg.onnxport.complex_as_real``) back into
    complex tensors (``torch.view_as_complex``); the others are returned unchanged."""
    from onnxport.translate.graph import complex_outputs

    restored = list(outputs)
    for i in complex_outputs(model.graph):
        if i < len(restored) and restored[i].shape[-1:] == (2,):
            # a fresh row-major copy: numpy's strides of empty or 0-d arrays may not suit view_as_complex
            real = torch.empty(restored[i].shape, dtype=restored[i].dtype).copy_(restored[i])
            restored[i] = torch.view_as_complex(real)
    return restored


def to_torch(array: Any) -> torch.Tensor:
    """An onnxruntime output as a torch tensor (bfloat16 arrives as an ml_dtypes array)."""
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _to_numpy(tensor: torch.Tensor) -> Any:
    """A feed for onnxruntime: a numpy array, or for bfloat16 (which numpy cannot carry into
    onnxruntime) an OrtValue holding the bits. A complex tensor is fed as its real view [..., 2]."""
    tensor = tensor.detach().cpu()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor.resolve_conj())
    tensor = tensor.contiguous()
    if tensor.dtype == torch.bfloat16:
        import onnxruntime as ort

        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(tensor.view(torch.int16).numpy(), 16)
    return tensor.numpy()


def _ortvalue_to_torch(value: Any) -> torch.Tensor:
    if value.data_type() == "tensor(bfloat16)":
        import ctypes

        n = int(np.prod(value.shape()))
        buffer = memoryview((ctypes.c_int16 * n).from_address(value.data_ptr())).cast("B")
        bits = np.frombuffer(buffer, dtype=np.int16).copy()
        return torch.from_numpy(bits.reshape(value.shape())).view(torch.bfloat16)
    return torch.from_numpy(np.asarray(value.numpy()))


def run_session(session: Any, feeds: dict[str, Any]) -> list[torch.Tensor]:
    """Run an onnxruntime session; through OrtValues when bfloat16 flows in or out."""
    import onnxruntime as ort

    bf16_out = any(o.type == "tensor(bfloat16)" for o in session.get_outputs())
    if bf16_out or any(isinstance(v, ort.OrtValue) for v in feeds.values()):
        ort_feeds = {k: v if isinstance(v, ort.OrtValue) else ort.OrtValue.ortvalue_from_numpy(v) for k, v in feeds.items()}
        return [_ortvalue_to_torch(v) for v in session.run_with_ort_values(None, ort_feeds)]
    return [to_torch(o) for o in session.run(None, feeds)]


def make_session(model: ir.Model, owner: ONNXProgram | None = None, providers: Sequence[str] = ("CPUExecutionProvider",)) -> ort.InferenceSession:
    """An onnxruntime session for an in-memory model; through a temporary file past 2 GB.

    Raises:
        ModelCheckError: onnxruntime refused to load the model.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        on_disk = any(isinstance(v.const_value, ir.ExternalTensor) for v in model.graph.initializers.values())
        if initializer_bytes(model) < PROTOBUF_LIMIT and not on_disk:
            data = ir.serde.serialize_model(model).SerializeToString()
            return ort.InferenceSession(data, options, providers=list(providers))
        tmp = tempfile.TemporaryDirectory(prefix="onnxport-")
        if owner is not None:
            owner._tempdir = tmp
        path = os.path.join(tmp.name, "model.onnx")
        ir.save(model, path, external_data="model.onnx.data")
        return ort.InferenceSession(path, options, providers=list(providers))
    except Exception as e:  # onnxruntime raises its own exception types
        if isinstance(e, (InputError, SaveError)):
            raise
        raise ModelCheckError(f"onnxruntime could not load the exported model: {e}", "onnxruntime load") from e
