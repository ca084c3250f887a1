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

A checkpoint that stores the projection packed (Phi-3's ``qkv_proj``) gives three ``Slice``\ s of
its output instead of a Split (``qkv[..., :q_pos]``, ``qkv[..., q_pos:q_pos + kv]``,
``qkv[..., q_pos + kv:]``): the same rule applies when they are contiguous, in that order, and
cover the whole last axis.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.fusions import constant_ints, last_axis_slice, producer
from onnxport.passes.ort.kernels import MICROSOFT


def _split_source(q: ir.Value, k: ir.Value, v: ir.Value) -> tuple[ir.Value, list[int], list[ir.Node]] | None:
    """``(projection, [q, k, v widths], [Split])`` when q, k, v are one last-axis Split's outputs."""
    split = producer(q, "Split")
    if split is None or len(split.outputs) != 3 or list(split.outputs) != [q, k, v]:
        return None
    axis = split.attributes.get("axis")
    source = split.inputs[0]
    last = -1 if source is None or source.shape is None else source.shape.rank() - 1
    sizes = constant_ints(split.inputs[1]) if len(split.inputs) > 1 else None
    if axis is None or source is None or axis.as_int() not in (-1, last) or sizes is None:
        return None
    return source, sizes, [split]


def _sliced_source(q: ir.Value, k: ir.Value, v: ir.Value) -> tuple[ir.Value, list[int], list[ir.Node]] | None:
    """``(projection, [q, k, v widths], [Slices])`` when q, k, v are contiguous last-axis Slices
    of one rank-3 projection covering all of its known last dimension."""
    parts = [last_axis_slice(x, 3) for x in (q, k, v)]
    if any(p is None for p in parts):
        return None
    (source, a0, a1), (s1, b0, b1), (s2, c0, c1) = parts  # type: ignore[misc]
    width = source.shape[-1] if source.shape is not None and source.shape.rank() == 3 else None
    if s1 is not source or s2 is not source or not isinstance(width, int) or a0 != 0 or b0 != a1 or c0 != b1:
        return None
    if b1 <= b0 or c1 < width or a1 <= 0 or c0 >= width:
        return None
    return source, [a1, b1 - b0, width - c0], [x.producer() for x in (q, k, v)]  # type: ignore[misc]


class PackedQKVPass(ir.passes.InPlacePass):
    """Feed each matching packed projection to its GroupQueryAttention whole (module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        modified = False
        for node in list(graph):
            if node.op_type != "GroupQueryAttention" or node.domain != MICROSOFT or len(node.inputs) < 3:
                continue
            q, k, v = node.inputs[:3]
            if q is None or k is None or v is None or any(len(x.uses()) != 1 for x in (q, k, v)):
                continue
            found = _split_source(q, k, v) or _sliced_source(q, k, v)
            if found is None:
                continue
            source, sizes, producers = found
            heads, kv_heads = (node.attributes[a].as_int() for a in ("num_heads", "kv_num_heads"))
            if sizes[0] % heads or sizes[1] != sizes[2] or sizes[0] // heads * kv_heads != sizes[1]:
                continue
            node.replace_input_with(0, source)
            node.replace_input_with(1, None)
            node.replace_input_with(2, None)
            for unused in producers:
                graph.remove(unused, safe=True)
            modified = True
        return ir.passes.PassResult(model, modified)
