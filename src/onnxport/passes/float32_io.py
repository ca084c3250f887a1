"""bfloat16 graph inputs and outputs as float32, cast at the boundary.

onnxruntime-node and transformers.js have no bfloat16 tensor: onnxruntime-common's tensor types
stop at float16, and onnxruntime-node's session refuses a model with a bfloat16 input or output
("Unsupported data type: 16", ``dist/backend.js``, 1.2x), so a bfloat16 export of a Hugging Face
checkpoint (most are stored in bfloat16) did not even load there, and onnxruntime-genai's
pipelines feed float32 or float16 caches. This pass keeps the graph (its weights and compute
stay bfloat16) and only moves its boundary: each bfloat16 graph input becomes float32 followed by
``Cast(to=BFLOAT16)``, each bfloat16 output is ``Cast(to=FLOAT)`` of the value it was, under the
same name. The casts are lossless for the values the graph itself produced (a bfloat16 value is
exactly a float32 one), so a past fed back from ``present`` round-trips unchanged; a float32 value
fed from outside is rounded to nearest even, as the export's own inputs were.
"""

from __future__ import annotations

import onnx_ir as ir

BF16 = ir.DataType.BFLOAT16


def float32_boundary(model: ir.Model) -> list[str]:
    """Rewrite ``model``'s bfloat16 inputs and outputs as float32 in place (module docstring);
    the names of the values changed, inputs first."""
    graph = model.graph
    changed: list[str] = []
    for value in graph.inputs:
        if value.dtype != BF16:
            continue
        cast = ir.node("Cast", [value], {"to": BF16}, num_outputs=1)
        inner = cast.outputs[0]
        inner.type, inner.shape, inner.name = ir.TensorType(BF16), value.shape, f"{value.name}_bfloat16"
        for user, index in list(value.uses()):
            if user is not cast:
                user.replace_input_with(index, inner)
        if len(graph):
            graph.insert_before(graph.node(0), cast)
        else:
            graph.append(cast)
        value.type = ir.TensorType(ir.DataType.FLOAT)  # an input returned as it is: float32 out too
        changed.append(str(value.name))
    for i, value in enumerate(list(graph.outputs)):
        if value.dtype != BF16:
            continue
        cast = ir.node("Cast", [value], {"to": ir.DataType.FLOAT}, num_outputs=1)
        graph.append(cast)
        out = cast.outputs[0]
        out.type, out.shape = ir.TensorType(ir.DataType.FLOAT), value.shape
        name = value.name
        value.name = f"{name}_bfloat16"
        out.name = name
        graph.outputs[i] = out
        changed.append(str(name))
    return changed
