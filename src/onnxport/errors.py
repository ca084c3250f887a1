"""onnxport's exception hierarchy.

Every error onnxport raises on purpose is an :class:`OnnxportError`. Errors tied to one FX node carry
that node's name, its ATen target and the user's source line (from ``node.meta["stack_trace"]``) so
the message says *what* failed, *where* in the user's code, and *what to do*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch.fx


class OnnxportError(RuntimeError):
    """Base class of every error raised by onnxport."""


class InputError(OnnxportError, ValueError):
    """The arguments given to :func:`onnxport.export` (or the CLI) are wrong."""


class CaptureError(OnnxportError):
    """``torch.export`` could not capture the model with any strategy."""


class OpsetError(OnnxportError, ValueError):
    """The requested opset cannot be honoured."""


class SaveError(OnnxportError, OSError):
    """The ONNX model could not be written."""


class VerificationError(OnnxportError):
    """The ONNX model does not match eager PyTorch, or onnxruntime refused it."""


def user_source_line(node: torch.fx.Node | None) -> str | None:
    """Return the innermost ``File "...", line N`` entry of the node's stack trace, with its code line.

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
    # The last "File" entry is the innermost frame: the line in the user's code.
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].lstrip().startswith("File "):
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
