"""The exported ``onnx_ir.Model`` with its ExportedProgram and its weights: applying weights
(:mod:`onnxport.weights`), saving (streamed, atomic: :mod:`onnxport.weights.save`), optimizing,
and running it in onnxruntime (through :mod:`onnxport.runtime`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx_ir as ir
import torch
from torch.export import ExportedProgram

from onnxport import runtime
from onnxport import weights as weights_mod
from onnxport.errors import InputError
from onnxport.passes import optimize as run_passes
from onnxport.weights.save import (
    check_weights_present,
    initializer_layout,
    missing_weights,
    save_model,
)

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
    def initialize_inference_session(self, initializer: Callable[[str | bytes], Any] | None = None) -> None:
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
        self._session = runtime.create_session(self.model, tempdir_owner=self, initializer=initializer)

    def _inference_session(self) -> Any:
        if self._session is None:
            self.initialize_inference_session()
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
        """Drop the onnxruntime session (and any temporary file it needed); seed 003."""
        self._session = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None


__all__ = ["ONNXProgramBase"]
