"""A gated MLP's gate and up projections stored as one (``gate_up_proj``) → two MatMuls.

Phi-3, Phi-3.5 and Phi-4-mini (and GLM-4's MLP) keep the two projections in one weight and split
the product: ``gate, up = gate_up_proj(x).chunk(2, dim=-1)``, captured as ``Split(MatMul(x, W),
axis=-1)`` with ``W`` of shape ``[K, 2N]``. onnxruntime 1.31 ran that slower than two MatMuls
over the column halves of ``W`` (2 threads, Phi-3.5-mini's MLP, ``K`` 3072, ``N`` 8192, with SiLU
and the product: 1.10 / 1.12 at 1 / 4 rows — the decode steps — 1.06 at 128 rows and 1.01 at 512;
``/work/s44/gateup.py``, session 44), and onnxruntime-genai's builder writes the two MatMuls
(``make_mlp_unpacked`` in ``builders/base.py``, read, nothing copied). So does this pass: each half
is a lazy column slice of the weight (:func:`onnxport.weights.columns`: for a weight written
transposed, only its rows are read), computed when written; MatMulNBits then quantizes each half
(blocks run along ``K``: the same bytes as the halves of the whole).

Applies to a standard MatMul with a 2-D float initializer weight
(:func:`~onnxport.passes.ort.packed_matmul.member`) whose output only feeds a last-axis ``Split``
into two equal halves that meet in one ``Mul`` (:func:`~onnxport.passes.ort.packed_matmul.gated`).
A bias ``Add`` between them, or any other reader, leaves it as it is. All ops are standard.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport import weights
from onnxport.passes.fusions import constant_ints, drop_unused_initializer
from onnxport.passes.ort.packed_matmul import gated, member


def _halves(split: ir.Node, width: int) -> bool:
    """Whether ``split`` cuts its input's last axis (``width`` values) into two equal halves."""
    axis = split.attributes.get("axis")
    source = split.inputs[0]
    rank = source.shape.rank() if source is not None and source.shape is not None else None
    if axis is None or rank is None or axis.as_int() not in (-1, rank - 1) or len(split.outputs) != 2 or width % 2:
        return False
    if len(split.inputs) > 1 and split.inputs[1] is not None:
        return constant_ints(split.inputs[1]) == [width // 2] * 2
    return True  # no sizes: equal parts (num_outputs 2)


class UnpackedGateUpPass(ir.passes.InPlacePass):
    """Split each packed gate|up MatMul into two (module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for node in list(graph):
            m = member(node)
            out = node.outputs[0]
            uses = list(out.uses())
            if m is None or len(uses) != 1 or out.is_graph_output():
                continue
            split = uses[0].node
            if split.op_type != "Split" or split.domain != "" or not _halves(split, m.n):
                continue
            if not gated(split.outputs[0], split.outputs[1]):
                continue
            half, name = m.n // 2, m.weight.name or f"{node.name}.weight"
            for i, old in enumerate(split.outputs):
                part = f"{name}.part{i}"
                value = ir.Value(name=part, shape=ir.Shape([m.k, half]), type=ir.TensorType(m.dtype),
                                 const_value=weights.columns(m.tensor, i * half, (i + 1) * half, part))  # fmt: skip
                graph.register_initializer(value)
                matmul = ir.node("MatMul", [node.inputs[0], value], name=f"{node.name}.part{i}")
                graph.insert_before(split, matmul)
                new = matmul.outputs[0]
                new.shape, new.type = old.shape, old.type
                old.replace_all_uses_with(new, replace_graph_outputs=True)
                new.name, old.name = old.name, None
            graph.remove([split, node], safe=True)
            drop_unused_initializer(graph, m.weight)
            modified = True
        return ir.passes.PassResult(model, modified)
