"""Replace ``Transpose(initializer)`` with a transposed initializer, without copying weights now.

``aten.linear`` on inputs of rank ≠ 2 becomes ``MatMul(x, Transpose(W))``. When every use of ``W`` is
that same Transpose, the node is dropped and ``W`` is replaced by ``W.T``, derived from ``W`` with
:func:`onnxport.weights.transposed`: the transposed bytes are produced only when the model is
written (tensor by tensor) or run, from whatever source ``W`` has then (``apply_weights``), so
exporting never reads or copies the weights.
The new initializer is named ``<name>.T`` so a name never changes meaning.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport import weights


class TransposedWeightsPass(ir.passes.InPlacePass):
    """Fold Transposes of initializers whose only uses are those Transposes."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for node in list(graph):
            if node.op_type != "Transpose" or node.domain != "" or len(node.inputs) != 1:
                continue
            weight = node.inputs[0]
            if weight is None or not weight.is_initializer() or weight.is_graph_input():
                continue
            tensor = weight.const_value
            perm_attr = node.attributes.get("perm")
            if tensor is None or perm_attr is None:
                continue
            perm = tuple(perm_attr.as_ints())
            users = {id(user) for user, _ in weight.uses()}
            if users != {id(node)} or node.outputs[0].is_graph_output():
                continue
            shape = ir.Shape([tensor.shape[p] for p in perm])  # type: ignore[misc]
            name = f"{weight.name}.T"
            lazy = weights.transposed(tensor, perm, name)
            value = ir.Value(name=name, shape=shape, type=ir.TensorType(tensor.dtype), const_value=lazy)
            value.metadata_props.update(weight.metadata_props)
            graph.register_initializer(value)
            node.outputs[0].replace_all_uses_with(value)
            graph.remove(node, safe=True)
            assert weight.name is not None  # initializers are registered by name
            del graph.initializers[weight.name]
            modified = True
        return ir.passes.PassResult(model, modified)
