"""onnxport's exception hierarchy.

Every error onnxport raises on purpose is an :class:`OnnxportError`. Errors tied to one FX node carry
that node's name, its ATen target and the user's source line (from ``node.meta["stack_trace"]``) so
the message says *what* failed, *where* in the user's code, and *what to do*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch.fx


class OnnxportError(RuntimeError):
    """Base class of every error raised by onnxport."""


class InputError(OnnxportError, ValueError):
    """The arguments given to :func:`onnxport.export` (or the CLI) are wrong."""


class CaptureError(OnnxportError):
    """``torch.export`` could not capture the model with any strategy.

    Attributes:
        cause: The kind of the first real cause: ``"data-dependent guard"``,
            ``"unsupported Python construct"``, ``"constraint violation"``, ``"shape mismatch"``,
            ``"device mismatch"``, ``"exception raised in forward"`` or ``"error"``.
        source_line: The user's source line of that cause (``File "...", line N`` and the code),
            or ``None`` when torch gave no user frame.
        attempts: The :class:`onnxport.capture.strategies.Attempt` list, one per strategy tried.
        expression: For a data-dependent guard, the symbolic expression torch could not decide
            (``"Eq(u0, 1)"``), else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        cause: str = "error",
        source_line: str | None = None,
        attempts: list[Any] | None = None,
        expression: str | None = None,
    ) -> None:
        super().__init__(message)
        self.cause = cause
        self.source_line = source_line
        self.attempts = list(attempts or [])
        self.expression = expression


class OpsetError(OnnxportError, ValueError):
    """The requested opset cannot be honoured."""


class SaveError(OnnxportError, OSError):
    """The ONNX model could not be written."""


def user_source_line(node: torch.fx.Node | None) -> str | None:
    """Return the innermost ``File "...", line N`` entry of the node's stack trace, with its code
    line; a frame of generated code (``<eval_with_key>``) gives way to its caller.

    Args:
        node: An FX node whose ``meta["stack_trace"]`` was recorded by torch.export.

    Returns:
        Two lines (location and code) or ``None`` when the node has no stack trace.
    """
    if node is None:
        return None
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = [line.rstrip() for line in trace.strip().splitlines() if line.strip()]
    # The last "File" entry is the innermost frame: the line in the user's code. Generated code
    # ("<eval_with_key>.N": the graph Dynamo compiles flex_attention's op into) is skipped for the
    # frame that called it.
    files = [i for i, line in enumerate(lines) if line.lstrip().startswith("File ")]
    for i in reversed(files):
        if not lines[i].lstrip().startswith('File "<eval_with_key>') or i == files[0]:
            return "\n".join(lines[i : i + 2])
    return lines[-1]


class NodeError(OnnxportError):
    """An error attached to one FX node: names the node, its target and the user's source line."""

    def __init__(self, message: str, node: torch.fx.Node | None = None) -> None:
        self.node = node
        self.node_name = node.name if node is not None else None
        self.target = str(node.target) if node is not None else None
        self.source_line = user_source_line(node)
        parts = [message]
        if node is not None:
            parts.append(f"FX node: {node.format_node()}")
        if self.source_line:
            parts.append(f"Source:\n  {self.source_line}")
        super().__init__("\n".join(parts))
        self.message = message


class UnsupportedOpError(NodeError):
    """An FX node's target has no translation (or the translation cannot express this case)."""


class TranslationError(NodeError):
    """A translation raised an unexpected exception; carries the translation's name."""

    def __init__(
        self, message: str, node: torch.fx.Node | None = None, translation: str | None = None
    ) -> None:
        self.translation = translation
        if translation:
            message = f"{message}\nTranslation: {translation}"
        super().__init__(message, node)


class UnsupportedOpsError(UnsupportedOpError):
    """Several FX targets have no translation; found in one pass before translation.

    Attributes:
        ops: One :class:`onnxport.translate.preflight.UnsupportedOp` row per target (count, example
            node, source line, how to register a translation), in graph order.
    """

    def __init__(self, message: str, ops: list[Any]) -> None:
        self.ops = list(ops)
        super().__init__(message, ops[0].example if ops else None)


class VerificationError(NodeError):
    """The ONNX model does not match eager PyTorch.

    When the divergence was localized, ``node`` is the first FX node whose ONNX counterpart differs
    beyond tolerance and ``source_line`` the user's line that produced it.

    Attributes:
        result: The :class:`onnxport.verify.compare.VerificationResult`, when one was computed.
    """

    def __init__(self, message: str, node: torch.fx.Node | None = None, result: Any = None) -> None:
        self.result = result
        super().__init__(message, node)


class ModelCheckError(VerificationError):
    """``onnx.checker.check_model(full_check=True)`` rejected the model, or onnxruntime refused to
    load it.

    Attributes:
        check: ``"onnx.checker"`` or ``"onnxruntime load"``.
    """

    def __init__(self, message: str, check: str) -> None:
        self.check = check
        super().__init__(message)


class RuntimeCheckError(ModelCheckError):
    """onnxruntime loaded the exported model but refused to run it (``check="onnxruntime run"``).

    ``node`` is the FX node the failing ONNX node was translated from, when it is known.

    Attributes:
        onnx_node: The failing ONNX node's name (from onnxruntime's message), or ``None``.
        op_type: Its ONNX op type, or ``None``.
        input_set: Which inputs it failed on (``"example inputs"`` or the generated sizes).
    """

    def __init__(
        self, message: str, node: torch.fx.Node | None = None, *, onnx_node: str | None = None,
        op_type: str | None = None, input_set: str = "example inputs",
    ) -> None:
        self.onnx_node, self.op_type, self.input_set = onnx_node, op_type, input_set
        self.check = "onnxruntime run"
        VerificationError.__init__(self, message, node)  # ModelCheckError's own __init__ takes no node


class DynamicShapesError(InputError):
    """``dynamic_shapes`` cannot be honoured: the model fixes or relates dims declared dynamic."""


class HFError(InputError):
    """A Hugging Face model folder cannot be exported: missing or malformed ``config.json``, an
    architecture transformers does not know, missing weights, or a task the model does not support.
    """


class WeightsError(InputError):
    """Weights given to :meth:`onnxport.ONNXProgram.apply_weights` do not fit the model: every
    missing, unexpected and mismatched (shape or dtype) name is listed in one message.

    Attributes:
        missing: Initializer names the weights did not provide.
        unexpected: Names in the weights that are no initializer of the model.
        mismatched: ``(name, expected, got)`` rows, ``expected``/``got`` as ``"float32[768, 768]"``.
    """

    def __init__(
        self,
        message: str,
        *,
        missing: list[str] | None = None,
        unexpected: list[str] | None = None,
        mismatched: list[tuple[str, str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.missing = list(missing or [])
        self.unexpected = list(unexpected or [])
        self.mismatched = list(mismatched or [])


class MissingWeightsError(OnnxportError):
    """The program's weights have no data yet (a fake-mode or meta-device export): running,
    verifying or saving it with its initializers needs :meth:`onnxport.ONNXProgram.apply_weights`.

    Attributes:
        names: The initializer names without data.
    """

    def __init__(self, message: str, names: list[str] | None = None) -> None:
        super().__init__(message)
        self.names = list(names or [])
