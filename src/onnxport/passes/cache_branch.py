"""Compute some graph outputs on the first step only: an ``If`` on a boolean input that passes
cached copies of them through on the later steps.

An encoder-decoder's decoder projects the encoder's hidden states to the cross-attention keys
and values in every layer; those depend on the encoder alone, so after the first step a runtime
feeds them back (``past_key_values.{i}.encoder.key`` / ``.value``) instead of recomputing them.
Optimum's merged decoder does this with two exported decoders under one ``If`` on
``use_cache_branch`` (``optimum/onnx/graph_transformations.py``, ``merge_decoders``); transformers.js
feeds ``use_cache_branch`` whenever the graph has that input (``decoder_forward`` in
``src/models/modeling_utils.js``, 4.3.1) and reuses the first step's encoder outputs after it
(``getPastKeyValues``).

Here one graph is captured (the first step, which computes the outputs) and rewritten: every node
the chosen outputs depend on is copied into the ``If``'s else-branch; the then-branch returns the
new inputs unchanged; every use of the outputs reads the ``If`` instead, and the originals that
nothing else reads are removed. The graph's results are those of the captured one on the first
step (flag false) and, on the later ones (flag true), those of the same graph given the cached
values in place of the recomputed ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
from onnx_ir.passes import common

from onnxport.errors import InputError
from onnxport.passes.node_copy import copy_node


def _cone(targets: Sequence[ir.Value]) -> set[ir.Node]:
    """Every node that ``targets`` depend on (producers, transitively)."""
    cone: set[ir.Node] = set()
    stack = [v.producer() for v in targets]
    while stack:
        node = stack.pop()
        if node is None or node in cone:
            continue
        cone.add(node)
        stack += [v.producer() for v in node.inputs if v is not None]
    return cone


def _else_branch(graph: ir.Graph, targets: Sequence[ir.Value]) -> ir.Graph:
    """A subgraph computing ``targets`` from the outer graph's inputs and initializers."""
    order = {node: i for i, node in enumerate(graph)}
    copies: dict[ir.Value, ir.Value] = {}
    nodes = []
    for node in sorted(_cone(targets), key=order.__getitem__):
        copy = copy_node(node, [None if v is None else copies.get(v, v) for v in node.inputs])
        for old, new in zip(node.outputs, copy.outputs, strict=True):
            new.name = f"{old.name}__first_step"
            copies[old] = new
        nodes.append(copy)
    return ir.Graph((), [copies[v] for v in targets], nodes=nodes, name="first_step")


def branch_on_flag(
    model: ir.Model, outputs: Sequence[str], cached: Sequence[str], flag: str, cached_dims: dict[int, str]
) -> None:
    """Make the graph outputs ``outputs`` cacheable, in place (module docstring).

    Args:
        model: The model; gains the inputs ``cached`` (one per output, same element type, the
            output's shape with the axes of ``cached_dims`` renamed) and ``flag`` (``bool[1]``),
            in that order after its own inputs.
        outputs: Graph output names, computed when ``flag`` is false.
        cached: The input names whose values the outputs take when ``flag`` is true.
        flag: The boolean input's name (Optimum's and transformers.js's ``use_cache_branch``).
        cached_dims: Axis → symbolic dim name of the cached inputs and of the outputs (e.g.
            ``{2: "encoder_sequence_length_out"}``), since a runtime feeds the cached values
            with their own lengths (transformers.js: empty ones on the first step).

    Raises:
        InputError: An output name is not a graph output, or ``cached`` has another length.
    """
    graph = model.graph
    by_name = {v.name: v for v in graph.outputs}
    missing = [n for n in outputs if n not in by_name]
    if missing or len(cached) != len(outputs):
        raise InputError(
            f"Cannot branch on {flag!r}: outputs {missing or list(outputs)} are not graph outputs "
            f"or do not match the {len(cached)} cached inputs."
        )
    targets = [by_name[n] for n in outputs]
    condition = ir.Value(name=flag, type=ir.TensorType(ir.DataType.BOOL), shape=ir.Shape([1]))
    inputs, passed = [], []
    for name, target in zip(cached, targets, strict=True):
        dims = list(target.shape.dims) if target.shape is not None else []
        shape = ir.Shape([cached_dims.get(i, d) for i, d in enumerate(dims)]) if dims else None
        value = ir.Value(name=name, type=target.type, shape=shape)
        inputs.append(value)
        identity = ir.Node("", "Identity", [value], num_outputs=1)
        out = identity.outputs[0]
        out.name, out.type, out.shape = f"{name}__cached", target.type, shape
        passed.append(identity)
    then_branch = ir.Graph((), [n.outputs[0] for n in passed], nodes=passed, name="cached")
    branch = ir.Node(
        "", "If", [condition],
        [ir.AttrGraph("then_branch", then_branch), ir.AttrGraph("else_branch", _else_branch(graph, targets))],
        num_outputs=len(targets),
    )  # fmt: skip
    consumers = {node for v in targets for node in v.consumers()}
    first = next((node for node in graph if node in consumers), None)
    if first is None:
        graph.append(branch)
    else:
        graph.insert_before(first, branch)
    for name, target, value, out in zip(outputs, targets, inputs, branch.outputs, strict=True):
        target.name = f"{name}__captured"
        out.name, out.type, out.shape = name, target.type, value.shape
        target.replace_all_uses_with(out, replace_graph_outputs=True)
    graph.inputs.extend([*inputs, condition])
    common.RemoveUnusedNodesPass()(model)
