"""ONNX ``Attention`` over a concatenated KV cache → ``com.microsoft.GroupQueryAttention``.

The standard graph of a decoder layer (transformers' sdpa path, opset ≥ 23) is::

    present.key   = Concat(past_key, k_new, axis=2)          # [B, kv_heads, past + S, D]
    key           = Reshape(Expand(Unsqueeze(present.key)))  # repeat_kv → [B, heads, T, D]
    out           = Attention(q, key, value, mask)           # [B, heads, S, D]
    hidden        = Reshape(Transpose(Reshape(out)))         # [B, S, heads * D]

onnxruntime's GroupQueryAttention (docs/ContribOperators.md) takes ``query``/``key``/``value`` as
``[B, S, heads * D]``, the past in BNSH without repeating the KV heads, ``seqlens_k`` (int32
``[B]``, total length - 1) and ``total_sequence_length`` (int32 scalar), and returns the output and
the present (past + new, written in place when past and present share a buffer). The rewrite:

- query/key/value: the BNSH values fed to the Concat/Attention, as ``Reshape(Transpose(x))`` (the
  rotary embedding stays the graph's own, so positions keep coming from ``position_ids``);
- the mask becomes ``attention_bias`` (``0`` where attended, the float32 minimum elsewhere), so
  padding and sliding windows keep their exact semantics; ``seqlens_k`` is ``T - 1`` for every
  row and ``causal=1`` (the fusion applies to decoders, whose mask already is causal);
- rows whose mask attends to nothing (left padding) give 0, as eager's sdpa and ONNX Attention do;
- the output replaces the ``Reshape(Transpose(Reshape(out)))`` chain, or feeds an equivalent one.

onnxruntime-genai's model builder (src/python/py/models/builders/base.py, ``make_group_query_attention``)
emits the same op with the rotary fused; its input layout was read there, nothing copied.
The fusion applies only when the installed onnxruntime has the CPU kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnx_ir as ir

from onnxport.passes.ort.kernels import MICROSOFT, has_kernel


@dataclasses.dataclass
class _Match:
    attention: ir.Node
    key_concat: ir.Node
    value_concat: ir.Node
    heads: int
    kv_heads: int
    head_size: int
    output_chain_end: ir.Value | None


def _producer(value: ir.Value | None, op_type: str) -> ir.Node | None:
    if value is None:
        return None
    node = value.producer()
    if node is None or node.op_type != op_type or node.domain != "":
        return None
    return node


def _cache_concat(value: ir.Value | None) -> ir.Node | None:
    """The ``Concat(past, new, axis=2)`` behind an Attention K/V input (through repeat_kv)."""
    reshape = _producer(value, "Reshape")
    if reshape is not None:
        expand = _producer(reshape.inputs[0], "Expand")
        unsqueeze = _producer(expand.inputs[0], "Unsqueeze") if expand is not None else None
        if unsqueeze is None:
            return None
        value = unsqueeze.inputs[0]
    concat = _producer(value, "Concat")
    if concat is None or len(concat.inputs) != 2:
        return None
    axis = concat.attributes.get("axis")
    if axis is None or axis.as_int() not in (2, -2):
        return None
    past = concat.inputs[0]
    if past is None or not past.is_graph_input() or past.shape is None or len(past.shape) != 4:
        return None
    return concat


def _output_chain(out: ir.Value, hidden: int) -> ir.Value | None:
    """``Reshape?(out) → Transpose(0,2,1,3) → Reshape([B, S, hidden])``: its last value."""
    value = out
    node = _single_user(value)
    if node is not None and node.op_type == "Reshape" and _shape_dims(node.outputs[0]) == 4:
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
    uses = value.uses()
    if len(uses) != 1 or value.is_graph_output():
        return None
    node = next(iter(uses)).node
    return node if node.domain == "" else None


def _shape_dims(value: ir.Value) -> int | None:
    return None if value.shape is None else len(value.shape)


def match(node: ir.Node) -> _Match | None:
    """A fusable Attention node: 4-D inputs, a cache Concat behind K and V, static head sizes."""
    if node.op_type != "Attention" or node.domain != "" or len(node.inputs) not in (3, 4):
        return None
    if len(node.outputs) > 1 and any(o.uses() or o.is_graph_output() for o in node.outputs[1:]):
        return None
    if any(name in node.attributes for name in ("softcap", "qk_matmul_output_mode")):
        softcap = node.attributes.get("softcap")
        if softcap is not None and softcap.as_float() != 0.0:
            return None
    query = node.inputs[0]
    if query is None or query.shape is None or len(query.shape) != 4:
        return None
    if query.dtype != ir.DataType.FLOAT:
        return None
    key_concat = _cache_concat(node.inputs[1])
    value_concat = _cache_concat(node.inputs[2])
    if key_concat is None or value_concat is None:
        return None
    heads, head_size = query.shape[1], query.shape[3]
    past = key_concat.inputs[0]
    assert past is not None and past.shape is not None
    kv_heads = past.shape[1]
    if not all(isinstance(d, int) for d in (heads, head_size, kv_heads)):
        return None
    assert isinstance(heads, int) and isinstance(head_size, int) and isinstance(kv_heads, int)
    if heads % kv_heads or head_size % 16:  # onnxruntime's CPU kernel needs head_size % 16 == 0
        return None
    causal = node.attributes.get("is_causal")
    has_mask = len(node.inputs) == 4 and node.inputs[3] is not None
    if not has_mask and (causal is None or causal.as_int() != 1):
        return None
    chain = _output_chain(node.outputs[0], heads * head_size)
    return _Match(node, key_concat, value_concat, heads, kv_heads, head_size, chain)


class GroupQueryAttentionPass(ir.passes.InPlacePass):
    """Fuse every matching Attention (see the module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if not has_kernel("GroupQueryAttention"):
            return ir.passes.PassResult(model, False)
        graph = model.graph
        matches = [m for m in (match(n) for n in list(graph)) if m is not None]
        if not matches:
            return ir.passes.PassResult(model, False)
        shared: dict[int, tuple[ir.Value, ir.Value, ir.Value]] = {}
        for m in matches:
            self._rewrite(graph, m, shared)
        model.opset_imports.setdefault(MICROSOFT, 1)
        return ir.passes.PassResult(model, True)

    def _rewrite(
        self,
        graph: ir.Graph,
        m: _Match,
        shared: dict[int, tuple[ir.Value, ir.Value, ir.Value]],
    ) -> None:
        node = m.attention
        nodes: list[ir.Node] = []

        def add(op: str, inputs: list[ir.Value | None], domain: str = "", **attrs: Any) -> ir.Value:
            new = ir.node(op, inputs, attrs, domain=domain, num_outputs=1)
            nodes.append(new)
            return new.outputs[0]

        def const(name: str, array: np.ndarray) -> ir.Value:
            return add("Constant", [], value=ir.tensor(array, name=name))

        def packed(bnsh: ir.Value | None, heads: int) -> ir.Value:
            x = add("Transpose", [bnsh], perm=[0, 2, 1, 3])
            return add(
                "Reshape", [x, const("shape", np.array([0, 0, heads * m.head_size], np.int64))]
            )

        mask = node.inputs[3] if len(node.inputs) == 4 else None
        key = id(mask)
        if key not in shared:
            shared[key] = self._lengths(m, mask, add, const)
        seqlens_k, total, bias_and_rows = shared[key][0], shared[key][1], shared[key][2]
        bias = bias_and_rows if mask is not None else None
        scale = node.attributes.get("scale")
        attrs: dict[str, Any] = {
            "num_heads": m.heads,
            "kv_num_heads": m.kv_heads,
            "do_rotary": 0,
            "causal": 1,
        }
        if scale is not None:
            attrs["scale"] = scale.as_float()
        k_new, v_new = m.key_concat.inputs[1], m.value_concat.inputs[1]
        gqa = ir.node(
            "GroupQueryAttention",
            [
                packed(node.inputs[0], m.heads),
                packed(k_new, m.kv_heads),
                packed(v_new, m.kv_heads),
                m.key_concat.inputs[0],
                m.value_concat.inputs[0],
                seqlens_k,
                total,
                None,
                None,
                None,
                bias,
            ],
            attrs,
            domain=MICROSOFT,
            num_outputs=3,
            name=node.name,
        )
        nodes.append(gqa)
        out, present_key, present_value = gqa.outputs
        result = out
        if mask is not None:
            rows = self._rows(graph, mask, shared, add, const)
            result = add("Mul", [out, rows])
        if m.output_chain_end is None:
            split = add(
                "Reshape",
                [result, const("shape", np.array([0, 0, m.heads, m.head_size], np.int64))],
            )
            result = add("Transpose", [split], perm=[0, 2, 1, 3])
            replaced = node.outputs[0]
        else:
            replaced = m.output_chain_end
        graph.insert_before(node, nodes)
        for old, new in (
            (replaced, result),
            (m.key_concat.outputs[0], present_key),
            (m.value_concat.outputs[0], present_value),
        ):
            new.shape, new.type = old.shape, old.type
            name = old.name
            old.replace_all_uses_with(new, replace_graph_outputs=True)
            old.name = None
            new.name = name

    @staticmethod
    def _lengths(m: _Match, mask: ir.Value | None, add, const):  # type: ignore[no-untyped-def]
        """``seqlens_k`` ([B] int32, T - 1), ``total_sequence_length`` (int32 scalar), bias.

        T = past length (the past graph input's dim 2) + the query's sequence length."""
        past = add("Shape", [m.key_concat.inputs[0]], start=2, end=3)
        new = add("Shape", [m.attention.inputs[0]], start=2, end=3)
        batch = add("Shape", [m.attention.inputs[0]], start=0, end=1)
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
        return seqlens, total, bias

    @staticmethod
    def _rows(graph: ir.Graph, mask: ir.Value, shared: dict, add, const) -> ir.Value:  # type: ignore[no-untyped-def]
        """``[B, S, 1]`` float: 1 where the mask row attends to something, else 0."""
        key = -id(mask)
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
            shared[key] = (rows, rows, rows)
        return shared[key][0]
