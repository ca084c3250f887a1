"""Keep onnxruntime from folding a zero ``Pad`` into the ``MaxPool`` it feeds.

onnxruntime 1.31's ``PadFusion`` (``onnxruntime/core/optimizer/pad_fusion.cc``, a rewrite rule
of the basic level, so on in every session that does not disable graph optimization) removes a
constant-mode ``Pad`` whose value is 0 and adds its pads to the ``Conv``, ``AveragePool`` or
``MaxPool`` it feeds (directly or through a ``Cast``). For ``MaxPool`` that changes the result:
the pool's own padding takes no part in the maximum (ONNX operator spec, MaxPool: as if it were
-inf), the Pad's zeros do. A window of negative values at the border gives 0 in PyTorch
(``F.pad`` then ``F.max_pool2d``) and the window's maximum after the fusion. BiT's stem
(``ConstantPad2d`` then ``MaxPool2d``) ended 0.008 off eager through it, and
``onnxport.verify(..., localize=True)`` saw nothing: it adds every intermediate value, the Pad's
output included, as a graph output, which stops the fusion (session 31). The same mistake in onnx's optimizer:
onnx/optimizer#318, onnxsim#290.

The rule skips a ``Pad`` with an ``axes`` input (more than three inputs). This pass gives each
constant-mode ``Pad`` feeding a ``MaxPool`` (directly or through ``Cast`` nodes) the ``axes`` input
of Pad-18 listing every dim in order, which pads exactly as before. For an export to an opset
below 18 the pass does not run (Pad has no ``axes`` input there) and the fusion stays.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.graphs import all_graphs


def _feeds_max_pool(value: ir.Value) -> bool:
    consumers = [use.node for use in value.uses()]
    if len(consumers) != 1:
        return False
    node = consumers[0]
    if node.op_type == "Cast" and node.domain in ("", "ai.onnx"):
        return _feeds_max_pool(node.outputs[0])
    return node.op_type == "MaxPool" and node.domain in ("", "ai.onnx")


def _dims(pad: ir.Node) -> int | None:
    """The input's rank, from the constant ``pads`` (2 x rank entries)."""
    pads = pad.inputs[1] if len(pad.inputs) > 1 else None
    if pads is None or pads.shape is None or len(pads.shape) != 1 or not isinstance(pads.shape[0], int):
        return None
    return pads.shape[0] // 2


def _guard(graph: ir.Graph) -> bool:
    modified = False
    for node in list(graph):
        if node.op_type != "Pad" or node.domain not in ("", "ai.onnx") or len(node.inputs) > 3:
            continue
        mode = node.attributes.get("mode")
        if (mode is not None and mode.value != "constant") or not _feeds_max_pool(node.outputs[0]):
            continue
        rank = _dims(node)
        if rank is None:
            continue
        constant = ir.Node("", "Constant", [], [ir.Attr("value", ir.AttributeType.TENSOR,
                                                         ir.tensor(list(range(rank)), ir.DataType.INT64))])
        graph.insert_before(node, constant)
        axes = constant.outputs[0]
        axes.name = f"{node.outputs[0].name}_axes"
        axes.shape, axes.type = ir.Shape([rank]), ir.TensorType(ir.DataType.INT64)
        inputs = list(node.inputs) + [None] * (3 - len(node.inputs))
        node.resize_inputs(4)
        for i, value in enumerate([*inputs, axes]):
            node.replace_input_with(i, value)
        modified = True
    return modified


class PadMaxPoolPass(ir.passes.InPlacePass):
    """Every constant-mode ``Pad`` feeding a ``MaxPool`` gets ``axes`` = every dim (module
    docstring): the same padding, out of reach of onnxruntime's ``PadFusion``."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for graph in list(all_graphs(model)):
            modified |= _guard(graph)
        return ir.passes.PassResult(model, modified)
