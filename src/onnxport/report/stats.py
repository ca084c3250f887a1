"""Model statistics for the report: parameters per dtype, ATen and ONNX op histograms, weights."""

from __future__ import annotations

import collections

import onnx_ir as ir
import torch
from torch.export import ExportedProgram

from onnxport.capture.decomp import call_nodes
from onnxport.runtime import initializer_bytes


def aten_histogram(ep: ExportedProgram) -> collections.Counter[str]:
    """``call_function`` targets of the program (subgraphs included) → count."""
    return collections.Counter(str(n.target) for n in call_nodes(ep))


def onnx_histogram(model: ir.Model) -> collections.Counter[str]:
    """ONNX op types (``domain::Op`` outside the default domain), subgraphs included → count."""
    counts: collections.Counter[str] = collections.Counter()
    for node in ir.traversal.RecursiveGraphIterator(model.graph):
        counts[f"{node.domain}::{node.op_type}" if node.domain else node.op_type] += 1
    return counts


def parameters_per_dtype(ep: ExportedProgram) -> list[tuple[str, int, int, int]]:
    """``(dtype, tensors, elements, bytes)`` of parameters, buffers and constants, by dtype."""
    seen: set[int] = set()
    rows: dict[str, list[int]] = {}
    tensors = list(ep.state_dict.values()) + [t for t in ep.constants.values() if isinstance(t, torch.Tensor)]
    for tensor in tensors:
        if not isinstance(tensor, torch.Tensor) or id(tensor) in seen:
            continue
        seen.add(id(tensor))
        row = rows.setdefault(str(tensor.dtype).removeprefix("torch."), [0, 0, 0])
        row[0] += 1
        row[1] += tensor.numel()
        row[2] += tensor.numel() * tensor.element_size()
    return [(k, *v) for k, v in sorted(rows.items(), key=lambda kv: -kv[1][2])]  # type: ignore[misc]


def onnx_facts(model: ir.Model) -> list[tuple[str, str]]:
    """Opsets, node count, initializer count and bytes."""
    opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(model.opset_imports.items()))
    nodes = sum(1 for _ in ir.traversal.RecursiveGraphIterator(model.graph))
    return [
        ("opsets", opsets),
        ("nodes", str(nodes)),
        ("initializers", str(len(model.graph.initializers))),
        ("initializer bytes", f"{initializer_bytes(model):,}"),
        ("inputs", str(len(model.graph.inputs))),
        ("outputs", str(len(model.graph.outputs))),
    ]


__all__ = ["aten_histogram", "onnx_facts", "onnx_histogram", "parameters_per_dtype"]
