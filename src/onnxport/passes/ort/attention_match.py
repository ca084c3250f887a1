"""Where a decoder's attention over a concatenated KV cache is: the patterns
:mod:`~onnxport.passes.ort.group_query_attention` rewrites.

Two forms of the same computation (``q``, ``K``, ``V`` in BNSH, ``K``/``V`` the past concatenated
with the new keys/values along the sequence axis, through transformers' ``repeat_kv``):

- ONNX ``Attention(q, K, V, mask?)`` (opset ≥ 23): transformers' sdpa path;
- the eager path that transformers keeps for attention logit softcapping (Gemma 2:
  ``attn_logit_softcapping``; ``eager_attention_forward`` in ``modeling_gemma2.py``)::

      scores = MatMul(q, Transpose(K, [0, 1, 3, 2])) * scale
      scores = Tanh(scores / softcap) * softcap        # when softcapping
      out    = MatMul(Softmax(scores + mask, axis=-1), V)

  The softcap is applied before the mask is added, which is the order of onnxruntime's
  GroupQueryAttention (``softcap`` attribute; checked against both orders in
  ``tests/passes/ort/test_group_query_attention.py``).

- the eager path with attention sinks (gpt-oss: ``module.sinks``, one learned logit per head,
  ``eager_attention_forward`` in ``modeling_gpt_oss.py``)::

      logits = Concat([q·Kᵀ·scale + mask, Expand(sinks)], axis=-1)
      probs  = Softmax(logits - ReduceMax(logits), axis=-1)[..., :-1]   # the sink column dropped
      out    = MatMul(probs, V)

  which is onnxruntime's GroupQueryAttention with the ``head_sink`` input (the sink joins the
  softmax's denominator only; checked against this formula in
  ``tests/passes/ort/test_group_query_attention.py``).

- the eager path with sinks as a scale (GraniteSWA: ``eager_attention_forward`` in
  ``modeling_granite_swa.py``)::

      out = MatMul(Softmax(logits), V) * Unsqueeze(Sigmoid(logsumexp(logits) - sinks), -1)

  the same computation (``sigmoid(lse - sink) = Σe^s / (Σe^s + e^sink)``, the sink in the
  denominator), so also ``head_sink``; ``logsumexp`` as onnxport translates it
  (``Log(ReduceSum(Exp(x - M))) + Squeeze(M)``, ``M`` the row maximum made 0 where infinite).

- XGLM's attention over ``[B * heads, S, T]`` batches (``torch.bmm``, a clamp at the float32
  lowest; :func:`_match_batched`), GPT-NeoX-Japanese's scores over such batches (``torch.baddbmm``
  onto zeros, scaled by ``alpha``; :func:`_eager_scores`), and GPT-Neo's scores under the positional causal or
  sliding-window mask onnxport builds for it (:func:`_positional_causal`).

All give a :class:`Match`; everything else (rotary, lengths, the rewrite) is shared. They differ
in what a query row whose mask hides every key (a left-padding position) gets
(:attr:`Match.empty_row`), which the rewrite reproduces: the kernel averages the row's causal
prefix of ``V`` (every score equally masked); ONNX Attention gives 0 (a boolean or ``-inf`` mask) or
the mean of all of ``V`` (a float mask whose lowest entries the translation halved,
:func:`halved_lowest`), eager's softmax the mean of all of ``V`` (every score equally the mask's minimum), the sinks form 0 as the kernel with
``head_sink`` does (the sink takes all the weight).
"""


from __future__ import annotations

import dataclasses
import math

import numpy as np
import onnx_ir as ir

from onnxport.passes.fusions import by_constant, producer, scalar
from onnxport.passes.fusions.repeat_kv import grouped

EMPTY_ROW_ZERO = "zero"  # ONNX Attention: the rewrite zeroes the row
EMPTY_ROW_PREFIX = "prefix"  # GPT-Neo: the rewrite puts the mean of V over the row's causal (windowed) prefix
EMPTY_ROW_MEAN = "mean"  # eager softmax: the rewrite puts the mean of all of V there
EMPTY_ROW_KERNEL = "kernel"  # the sinks form: the kernel already gives what the graph gives


@dataclasses.dataclass
class Match:
    """One attention to rewrite.

    Attributes:
        anchor: The node the rewrite is inserted before (the Attention node, or the eager form's
            last MatMul); its name names the GroupQueryAttention node and its first output is
            the attention output, ``[B, heads, S, head_size]``.
        query: ``q``, float32 ``[B, heads, S, head_size]``.
        mask: The additive float or boolean mask ``[B or 1, 1, S, T]``, or ``None`` (causal).
        scale: The factor of ``q·Kᵀ`` (``None``: ``1/√head_size``).
        softcap: Attention logit softcapping (0: none).
        empty_row: What the graph gives a query row whose mask hides every key:
            :data:`EMPTY_ROW_ZERO`, :data:`EMPTY_ROW_MEAN`, :data:`EMPTY_ROW_PREFIX` or :data:`EMPTY_ROW_KERNEL` (module
            docstring).
        key_concat, value_concat: The cache ``Concat`` nodes behind ``K`` and ``V``.
        output_chain_end: The ``[B, S, heads * head_size]`` value the output is reshaped to, when
            the graph does that right after (:func:`_output_chain`).
        sink: The attention sinks, float32 with ``heads`` elements (``[heads]`` or
            ``[1, heads, 1, 1]``), or ``None``.
        mask_scale: The factor on the mask too, when the graph scales the masked scores
            (CodeGen: ``(q·Kᵀ + mask) / √head_size``); the kernel's bias is then ``mask · scale``.
        output: The value the kernel's output stands for, ``[B, heads, S, head_size]``: the
            anchor's output, or the sink-scaled one (GraniteSWA; ``None``: the anchor's).
        window: The kernel's ``local_window_size`` when the scores' own positional mask is a
            sliding window (GPT-Neo's local layers, :func:`_positional_causal`), else ``None``.
    """

    anchor: ir.Node
    query: ir.Value
    mask: ir.Value | None
    scale: float | None
    softcap: float
    empty_row: str
    key_concat: ir.Node
    value_concat: ir.Node
    heads: int
    kv_heads: int
    head_size: int
    output_chain_end: ir.Value | None
    sink: ir.Value | None = None
    mask_scale: float = 1.0
    output: ir.Value | None = None
    window: int | None = None

    @property
    def replaced(self) -> ir.Value:
        """The ``[B, heads, S, head_size]`` value the kernel's output replaces."""
        return self.output if self.output is not None else self.anchor.outputs[0]


def _cache_concat(value: ir.Value | None) -> ir.Node | None:
    """The ``Concat(past, new, axis=2)`` behind an Attention K/V input (through repeat_kv)."""
    reshape = producer(value, "Reshape")
    if reshape is not None:
        expand = producer(reshape.inputs[0], "Expand")
        unsqueeze = producer(expand.inputs[0], "Unsqueeze") if expand is not None else None
        if unsqueeze is None:
            return None
        value = unsqueeze.inputs[0]
    concat = _concat_of_two(value, (2, -2))
    if concat is None:
        return None
    past = concat.inputs[0]
    if past is None or not _laid_out_input(past) or past.shape is None or len(past.shape) != 4:
        return None
    return concat


# Ops that only lay a graph input's values out again (no arithmetic).
_LAYOUT_OPS = frozenset({"Unsqueeze", "Squeeze", "Split", "Slice", "Reshape"})


def _laid_out_input(value: ir.Value) -> bool:
    """Whether ``value`` is a graph input, or one laid out by :data:`_LAYOUT_OPS` only (a
    multi-query GPT-BigCode's past: its ``key_value`` input unsqueezed and split into the key and
    the value; ``onnxport.hf.key_value.fused_key_value``)."""
    for _ in range(8):
        if value.is_graph_input():
            return True
        node = value.producer()
        if node is None or node.domain != "" or node.op_type not in _LAYOUT_OPS or node.inputs[0] is None:
            return False
        value = node.inputs[0]
    return False


def _computed_from(value: ir.Value, nodes: set[ir.Node]) -> bool:
    """Whether ``value`` is computed (directly or not) from an output of one of ``nodes``."""
    seen: set[int] = set()
    stack = [value.producer()]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        if node in nodes:
            return True
        seen.add(id(node))
        stack.extend(v.producer() for v in node.inputs if v is not None)
    return False


def _concat_of_two(value: ir.Value | None, axes: tuple[int, int]) -> ir.Node | None:
    """The ``Concat`` of two inputs along one of ``axes`` producing ``value``, else ``None``."""
    concat = producer(value, "Concat")
    axis = None if concat is None else concat.attributes.get("axis")
    if concat is None or len(concat.inputs) != 2 or axis is None or axis.as_int() not in axes:
        return None
    return concat


def _output_chain(out: ir.Value, hidden: int) -> ir.Value | None:
    """``Reshape?(out) → Transpose(0,2,1,3) → Reshape([B, S, hidden])``: its last value."""
    value = out
    node = _single_user(value)
    if node is not None and node.op_type == "Reshape" and _rank(node.outputs[0]) == 4:
        value = node.outputs[0]
        node = _single_user(value)
    if node is None or node.op_type != "Transpose":
        return None
    perm = node.attributes.get("perm")
    if perm is None or tuple(perm.as_ints()) != (0, 2, 1, 3):
        return None
    node = _single_user(node.outputs[0])
    if node is None or node.op_type != "Reshape":
        return None
    shape = node.outputs[0].shape
    if shape is None or len(shape) != 3 or shape[2] != hidden:
        return None
    return node.outputs[0]


def _single_user(value: ir.Value) -> ir.Node | None:
    """The one standard-domain node reading ``value`` (not a graph output), else ``None``."""
    uses = value.uses()
    if len(uses) != 1 or value.is_graph_output():
        return None
    node = next(iter(uses)).node
    return node if node.domain == "" else None


def _rank(value: ir.Value) -> int | None:
    return None if value.shape is None else len(value.shape)


def _complete(
    anchor: ir.Node,
    query: ir.Value | None,
    key: ir.Value | None,
    value: ir.Value | None,
    *,
    mask: ir.Value | None,
    scale: float | None,
    softcap: float,
    empty_row: str,
    sink: ir.Value | None = None,
    mask_scale: float = 1.0,
    output: ir.Value | None = None,
) -> Match | None:
    """The checks both forms share: float32 4-D ``q``, cache Concats, static head sizes."""
    if query is None or query.shape is None or len(query.shape) != 4:
        return None
    if query.dtype != ir.DataType.FLOAT:
        return None
    key_concat, value_concat = _cache_concat(key), _cache_concat(value)
    if key_concat is None or value_concat is None:
        return None
    if mask is not None and _computed_from(mask, {key_concat, value_concat}):
        return None  # Doge: the mask is computed from the cache; the kernel's present would feed its own input
    heads, head_size = query.shape[1], query.shape[3]
    past, past_value = key_concat.inputs[0], value_concat.inputs[0]
    assert past is not None and past.shape is not None
    kv_heads = past.shape[1]
    if not all(isinstance(d, int) for d in (heads, head_size, kv_heads)):
        return None
    # one head size for q, k and v (the kernel's); MiMo-V2-Flash's values are wider than its keys
    widths = [v.shape[3] if v is not None and v.shape is not None and len(v.shape) == 4 else None for v in (past, past_value)]
    if widths != [head_size, head_size]:
        return None
    assert isinstance(heads, int) and isinstance(head_size, int) and isinstance(kv_heads, int)
    if heads % kv_heads or head_size % 16:  # onnxruntime's CPU kernel needs head_size % 16 == 0
        return None
    chain = _output_chain(output if output is not None else anchor.outputs[0], heads * head_size)
    return Match(
        anchor=anchor, query=query, mask=mask, scale=scale, softcap=softcap,
        empty_row=empty_row, key_concat=key_concat,
        value_concat=value_concat, heads=heads, kv_heads=kv_heads, head_size=head_size,
        output_chain_end=chain, sink=sink, mask_scale=mask_scale, output=output,
    )  # fmt: skip


def match_attention(node: ir.Node) -> Match | None:
    """A fusable attention at ``node``: an ONNX ``Attention`` or the eager form's last MatMul."""
    if node.op_type == "Attention" and node.domain == "":
        return _match_onnx(node)
    if node.op_type == "MatMul" and node.domain == "":
        return _match_eager(node) or _match_batched(node)
    return None


def _match_onnx(node: ir.Node) -> Match | None:
    if len(node.inputs) not in (3, 4):
        return None
    if len(node.outputs) > 1 and any(o.uses() or o.is_graph_output() for o in node.outputs[1:]):
        return None
    softcap = node.attributes.get("softcap")  # ONNX's order (mask, then softcap) is not the kernel's
    if softcap is not None and softcap.as_float() != 0.0:
        return None
    mask = node.inputs[3] if len(node.inputs) == 4 else None
    causal = node.attributes.get("is_causal")
    if mask is None and (causal is None or causal.as_int() != 1):
        return None
    scale = node.attributes.get("scale")
    empty_row = EMPTY_ROW_MEAN if halved_lowest(mask) else EMPTY_ROW_ZERO
    return _complete(
        node, node.inputs[0], node.inputs[1], node.inputs[2], mask=mask,
        scale=None if scale is None else scale.as_float(), softcap=0.0, empty_row=empty_row,
    )  # fmt: skip


def halved_lowest(mask: ir.Value | None) -> bool:
    """Whether ``mask`` is ``Where(Equal(m, lowest), lowest / 2, m)``: the translation of a float
    mask that may hold the dtype's lowest value (``ops/nn/attention._lowest_not_minus_inf``). Its
    hidden entries are then finite, so a row hiding every key gets the uniform softmax (the mean of
    all of ``V``), as torch gives it (Falcon's ALiBi mask: ``masked_fill(alibi, hidden, finfo.min)``
    on left-padded rows), not the 0 of a boolean or ``-inf`` mask."""
    where = producer(mask, "Where")
    equal = None if where is None else producer(where.inputs[0], "Equal")
    if where is None or equal is None or mask is None or mask.dtype is None or not mask.dtype.is_floating_point():
        return False
    lowest = float(np.finfo(mask.dtype.numpy()).min)
    fill = scalar(where.inputs[1])
    return equal.inputs[0] is where.inputs[2] and scalar(equal.inputs[1]) == lowest and fill == lowest / 2


def _match_eager(node: ir.Node) -> Match | None:
    """``MatMul(Softmax(Tanh(q·Kᵀ·scale / cap)·cap + mask), V)``, ``MatMul(Softmax((q·Kᵀ + mask) /
    c), V)``, or the sinks form (see the module docstring)."""
    probs, value = node.inputs
    out = node.outputs[0]
    product = _grouped_at(node)
    if product is not None:  # RepeatKVPass's grouped product over the KV heads
        probs, value, out = product
    dropped = _without_last_column(probs)
    if dropped is not None:
        probs = dropped
    softmax = producer(probs, "Softmax")
    if softmax is None or len(probs.uses()) != 1:  # type: ignore[union-attr]
        return None
    axis = softmax.attributes.get("axis")
    if axis is not None and axis.as_int() not in (-1, 3):
        return None
    logits, sink, output = softmax.inputs[0], None, None
    if dropped is not None:
        with_sink = _sink_logits(logits)
        if with_sink is None:
            return None
        logits, sink = with_sink
    else:
        scaled = _sink_scaled(out, logits)
        if scaled is not None:  # GraniteSWA
            sink, output = scaled
    if output is None and out is not node.outputs[0]:
        output = out
    divided = by_constant(logits, "Div") if sink is None else None
    outer = 1.0
    if divided is not None and divided[1]:  # CodeGen: (q·Kᵀ + mask) / √head_size
        logits, outer = divided[0], 1.0 / divided[1]
    add = producer(logits, "Add")
    if add is None:
        return None
    for scores, mask in (add.inputs, reversed(add.inputs)):
        if mask is None or _rank(mask) != 4:
            continue
        positional = _positional_causal(scores)  # GPT-Neo: Where(i - j in window, scores, lowest)
        found = _eager_scores(scores if positional is None else positional[0])
        if found is None or (outer != 1.0 and (found[2] != 1.0 or found[3])):
            continue
        query, key, scale, softcap = found
        match = _complete(
            node, query, key, value, mask=mask, scale=scale * outer, softcap=softcap,
            empty_row=EMPTY_ROW_MEAN if sink is None else EMPTY_ROW_KERNEL, sink=sink, mask_scale=outer,
            output=output,
        )  # fmt: skip
        if match is not None and positional is not None:
            # a row whose mask hides every key keeps the positional mask's finite lowest on its
            # causal (windowed) prefix and -inf (lowest + lowest) elsewhere: the prefix's mean of V
            match.window, match.empty_row = positional[1], EMPTY_ROW_PREFIX
        return match
    return None


def _grouped_at(node: ir.Node) -> tuple[ir.Value | None, ir.Value | None, ir.Value] | None:
    """``(probs, V, out)`` when ``node`` is the MatMul of a grouped ``probs · V`` product
    (:func:`onnxport.passes.fusions.repeat_kv.grouped`) whose one reader reshapes it back to ``out``."""
    back = _single_user(node.outputs[0])
    found = None if back is None or back.op_type != "Reshape" else grouped(back.outputs[0])
    if back is None or found is None or found[2] is not node:
        return None
    return found[0], found[1], back.outputs[0]


def _positional_causal(value: ir.Value | None) -> tuple[ir.Value, int | None] | None:
    """``(scores, window)`` when ``value = Where(allowed, scores, lowest)`` with ``allowed`` the
    causal ``d >= 0`` or the sliding window ``d >= 0 and d < window`` of ``d = Sub(Unsqueeze(rows),
    Unsqueeze(Range(0, keys, 1)))``, ``rows`` a ``Range`` (plus an offset): the mask that
    :mod:`onnxport.capture.causal_buffers` builds for GPT-Neo from positions (query ``i`` at the
    end of the keys, key ``j``, ``d = i - j``), which is the kernel's causal mask and, for a local
    layer, its ``local_window_size`` (``j > i - window``, the convention of
    :mod:`~onnxport.passes.ort.local_window`). ``window`` is ``None`` for the causal form."""
    where = producer(value, "Where")
    if where is None or len(where.inputs) != 3:
        return None
    condition, scores, fill = where.inputs
    if scores is None or fill is None or fill.dtype != ir.DataType.FLOAT or scalar(fill) != float(np.finfo(np.float32).min):
        return None
    window = None
    both = producer(condition, "And")
    if both is not None:
        condition, below = both.inputs
        less = producer(below, "Less")
        limit = None if less is None else scalar(less.inputs[1])
        if limit is None or limit < 1 or limit != int(limit):
            return None
        window = int(limit)
    at_least = producer(condition, "GreaterOrEqual")
    if at_least is None or scalar(at_least.inputs[1]) != 0.0:
        return None
    if both is not None and less.inputs[0] is not at_least.inputs[0]:  # type: ignore[union-attr]
        return None
    distance = producer(at_least.inputs[0], "Sub")
    rows, columns = (None, None) if distance is None else (producer(v, "Unsqueeze") for v in distance.inputs)
    if rows is None or columns is None:
        return None
    keys = producer(columns.inputs[0], "Range")
    offset = producer(rows.inputs[0], "Add")
    queries = producer(rows.inputs[0] if offset is None else offset.inputs[0], "Range")
    if keys is None or queries is None or any(scalar(keys.inputs[i]) != v for i, v in ((0, 0.0), (2, 1.0))):
        return None
    return scores, window


def _match_batched(node: ir.Node) -> Match | None:
    """XGLM's attention over ``[B * heads, ...]`` batches (``torch.bmm`` in ``XGLMAttention``,
    ``modeling_xglm.py``; the query already scaled)::

        scores = Reshape(MatMul(Reshape(q), Transpose(Reshape(K), [0, 2, 1])), [B, heads, S, T])
        probs  = Softmax(Reshape(Max(scores + mask, lowest), [B * heads, S, T]))
        out    = Reshape(MatMul(Reshape(probs), Reshape(V)), [B, heads, S, head_size])

    ``q``, ``K``, ``V`` ``[B, heads, ., head_size]``; the clamp at the float32 lowest changes
    nothing a softmax sees (the mask's lowest plus a score is that lowest), and a row whose mask
    hides every key gets the mean of all of ``V``, as eager's softmax."""
    probs, value = node.inputs
    reshaped = producer(value, "Reshape")
    while (inner := _unreshaped(probs)) is not probs:
        probs = inner
    softmax = producer(probs, "Softmax")
    if reshaped is None or softmax is None or len(softmax.outputs[0].uses()) != 1:
        return None
    clamp = producer(_unreshaped(softmax.inputs[0]), "Max")
    if clamp is None or len(clamp.inputs) != 2 or scalar(clamp.inputs[1]) != float(np.finfo(np.float32).min):
        return None
    add = producer(clamp.inputs[0], "Add")
    if add is None:
        return None
    users = [u.node for u in node.outputs[0].uses()]
    output = users[0].outputs[0] if len(users) == 1 and users[0].op_type == "Reshape" else None
    if output is None or _rank(output) != 4:
        return None
    for scores, mask in (add.inputs, reversed(add.inputs)):
        found = _eager_scores(scores) if _unreshaped(scores) is not scores else None  # the batched form only
        if found is None or found[3] or mask is None or _rank(mask) != 4:
            continue
        query, key, scale, _ = found
        return _complete(
            node, query, key, reshaped.inputs[0], mask=mask, scale=scale, softcap=0.0,
            empty_row=EMPTY_ROW_MEAN, output=output,
        )  # fmt: skip
    return None


def _heads_merged(value: ir.Value | None) -> ir.Value | None:
    """``x`` (``[B, heads, L, D]``) when ``value = Reshape(x)`` is ``[B * heads, L, D]``: the same
    last two dims (a static or symbolic check; unknown shapes pass, the Reshape back to ``[B,
    heads, S, T]`` after the scores then holds them to it), else ``None``."""
    reshape = producer(value, "Reshape")
    if reshape is None or value is None:
        return None
    source = reshape.inputs[0]
    if source is None or source.shape is None or len(source.shape) != 4:
        return None
    if value.shape is not None and (len(value.shape) != 3 or list(value.shape)[1:] != list(source.shape)[2:]):
        return None
    return source


def _unreshaped(value: ir.Value | None) -> ir.Value | None:
    """``x`` when ``value = Reshape(x, ...)``, else ``value``."""
    reshape = producer(value, "Reshape")
    return value if reshape is None else reshape.inputs[0]


def _sink_scaled(out: ir.Value, logits: ir.Value | None) -> tuple[ir.Value, ir.Value] | None:
    """``(sinks, scaled)`` when ``out``'s one reader makes ``scaled = out *
    Unsqueeze(Sigmoid(logsumexp(logits) - sinks), -1)`` (the module docstring's GraniteSWA form)."""
    mul = _single_user(out)
    if mul is None or mul.op_type != "Mul" or logits is None:
        return None
    other = mul.inputs[1] if mul.inputs[0] is out else mul.inputs[0]
    unsqueeze = producer(other, "Unsqueeze")
    if unsqueeze is None or not _last_axis(unsqueeze.inputs[1]):
        return None
    sigmoid = producer(_uncast(unsqueeze.inputs[0]), "Sigmoid")
    sub = None if sigmoid is None else producer(_uncast(sigmoid.inputs[0]), "Sub")
    if sub is None or _logsumexp_of(sub.inputs[0]) is not logits:
        return None
    sinks = sub.inputs[1]
    if sinks is None or sinks.dtype != ir.DataType.FLOAT or sinks.shape is None:
        return None
    dims = list(sinks.shape)
    if len(dims) != 3 or dims[0] != 1 or dims[2] != 1 or not isinstance(dims[1], int):
        return None  # one sink per head, [1, heads, 1]
    return sinks, mul.outputs[0]


def _uncast(value: ir.Value | None) -> ir.Value | None:
    """``x`` when ``value = Cast(x, to=FLOAT)`` of a float32 ``x`` (a no-op), else ``value``."""
    cast = producer(value, "Cast")
    if cast is not None and cast.inputs[0] is not None and cast.inputs[0].dtype == ir.DataType.FLOAT:
        return cast.inputs[0]
    return value


def _logsumexp_of(value: ir.Value | None) -> ir.Value | None:
    """``x`` when ``value = Log(ReduceSum(Exp(x - M), -1)) + Squeeze(M, -1)``, ``M = ReduceMax(x,
    -1)`` or that made 0 where infinite (``Where(Abs(A) == inf, 0, A)``): onnxport's
    ``aten.logsumexp`` over the last axis; else ``None``."""
    add = producer(value, "Add")
    if add is None:
        return None
    log, squeeze = producer(add.inputs[0], "Log"), producer(add.inputs[1], "Squeeze")
    total = None if log is None else producer(log.inputs[0], "ReduceSum")
    exp = None if total is None else producer(total.inputs[0], "Exp")
    sub = None if exp is None else producer(exp.inputs[0], "Sub")
    if squeeze is None or sub is None or sub.inputs[1] is not squeeze.inputs[0] or len(total.inputs) < 2:  # type: ignore[union-attr]
        return None
    if not _last_axis(total.inputs[1]):  # type: ignore[union-attr]
        return None
    maximum = sub.inputs[1]
    where = producer(maximum, "Where")
    if where is not None:
        maximum = where.inputs[2]
    reduce = producer(maximum, "ReduceMax")
    x = sub.inputs[0]
    if reduce is None or reduce.inputs[0] is not x or len(reduce.inputs) < 2 or not _last_axis(reduce.inputs[1]):
        return None
    return x


def _last_axis(value: ir.Value | None) -> bool:
    return value is not None and scalar(value) in (-1.0, 3.0)


def _without_last_column(value: ir.Value | None) -> ir.Value | None:
    """``x`` when ``value = x[..., :-1]`` (a 4-D ``Slice`` dropping the last column), else ``None``."""
    node = producer(value, "Slice")
    if node is None or len(node.inputs) < 4 or len(value.uses()) != 1:  # type: ignore[union-attr]
        return None
    data, starts, ends, axes, *steps = node.inputs
    if data is None or _rank(data) != 4:
        return None
    if scalar(starts) != 0.0 or scalar(ends) != -1.0 or not _last_axis(axes):
        return None
    if steps and steps[0] is not None and scalar(steps[0]) != 1.0:
        return None
    return data


def _sink_logits(value: ir.Value | None) -> tuple[ir.Value, ir.Value] | None:
    """``(logits, sinks)`` when ``value = C - ReduceMax(C)`` (or ``C``) with ``C =
    Concat([logits, Expand(sinks)], axis=-1)``, ``sinks`` float32 with one element per head."""
    sub = producer(value, "Sub")
    if sub is not None:
        reduce = producer(sub.inputs[1], "ReduceMax")
        if reduce is None or reduce.inputs[0] is not sub.inputs[0]:
            return None
        value = sub.inputs[0]
    concat = _concat_of_two(value, (-1, 3))
    if concat is None:
        return None
    logits, expanded = concat.inputs
    expand = producer(expanded, "Expand")
    sinks = None if expand is None else expand.inputs[0]
    if logits is None or sinks is None or sinks.dtype != ir.DataType.FLOAT or sinks.shape is None:
        return None
    dims = list(sinks.shape)
    if len(dims) != 4 or dims[0] != 1 or dims[2:] != [1, 1] or not isinstance(dims[1], int):
        return None
    reshape = producer(sinks, "Reshape")
    flat = None if reshape is None else reshape.inputs[0]
    if flat is not None and flat.shape is not None and list(flat.shape) == [dims[1]]:
        sinks = flat  # the parameter itself, [heads]
    return logits, sinks


def _eager_scores(scores: ir.Value | None) -> tuple[ir.Value | None, ir.Value | None, float, float] | None:
    """``(q, K, scale, softcap)`` when ``scores = Tanh(q·Kᵀ·scale / softcap)·softcap`` (or
    without the softcapping, softcap 0; without the scale, scale 1; ``q·Kᵀ / c``: scale ``1/c``),
    ``Kᵀ`` a ``Transpose(K, [0, 1, 3, 2])``. Or the same over ``[B * heads, ., .]`` batches:
    ``scores = Reshape(MatMul(Reshape(q), Transpose(Reshape(K), [0, 2, 1])) · scale)``
    (GPT-NeoX-Japanese's ``torch.baddbmm`` onto zeros, whose zeros the translation leaves out;
    :func:`_heads_merged`)."""
    batched = _unreshaped(scores)
    reshaped = batched is not scores and grouped(scores) is None  # a grouped product is 4-D throughout
    if reshaped:
        scores = batched
    capped = _softcapped(scores)
    if capped is None:
        return None
    raw, softcap = capped
    scaled, divided = by_constant(raw, "Mul"), by_constant(raw, "Div")
    if scaled is not None:
        logits, scale = scaled
    elif divided is not None and divided[1]:  # GPT-J, CodeGen: q·Kᵀ / √head_size
        logits, scale = divided[0], 1.0 / divided[1]
    else:
        logits, scale = raw, 1.0
    product = grouped(logits)  # RepeatKVPass's grouped product over the KV heads
    matmul = producer(logits, "MatMul")
    query: ir.Value | None
    key_t: ir.Value | None
    if product is not None and not reshaped:
        query, key_t = product[0], product[1]
    elif matmul is not None:
        query, key_t = matmul.inputs
    else:
        return None
    transpose = producer(key_t, "Transpose")
    perm = None if transpose is None else transpose.attributes.get("perm")
    if transpose is None or perm is None:
        return None
    if not reshaped and tuple(perm.as_ints()) == (0, 1, 3, 2):
        return query, transpose.inputs[0], scale, softcap
    if reshaped and tuple(perm.as_ints()) == (0, 2, 1):
        return _heads_merged(query), _heads_merged(transpose.inputs[0]), scale, softcap
    return None


def _softcapped(value: ir.Value | None) -> tuple[ir.Value, float] | None:
    """``(scores, cap)`` when ``value = Tanh(scores / cap) * cap`` (or ``Tanh(scores · 1/cap) ·
    cap``), ``(value, 0.0)`` when it is plain ``scores``; ``None`` for other Tanh uses."""
    outer = by_constant(value, "Mul")
    tanh = None if outer is None else producer(outer[0], "Tanh")
    if outer is None or tanh is None:
        return None if value is None else (value, 0.0)
    cap = outer[1]
    inner = by_constant(tanh.inputs[0], "Div")
    if inner is not None and math.isclose(inner[1], cap, rel_tol=1e-6):
        return inner[0], cap
    inner = by_constant(tanh.inputs[0], "Mul")
    if inner is not None and cap and math.isclose(inner[1], 1 / cap, rel_tol=1e-6):
        return inner[0], cap
    return None
