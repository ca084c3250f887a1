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

transformers' eager attention (``eager_attention_forward``: Gemma 2's logit softcapping, gpt-oss's
sinks, any model loaded with ``attn_implementation="eager"``) multiplies by the copies instead::

    scores = MatMul(q, Transpose(repeat_kv(k), [0, 1, 3, 2]))     # [B, heads, S, T]
    out    = MatMul(probs, repeat_kv(v))                          # [B, heads, S, D]

Query heads ``g * n_rep .. g * n_rep + n_rep - 1`` all read KV head ``g``, so the ``n_rep`` query
heads of a group stacked along the rows are one matrix product with the group's keys: both products
become :func:`grouped` ones, ``Reshape(MatMul(Reshape(a, [0, kv_heads, -1, 0]), b), [0, heads, -1,
0])`` with ``b`` = ``Transpose(k)`` or ``v`` (``Reshape`` shape ``0``: the input's dimension; ``-1``:
``n_rep * S`` rows, then ``S`` again), reshapes that move no data; the softcapping, mask, sinks and
softmax between them are unchanged. Rewritten when ``a`` is 4-D with the copy's head count.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.fusions import int64_initializer, producer

_KEYS_PERM = (0, 1, 3, 2)


def _ints(value: ir.Value | None) -> list[int] | None:
    """The constant ints of ``value`` (an Unsqueeze's axes, a Reshape's shape), else ``None``."""
    if value is None or value.const_value is None:
        return None
    return [int(a) for a in value.const_value.numpy().reshape(-1)]


def unrepeated(value: ir.Value | None) -> tuple[ir.Value, int] | None:
    """``(k, kv_heads)`` when ``value`` is ``repeat_kv(k)`` as the module docstring shows, else ``None``."""
    reshape = producer(value, "Reshape")
    expand = None if reshape is None else producer(reshape.inputs[0], "Expand")
    unsqueeze = None if expand is None else producer(expand.inputs[0], "Unsqueeze")
    if value is None or unsqueeze is None or _ints(unsqueeze.inputs[1]) not in ([2], [-3]):
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


def _shape(graph: ir.Graph, dims: tuple[int, int, int, int]) -> ir.Value:
    """The int64 initializer holding ``dims`` (a Reshape's shape), one per value in the graph."""
    return int64_initializer(graph, list(dims), "repeat_kv.shape." + "_".join(str(d).replace("-", "m") for d in dims))


def grouped(value: ir.Value | None) -> tuple[ir.Value, ir.Value, ir.Node] | None:
    """``(a, b, product)`` when ``value`` is this pass's grouped product ``Reshape(MatMul(Reshape(a,
    [0, kv_heads, -1, 0]), b), [0, heads, -1, 0])`` (module docstring) with ``product`` its MatMul:
    the value ``MatMul(a, repeat_kv(b))`` was, ``a`` ``[B, heads, S, .]``, ``b`` ``[B, kv_heads, ., .]``."""
    back = producer(value, "Reshape")
    product = None if back is None else producer(back.inputs[0], "MatMul")
    split = None if product is None else producer(product.inputs[0], "Reshape")
    if back is None or product is None or split is None or split.inputs[0] is None or product.inputs[1] is None:
        return None
    a, b = split.inputs[0], product.inputs[1]
    outer, inner = _ints(back.inputs[1]), _ints(split.inputs[1])
    if a.shape is None or len(a.shape) != 4 or outer is None or inner is None:
        return None
    if outer != [0, a.shape[1], -1, 0] or len(inner) != 4 or inner[0::2] != [0, -1] or inner[3] != 0:
        return None
    return a, b, product


def _group(graph: ir.Graph, node: ir.Node) -> bool:
    """Make ``MatMul(a, Transpose(repeat_kv(k)))`` or ``MatMul(a, repeat_kv(v))`` a :func:`grouped`
    product over ``k`` / ``v``; ``False`` when ``node`` is neither."""
    a, b = node.inputs
    transpose = producer(b, "Transpose")
    keys = transpose is not None and tuple(transpose.attributes.get_ints("perm", ())) == _KEYS_PERM
    repeated = transpose.inputs[0] if keys and transpose is not None else b
    found = unrepeated(repeated)
    if found is None or repeated is None or repeated.shape is None or a is None or a.shape is None:
        return False
    source, kv_heads = found
    heads = repeated.shape[1]
    if len(a.shape) != 4 or a.shape[1] != heads or not isinstance(heads, int) or a.dtype is None:
        return False
    added: list[ir.Node] = [ir.node("Reshape", [a, _shape(graph, (0, kv_heads, -1, 0))])]
    rhs = source
    if keys:
        added.append(ir.node("Transpose", [source], attributes={"perm": list(_KEYS_PERM)}))
        rhs = added[-1].outputs[0]
    added.append(ir.node("MatMul", [added[0].outputs[0], rhs]))
    added.append(ir.node("Reshape", [added[-1].outputs[0], _shape(graph, (0, heads, -1, 0))]))
    for new in added:
        new.metadata_props.update(node.metadata_props)
        new.outputs[0].dtype = a.dtype
    graph.insert_before(node, added)
    old, out = node.outputs[0], added[-1].outputs[0]
    out.shape = old.shape
    old.replace_all_uses_with(out, replace_graph_outputs=True)
    out.name = old.name
    graph.remove(node, safe=True)
    return True


class RepeatKVPass(ir.passes.InPlacePass):
    """Let every ``Attention`` read the unrepeated keys and values, and make eager attention's
    products over the copies grouped ones (see the module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for node in list(model.graph):
            if node.op_type == "MatMul" and node.domain == "" and len(node.inputs) == 2:
                modified = _group(model.graph, node) or modified
                continue
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
