"""A packed q|k|v projection fed whole to ``com.microsoft.GroupQueryAttention``.

After :mod:`~onnxport.passes.ort.packed_matmul`, q, k and v are the three outputs of one
``Split(axis=-1)`` of a single projection. When those outputs go to one GroupQueryAttention as its
query, key and value and nowhere else — the shared-buffer graph, whose rotary the kernel applies
(``do_rotary=1``) — the Split is dropped and the projection is the ``query`` input with ``key`` and
``value`` left empty: the kernel's packed-QKV form (ContribOperators.md, GroupQueryAttention:
"query ... or packed QKV with shape (batch_size, sequence_length, d) where
d is (num_heads * head_size + 2 * kv_num_heads * head_size)"), as onnxruntime-genai's builder
feeds it (``make_attention``, ``builders/base.py``). The concat-cache graph rotates q and k
between the Split and the attention, so it does not match and is left as it is.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import producer
from onnxport.passes.ort.kernels import MICROSOFT


def _split_sizes(split: ir.Node) -> list[int] | None:
    if len(split.inputs) < 2 or split.inputs[1] is None:
        return None
    tensor = ir.convenience.get_const_tensor(split.inputs[1])
    return None if tensor is None else [int(v) for v in np.asarray(tensor.numpy()).reshape(-1)]


class PackedQKVPass(ir.passes.InPlacePass):
    """Feed each matching packed projection to its GroupQueryAttention whole (module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for node in list(graph):
            if node.op_type != "GroupQueryAttention" or node.domain != MICROSOFT or len(node.inputs) < 3:
                continue
            q, k, v = node.inputs[:3]
            split = producer(q, "Split")
            if split is None or k is None or v is None or len(split.outputs) != 3 or list(split.outputs) != [q, k, v]:
                continue
            axis = split.attributes.get("axis")
            source = split.inputs[0]
            last = -1 if source is None or source.shape is None else source.shape.rank() - 1
            if axis is None or source is None or axis.as_int() not in (-1, last):
                continue
            if any(len(out.uses()) != 1 for out in split.outputs):
                continue
            heads, kv_heads = (node.attributes[a].as_int() for a in ("num_heads", "kv_num_heads"))
            sizes = _split_sizes(split)
            if sizes is None or sizes[0] % heads or sizes[1] != sizes[2] or sizes[0] // heads * kv_heads != sizes[1]:
                continue
            node.replace_input_with(0, source)
            node.replace_input_with(1, None)
            node.replace_input_with(2, None)
            graph.remove(split, safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)
