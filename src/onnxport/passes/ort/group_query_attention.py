"""ONNX ``Attention`` over a concatenated KV cache → ``com.microsoft.GroupQueryAttention``.

The standard graph of a decoder layer (transformers' sdpa path, opset ≥ 23) is::

    present.key   = Concat(past_key, k_new, axis=2)          # [B, kv_heads, past + S, D]
    key           = Reshape(Expand(Unsqueeze(present.key)))  # repeat_kv → [B, heads, T, D]
    out           = Attention(q, key, value, mask)           # [B, heads, S, D]
    hidden        = Reshape(Transpose(Reshape(out)))         # [B, S, heads * D]

(:mod:`onnxport.passes.ort.attention_match` finds it, and also the eager softcapping form that
the shared-buffer graph fuses, and gpt-oss's eager form with attention sinks, whose sinks become
the kernel's ``head_sink`` input.) onnxruntime's GroupQueryAttention (docs/ContribOperators.md) takes ``query``/``key``/``value`` as
``[B, S, heads * D]``, the past in BNSH without repeating the KV heads, ``seqlens_k`` (int32
``[B]``, total length - 1) and ``total_sequence_length`` (int32 scalar), and returns the output and
the present (past + new, written in place when past and present share a buffer). The rewrite:

- query/key/value: the BNSH values fed to the Concat/Attention, as ``Reshape(Transpose(x))``;
- the mask becomes ``attention_bias`` (``0`` where attended, the float32 minimum elsewhere), so
  padding and sliding windows keep their exact semantics (a mask that differs between heads, a
  bias such as Falcon's ALiBi in it, keeps its attention standard: :func:`_per_head`); ``seqlens_k`` is ``T - 1`` for every
  row and ``causal=1`` (the fusion applies to decoders, whose mask already is causal);
- rows whose mask attends to nothing (left padding) give what the graph gave
  (:attr:`~onnxport.passes.ort.attention_match.Match.empty_row`): 0 for ONNX Attention, the mean
  of all of ``V`` for eager's softmax, the mean over the row's causal (windowed) prefix for
  GPT-Neo's positional mask (``CumSum`` of ``V``; its local layers also get
  ``local_window_size``). onnxruntime 1.31's kernel already gives 0 there when the bias hides
  with the float32 minimum (a boolean mask's bias), so the zeroing ``Mul`` (one per layer, run at
  every step) is added only for float masks or where
  :func:`~onnxport.passes.ort.kernels.gqa_zeroes_hidden_rows` finds the installed kernel does not;
- the output replaces the ``Reshape(Transpose(Reshape(out)))`` chain, or feeds an equivalent one.

Two options change this (:class:`GroupQueryAttentionPass`):

``rotary_positions`` (``max_position_embeddings``): the rotary embedding of q and k
(:mod:`onnxport.passes.ort.rotary`) is folded in: ``do_rotary=1`` with ``cos_cache``/``sin_cache``
initializers of ``(rotary_positions, R / 2)`` (``R`` the rotary dimension, ``head_size`` unless
partial: the kernel rotates the first ``R`` values of each head), q/k fed before the rotation. The kernel then
takes positions not from ``position_ids`` but from the lengths (onnxruntime
``contrib_ops/cpu/bert/group_query_attention.cc``): ``0 .. S - 1`` on the first prompt (past empty),
``seqlens_k[b] + 1 - S + i`` afterwards, i.e. ``past + i`` for every row. Rotary attention scores
depend only on position differences, so this equals the graph whenever ``position_ids`` is that
arange shifted by a constant per row -- for the attention output. ``present.key`` holds keys
rotated by the kernel's positions, so it equals transformers' cache only for unpadded rows
(``position_ids = past + i``): with left padding (``cumsum(mask) - 1``) the graph stays
self-consistent but no longer matches a cache made by transformers. onnxport therefore fuses the
rotary only with ``shared_buffer``, whose rows are unpadded by contract (onnxruntime-genai's builder
graphs make the same assumption); the concatenating graph keeps its rotary and honours
``position_ids``. Other positions (packed sequences, custom position ids) are never honoured by
the fused kernel, and the total length must stay below ``rotary_positions``. The kernel's own
``position_ids`` input (input 9) does not help: onnxruntime 1.31's CPU kernel reads it after the
first prompt only (on a batch-2 prompt with an empty past, position ids ``0..2`` and ``7..9`` gave
the same ``present.key``), so a left-padded row's prompt keys and its later queries would be
rotated from different origins.

The CPU kernel also refuses a batch above 1 with ``sequence_length > 1`` and a past ("batch_size
must be 1 when sequence_length > 1 and past context is given"): prompts and one-token steps run at
any batch, a batch continued by several tokens at once only on the standard graph.

``shared_buffer``: the graph onnxruntime-genai runs with ``past_present_share_buffer: true``:
``past_key_values.*`` are fixed ``(batch, kv_heads, max_length, head_size)`` buffers that the kernel
updates in place (``present.*`` has the same shape; genai binds both to one buffer; a plain
onnxruntime session gets a copy). ``seqlens_k = ReduceSum(attention_mask, 1) - 1`` and
``total_sequence_length = Shape(attention_mask)[1]`` as in the builder's ``make_attention_mask``
path; the kernel's causal mask over the first ``seqlens_k + 1`` buffer rows replaces the graph's
mask (no ``attention_bias``), so rows must not be left-padded. Every attention must fuse, else
:class:`~onnxport.errors.InputError`.

An attention over another layer's cache (Gemma 3n's and Gemma 4's KV-shared layers: one cache
Concat feeds several attentions) is not fused: the kernel appends its own new keys to its past. The
attention owning that cache is, and the others read its ``present``; with ``shared_buffer`` it is
not (:func:`_own_caches`).

onnxruntime-genai's model builder (src/python/py/models/builders/base.py, ``make_group_query_attention``)
emits the same op with the rotary fused; its input layout was read there, nothing copied.
The fusion applies only when the installed onnxruntime has the CPU kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir

from onnxport import weights
from onnxport.errors import InputError
from onnxport.passes.fusions import producer
from onnxport.passes.ort.attention_match import (
    EMPTY_ROW_MEAN,
    EMPTY_ROW_PREFIX,
    EMPTY_ROW_ZERO,
    Match,
    halved_lowest,
    match_attention,
)
from onnxport.passes.ort.kernels import MICROSOFT, gqa_zeroes_hidden_rows, has_kernel
from onnxport.passes.ort.rotary import Rotary, Switch, caches, match_rotary, switched_caches


def _rotaries(m: Match, max_positions: int | None) -> tuple[Rotary, Rotary] | None:
    """The rotary embeddings of q and k of ``m`` when both match and agree."""
    if max_positions is None:
        return None
    q = match_rotary(m.query, m.head_size)
    k = match_rotary(m.key_concat.inputs[1], m.head_size)
    if q is None or k is None or q.positions is not k.positions or q.scale != k.scale:
        return None
    if not np.array_equal(q.inv_freq, k.inv_freq) or not _same_switch(q.switch, k.switch) or q.interleaved != k.interleaved:
        return None
    # onnxruntime 1.31 CPU: "cos_cache dimension 1 must be <= head_size / 2 and a multiple of 8"
    return (q, k) if q.dim % 16 == 0 else None


def _same_switch(a: Switch | None, b: Switch | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.condition is b.condition and a.threshold == b.threshold and np.array_equal(a.long_inv_freq, b.long_inv_freq)


def _separate_rotaries(m: Match, max_positions: int | None) -> tuple[Rotary, Rotary] | None:
    """The rotaries of q and k for ``com.microsoft.RotaryEmbedding`` nodes: matched, int64
    ``[B, S]`` positions, and the kernel present."""
    found = _rotaries(m, max_positions)
    if found is None or not has_kernel("RotaryEmbedding") or found[0].dim != m.head_size or found[0].switch is not None:
        return None  # a partial rotary would need the kernel's rotary_embedding_dim, LongRoPE a cache per step: not done
    if found[0].interleaved:
        return None  # the kernel's interleaved attribute: not done
    positions = found[0].positions
    if positions.dtype != ir.DataType.INT64 or positions.shape is None or positions.shape.rank() != 2:
        return None
    return found


def _bsh_source(bnsh: ir.Value | None, hidden: int) -> ir.Value | None:
    """``y`` when ``bnsh = Transpose(Reshape(y, [.., .., heads, head_size]), [0, 2, 1, 3])`` with
    ``y`` of shape ``[B, S, hidden]``: the packed layout GroupQueryAttention reads, as it is."""
    reshape = producer(_bshd_source(bnsh), "Reshape")
    if reshape is None:
        return None
    source = reshape.inputs[0]
    shape = None if source is None else source.shape
    if shape is None or shape.rank() != 3 or shape[2] != hidden:
        return None
    out = reshape.outputs[0].shape
    if out is None or out.rank() != 4 or not all(isinstance(d, int) for d in (out[2], out[3])):
        return None
    if out[2] * out[3] != hidden or out[0] != shape[0] or out[1] != shape[1]:  # type: ignore[operator]
        return None
    return source


def _bshd_source(bnsh: ir.Value | None) -> ir.Value | None:
    """``x`` when ``bnsh = Transpose(x, [0, 2, 1, 3])`` with ``x`` 4-D: ``[B, S, heads, D]``."""
    transpose = producer(bnsh, "Transpose")
    perm = None if transpose is None else transpose.attributes.get("perm")
    if transpose is None or perm is None or list(perm.as_ints()) != [0, 2, 1, 3]:
        return None
    x = transpose.inputs[0]
    return x if x is not None and x.shape is not None and x.shape.rank() == 4 else None


# A mask computed from this graph input may open attention both ways (Gemma 3's image blocks,
# PaliGemma's prefix: onnxport.hf.vision_language), which the kernel's causal=1 cannot express.
_BIDIRECTIONAL_MASK_INPUTS = frozenset({"token_type_ids"})


def _reads_token_types(mask: ir.Value | None) -> bool:
    """Whether ``mask`` is computed from a :data:`_BIDIRECTIONAL_MASK_INPUTS` graph input (through
    values, not only its shape): such an attention keeps the standard ops."""
    seen: set[int] = set()
    stack: list[ir.Value | None] = [mask]
    while stack:
        value = stack.pop()
        if value is None or id(value) in seen:
            continue
        seen.add(id(value))
        node = value.producer()
        if node is None:
            if str(value.name) in _BIDIRECTIONAL_MASK_INPUTS:
                return True
            continue
        if node.op_type == "Shape":
            continue
        stack.extend(node.inputs)
    return False


def _per_head(mask: ir.Value | None) -> bool:
    """Whether ``mask`` (``[B or 1, heads or 1, S, T]``) may differ between heads: then it carries
    a bias (Falcon's ALiBi is added to its float mask, ``[B, heads, S, T]``), and the attention
    stays standard. The shared graph, which replaces the mask by the kernel's causal one, would
    drop it; the concatenating graph could pass it as the kernel's ``attention_bias``, but
    onnxruntime 1.31's CPU kernel was slower with a per-head bias than the standard ops (Falcon
    with ALiBi, 8 layers of 1024, 16 heads: decode past 1024 at batch 4 81.8 against 56.7 ms,
    ``python /work/s35/alibi_speed/speed.py falcon``, session 35; MPT and Bloom, whose ALiBi was
    rewritten into such a bias in a trial, 1.53x and 1.47x). Causal, padding and sliding-window
    masks have one head row. The translation's ``Where`` over the lowest value
    (:func:`~onnxport.passes.ort.attention_match.halved_lowest`) is looked through, its output
    shape being unknown after broadcasting."""
    if mask is not None and mask.shape is None and halved_lowest(mask):
        mask = mask.producer().inputs[2]  # type: ignore[union-attr]
    if mask is None or mask.shape is None or len(mask.shape) != 4:
        return False
    return mask.shape[1] != 1


def _own_caches(matches: list[Match], owners: bool) -> list[Match]:
    """The matches that may fuse given the cache Concats they share. Gemma 3n's and Gemma 4's
    KV-shared layers (``num_kv_shared_layers``) attend over an earlier layer's cache: one Concat
    feeds several attentions. The kernel appends its own new keys to its past, so only the layer
    that owns the cache fits it: with ``owners``, the first attention in graph order on each
    shared Concat (the owner's layer comes before the layers reusing its cache) fuses, and the
    others read its ``present`` outputs (the same past and new keys as the Concat) with the
    standard ops; without (the in-place buffer, whose ``present`` spans ``max_length`` rows), none
    of them fuses."""
    users: dict[int, list[Match]] = {}
    for m in matches:
        for concat in {id(m.key_concat), id(m.value_concat)}:
            users.setdefault(concat, []).append(m)

    def fuses(m: Match) -> bool:
        readers = [users[id(m.key_concat)], users[id(m.value_concat)]]
        return all(len(r) == 1 or (owners and r[0] is m) for r in readers)

    return [m for m in matches if fuses(m)]


class GroupQueryAttentionPass(ir.passes.InPlacePass):
    """Fuse every matching Attention (see the module docstring).

    Args:
        rotary_positions: ``max_position_embeddings``: fold the rotary embedding in, with caches
            of this many positions (``None``: keep the graph's rotary, positions from
            ``position_ids``).
        shared_buffer: Build the in-place cache graph for ``past_present_share_buffer: true``.
        rotary_embedding: ``max_position_embeddings``: when the rotary is not folded in, replace
            the graph's rotary of q and k by ``com.microsoft.RotaryEmbedding`` nodes on the packed
            ``[B, S, heads * head_size]`` tensors, positions from ``position_ids`` (caches of this
            many positions; ``None``: keep the graph's rotary).

    Raises:
        InputError: ``shared_buffer`` and an attention that does not fuse, or no
            ``attention_mask`` graph input.
    """

    def __init__(
        self, rotary_positions: int | None = None, shared_buffer: bool = False, rotary_embedding: int | None = None
    ) -> None:
        super().__init__()
        self.rotary_positions = rotary_positions
        self.shared_buffer = shared_buffer
        self.rotary_embedding = rotary_embedding

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        found = (match_attention(n) for n in list(graph))
        matches = [m for m in found if m is not None and not _reads_token_types(m.mask)]
        matches = _own_caches(matches, owners=not self.shared_buffer)
        if not has_kernel("GroupQueryAttention"):
            matches = []
        per_head = [m for m in matches if _per_head(m.mask)]
        matches = [m for m in matches if m not in per_head]
        if self.shared_buffer:
            self._check_all_fuse(graph, matches, biased=bool(per_head))
        if not matches:
            return ir.passes.PassResult(model, False)
        shared: dict[Any, Any] = {}
        for m in matches:
            self._rewrite(graph, m, shared)
        model.opset_imports.setdefault(MICROSOFT, 1)
        return ir.passes.PassResult(model, True)

    @staticmethod
    def _check_all_fuse(graph: ir.Graph, matches: list[Match], biased: bool) -> None:
        names = {str(v.name) for v in graph.inputs}
        if "attention_mask" not in names:
            raise InputError(
                "kv_cache='shared' needs a decoder graph with an attention_mask input "
                "(positions and lengths come from it); export with kv_cache='concat'."
            )
        past = [v for v in graph.inputs if str(v.name).startswith("past_key_values.")]
        if not past:
            raise InputError(
                "kv_cache='shared' needs a decoder graph with a KV cache; this one has no past_key_values "
                "inputs (a model whose cache onnxport exports without it: see the export's warning). "
                "Export with kv_cache='concat' instead."
            )
        half = next((v.dtype for v in past if v.dtype in (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)), None)
        fused = {id(m.key_concat.inputs[0]) for m in matches}
        fused |= {id(m.value_concat.inputs[0]) for m in matches}
        missing = [str(v.name) for v in past if id(v) not in fused]
        if missing:
            raise InputError(
                "kv_cache='shared' needs every attention rewritten to onnxruntime's "
                "GroupQueryAttention (float32, head size a multiple of 16, a KV cache Concat, "
                "the kernel in the installed onnxruntime); not fused for: "
                f"{', '.join(missing[:4])}"
                + (" (a mask with a per-head bias, such as ALiBi, which the shared graph's kernel mask cannot hold)" if biased else "")
                + (f" (the graph is {half.name.lower()}: export it in float32, CLI --dtype float32, "
                   "Python dtype='float32' with stream=True or model.float())" if half is not None else "")
                + ". Export with kv_cache='concat' instead."
            )

    def _rewrite(
        self,
        graph: ir.Graph,
        m: Match,
        shared: dict[Any, Any],
    ) -> None:
        node = m.anchor
        nodes: list[ir.Node] = []

        def add(op: str, inputs: list[ir.Value | None], domain: str = "", **attrs: Any) -> ir.Value:
            new = ir.node(op, inputs, attrs, domain=domain, num_outputs=1)
            nodes.append(new)
            return new.outputs[0]

        def const(name: str, array: np.ndarray) -> ir.Value:
            return add("Constant", [], value=ir.tensor(array, name=name))

        def packed(bnsh: ir.Value | None, heads: int) -> ir.Value:
            flat = _bsh_source(bnsh, heads * m.head_size)
            if flat is not None:  # the graph made bnsh from this [B, S, heads * head_size] tensor
                return flat
            x = _bshd_source(bnsh)  # [B, S, heads, D] (q/k normed per head, Qwen3): no transpose back
            if x is None:
                x = add("Transpose", [bnsh], perm=[0, 2, 1, 3])
            return add(
                "Reshape", [x, const("shape", np.array([0, 0, heads * m.head_size], np.int64))]
            )

        mask = m.mask
        if self.shared_buffer:
            mask = None  # the kernel's causal mask over the seqlens_k + 1 buffer rows
            if "lengths" not in shared:
                shared["lengths"] = self._mask_lengths(graph, add, const)
            seqlens_k, total = shared["lengths"]
            bias = None
        else:
            key = ("lengths", id(mask), m.mask_scale)  # every layer with this mask: the same lengths and bias
            if key not in shared:
                shared[key] = self._lengths(m, mask, add, const)
            seqlens_k, total, bias = shared[key]  # bias: None without a mask
        rotary = _rotaries(m, self.rotary_positions)
        attrs: dict[str, Any] = {
            "num_heads": m.heads,
            "kv_num_heads": m.kv_heads,
            "do_rotary": int(rotary is not None),
            "causal": 1,
        }
        if rotary is not None and rotary[0].interleaved:
            attrs["rotary_interleaved"] = 1  # pairs (x[2i], x[2i+1]) rotate (Cohere, GLM, Helium)
        if m.scale is not None:
            attrs["scale"] = m.scale
        if m.softcap:
            attrs["softcap"] = m.softcap
        if m.window is not None:  # GPT-Neo's local layers (attention_match._positional_causal)
            attrs["local_window_size"] = m.window
        q_in, k_new, v_new = m.query, m.key_concat.inputs[1], m.value_concat.inputs[1]
        cos_cache = sin_cache = None
        if rotary is not None:
            q_in, k_new = rotary[0].x, rotary[1].x
            assert self.rotary_positions is not None
            cos_cache, sin_cache = self._caches(graph, rotary[0], shared, self.rotary_positions)
            if rotary[0].switch is not None:
                cos_cache, sin_cache = self._step_rows(rotary[0].switch, (cos_cache, sin_cache), total, shared, add, const)
        separate = None if rotary is not None else _separate_rotaries(m, self.rotary_embedding)
        q_packed, k_packed = packed(q_in, m.heads), packed(k_new, m.kv_heads)
        if separate is not None:
            assert self.rotary_embedding is not None
            caches_ = self._caches(graph, separate[0], shared, self.rotary_embedding)
            q_packed, k_packed = (
                add("RotaryEmbedding", [packed(r.x, heads), r.positions, *caches_], domain=MICROSOFT, num_heads=heads)
                for r, heads in zip(separate, (m.heads, m.kv_heads))
            )
        gqa = ir.node(
            "GroupQueryAttention",
            [
                q_packed,
                k_packed,
                packed(v_new, m.kv_heads),
                m.key_concat.inputs[0],
                m.value_concat.inputs[0],
                seqlens_k,
                total,
                cos_cache,
                sin_cache,
                None,
                bias,
                *([] if m.sink is None else [self._head_sink(graph, m.sink, m.heads, add, const)]),
            ],
            attrs,
            domain=MICROSOFT,
            num_outputs=3,
            name=node.name,
        )
        nodes.append(gqa)
        out, present_key, present_value = gqa.outputs
        result = out
        # a boolean mask's bias (_lengths) hides with exactly the float32 minimum: what the probe checked
        minimum_bias = mask is not None and mask.dtype == ir.DataType.BOOL and m.mask_scale == 1.0
        if mask is not None and m.empty_row == EMPTY_ROW_ZERO and not (minimum_bias and gqa_zeroes_hidden_rows()):
            rows = self._rows(mask, shared, add, const)
            result = add("Mul", [out, rows])
        elif mask is not None and m.empty_row == EMPTY_ROW_MEAN:
            result = self._mean_where_empty(m, mask, out, present_value, shared=shared, add=add, const=const)
        elif mask is not None and m.empty_row == EMPTY_ROW_PREFIX:
            result = self._prefix_mean_where_empty(m, mask, out, present_value, shared=shared, add=add, const=const)
        if m.output_chain_end is None:
            split = add(
                "Reshape",
                [result, const("shape", np.array([0, 0, m.heads, m.head_size], np.int64))],
            )
            result = add("Transpose", [split], perm=[0, 2, 1, 3])
            replaced = m.replaced
        else:
            replaced = m.output_chain_end
        graph.insert_before(node, nodes)
        if self.shared_buffer:  # present is the past buffer, updated in place
            present_key.shape = m.key_concat.inputs[0].shape  # type: ignore[union-attr]
            present_value.shape = m.value_concat.inputs[0].shape  # type: ignore[union-attr]
        for old, new in (
            (replaced, result),
            (m.key_concat.outputs[0], present_key),
            (m.value_concat.outputs[0], present_value),
        ):
            if not (self.shared_buffer and new is not result):
                new.shape = old.shape
            new.type = old.type
            name = old.name
            old.replace_all_uses_with(new, replace_graph_outputs=True)
            old.name = None
            new.name = name

    @staticmethod
    def _head_sink(graph: ir.Graph, sink: ir.Value, heads: int, add, const) -> ir.Value:  # type: ignore[no-untyped-def]
        """GroupQueryAttention's ``head_sink`` input: the sinks as ``[heads]`` (an initializer
        folded to ``[1, heads, 1, 1]`` becomes a lazy ``[heads]`` one: no weight read now)."""
        if sink.shape is not None and list(sink.shape) == [heads]:
            return sink
        tensor = sink.const_value if sink.is_initializer() and not sink.is_graph_input() else None
        if tensor is None:
            return add("Reshape", [sink, const("shape", np.array([heads], np.int64))])
        name = f"{sink.name}.heads"
        if name not in graph.initializers:
            flat = weights.derive(tensor, lambda a: a.reshape(heads), dtype=tensor.dtype, shape=[heads], name=name)
            graph.register_initializer(
                ir.Value(name=name, shape=ir.Shape([heads]), type=ir.TensorType(tensor.dtype), const_value=flat)
            )
        return graph.initializers[name]

    @staticmethod
    def _caches(
        graph: ir.Graph, rotary: Rotary, shared: dict[Any, Any], positions: int
    ) -> tuple[ir.Value, ir.Value]:
        """``cos_cache``/``sin_cache`` initializers of ``positions`` rows, one pair per distinct
        ``inv_freq``."""
        switch = rotary.switch
        long = switch.long_inv_freq.tobytes() if switch is not None else None
        key = ("rotary", rotary.inv_freq.tobytes(), rotary.scale, long)
        if key not in shared:
            index = sum(1 for k in shared if isinstance(k, tuple) and k[0] == "rotary")
            values = []
            arrays = caches(rotary, positions) if switch is None else switched_caches(rotary, positions)
            for kind, array in zip(("cos", "sin"), arrays):
                name = f"{kind}_cache" + (f"_{index}" if index else "")
                value = ir.Value(
                    name=name,
                    shape=ir.Shape(array.shape),
                    type=ir.TensorType(ir.DataType.FLOAT),
                    const_value=ir.tensor(array, name=name),
                )
                graph.register_initializer(value)
                values.append(value)
            shared[key] = tuple(values)
        return shared[key]

    @staticmethod
    def _step_rows(switch: Switch, tables: tuple[ir.Value, ir.Value], total: ir.Value, shared: dict[Any, Any], add, const):  # type: ignore[no-untyped-def]
        """LongRoPE: the ``total_sequence_length`` rows of the short or long half of
        :func:`~onnxport.passes.ort.rotary.switched_caches`' tables, as ``switch.condition``
        picks (``Slice`` from row ``condition · T``), once for all layers."""
        key = ("rotary rows", id(tables[0]))
        if key not in shared:
            one = const("one_axis", np.array([1], np.int64))
            start = add("Mul", [add("Reshape", [add("Cast", [switch.condition], to=ir.DataType.INT64), one]),
                                const("threshold", np.array([switch.threshold], np.int64))])
            end = add("Add", [start, add("Reshape", [add("Cast", [total], to=ir.DataType.INT64), one])])
            axes = const("axes", np.array([0], np.int64))
            shared[key] = tuple(add("Slice", [table, start, end, axes]) for table in tables)
        return shared[key]

    @staticmethod
    def _mask_lengths(graph: ir.Graph, add, const):  # type: ignore[no-untyped-def]
        """``seqlens_k = ReduceSum(attention_mask, 1) - 1`` (int32 ``[B]``) and
        ``total_sequence_length = Shape(attention_mask)[1]`` (int32 scalar), as the builder."""
        mask = next(v for v in graph.inputs if v.name == "attention_mask")
        axes = const("axes", np.array([1], np.int64))
        count = add("ReduceSum", [add("Cast", [mask], to=ir.DataType.INT32), axes], keepdims=0)
        seqlens = add("Sub", [count, const("one", np.array(1, np.int32))])
        total_1d = add("Cast", [add("Shape", [mask], start=1, end=2)], to=ir.DataType.INT32)
        total = add("Squeeze", [total_1d, const("axes", np.array([0], np.int64))])
        return seqlens, total

    @staticmethod
    def _lengths(m: Match, mask: ir.Value | None, add, const):  # type: ignore[no-untyped-def]
        """``seqlens_k`` ([B] int32, T - 1), ``total_sequence_length`` (int32 scalar), bias.

        T = past length (the past graph input's dim 2) + the query's sequence length."""
        past = add("Shape", [m.key_concat.inputs[0]], start=2, end=3)
        v_new = m.value_concat.inputs[1]  # not the query: its rotary may be fused away
        # [B, S, ...] before the graph's transpose to BNSH, so that transpose is left unused
        bsh = _bsh_source(v_new, m.kv_heads * m.head_size) or _bshd_source(v_new)
        source, sequence_axis = (v_new, 2) if bsh is None else (bsh, 1)
        new = add("Shape", [source], start=sequence_axis, end=sequence_axis + 1)
        batch = add("Shape", [source], start=0, end=1)
        total_1d = add("Cast", [add("Add", [past, new])], to=ir.DataType.INT32)
        total = add("Squeeze", [total_1d, const("axes", np.array([0], np.int64))])
        last = add("Sub", [total_1d, const("one", np.array([1], np.int32))])
        seqlens = add("Expand", [last, batch])
        bias = None
        if mask is not None:
            if mask.dtype == ir.DataType.BOOL:
                zero = const("zero_f", np.array(0.0, np.float32))
                low = const("low_f", np.array(np.finfo(np.float32).min, np.float32))
                bias = add("Where", [mask, zero, low])
            else:
                bias = mask
            if m.mask_scale != 1.0:  # the graph scales the masked scores (Match.mask_scale)
                bias = add("Mul", [bias, const("mask_scale", np.array(m.mask_scale, np.float32))])
        return seqlens, total, bias

    def _mean_where_empty(self, m: Match, mask: ir.Value, out: ir.Value, present_value: ir.Value, *, shared, add, const):  # type: ignore[no-untyped-def]
        """``out`` ([B, S, heads * head_size]) with the rows whose mask hides every key replaced
        by the mean of all of ``V`` per head, as eager's softmax gives them (module docstring of
        :mod:`~onnxport.passes.ort.attention_match`)."""
        attended = self._attended(mask, shared, add, const)
        axes = const("axes", np.array([2], np.int64))
        mean = add("ReduceMean", [present_value, axes], keepdims=1)  # [B, kv_heads, 1, D]
        group = const("shape", np.array([1, 1, m.heads // m.kv_heads, 1], np.int64))
        heads = add("Expand", [mean, group])  # [B, kv_heads, group, D]: head h reads kv head h // group
        flat = add("Reshape", [heads, const("shape", np.array([0, 1, m.heads * m.head_size], np.int64))])
        return add("Where", [attended, out, flat])

    def _prefix_mean_where_empty(self, m: Match, mask: ir.Value, out: ir.Value, present_value: ir.Value, *, shared, add, const):  # type: ignore[no-untyped-def]
        """``out`` ([B, S, heads * head_size]) with the rows whose mask hides every key replaced by
        the mean of ``V`` over the row's causal prefix (keys ``j <= p``, ``p = T - S + i`` the
        query's position; with a window ``w``, ``p - w < j <= p``), as GPT-Neo's positional mask
        gives them (:attr:`~onnxport.passes.ort.attention_match.EMPTY_ROW_PREFIX`): running sums
        of ``V`` (``CumSum`` over the keys) at the queries' positions, less those ``w`` keys
        earlier, over ``min(p + 1, w)`` keys."""
        attended = self._attended(mask, shared, add, const)
        axis = const("axis", np.array(2, np.int64))
        sums = add("CumSum", [present_value, axis])  # [B, kv_heads, T, D]
        queries = add("Gather", [add("Shape", [m.query]), const("index", np.array([2], np.int64))])  # [S]
        keys = add("Gather", [add("Shape", [present_value]), const("index", np.array([2], np.int64))])  # [T]
        first = add("Sub", [keys, queries])  # [1]: the first query's position T - S
        end = const("end", np.array([np.iinfo(np.int64).max], np.int64))
        last = add("Slice", [sums, first, end, const("axes", np.array([2], np.int64))])  # [B, kv, S, D]
        one = const("one", np.array(1, np.int64))
        positions = add("Range", [add("Squeeze", [first]), add("Squeeze", [keys]), one])  # [S]: T - S ..
        counts = add("Add", [positions, one])
        if m.window is not None:
            window = const("window", np.array(m.window, np.int64))
            earlier = add("Pad", [sums, const("pads", np.array([0, 0, m.window, 0, 0, 0, 0, 0], np.int64))])
            shifted = add("Slice", [earlier, first, keys, const("axes", np.array([2], np.int64))])
            last = add("Sub", [last, shifted])
            counts = add("Min", [counts, window])
        per_row = add("Reshape", [add("Cast", [counts], to=ir.DataType.FLOAT), const("shape", np.array([1, 1, -1, 1], np.int64))])
        mean = add("Div", [last, per_row])  # [B, kv_heads, S, D]
        grouped = add("Unsqueeze", [mean, const("axes", np.array([2], np.int64))])  # [B, kv, 1, S, D]
        group = const("shape", np.array([1, 1, m.heads // m.kv_heads, 1, 1], np.int64))
        heads = add("Expand", [grouped, group])  # head h reads kv head h // group
        bnsh = add("Reshape", [heads, const("shape", np.array([0, m.heads, -1, m.head_size], np.int64))])
        flat = add("Reshape", [add("Transpose", [bnsh], perm=[0, 2, 1, 3]),
                               const("shape", np.array([0, 0, m.heads * m.head_size], np.int64))])  # fmt: skip
        return add("Where", [attended, out, flat])

    def _attended(self, mask: ir.Value, shared: dict, add, const) -> ir.Value:  # type: ignore[no-untyped-def]
        """``[B, S, 1]`` bool: where the mask row attends to something (one per mask)."""
        key = ("attended", id(mask))
        if key not in shared:
            shared[key] = add("Cast", [self._rows(mask, shared, add, const)], to=ir.DataType.BOOL)
        return shared[key]

    @staticmethod
    def _rows(mask: ir.Value, shared: dict, add, const) -> ir.Value:  # type: ignore[no-untyped-def]
        """``[B, S, 1]`` float: 1 where the mask row attends to something, else 0."""
        key = ("rows", id(mask))
        if key not in shared:
            if mask.dtype == ir.DataType.BOOL:
                attended = add("Cast", [mask], to=ir.DataType.FLOAT)
            else:
                attended = add(
                    "Cast",
                    [
                        add(
                            "Greater",
                            [
                                mask,
                                const("low", np.array(np.finfo(np.float32).min / 2, np.float32)),
                            ],
                        )
                    ],
                    to=ir.DataType.FLOAT,
                )
            any_key = add(
                "ReduceMax", [attended, const("axes", np.array([1, 3], np.int64))], keepdims=0
            )
            rows = add("Unsqueeze", [any_key, const("axes", np.array([-1], np.int64))])
            shared[key] = rows
        return shared[key]
