"""Convert a translated model to an opset below 18.

onnxport translates at opset 18 or newer. For an older target (as torch.onnx.export does) the model
is first given to ``onnx.version_converter``. The converter lacks adapters for many ops whose newer
versions only widened the accepted types (e.g. no adapter for Add 14 → 13); for those, listed in
:data:`TYPE_ONLY_CHANGES` from the ONNX operator changelog (docs/Changelog.md), the node is kept
as is, and the whole model is then checked against the target opset's schemas with
``onnx.checker.check_model(full_check=True)``. Anything else fails with :class:`OpsetError`: a model
is never stamped with one opset while holding nodes of another.

The weights are detached during the conversion, so it never copies them.
"""

from __future__ import annotations

import onnx
import onnx.version_converter
import onnx_ir as ir

from onnxport.errors import OpsetError

# Ops whose versions between 7 and 18 differ only in type constraints or in attributes/optional
# inputs that onnxport's translations do not use (ONNX Changelog.md, per op).
TYPE_ONLY_CHANGES = frozenset(
    {
        "Abs", "Add", "And", "BatchNormalization", "Cast", "Ceil", "Clip", "Concat", "Constant",
        "Conv", "Cos", "Div", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "Gemm",
        "GlobalAveragePool", "Greater", "Identity", "Less", "Log", "MatMul", "Max", "MaxPool", "Min",
        "Mul", "Neg", "Not", "Or", "Pow", "Range", "Reciprocal", "Relu", "Reshape", "Shape", "Sigmoid",
        "Sin", "Sqrt", "Sub", "Tanh", "Transpose", "Where",
    }
)


def _weightless_proto(model: ir.Model) -> onnx.ModelProto:
    """The model with its initializers turned into graph inputs (types and shapes kept, no data)."""
    graph = model.graph
    weights = list(graph.initializers.values())
    graph.initializers.clear()
    graph.inputs.extend(weights)
    try:
        return ir.serde.serialize_model(model)
    finally:
        for value in weights:
            graph.inputs.remove(value)
            graph.register_initializer(value)


def _restamp(proto: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """Keep every node as is at ``opset`` when its op only changed types since then."""
    for node in proto.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        try:
            onnx.defs.get_schema(node.op_type, opset, "")
        except onnx.defs.SchemaError as e:
            raise OpsetError(f"ONNX op {node.op_type} does not exist at opset {opset}.") from e
        if node.op_type not in TYPE_ONLY_CHANGES:
            raise OpsetError(f"ONNX op {node.op_type} changed meaning between opset {opset} and 18.")
    for entry in proto.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = opset
    return proto


def convert_opset(model: ir.Model, opset: int) -> ir.Model:
    """Return ``model`` converted to ``opset`` (default domain); the weights are reattached.

    Raises:
        OpsetError: Some node cannot be expressed at ``opset``.
    """
    proto = _weightless_proto(model)
    try:
        converted = onnx.version_converter.convert_version(proto, opset)
    except Exception as converter_error:  # the converter raises RuntimeError for missing adapters
        try:
            converted = _restamp(proto, opset)
        except OpsetError as e:
            raise OpsetError(
                f"Cannot export at opset_version={opset}: {e} "
                f"(onnx.version_converter: {str(converter_error).splitlines()[-1]}). "
                "onnxport translates natively to opsets 18..26; use opset_version=18 or newer."
            ) from e
    try:
        onnx.checker.check_model(converted, full_check=True)
    except Exception as e:  # ValidationError, or shape inference's InferenceError
        raise OpsetError(
            f"The model converted to opset {opset} is invalid: {type(e).__name__}: {e}. "
            "Use a newer opset_version (18..26 are translated natively)."
        ) from e
    new = ir.serde.deserialize_model(converted)
    for value in list(new.graph.inputs):
        original = model.graph.initializers.get(value.name or "")
        if original is not None:
            new.graph.inputs.remove(value)
            value.const_value = original.const_value
            new.graph.register_initializer(value)
    return new
