"""ONNX ``Gelu`` (after a bias ``Add``) → ``com.microsoft.FastGelu`` / ``com.microsoft.BiasGelu``.

A Linear with bias followed by GELU is ``Gelu(Add(MatMul(x, W), b))`` in the standard graph
(opset ≥ 20). onnxruntime's contrib ops (docs/ContribOperators.md) compute it in one pass over
the activation:

- ``FastGelu(X, bias?)``: the tanh approximation ``0.5·y·(1 + tanh(√(2/π)·(y + 0.044715·y³)))``
  with ``y = X + bias`` — PyTorch's ``gelu(approximate="tanh")`` (transformers' ``gelu_new``,
  ``gelu_pytorch_tanh``: GPT-2, Phi, Gemma); applied with or without a bias.
- ``BiasGelu(A, B)``: the exact ``0.5·y·(1 + erf(y/√2))`` with ``y = A + B``; applied only with a
  bias (a lone exact GELU stays ONNX ``Gelu``, which onnxruntime runs natively).

The tanh GELU written out as arithmetic is matched too: transformers' ``NewGELUActivation``
(``gelu_new``: GPT-2, GPT-J, CodeGen, Phi-2) and onnxport's own translation below opset 20 give
``Mul(Mul(x, 0.5), Add(Tanh(Mul(Add(x, Mul(Pow(x, 3), 0.044715)), √(2/π))), 1))`` (any operand
order, ``x·x·x`` for the cube), checked constant by constant (relative 1e-5), and every
intermediate used only inside the pattern.

The bias must be a 1-D float32 constant as long as the input's static last dimension, and the
``Add`` must feed only the ``Gelu``. onnxruntime's own session optimizer (``BiasGeluFusion``,
``FastGeluFusion``, level ``ORT_ENABLE_EXTENDED``) makes the same rewrite when a session loads
the standard graph; this pass writes it into the file, so a session created with basic
optimizations, or a runtime that does not run those fusions, gets the fused kernels too.
The fusion applies only when the installed onnxruntime's CPU provider has the kernel.
"""

from __future__ import annotations

import math

import onnx_ir as ir

from onnxport.passes.fusions import by_constant, scalar, substitute
from onnxport.passes.ort.kernels import MICROSOFT, has_kernel

FUSED = {"tanh": "FastGelu", "none": "BiasGelu"}


def _last_dim(value: ir.Value) -> int | None:
    """The static last dimension of ``value``: from its shape, else from the weight of the
    ``MatMul`` that made it (intermediate shapes are often not recorded)."""
    if value.shape is not None:
        last = value.shape[-1] if len(value.shape) else None
        return last if isinstance(last, int) else None
    node = value.producer()
    if node is None or node.op_type != "MatMul" or node.domain != "":
        return None
    weight = node.inputs[1]
    if weight is None or weight.shape is None or len(weight.shape) < 2:
        return None
    last = weight.shape[-1]
    return last if isinstance(last, int) else None


def _bias_add(value: ir.Value) -> tuple[ir.Node, ir.Value, ir.Value] | None:
    """``(add, input, bias)`` when ``value = Add(input, bias)`` with a fusable bias."""
    add = value.producer()
    if add is None or add.op_type != "Add" or add.domain != "":
        return None
    if len(value.uses()) != 1 or value.is_graph_output():
        return None
    for x, bias in (add.inputs, reversed(add.inputs)):
        if x is None or bias is None or bias.const_value is None:
            continue
        last = _last_dim(x)
        if not isinstance(last, int) or bias.dtype != ir.DataType.FLOAT:
            continue
        if tuple(bias.const_value.shape) == (last,) and x.dtype == ir.DataType.FLOAT:
            return add, x, bias
    return None


def match(node: ir.Node) -> tuple[str, list[ir.Value], ir.Node | None] | None:
    """``(fused op, inputs, bias Add or None)`` for a fusable ``Gelu`` node, else ``None``."""
    if node.op_type != "Gelu" or node.domain != "" or node.inputs[0] is None:
        return None
    if node.inputs[0].dtype != ir.DataType.FLOAT:
        return None
    attr = node.attributes.get("approximate")
    approximate = "none" if attr is None else attr.as_string()
    fused = FUSED.get(approximate)
    if fused is None or not has_kernel(fused):
        return None
    found = _bias_add(node.inputs[0])
    if found is None:
        return (fused, [node.inputs[0]], None) if fused == "FastGelu" else None
    add, x, bias = found
    return fused, [x, bias], add


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _is(value: ir.Value | None, expected: float) -> bool:
    """``value`` is a float32 scalar constant equal to ``expected`` within relative 1e-5."""
    constant = scalar(value)
    if constant is None or value is None or value.dtype != ir.DataType.FLOAT:
        return False
    return math.isclose(constant, expected, rel_tol=1e-5)


def _operands(node: ir.Node | None, op_type: str) -> list[tuple[ir.Value, ir.Value]]:
    """Both orders of a binary standard-domain ``op_type`` node's inputs (empty if not one)."""
    if node is None or node.op_type != op_type or node.domain != "" or len(node.inputs) != 2:
        return []
    a, b = node.inputs
    if a is None or b is None:
        return []
    return [(a, b), (b, a)]


def _times_constant(value: ir.Value | None, constant: float) -> ir.Value | None:
    """``y`` when ``value = Mul(y, constant)`` (either order)."""
    found = by_constant(value, "Mul")
    return found[0] if found is not None and math.isclose(found[1], constant, rel_tol=1e-5) else None


def _is_cube(value: ir.Value, x: ir.Value) -> bool:
    """``value`` is ``Pow(x, 3)``, ``x·(x·x)`` or ``(x·x)·x``."""
    node = value.producer()
    if node is not None and node.op_type == "Pow" and node.domain == "":
        return node.inputs[0] is x and _is(node.inputs[1], 3.0)
    for a, b in _operands(node, "Mul"):
        if a is x and any(p is x and q is x for p, q in _operands(b.producer(), "Mul")):
            return True
    return False


def match_tanh_formula(tanh: ir.Node) -> tuple[ir.Value, ir.Node, list[ir.Node]] | None:
    """``(x, final, nodes)`` when ``tanh`` is the core of ``0.5·x·(1 + tanh(√(2/π)·(x +
    0.044715·x³)))`` written out; ``final`` is its last ``Mul``, ``nodes`` all the pattern's
    nodes (replaced together)."""
    if tanh.op_type != "Tanh" or tanh.domain != "":
        return None
    inner = _times_constant(tanh.inputs[0], _SQRT_2_OVER_PI)
    if inner is None:
        return None
    x = None
    for a, b in _operands(inner.producer(), "Add"):
        cube = _times_constant(b, 0.044715)
        if cube is not None and _is_cube(cube, a):
            x = a
            break
    if x is None or x.dtype != ir.DataType.FLOAT:
        return None
    uses = tanh.outputs[0].uses()
    if len(uses) != 1:
        return None
    one_plus = next(iter(uses)).node
    if not any(_is(c, 1.0) for t, c in _operands(one_plus, "Add") if t is tanh.outputs[0]):
        return None
    uses = one_plus.outputs[0].uses()
    if len(uses) != 1:
        return None
    final = next(iter(uses)).node
    half = next(
        (
            h
            for s, h in _operands(final, "Mul")
            if s is one_plus.outputs[0] and _times_constant(h, 0.5) is x
        ),
        None,
    )
    if half is None:
        return None
    nodes = _pattern_nodes(final.outputs[0], x)
    inside = {id(n) for n in nodes}
    for node in nodes:  # nothing outside the pattern reads an intermediate
        if node is final:
            continue
        out = node.outputs[0]
        if out.is_graph_output() or any(id(u.node) not in inside for u in out.uses()):
            return None
    return x, final, nodes


def _pattern_nodes(y: ir.Value, x: ir.Value) -> list[ir.Node]:
    """The nodes between ``x`` (excluded) and ``y`` (its producer included)."""
    found: dict[int, ir.Node] = {}
    stack = [y]
    while stack:
        value = stack.pop()
        node = value.producer()
        if value is x or node is None or id(node) in found:
            continue
        found[id(node)] = node
        stack.extend(v for v in node.inputs if v is not None and v.const_value is None)
    return list(found.values())


class GeluPass(ir.passes.InPlacePass):
    """Fuse every matching ``Gelu`` and written-out tanh GELU (see the module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        formulas = has_kernel("FastGelu")
        modified = False
        for node in list(graph):
            if node.graph is None:  # removed with an earlier pattern
                continue
            formula = match_tanh_formula(node) if formulas else None
            if formula is not None:  # first an ONNX Gelu, then fused with its bias below
                x, final, nodes = formula
                node = ir.node("Gelu", [x], {"approximate": "tanh"}, name=final.name)
                substitute(graph, node, final, final.outputs[0])
                graph.remove(nodes, safe=True)
                modified = True
            found = match(node)
            if found is None:
                continue
            op_type, inputs, add = found
            fused = ir.node(op_type, inputs, domain=MICROSOFT, name=node.name)
            substitute(graph, fused, node, node.outputs[0])
            graph.remove([node] if add is None else [node, add], safe=True)
            modified = True
        if modified:
            model.opset_imports.setdefault(MICROSOFT, 1)
        return ir.passes.PassResult(model, modified)
