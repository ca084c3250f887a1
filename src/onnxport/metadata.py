"""The ``metadata_props`` keys onnxport writes and reads, shared by translate/, passes/, runtime, verify/.

The ``pkg.torch.*`` and ``namespace`` keys are the ones ``torch.onnx.export(dynamo=True)`` writes
(``torch/onnx/_internal/exporter/_core.py``, "metadata_props"), so tools that read torch.onnx models
read ours. The ``pkg.onnxport.*`` keys are onnxport's own (complex numbers, see
docs/architecture.md).
"""

from __future__ import annotations

import onnx_ir as ir

# Node metadata stamped by the dispatcher on every node a translation emits.
KEY_NAMESPACE = "namespace"
KEY_CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
KEY_FX_NODE = "pkg.torch.onnx.fx_node"
KEY_NAME_SCOPES = "pkg.torch.onnx.name_scopes"
KEY_STACK_TRACE = "pkg.torch.onnx.stack_trace"

# Graph inputs/outputs and the graph: where the values came from in the ExportedProgram.
KEY_INPUT_KIND = "pkg.torch.export.graph_signature.InputSpec.kind"
KEY_INPUT_PERSISTENT = "pkg.torch.export.graph_signature.InputSpec.persistent"
KEY_OUTPUT_KIND = "pkg.torch.export.graph_signature.OutputSpec.kind"
KEY_ORIGINAL_NAME = "pkg.torch.onnx.original_node_name"
KEY_GRAPH_SIGNATURE = "pkg.torch.export.ExportedProgram.graph_signature"
KEY_RANGE_CONSTRAINTS = "pkg.torch.export.ExportedProgram.range_constraints"

# Complex numbers: a complex tensor is carried as a real tensor with a trailing dimension of 2
# (real, imaginary), the layout of ONNX DFT. Graph inputs and outputs so encoded carry this key,
# valued with the torch dtype ("complex64").
KEY_COMPLEX_AS_REAL = "pkg.onnxport.complex_as_real"
# Graph key: the same for the outputs, by position ("0:complex64,2:complex128"), which survives
# passes that merge output values (identity elimination of ``(y, view_as_real(y))``).
KEY_COMPLEX_OUTPUTS = "pkg.onnxport.complex_outputs"
# ``ir.Value.meta`` key (in memory only): the complex torch dtype a real-view value stands for.
COMPLEX_META = "onnxport.complex_dtype"


def complex_outputs(graph: ir.Graph) -> dict[int, str]:
    """Output index → complex dtype name for the outputs carried as real ``[..., 2]`` tensors: the
    graph-level record (``pkg.onnxport.complex_outputs``), else each output's own metadata."""
    record = graph.metadata_props.get(KEY_COMPLEX_OUTPUTS)
    if record is not None:
        return {int(i): dtype for i, dtype in (item.split(":") for item in record.split(",") if item)}
    return {
        i: value.metadata_props[KEY_COMPLEX_AS_REAL]
        for i, value in enumerate(graph.outputs)
        if value.metadata_props.get(KEY_COMPLEX_AS_REAL)
    }


def stamp_complex_outputs(graph: ir.Graph) -> None:
    """Make each output's ``pkg.onnxport.complex_as_real`` agree with the graph-level record again
    (passes that merge output values may have copied or dropped it)."""
    marked = complex_outputs(graph)
    for i, value in enumerate(graph.outputs):
        if i in marked:
            value.metadata_props[KEY_COMPLEX_AS_REAL] = marked[i]
        else:
            value.metadata_props.pop(KEY_COMPLEX_AS_REAL, None)
