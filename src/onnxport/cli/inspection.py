"""``onnxport inspect MODEL.onnx``: what is in an ONNX file, as readable tables.

Inputs and outputs with symbolic shapes, opsets, op histogram, initializer count and bytes, external
data files, and the model's metadata. The weights are not read (external data stays on disk).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Annotated, Any

import onnx_ir as ir
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from onnxport.cli._common import (
    EXIT_USAGE,
    add_row,
    consoles,
    fail,
    format_bytes,
    format_dtype,
    format_shape,
)
from onnxport.report.stats import onnx_histogram

METADATA_WIDTH = 100


def _tensor_bytes(tensor: Any) -> int:
    try:
        return int(tensor.nbytes)
    except Exception:  # an external tensor whose file is missing still has a shape and dtype
        return 0


def inspect_tables(model: ir.Model, path: Path) -> list[Table]:
    """The tables printed by ``onnxport inspect`` (also used by tests)."""
    graph = model.graph
    io = Table(title=Text(f"{path.name}: inputs and outputs"), title_justify="left")
    for column in ("", "name", "dtype", "shape"):
        io.add_column(column)
    for kind, values in (("input", graph.inputs), ("output", graph.outputs)):
        for v in values:
            add_row(io, kind, v.name or "?", format_dtype(v.dtype), format_shape(v.shape))

    facts = Table(title="model", title_justify="left", show_header=False)
    facts.add_column("fact")
    facts.add_column("value")
    add_row(facts, "ir_version", str(model.ir_version))
    add_row(facts, "producer", f"{model.producer_name or '?'} {model.producer_version or ''}".strip())
    add_row(facts, "opsets", ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in sorted(model.opset_imports.items())))
    nodes = sum(1 for _ in ir.traversal.RecursiveGraphIterator(graph))
    add_row(facts, "nodes", str(nodes))
    sizes = [_tensor_bytes(v.const_value) for v in graph.initializers.values() if v.const_value is not None]
    add_row(facts, "initializers", f"{len(graph.initializers)} ({format_bytes(sum(sizes))})")
    external: collections.Counter[str] = collections.Counter()
    external_bytes: collections.Counter[str] = collections.Counter()
    for v in graph.initializers.values():
        tensor = v.const_value
        if isinstance(tensor, ir.ExternalTensor):
            external[str(tensor.location)] += 1
            external_bytes[str(tensor.location)] += _tensor_bytes(tensor)
    if external:
        for location, count in external.items():
            file = path.parent / location
            state = format_bytes(file.stat().st_size) if file.is_file() else "MISSING"
            add_row(facts, "external data", f"{location}: {count} tensors, {format_bytes(external_bytes[location])} ({state})")
    else:
        add_row(facts, "external data", "none (weights inside the file)")

    ops = Table(title="ops", title_justify="left")
    ops.add_column("op")
    ops.add_column("count", justify="right")
    for op, count in onnx_histogram(model).most_common():
        add_row(ops, op, str(count))

    tables = [io, facts, ops]
    metadata = {**model.metadata_props, **{f"graph: {k}": v for k, v in graph.metadata_props.items()}}
    if metadata:
        meta = Table(title="metadata", title_justify="left")
        meta.add_column("key")
        meta.add_column("value", overflow="fold")
        for key, value in metadata.items():
            text = " ".join(value.split())
            add_row(meta, key, text if len(text) <= METADATA_WIDTH else text[: METADATA_WIDTH - 1] + "…")
        tables.append(meta)
    return tables


def inspect_command(
    model_path: Annotated[
        Path, typer.Argument(metavar="MODEL.onnx", help="The ONNX file to describe.", show_default=False)
    ],
) -> None:
    """Describe an ONNX file: inputs/outputs with symbolic shapes, opsets, op histogram,
    initializer bytes, external data files and metadata.

    **Exit codes**: 0 success; 2 the file does not exist or is not an ONNX model.
    """
    _, err = consoles()
    if not model_path.is_file():
        fail(err, f"{model_path} not found.", EXIT_USAGE)
    try:
        model = ir.load(model_path)
    except Exception as e:  # protobuf DecodeError and others
        fail(err, f"{model_path} is not a readable ONNX model: {type(e).__name__}: {e}", EXIT_USAGE)
    out = Console(highlight=False)
    for table in inspect_tables(model, model_path):
        out.print(table)


__all__ = ["inspect_command", "inspect_tables"]
