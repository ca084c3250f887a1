"""ONNXProgram: the exported ``onnx_ir.Model``, saving it, and running it in onnxruntime."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport import weights as weights_mod
from onnxport.errors import InputError, ModelCheckError, OnnxportError
from onnxport.weights.save import (
    PROTOBUF_LIMIT,
    check_weights_present,
    initializer_layout,
    missing_weights,
    save_model,
)

if TYPE_CHECKING:
    import onnx
    import onnxruntime as ort
    from torch.export import ExportedProgram



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
        self._session: ort.InferenceSession | None = None
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None

    def __repr__(self) -> str:
        return f"ONNXProgram(\n{self.model}\n)"

    @property
    def model_proto(self) -> onnx.ModelProto:
        """The model as an ``onnx.ModelProto`` (a full copy, weights included)."""
        return ir.serde.serialize_model(self.model)

    # -- weights ------------------------------------------------------------------------------
    @property
    def missing_weights(self) -> list[str]:
        """Names of the initializers without data yet (a fake-mode or meta-device export)."""
        return missing_weights(self.model)

    def apply_weights(self, weights: Any, *, strict: bool = True) -> None:
        """Use ``weights`` for the initializers, by the module's own state_dict names (seed 003's
        ``torch.onnx.ONNXProgram.apply_weights``). Lazy: nothing is read until save or run.

        Args:
            weights: A state_dict (name → ``torch.Tensor``/``numpy.ndarray``; meta/fake tensors
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
        weights_mod.apply(self.weights, self.model, weights, strict=strict)

    # -- save --------------------------------------------------------------------------------
    def save(
        self,
        destination: str | os.PathLike[str],
        *,
        include_initializers: bool = True,
        keep_initializers_as_inputs: bool = False,
        external_data: bool | None = None,
        max_shard_size: int | None = None,
        callback: Callable[[ir.TensorProtocol, Any], None] | None = None,
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

        Returns:
            The files written: the ``.onnx`` first, then its external data files.

        Raises:
            SaveError: The destination folder does not exist or is not writable, or writing failed.
            MissingWeightsError: ``include_initializers=True`` while weights have no data yet.
        """
        with initializer_layout(self.model, include_initializers, keep_initializers_as_inputs):
            return save_model(self.model, destination, external_data=external_data,
                              max_shard_bytes=max_shard_size, callback=callback)

    def optimize(self) -> ONNXProgram:
        """Run onnxport's graph passes (folding, fusions, cleanup) in place; idempotent (seed 003).

        Weights are not read: passes record transforms applied when the weights are written.

        Returns:
            ``self``.

        Raises:
            OnnxportError: A pass failed (the pass is named).
        """
        from onnxport.passes import optimize as run_passes

        self.release()
        run_passes(self.model)
        return self

    # -- run ---------------------------------------------------------------------------------
    def initialize_inference_session(
        self, initializer: Callable[[str | bytes], ort.InferenceSession] | None = None
    ) -> None:
        """Create the onnxruntime session :meth:`__call__` uses (seed 003).

        Args:
            initializer: Builds the session from the serialized model (``bytes``) or, past 2 GB,
                a model path; default: an ``onnxruntime.InferenceSession`` on the CPU provider.

        Raises:
            MissingWeightsError: Weights have no data yet (call :meth:`apply_weights`).
            ModelCheckError: onnxruntime refused the model.
        """
        check_weights_present(self.model, "run the model")
        self.release()
        self._session = make_session(self.model, self, initializer=initializer)

    def _inference_session(self) -> ort.InferenceSession:
        if self._session is None:
            self.initialize_inference_session()
        assert self._session is not None  # set by initialize_inference_session
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
        """Drop the onnxruntime session (and any temporary file it needed); seed 003."""
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


def make_session(
    model: ir.Model,
    owner: ONNXProgram | None = None,
    providers: Sequence[str] = ("CPUExecutionProvider",),
    *,
    initializer: Callable[[str | bytes], Any] | None = None,
) -> ort.InferenceSession:
    """An onnxruntime session for an in-memory model; through a temporary file past 2 GB.

    Args:
        initializer: Builds the session from model bytes or a path (default: CPU
            ``onnxruntime.InferenceSession``).

    Raises:
        MissingWeightsError: Weights have no data yet.
        ModelCheckError: onnxruntime refused to load the model.
    """
    import onnxruntime as ort

    check_weights_present(model, "run the model")
    options = ort.SessionOptions()
    options.log_severity_level = 3

    def default(model_or_path: str | bytes) -> Any:
        return ort.InferenceSession(model_or_path, options, providers=list(providers))

    build = initializer or default
    try:
        on_disk = any(isinstance(v.const_value, ir.ExternalTensor) for v in model.graph.initializers.values())
        if initializer_bytes(model) < PROTOBUF_LIMIT and not on_disk:
            return build(ir.serde.serialize_model(model).SerializeToString())
        tmp = tempfile.TemporaryDirectory(prefix="onnxport-")
        if owner is not None:
            owner._tempdir = tmp
        path = os.path.join(tmp.name, "model.onnx")
        save_model(model, path, external_data=True)
        return build(path)
    except Exception as e:  # onnxruntime raises its own exception types
        if isinstance(e, OnnxportError):
            raise
        raise ModelCheckError(f"onnxruntime could not load the exported model: {e}", "onnxruntime load") from e
