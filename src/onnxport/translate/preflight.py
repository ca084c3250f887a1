"""Pre-flight analysis: every FX target without a translation, found in one pass before translating.

The walk in :mod:`onnxport.translate.graph` would stop at the first untranslated node; this module
looks at every ``call_function`` node (subgraphs of higher-order ops included) first, so one run
names all the ops the user must provide, each with a count, an example node and the user's source
line. The same rows feed the :class:`~onnxport.errors.UnsupportedOpsError` message and the report.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind

from onnxport.errors import InputError, UnsupportedOpsError, user_source_line
from onnxport.translate import graph as graph_mod
from onnxport.translate.registry import Registry


@dataclasses.dataclass
class UnsupportedOp:
    """One operator without a translation at the target opset.

    Attributes:
        target: The FX target (an ``OpOverload`` such as ``mylib.op.default``).
        count: How many FX nodes call it.
        example: The first such node (graph order).
        source_line: The user's source line of ``example`` (two lines), or ``None``.
        hint: What to do: register a translation, or raise the opset.
    """

    target: Any
    count: int
    example: torch.fx.Node
    source_line: str | None
    hint: str
    nodes: list[torch.fx.Node] = dataclasses.field(default_factory=list, repr=False)

    @property
    def name(self) -> str:
        return str(self.target)


def _hint(target: Any, registry: Registry) -> str:
    if registry.is_registered(target):
        since = min(t.since for t in registry.translations_for(target))
        return f"translated from opset {since}: raise opset_version to {since}"
    name = str(target)
    key = f"torch.ops.{name}" if isinstance(target, torch._ops.OpOverload) else name
    return f"@onnxport.register_translation({key}), or export(..., custom_translations={{{key}: fn}})"


def find_unsupported(ep: ExportedProgram, registry: Registry, opset: int) -> list[UnsupportedOp]:
    """Every ``call_function`` target without a translation at ``opset``, in one pass.

    Args:
        ep: The (decomposed) program about to be translated.
        registry: The translations available.
        opset: The target opset.

    Returns:
        One row per target, in order of first appearance; empty when everything translates.
    """
    missing = graph_mod.unsupported_targets(ep, registry, opset)
    return [
        UnsupportedOp(target, len(nodes), nodes[0], user_source_line(nodes[0]), _hint(target, registry), nodes)
        for target, nodes in missing.items()
    ]


def _one_line(source: str | None) -> str:
    if not source:
        return "(no source line recorded)"
    return " ".join(part.strip() for part in source.splitlines())


def table_markdown(ops: list[UnsupportedOp]) -> str:
    """The rows as a markdown table (op, count, example node, source line, what to do)."""
    lines = ["| op | count | example node | source line | what to do |", "|---|---|---|---|---|"]
    for op in ops:
        cells = [f"`{op.name}`", str(op.count), f"`{op.example.name}`", _one_line(op.source_line), op.hint]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def unsupported_ops_error(ops: list[UnsupportedOp], registry: Registry) -> UnsupportedOpsError:
    """One error naming every untranslated op with its count and example node (the translator's
    wording, :func:`onnxport.translate.graph.unsupported_error`), then each op's source line."""
    base = graph_mod.unsupported_error({op.target: op.nodes or [op.example] for op in ops}, registry)
    lines = [base.message, "Where (first node of each op):"]
    for op in ops:
        lines.append(f"  - {op.name} ({op.example.name}): {_one_line(op.source_line)}")
    return UnsupportedOpsError("\n".join(lines), ops)


__all__ = ["check_outputs", "UnsupportedOp", "find_unsupported", "table_markdown", "unsupported_ops_error"]


_SCALARS = (bool, int, float, torch.SymInt, torch.SymFloat, torch.SymBool)


def check_outputs(ep: ExportedProgram) -> None:
    """The user outputs must be tensors (or Python/symbolic scalars, which become 0-d tensors as
    in torch.onnx), at least one of them; ``None`` leaves are dropped as eager's tensor leaves do.

    Raises:
        InputError: No output at all (``forward`` returned ``None`` or an empty container), or an
            output of another type (``str``, an object), naming its position, type and the fix.
    """
    output = next((n for n in ep.graph.nodes if n.op == "output"), None)
    results = list(output.args[0]) if output is not None and isinstance(output.args[0], (list, tuple)) else []
    user = [r for r, s in zip(results, ep.graph_signature.output_specs) if s.kind == OutputKind.USER_OUTPUT]
    kept = 0
    for i, result in enumerate(user):
        value = result.meta.get("val") if isinstance(result, torch.fx.Node) else result
        if value is None:
            continue
        if not isinstance(value, (torch.Tensor, *_SCALARS)):
            raise InputError(
                f"forward returns a {type(value).__name__} ({value!r:.60}) as output {i}: ONNX outputs are "
                "tensors. Return tensors (numbers are fine: they become 0-d tensors) and drop or encode "
                "the other values."
            )
        kept += 1
    if kept == 0:
        raise InputError(
            "forward returns no tensor (None, or an empty tuple/list/dict): an ONNX model needs at least "
            "one output. Return the tensors the model computes."
        )

