"""Walking a model's graphs and values: the main graph, its functions and every subgraph (If
branches, Loop and Scan bodies) under them."""

from __future__ import annotations

from collections.abc import Iterator

import onnx_ir as ir


def all_graphs(model: ir.Model) -> Iterator[ir.Graph]:
    """The main graph, each function's graph, and every subgraph nested in them."""
    for top in [model.graph, *(f.graph for f in model.functions.values())]:
        yield top
        for node in ir.traversal.RecursiveGraphIterator(top):
            for attr in node.attributes.values():
                if attr.type == ir.AttributeType.GRAPH:
                    yield attr.value
                elif attr.type == ir.AttributeType.GRAPHS:
                    yield from attr.value


def all_values(model: ir.Model) -> Iterator[ir.Value]:
    """Every value of every graph of :func:`all_graphs`: inputs, initializers and node outputs
    (a graph output is one of those)."""
    for graph in all_graphs(model):
        yield from graph.inputs
        yield from graph.initializers.values()
        for node in graph:
            yield from node.outputs
