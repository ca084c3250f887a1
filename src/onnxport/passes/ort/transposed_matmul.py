"""``MatMul(A, W.T)`` over a lazily transposed weight → ``com.microsoft.FusedMatMul(A, W, transB=1)``.

A PyTorch ``Linear`` stores ``W`` as ``[N, K]``; standard ONNX ``MatMul`` wants ``[K, N]``, so the
standard export writes every projection transposed (:mod:`onnxport.passes.weight_layout`),
a full copy of each weight at save time (~1 s of a 3.4 GB export on this machine). onnxruntime's
``FusedMatMul`` (ContribOperators.md: MatMul with ``transA``/``transB``/``alpha``) reads ``W`` as it
is: its CPU kernel is the ``MatMul<float>`` kernel, which packs the constant B once at session
creation with the transpose applied (``GemmPackBFp32(..., trans_b, ...)`` in onnxruntime's
``core/providers/cpu/math/matmul.cc``), so running costs the same and the export copies nothing.
onnxruntime-genai's builder transposes instead (``make_matmul_fp32``, ``builders/base.py``).

A tied LM head (GPT-2, OPT, Gemma, Llama 3.2: the embedding table is also the output projection)
reads the table through a ``Transpose`` node, since the table is stored once for the ``Gather``;
that MatMul becomes ``FusedMatMul(x, table, transB=1)`` too, and the Transpose goes, so
onnxruntime neither transposes nor (constant folding at load) keeps a transposed copy of the table.

Run last (:func:`onnxport.passes.ort.finish_for_onnxruntime`), after quantization, whose
``MatMulNBits`` matcher reads ``MatMul``: only float32 MatMuls whose ``B`` is a
:func:`onnxport.weights.transposed` ``(1, 0)`` of another tensor (a weight or the joined rows of a
packed projection) change; the initializer becomes that tensor, under its own name.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.fusions import drop_unused_initializer, substitute, transposed_initializer
from onnxport.passes.ort.kernels import MICROSOFT, has_kernel
from onnxport.weights.tensor import WeightTensor


def _source(graph: ir.Graph, b: ir.Value, tensor: WeightTensor) -> ir.Value | None:
    """An initializer holding ``tensor``'s untransposed base (existing or new), else ``None``."""
    base = tensor.bases[0]
    slot = base.slot if isinstance(base, WeightTensor) else None
    name = slot.name if slot is not None else base.name or f"{b.name}.source"  # a weight: its state_dict key
    existing = graph.initializers.get(name)
    if existing is not None:
        return existing if existing.const_value is base else None
    value = ir.Value(name=name, shape=ir.Shape(base.shape.numpy()), type=ir.TensorType(base.dtype), const_value=base)
    value.metadata_props.update(b.metadata_props)
    graph.register_initializer(value)
    return value


class TransposedMatMulPass(ir.passes.InPlacePass):
    """Rewrite each qualifying MatMul (see the module docstring) to FusedMatMul(transB=1)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if not has_kernel("FusedMatMul"):
            return ir.passes.PassResult(model, False)
        graph = model.graph
        modified = False
        for node in list(graph):
            if node.op_type != "MatMul" or node.domain != "" or len(node.inputs) != 2:
                continue
            a, b = node.inputs
            if a is None or a.shape is None or a.shape.rank() < 2 or b is None:
                continue
            transpose = transposed_initializer(b)
            if transpose is not None:
                source = transpose.inputs[0]
            else:
                tensor = b.const_value if b.is_initializer() and not b.is_graph_input() else None
                if not isinstance(tensor, WeightTensor) or tensor.perm != (1, 0) or tensor.dtype != ir.DataType.FLOAT:
                    continue
                source = _source(graph, b, tensor)
            if source is None:
                continue
            fused = ir.node("FusedMatMul", [a, source], {"transB": 1, "alpha": 1.0}, domain=MICROSOFT, name=node.name)
            substitute(graph, fused, node, node.outputs[0])
            graph.remove(node, safe=True)
            if transpose is not None and not b.uses():
                graph.remove(transpose, safe=True)
            else:
                drop_unused_initializer(graph, b)
            modified = True
        if modified:
            model.opset_imports.setdefault(MICROSOFT, 1)
        return ir.passes.PassResult(model, modified)
