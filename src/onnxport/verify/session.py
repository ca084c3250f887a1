"""Real model checks and the onnxruntime session, from one serialization of the model.

``onnx.checker.check_model(full_check=True)`` (structure plus strict shape inference) and the
onnxruntime load both need the model as protobuf; the weights are serialized once (initializers
may be ``onnx_ir.LazyTensor``s computed on serialization) and the same bytes feed both. Past the
2 GB protobuf limit the model is written once to a temporary folder and both check the file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import onnx_ir as ir

from onnxport.errors import ModelCheckError
from onnxport.verify.compare import CheckResult
from onnxport.weights.save import check_weights_present

CHECKER = "onnx.checker (full_check)"
ORT_LOAD = "onnxruntime load"


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


def _on_disk(model: ir.Model) -> bool:
    """Whether some initializer is still in an external data file (a model loaded from disk)."""
    return any(isinstance(v.const_value, ir.ExternalTensor) for v in model.graph.initializers.values())


def checked_session(
    model: ir.Model,
    *,
    extra_outputs: Sequence[ir.Value] = (),
    checks: list[CheckResult] | None = None,
    providers: Iterable[str] = ("CPUExecutionProvider",),
    tempdir_owner: Any = None,
) -> Any:
    """Serialize once, run the full ONNX checker, and load the model in onnxruntime.

    Args:
        model: The model to check and load (not modified).
        extra_outputs: Values of ``model.graph`` to expose as extra graph outputs in the session
            (intermediate values for localization).
        checks: Receives one :class:`CheckResult` per check, pass or fail.
        providers: onnxruntime execution providers.
        tempdir_owner: An object whose ``_tempdir`` keeps the temporary folder alive (past 2 GB).

    Returns:
        The ``onnxruntime.InferenceSession``.

    Raises:
        ModelCheckError: The checker rejected the model (``check="onnx.checker"``) or onnxruntime
            refused to load it (``check="onnxruntime load"``).
    """
    import onnx
    import onnxruntime as ort

    from onnxport.program import PROTOBUF_LIMIT, initializer_bytes

    check_weights_present(model, "check or run the model")
    checks = checks if checks is not None else []
    start = time.perf_counter()
    data: Any
    with _with_outputs(model, extra_outputs):
        if initializer_bytes(model) >= PROTOBUF_LIMIT or _on_disk(model):
            # Past 2 GB, or weights in another file: write the model once (weights streamed).
            tmp = tempfile.TemporaryDirectory(prefix="onnxport-")
            if tempdir_owner is not None:
                tempdir_owner._tempdir = tmp
            data = os.path.join(tmp.name, "model.onnx")
            ir.save(model, data, external_data="model.onnx.data")
        else:
            data = ir.serde.serialize_model(model).SerializeToString()
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
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(data, options, providers=list(providers))
    except Exception as e:  # onnxruntime raises its own exception types
        checks.append(CheckResult(ORT_LOAD, False, time.perf_counter() - start, _first_lines(e)))
        raise ModelCheckError(
            f"onnxruntime refused to load the exported model:\n{_first_lines(e)}\n"
            "The model passed onnx.checker; an op or type onnxruntime does not implement is the "
            "usual cause: try another opset_version.",
            "onnxruntime load",
        ) from e
    checks.append(CheckResult(ORT_LOAD, True, time.perf_counter() - start))
    return session


__all__ = ["CHECKER", "ORT_LOAD", "checked_session"]
