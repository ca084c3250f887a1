"""Convert a translated model to an opset below 18 with ``onnx.version_converter``.

onnxport translates at opset 18 or newer. For an older target (as torch.onnx.export does) the model
is converted with the ONNX version converter; the weights are detached first so the conversion
never copies them. If the converter cannot express a node at the target opset, the export fails:
a model is never stamped with one opset while holding nodes of another.
"""

from __future__ import annotations

import onnx
import onnx.version_converter
import onnx_ir as ir

from onnxport.errors import OpsetError


def convert_opset(model: ir.Model, opset: int) -> ir.Model:
    """Return ``model`` converted to ``opset`` (default domain).

    Raises:
        OpsetError: The ONNX version converter cannot convert some node.
    """
    graph = model.graph
    weights = {name: value.const_value for name, value in graph.initializers.items()}
    for value in graph.initializers.values():
        value.const_value = ir.tensor([], dtype=value.dtype or ir.DataType.FLOAT)  # placeholder
    try:
        proto = ir.serde.serialize_model(model)
    finally:
        for name, value in graph.initializers.items():
            value.const_value = weights[name]
    try:
        converted = onnx.version_converter.convert_version(proto, opset)
        onnx.checker.check_model(converted)
    except Exception as e:  # the converter raises RuntimeError/ValidationError with the op named
        raise OpsetError(
            f"Cannot export at opset_version={opset}: the ONNX version converter failed ({e}). "
            "onnxport translates natively to opsets 18..26; use opset_version=18 or newer."
        ) from e
    new = ir.serde.deserialize_model(converted)
    for name, value in new.graph.initializers.items():
        if name in weights:
            value.const_value = weights[name]
    return new
