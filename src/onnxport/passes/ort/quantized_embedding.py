"""``Gather(table, input_ids)`` → ``com.microsoft.GatherBlockQuantized`` (int4/int8 embeddings).

A tied LM head (:mod:`onnxport.passes.ort.matmul_nbits`: ``MatMul(x, Transpose(table))``) is
quantized from ``table.T``; its MatMulNBits ``B`` is ``[V, K / block, block * bits / 8]`` bytes,
i.e. the table's rows quantized block-wise along K. onnxruntime's ``GatherBlockQuantized``
(ContribOperators.md: uint8 ``data`` packed along the last axis, low bits first, ``gather_axis=0``,
``quantize_axis=1``; default zero point ``2**(bits-1)`` for uint8 data, MatMulNBits' symmetric
one) reads those same bytes as ``[V, K * bits / 8]``, so the embedding lookup shares the head's
tensors through a ``Reshape`` and the float table is no longer written: Qwen3-0.6B's int4 folder
shrinks by its 622 MB table. onnxruntime-genai's builder does the same for tied embeddings
(``make_embedding_lookup``, ``builders/base.py``: ``shared_embeddings``, its default when the
config ties them).

``QuantizeOptions.embeddings``: ``"tied"`` (default) rewrites only lookups whose table the head
shares, adding no error beyond the head's; ``"all"`` also quantizes untied tables (their own
tensors, computed when written like a MatMulNBits weight); ``"none"`` keeps every ``Gather``.
Only tables whose row length is a multiple of the block size are rewritten (no padded rows).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import drop_unused_initializer, float_initializer, substitute
from onnxport.passes.ort.kernels import MICROSOFT, has_kernel
from onnxport.passes.ort.matmul_nbits import (
    QuantizedPart,
    QuantizeOptions,
    SharedQuantization,
    part_shapes,
    register_parts,
)
from onnxport.weights import transposed


class QuantizedEmbeddingPass(ir.passes.InPlacePass):
    """Rewrite embedding lookups to GatherBlockQuantized (module docstring); run after
    :class:`~onnxport.passes.ort.matmul_nbits.MatMulNBitsPass`.

    Args:
        options: The quantization (bits, block size, symmetry, ``embeddings``).
        report: Receives an untied table's quantization error when it is written.
    """

    def __init__(self, options: QuantizeOptions, report: dict[str, dict[str, float]] | None = None) -> None:
        super().__init__()
        self.options = options
        self.report: dict[str, dict[str, float]] = {} if report is None else report

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if self.options.embeddings == "none" or not has_kernel("GatherBlockQuantized"):
            return ir.passes.PassResult(model, False)
        graph = model.graph
        modified = False
        for node in list(graph):
            table = _lookup_table(node, self.options.block_size)
            if table is None:
                continue
            parts = _head_parts(graph, table)
            if parts is None and self.options.embeddings == "all":
                parts = self._own_parts(graph, table)
            if parts is None:
                continue
            self._rewrite(graph, node, table, parts)
            modified = True
        if modified:
            model.opset_imports.setdefault(MICROSOFT, 1)
        return ir.passes.PassResult(model, modified)

    def _own_parts(self, graph: ir.Graph, table: ir.Value) -> dict[str, ir.Value]:
        """The table's own quantized tensors (as a MatMulNBits weight of ``table.T``)."""
        o = self.options
        tensor = table.const_value
        assert tensor is not None and table.name is not None
        vocab, width = (int(d) for d in tensor.shape.numpy())
        name = f"{table.name}.T"
        shared = SharedQuantization(transposed(tensor, (1, 0), name), name, o, self.report)
        return register_parts(graph, shared, part_shapes((vocab,), width // o.block_size, o))

    def _rewrite(self, graph: ir.Graph, node: ir.Node, table: ir.Value, parts: dict[str, ir.Value]) -> None:
        o = self.options
        tensor = table.const_value
        assert tensor is not None
        vocab, width = (int(d) for d in tensor.shape.numpy())
        shape = ir.Value(
            name=f"{parts['packed'].name}.rows_shape", shape=ir.Shape([2]), type=ir.TensorType(ir.DataType.INT64),
            const_value=ir.tensor(np.array([vocab, width * o.bits // 8], np.int64)),
        )  # fmt: skip
        if shape.name not in graph.initializers:
            graph.register_initializer(shape)
        rows = ir.node("Reshape", [parts["packed"], graph.initializers[str(shape.name)]])
        inputs = [rows.outputs[0], node.inputs[1], parts["scales"]]
        if "zero_points" in parts:
            inputs.append(parts["zero_points"])
        attributes = {"bits": o.bits, "block_size": o.block_size, "gather_axis": 0, "quantize_axis": 1}
        gather = ir.node("GatherBlockQuantized", inputs, attributes, domain=MICROSOFT, name=node.name)
        graph.insert_before(node, rows)
        substitute(graph, gather, node, node.outputs[0])
        graph.remove(node, safe=True)
        drop_unused_initializer(graph, table)


def _lookup_table(node: ir.Node, block_size: int) -> ir.Value | None:
    """The float32 ``[V, K]`` initializer of an embedding lookup ``Gather(table, ids, axis=0)``
    with ``K`` a multiple of ``block_size``, else ``None``."""
    if node.op_type != "Gather" or node.domain != "" or len(node.inputs) != 2:
        return None
    if node.attributes.get_int("axis", 0) != 0:
        return None
    table, ids = node.inputs
    tensor = float_initializer(table, 2)
    if tensor is None or ids is None or ids.dtype not in (ir.DataType.INT64, ir.DataType.INT32):
        return None
    return table if int(tensor.shape.numpy()[1]) % block_size == 0 else None


def _head_parts(graph: ir.Graph, table: ir.Value) -> dict[str, ir.Value] | None:
    """The MatMulNBits tensors of a tied LM head quantized from ``table.T``, else ``None``."""
    found: dict[str, ir.Value] = {}
    for part in ("packed", "scales", "zero_points"):
        value = graph.initializers.get(f"{table.name}.T.{part}")
        lazy = None if value is None else value.const_value
        if value is None or not isinstance(lazy, QuantizedPart):
            continue
        base = lazy.shared.base
        if not getattr(base, "bases", None) or base.bases[0] is not table.const_value:  # type: ignore[attr-defined]
            return None
        found[part] = value
    return found if "packed" in found and "scales" in found else None
