"""Nodes that give their input back unchanged → removed.

- ``Add(x, 0)``, ``Add(0, x)``, ``Sub(x, 0)``;
- ``Mul(x, 1)``, ``Mul(1, x)``, ``Div(x, 1)``;
- ``And(x, true)``, ``And(true, x)``, ``Or(x, false)``, ``Or(false, x)``;
- ``Expand(x, shape)`` whose output has the shape ``x`` already has.

torch.export records such nodes where Python code is written for the general case:
transformers' attention-mask builders (``masking_utils.sdpa_mask``) add the KV offset to
``torch.arange`` (0 without a cache offset), start their ``and_masks`` from an all-true scalar and
expand the finished ``(batch, 1, query, key)`` mask to the shape it has. They run at every decode
step of an LLM, a few microseconds of onnxruntime overhead each.

A node is removed only when its output is ``x`` itself (ONNX operator spec, the broadcasting
rules of Add/Sub/Mul/Div/And/Or and Expand-13): the constant is every element the operation's
identity and not a weight (one element: :func:`~onnxport.passes.fusions.scalar`, never a file
slice), the output's dtype is ``x``'s, and the output's shape is ``x``'s shape, fully known
(integers or the same symbolic dimensions), so broadcasting enlarges nothing. A node whose
output is a graph output stays (the output keeps its name).
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.fusions import scalar

# op type → (identity element, whether the constant may come first)
IDENTITIES: dict[str, tuple[float, bool]] = {
    "Add": (0.0, True),
    "Sub": (0.0, False),
    "Mul": (1.0, True),
    "Div": (1.0, False),
    "And": (1.0, True),  # true
    "Or": (0.0, True),  # false
}


def _known_shape(value: ir.Value | None) -> ir.Shape | None:
    shape = None if value is None else value.shape
    if shape is None or any(d is None or (isinstance(d, ir.SymbolicDim) and d.value is None) for d in shape):
        return None
    return shape


def _same_shape(a: ir.Value | None, b: ir.Value | None) -> bool:
    shape_a, shape_b = _known_shape(a), _known_shape(b)
    return shape_a is not None and shape_b is not None and list(shape_a) == list(shape_b)


def passed_through(node: ir.Node) -> ir.Value | None:
    """The input that ``node`` returns unchanged (module docstring), else ``None``."""
    if node.domain != "" or len(node.outputs) != 1:
        return None
    out = node.outputs[0]
    if node.op_type == "Expand" and len(node.inputs) == 2:
        x = node.inputs[0]
    elif node.op_type in IDENTITIES and len(node.inputs) == 2:
        identity, either = IDENTITIES[node.op_type]
        orders = [(0, 1), (1, 0)] if either else [(0, 1)]
        x = next(
            (node.inputs[i] for i, c in orders if scalar(node.inputs[c]) == identity),
            None,
        )
    else:
        return None
    if x is None or x.dtype is None or x.dtype != out.dtype or not _same_shape(x, out):
        return None
    return x


class NoOpPass(ir.passes.InPlacePass):
    """Remove every node of the main graph that gives an input back unchanged (module
    docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for node in list(graph):
            x = passed_through(node)
            if x is None or node.outputs[0].is_graph_output():
                continue
            node.outputs[0].replace_all_uses_with(x)
            graph.remove(node, safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)
