"""Fold layout ops over weights into initializers derived from them, without copying weights now.

``aten.linear`` on inputs of rank ≠ 2 becomes ``MatMul(x, Transpose(W))``; model code also views,
stacks and joins its parameters in ``forward`` (DBRX's experts view one ``[E·I, H]`` parameter per
projection as ``[E, I, H]``; the onnxruntime target's ``MoE`` interleaves ``gate_up_proj``). A
``Transpose``, ``Reshape``, ``Squeeze``, ``Unsqueeze`` or ``Concat`` whose data inputs are
initializers used only by that node (its other inputs constants) is dropped and its output becomes
an initializer derived from them (:func:`onnxport.weights.transposed`, ``reshaped``,
``concatenated``): the bytes are produced only when the model is written (tensor by tensor) or run,
from whatever source the weights have then (``apply_weights``), so exporting never reads or copies
the weights, and no run repeats the layout work. A weight that stays read elsewhere is left alone,
so no weight is stored twice. Chains fold in one pass (nodes are visited in graph order).

Names: ``<W>.T`` (Transpose), ``<W>.view`` (Reshape, Squeeze, Unsqueeze; a view of a view keeps one
suffix), ``(<W1>+<W2>+...)`` (Concat), so a name never changes meaning. Shapes follow the ONNX spec
sections of the five ops (``Reshape``'s 0 copies the input dimension unless ``allowzero``, -1 is
inferred).
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from onnxport import weights

_VIEWS = ("Reshape", "Squeeze", "Unsqueeze")


def _only_reader(value: ir.Value | None, node: ir.Node) -> ir.TensorProtocol | None:
    """``value``'s tensor when it is an initializer (not a graph input) read by ``node`` alone, once."""
    if value is None or not value.is_initializer() or value.is_graph_input() or value.const_value is None:
        return None
    users = [user for user, _ in value.uses()]
    return value.const_value if len(users) == 1 and users[0] is node else None


def _ints(value: ir.Value | None) -> list[int] | None:
    """A constant int tensor input as a list (``None`` when absent or not constant)."""
    tensor = None if value is None else ir.convenience.get_const_tensor(value)
    return None if tensor is None else [int(v) for v in np.asarray(tensor.numpy()).reshape(-1)]


def _view_shape(node: ir.Node, shape: list[int]) -> list[int] | None:
    """The output shape of a Reshape / Squeeze / Unsqueeze of a ``shape`` tensor with constant
    arguments; ``None`` when an argument is not constant (ONNX spec sections of the three ops)."""
    if node.op_type == "Reshape":
        target = _ints(node.inputs[1]) if len(node.inputs) > 1 else None
        if target is None:
            return None
        attr = node.attributes.get("allowzero")
        zero_copies = attr is None or attr.as_int() == 0
        dims = [shape[i] if d == 0 and zero_copies else d for i, d in enumerate(target)]
        if dims.count(-1) == 1:
            known = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = math.prod(shape) // known if known else 0
        return dims if math.prod(dims) == math.prod(shape) and min(dims, default=0) >= 0 else None
    if node.attributes.get("axes") is not None:  # before opset 13: axes as an attribute
        return None
    axes = _ints(node.inputs[1]) if len(node.inputs) > 1 else []
    if axes is None or (node.op_type == "Unsqueeze" and not axes):
        return None
    if node.op_type == "Squeeze":
        drop = {a % len(shape) for a in axes} if axes else {i for i, d in enumerate(shape) if d == 1}
        return [d for i, d in enumerate(shape) if i not in drop]
    out = list(shape)
    for a in sorted(a % (len(shape) + len(axes)) for a in axes):
        out.insert(a, 1)
    return out


def _view_name(name: str) -> str:
    return name if name.endswith(".view") else f"{name}.view"


def _derived(node: ir.Node) -> ir.TensorProtocol | None:
    """The lazy tensor ``node`` computes when its data inputs are initializers it alone reads."""
    if node.domain not in ("", "ai.onnx") or not node.inputs:
        return None
    if node.op_type == "Concat":
        bases = [_only_reader(v, node) for v in node.inputs]
        axis = node.attributes.get("axis")
        if axis is None or any(b is None for b in bases) or len({id(v) for v in node.inputs}) != len(bases):
            return None
        names = "(" + "+".join(str(b.name) for b in bases) + ")"  # type: ignore[union-attr]
        return weights.concatenated(bases, axis.as_int(), names)  # type: ignore[arg-type]
    base = _only_reader(node.inputs[0], node)
    if base is None:
        return None
    shape = [int(d) for d in base.shape.numpy()]
    if node.op_type == "Transpose":
        perm_attr = node.attributes.get("perm")
        perm = tuple(perm_attr.as_ints()) if perm_attr is not None else tuple(reversed(range(len(shape))))
        return weights.transposed(base, perm, f"{base.name}.T")
    if node.op_type in _VIEWS:
        dims = _view_shape(node, shape)
        return None if dims is None else weights.reshaped(base, dims, _view_name(str(base.name)))
    return None


class WeightLayoutPass(ir.passes.InPlacePass):
    """Fold Transpose / Reshape / Squeeze / Unsqueeze / Concat of initializers read only there
    (module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for node in list(graph):
            output = node.outputs[0] if len(node.outputs) == 1 else None
            if output is None or output.is_graph_output():
                continue
            lazy = _derived(node)
            if lazy is None:
                continue
            bases = [v for v in node.inputs if v is not None and v.is_initializer() and v.const_value is not None]
            taken = graph.initializers.get(str(lazy.name))
            if taken is not None and all(taken is not b for b in bases):
                continue
            value = ir.Value(
                name=lazy.name, shape=ir.Shape(list(lazy.shape.numpy())), type=ir.TensorType(lazy.dtype), const_value=lazy
            )
            if node.op_type != "Concat":
                value.metadata_props.update(bases[0].metadata_props)
            output.replace_all_uses_with(value)
            graph.remove(node, safe=True)
            for base in bases:
                if not base.uses() and base.name is not None and base.name in graph.initializers:
                    del graph.initializers[base.name]
            graph.register_initializer(value)
            modified = True
        return ir.passes.PassResult(model, modified)
