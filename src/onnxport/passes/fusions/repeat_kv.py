"""``Attention`` over keys and values repeated per query head → ``Attention`` over the KV heads.

transformers repeats each key/value head for its group of query heads before attention
(``repeat_kv`` in every grouped-query decoder's modeling file, ``torch.repeat_interleave`` on the
heads axis), which torch.export records as::

    key = Reshape(Expand(Unsqueeze(k, axes=[2]), [B, kv_heads, n_rep, T, D]), [B, kv_heads * n_rep, T, D])

and feeds ``Attention`` (opset 23) the ``[B, heads, T, D]`` copy. ONNX ``Attention`` takes
grouped-query inputs itself (ONNX operator spec, Attention-23: 4-D ``K``/``V`` with
``kv_num_heads`` heads, ``q_num_heads`` a multiple; query head ``h`` attends with KV head
``h // (q_num_heads / kv_num_heads)``), the same pairing as ``repeat_interleave``. So both
inputs become ``k``/``v`` themselves and the copies go: at every decode step the repeat wrote
``2 * heads * T * D`` floats per layer (0.85B Llama, 32 heads over 8 KV heads of 64, past 1024:
16 MB a layer), and onnxruntime 1.31's CPU kernel attends over the unrepeated heads itself. The
standard graph of that Llama (16 layers) decodes a token in 0.85x the time at past 1024 and batch
1, 0.60x at batch 4, with the same logits (``bench/repeat_kv_speed.py``, session 42).

Rewritten only when ``Q`` is 4-D, both ``K`` and ``V`` are such repeats of 4-D values with the
same number of KV heads and the ``Attention`` has no past inputs; the shapes prove the pattern (the Unsqueeze
on axis 2, the Reshape keeping batch, length and head size and multiplying the heads).
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.fusions import producer


def _axes(value: ir.Value | None) -> list[int] | None:
    if value is None or value.const_value is None:
        return None
    return [int(a) for a in value.const_value.numpy().reshape(-1)]


def unrepeated(value: ir.Value | None) -> tuple[ir.Value, int] | None:
    """``(k, kv_heads)`` when ``value`` is ``repeat_kv(k)`` as the module docstring shows, else ``None``."""
    reshape = producer(value, "Reshape")
    expand = None if reshape is None else producer(reshape.inputs[0], "Expand")
    unsqueeze = None if expand is None else producer(expand.inputs[0], "Unsqueeze")
    if value is None or unsqueeze is None or _axes(unsqueeze.inputs[1]) not in ([2], [-3]):
        return None
    source = unsqueeze.inputs[0]
    if source is None or source.shape is None or value.shape is None:
        return None
    before, after = list(source.shape), list(value.shape)
    if len(before) != 4 or len(after) != 4 or before[0] != after[0] or before[2:] != after[2:]:
        return None
    kv_heads, heads = before[1], after[1]
    if not isinstance(kv_heads, int) or not isinstance(heads, int) or kv_heads < 1 or heads % kv_heads:
        return None
    return source, kv_heads


class RepeatKVPass(ir.passes.InPlacePass):
    """Let every ``Attention`` read the unrepeated keys and values (see the module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for node in model.graph:
            query = node.inputs[0] if node.inputs else None
            if node.op_type != "Attention" or node.domain != "" or len(node.inputs) > 4 or "kv_num_heads" in node.attributes:
                continue
            if query is None or query.shape is None or len(query.shape) != 4:  # 3-D inputs name their heads in attributes
                continue
            key, value = unrepeated(node.inputs[1]), unrepeated(node.inputs[2])
            if key is None or value is None or key[1] != value[1]:
                continue
            node.replace_input_with(1, key[0])
            node.replace_input_with(2, value[0])
            modified = True
        return ir.passes.PassResult(model, modified)
