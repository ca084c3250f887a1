"""The gated delta rule's chunked ``Scan`` → ``com.microsoft.LinearAttention``.

Qwen3.5, Qwen3-Next and OLMo-Hybrid's linear-attention layers run transformers'
``torch_chunk_gated_delta_rule``, which onnxport captures as
:func:`onnxport.capture.delta_rule.chunk_gated_delta_rule`: the inputs normalized, scaled and
transposed to ``[B, H, T, ...]``, padded (``Pad``) to whole chunks of 64 positions, each chunk's
UT transform computed for all chunks at once, and the chunks run as one ONNX ``Scan`` whose body
is the inter-chunk step (one carried state ``[B, H, Dk, Dv]``, six scanned inputs)::

    v_new = v - k_decayed @ S;  out = q @ S + attn @ v_new;  S = S * decay + kᵀ @ v_new

Standard ONNX, and right for a prompt, but a one-token decode step pays for a whole padded
chunk: a 64 x 64 UT transform per head (six squarings), about 30 nodes per layer around it.
onnxruntime's ``LinearAttention`` contrib op (``update_rule="gated_delta"``;
docs/ContribOperators.md: ``S_t = exp(g_t)·S_{t-1} + β_t·k_t ⊗ (v_t − exp(g_t)·S_{t-1}ᵀk_t)``,
``o_t = scale·q_tᵀS_t``, the recurrence of Yang, Kautz & Hatamizadeh 2024, "Gated Delta
Networks", eq. 10) computes the same outputs and final state from the un-chunked operands, as
onnxruntime-genai's model builder feeds it for Qwen3.5 (``builders/qwen.py``,
``make_qwen_gated_delta_net``; read there, nothing copied).

The match starts at a ``Scan`` with that body and walks up its scanned inputs to the five
``Pad`` nodes of the chunking (not past a ``Pad`` or a ``Shape``): query and key (``[B, H, T,
Dk]``, already L2-normalized and scaled: the kernel gets ``scale=1``), value (``[B, H, T, Dv]``),
beta and the log decay ``g`` (``[B, H, T]``), told apart by their uses (beta multiplies key and
value; ``g`` is summed by ``CumSum``). Each padded operand is the transpose of a ``[B, T, ...]``
value, which the kernel reads packed (``[B, T, H·D]``, a free ``Reshape``). The carried state's
initial value is the past state (``zeros + past``: the past itself), the Scan's final state is the
kernel's ``present_state``, and its stacked chunk outputs, reshaped, transposed and cut back to
``T`` positions, are the kernel's output reshaped to ``[B, T, H, Dv]``. Queries and keys come
repeated to the value heads (``repeat_interleave``), so both head counts are the value heads'.

Float32 graphs only; applies when the installed onnxruntime's CPU provider has the kernel.
"""

from __future__ import annotations

import collections

import onnx_ir as ir

from onnxport.passes.fusions import int64_initializer, producer, scalar
from onnxport.passes.ort.kernels import MICROSOFT, ContribRewritePass

#: the Scan body of :func:`onnxport.capture.delta_rule.chunk_gated_delta_rule`'s ``step``
_BODY_OPS = collections.Counter({"MatMul": 4, "Sub": 1, "Add": 2, "Mul": 1, "Transpose": 2})
_SEARCH_LIMIT = 400  # nodes visited above one Scan before giving up


def _is_chunk_step(scan: ir.Node) -> bool:
    """Whether ``scan`` is the delta rule's inter-chunk Scan (one carry, six scanned inputs)."""
    attr = scan.attributes.get("body")
    if attr is None or scan.attributes.get_int("num_scan_inputs", -1) != 6:
        return False
    if len(scan.inputs) != 7 or len(scan.outputs) != 2:
        return False
    body = attr.as_graph()
    return collections.Counter(node.op_type for node in body) == _BODY_OPS


def _chunk_pads(scan: ir.Node) -> list[ir.Node] | None:
    """The ``Pad`` nodes the scanned inputs are computed from, searching up from them and not
    past a ``Pad``, a ``Shape`` or a graph input."""
    pads: list[ir.Node] = []
    seen: set[int] = set()
    stack = [v for v in scan.inputs[1:] if v is not None]
    while stack:
        node = stack.pop().producer()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if len(seen) > _SEARCH_LIMIT:
            return None
        if node.op_type == "Pad" and node.domain == "":
            pads.append(node)
        elif node.op_type != "Shape":
            stack.extend(v for v in node.inputs if v is not None)
    return pads


def _rank(value: ir.Value | None) -> int | None:
    return None if value is None or value.shape is None else len(value.shape)


def _feeds(value: ir.Value, op_type: str) -> list[ir.Node]:
    return [use.node for use in value.uses() if use.node.op_type == op_type and use.node.domain == ""]


def _reaches_cumsum(value: ir.Value) -> bool:
    return any(_feeds(reshape.outputs[0], "CumSum") for reshape in _feeds(value, "Reshape"))


def _roles(pads: list[ir.Node]) -> dict[str, ir.Value] | None:
    """``{"query", "key", "value", "beta", "decay"}`` → the padded operand (the Pad's input)."""
    if len(pads) != 5 or any(pad.inputs[0] is None for pad in pads):
        return None
    by_rank: dict[int, list[ir.Node]] = collections.defaultdict(list)
    for pad in pads:
        by_rank[_rank(pad.outputs[0]) or 0].append(pad)
    if len(by_rank[3]) != 2 or len(by_rank[4]) != 3:
        return None
    decay = [pad for pad in by_rank[3] if _reaches_cumsum(pad.outputs[0])]
    beta = [pad for pad in by_rank[3] if pad not in decay]
    if len(decay) != 1 or len(beta) != 1:
        return None
    weights = {id(node.outputs[0]) for node in _feeds(beta[0].outputs[0], "Unsqueeze")}
    roles: dict[str, ir.Node] = {"decay": decay[0], "beta": beta[0]}
    for pad in by_rank[4]:
        uses = [use.node for use in pad.outputs[0].uses()]
        weighted = [n for n in uses if n.op_type == "Mul" and any(id(v) in weights for v in n.inputs)]
        role = "query" if not weighted else "value" if len(weighted) == len(uses) else "key"
        if role in roles:
            return None
        roles[role] = pad
    return {role: pad.inputs[0] for role, pad in roles.items()}  # type: ignore[misc]


def _stacked_output(scan: ir.Node) -> ir.Value | None:
    """The ``[B, T, H, Dv]`` value the Scan's stacked chunk outputs are cut back to:
    ``Slice(Transpose(Reshape(outputs), [1, 0, 2, 3]))``."""
    value = scan.outputs[1]
    for op_type in ("Reshape", "Transpose", "Slice"):
        uses = list(value.uses())
        if len(uses) != 1 or uses[0].node.op_type != op_type or uses[0].node.domain != "" or value.is_graph_output():
            return None
        node = uses[0].node
        if op_type == "Transpose" and tuple(node.attributes.get_ints("perm", ())) != (1, 0, 2, 3):
            return None
        value = node.outputs[0]
    return value


def _past(value: ir.Value) -> ir.Value:
    """``p`` when ``value = Add(Expand(0, shape), p)`` (the carried state's fresh copy), else
    ``value``."""
    add = producer(value, "Add")
    if add is None:
        return value
    for zeros, past in (add.inputs, reversed(add.inputs)):
        expand = producer(zeros, "Expand")
        if expand is not None and scalar(expand.inputs[0]) == 0.0 and past is not None and past.dtype == value.dtype:
            return past
    return value


def _untransposed(graph: ir.Graph, before: ir.Node, value: ir.Value) -> ir.Value:
    """``value`` (``[B, H, T, ...]``) as ``[B, T, H, ...]``: the input of the transpose that made
    it, or a new ``Transpose``."""
    perm = (0, 2, 1, 3)[: _rank(value)]
    node = producer(value, "Transpose")
    if node is not None and tuple(node.attributes.get_ints("perm", ())) == perm and node.inputs[0] is not None:
        return node.inputs[0]
    transpose = ir.node("Transpose", [value], attributes={"perm": list(perm)})
    graph.insert_before(before, transpose)
    return transpose.outputs[0]


class LinearAttentionPass(ContribRewritePass):
    """Replace the gated delta rule's chunked ``Scan`` by ``com.microsoft.LinearAttention``
    (module docstring)."""

    op_type = "Scan"
    kernel = "LinearAttention"

    def rewrite(self, graph: ir.Graph, scan: ir.Node) -> bool:
        if not _is_chunk_step(scan):
            return False
        pads = _chunk_pads(scan)
        roles = _roles(pads) if pads is not None else None
        out = _stacked_output(scan)
        if roles is None or out is None or scan.inputs[0] is None:
            return False
        query, value = roles["query"], roles["value"]
        if any(v.dtype != ir.DataType.FLOAT for v in roles.values()) or query.shape is None or value.shape is None:
            return False
        dims = [d for d in (query.shape[1], query.shape[3], value.shape[3]) if isinstance(d, int)]
        if len(dims) != 3:
            return False
        heads, _, value_dim = dims
        name = scan.name or "delta_rule"
        packed = int64_initializer(graph, [0, 0, -1], "linear_attention.packed_shape")
        operands = []
        for role in ("query", "key", "value"):
            reshape = ir.node("Reshape", [_untransposed(graph, scan, roles[role]), packed])
            graph.insert_before(scan, reshape)
            operands.append(reshape.outputs[0])
        decay, beta = (_untransposed(graph, scan, roles[role]) for role in ("decay", "beta"))
        fused = ir.node(
            "LinearAttention",
            [*operands, _past(scan.inputs[0]), decay, beta],
            attributes={
                "q_num_heads": heads,
                "kv_num_heads": heads,
                "update_rule": "gated_delta",
                "scale": 1.0,  # the query comes scaled
            },
            domain=MICROSOFT,
            num_outputs=2,
            name=f"{name}/LinearAttention",
        )
        fused.metadata_props.update(scan.metadata_props)
        graph.insert_before(scan, fused)
        output, state = fused.outputs
        state.dtype, state.shape = ir.DataType.FLOAT, scan.outputs[0].shape
        unpacked = ir.node("Reshape", [output, int64_initializer(graph, [0, 0, heads, value_dim], f"linear_attention.heads_shape.{heads}_{value_dim}")])
        graph.insert_before(scan, unpacked)
        unpacked.outputs[0].dtype, unpacked.outputs[0].shape = ir.DataType.FLOAT, out.shape
        _take_place(scan.outputs[0], state)
        _take_place(out, unpacked.outputs[0])
        for use in list(state.uses()):  # the cache's copy to the past's shape: the state's own
            expand = use.node
            shape = producer(expand.inputs[1], "Shape") if expand.op_type == "Expand" and len(expand.inputs) == 2 else None
            if shape is not None and shape.inputs[0] is fused.inputs[3] and not shape.attributes:
                _take_place(expand.outputs[0], state)
        return True


def _take_place(old: ir.Value, new: ir.Value) -> None:
    """``new`` replaces ``old`` everywhere, as a graph output under ``old``'s name."""
    output, name = old.is_graph_output(), old.name
    old.replace_all_uses_with(new, replace_graph_outputs=True)
    if output:
        old.name = None
        new.name = name
