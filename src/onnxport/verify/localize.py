"""Find the first FX node whose ONNX counterpart diverges from eager, in one onnxruntime session.

How: the dispatcher names every translated value after its FX node, so FX node ``name`` and ONNX
value ``name`` correspond. The ONNX model is serialized once with those values added as extra graph
outputs (the in-memory model is left as it was) and run once; the ExportedProgram's graph module is
run once under a ``torch.fx.Interpreter`` that records every node's output. Comparing in graph order
gives the first node beyond tolerance: its ATen op, ONNX nodes, module path and source line.

Values an optimization pass removed (folded, fused, renamed) have no counterpart and are skipped.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import OutputKind

from onnxport.errors import user_source_line
from onnxport.metadata import KEY_FX_NODE, KEY_NAME_SCOPES, KEY_NAMESPACE, KEY_STACK_TRACE
from onnxport.verify.compare import OutputComparison, compare_tensors
from onnxport.verify.ties import index_ordered


@dataclasses.dataclass
class Divergence:
    """The first FX node whose ONNX value differs from eager beyond tolerance.

    Attributes:
        node: The FX node (of the ExportedProgram's graph).
        target: Its ATen op (``aten.gelu.default``).
        onnx_nodes: The ONNX nodes translated from it, as ``name (OpType)``.
        module_path: The ``nn.Module`` path and class that called it (``layers.3: Linear``), or ``""``.
        namespace: The ONNX ``namespace`` metadata (class hierarchy and node).
        source_line: The user's source line (two lines), or ``None``.
        comparison: The value comparison.
    """

    node: torch.fx.Node
    target: str
    onnx_nodes: list[str]
    module_path: str
    namespace: str
    source_line: str | None
    comparison: OutputComparison

    def summary(self) -> str:
        lines = [
            f"First diverging node: {self.node.name} ({self.target})",
            f"  ONNX nodes: {', '.join(self.onnx_nodes) or '(none)'}",
            f"  module: {self.module_path or '(top level)'}",
            f"  {self.comparison.summary()}",
        ]
        if self.source_line:
            lines.append("  source: " + " ".join(p.strip() for p in self.source_line.splitlines()))
        return "\n".join(lines)


@dataclasses.dataclass
class Localization:
    """The result of localization.

    Attributes:
        compared: Number of FX nodes whose value was compared.
        skipped: Number of tensor-valued FX nodes without an ONNX counterpart (removed by passes).
        diverging: Names of every compared node beyond tolerance, in graph order.
        first: The first diverging node, or ``None`` when every compared value matches.
        outputs_match: Whether the model's outputs matched eager in the localizing session (set
            by :func:`onnxport.verify`). That session adds every compared value as a graph output,
            which keeps onnxruntime's graph rewrites from fusing across those nodes: outputs that
            match there and not in a plain session point at one of those rewrites.
    """

    compared: int
    skipped: int
    diverging: list[str]
    first: Divergence | None
    outputs_match: bool | None = None

    def summary(self) -> str:
        head = (
            f"Localization: {self.compared} FX node values compared, {self.skipped} without ONNX "
            f"counterpart, {len(self.diverging)} beyond tolerance."
        )
        return head if self.first is None else f"{head}\n{self.first.summary()}"


class _Recorder(torch.fx.Interpreter):
    """Runs the graph module and keeps every ``call_function`` node's output tensor."""

    def __init__(self, module: torch.fx.GraphModule, wanted: set[str]) -> None:
        super().__init__(module)
        self.wanted = wanted
        self.values: dict[str, torch.Tensor] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        result = super().run_node(n)
        if n.name in self.wanted and isinstance(result, torch.Tensor):
            self.values[n.name] = result.detach()
        return result


def _values_by_name(model: ir.Model) -> dict[str, ir.Value]:
    out = {}
    for node in model.graph:
        for value in node.outputs:
            if value.name:
                out[value.name] = value
    return out


def candidates(ep: ExportedProgram, model: ir.Model) -> tuple[list[torch.fx.Node], list[ir.Value], int]:
    """FX nodes with an ONNX value of the same name, the values to add as outputs, and the number of
    tensor nodes without counterpart."""
    values = _values_by_name(model)
    outputs = {v.name for v in model.graph.outputs}
    nodes, extra, skipped = [], [], 0
    for node in ep.graph.nodes:
        if node.op != "call_function" or not isinstance(node.meta.get("val"), torch.Tensor):
            continue
        value = values.get(node.name)
        if value is None or value.dtype is None or value.shape is None:
            skipped += 1
            continue
        nodes.append(node)
        if value.name not in outputs:
            extra.append(value)
    return nodes, extra, skipped


def onnx_nodes_of(model: ir.Model, node: torch.fx.Node, value: ir.Value | None) -> list[ir.Node]:
    """The ONNX nodes translated from ``node``: stamped with its FX node text, or producing its value."""
    text = node.format_node()
    found = [n for n in model.graph if n.metadata_props.get(KEY_FX_NODE) == text]
    producer = value.producer() if value is not None else None
    if producer is not None and producer not in found:
        found.append(producer)
    return found


def module_path(node: torch.fx.Node, onnx_nodes: Sequence[ir.Node]) -> str:
    """``path: Class`` of the innermost module that called ``node`` (FX ``nn_module_stack``, else the
    ONNX ``pkg.torch.onnx.name_scopes`` metadata)."""
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, cls = list(stack.values())[-1]
        name = cls if isinstance(cls, str) else cls.__qualname__
        return f"{path}: {name.rsplit('.', 1)[-1]}" if path else name
    for n in onnx_nodes:
        scopes = n.metadata_props.get(KEY_NAME_SCOPES)
        if scopes:
            try:
                parts = ast.literal_eval(scopes)
            except (ValueError, SyntaxError):
                return scopes
            return ".".join(p for p in parts[:-1] if p)
    return ""


def eager_values(ep: ExportedProgram, args: tuple[Any, ...], kwargs: dict[str, Any], wanted: set[str]) -> tuple[dict[str, torch.Tensor], list[torch.Tensor]]:
    """Run the program's graph module once, recording the outputs of the ``wanted`` nodes.

    Returns:
        ``(node name → tensor, user outputs as tensors)``.
    """
    flat = ep._graph_module_flat_inputs(args, kwargs)
    recorder = _Recorder(ep.graph_module, wanted)
    with torch.no_grad():
        results = index_ordered(lambda: recorder.run(*flat), ep)
    specs = ep.graph_signature.output_specs
    user = [r for r, s in zip(results, specs) if s.kind == OutputKind.USER_OUTPUT]
    return recorder.values, [r for r in user if isinstance(r, torch.Tensor)]


def first_divergence(
    ep: ExportedProgram,
    model: ir.Model,
    nodes: Sequence[torch.fx.Node],
    eager: dict[str, torch.Tensor],
    onnx_values: dict[str, torch.Tensor],
    *,
    skipped: int,
    rtol: float | None = None,
    atol: float | None = None,
) -> Localization:
    """Compare every candidate node in graph order; describe the first beyond tolerance."""
    values = _values_by_name(model)
    diverging: list[str] = []
    first: Divergence | None = None
    compared = 0
    for node in nodes:
        if node.name not in eager or node.name not in onnx_values:
            continue
        compared += 1
        expected = eager[node.name]
        if expected.is_complex():  # the graph carries it as its real view [..., 2]
            expected = torch.view_as_real(expected.resolve_conj())
        comparison = compare_tensors(node.name, expected, onnx_values[node.name], rtol, atol, detail=False)
        if comparison.passed:
            continue
        diverging.append(node.name)
        if first is None:
            onnx_nodes = onnx_nodes_of(model, node, values.get(node.name))
            namespace = next((n.metadata_props.get(KEY_NAMESPACE, "") for n in onnx_nodes), "")
            source = user_source_line(node)
            if source is None:
                trace = next((n.metadata_props.get(KEY_STACK_TRACE) for n in onnx_nodes), None)
                source = trace.strip().splitlines()[-1] if trace else None
            first = Divergence(
                node,
                str(node.target),
                [f"{n.name} ({n.op_type})" for n in onnx_nodes],
                module_path(node, onnx_nodes),
                namespace,
                source,
                comparison,
            )
    return Localization(compared, skipped, diverging, first)


__all__ = ["Divergence", "Localization", "candidates", "eager_values", "first_divergence"]
