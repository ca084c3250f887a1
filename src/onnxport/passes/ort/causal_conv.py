"""A short causal convolution over ``Concat(past_conv, x)`` → ``com.microsoft.CausalConvWithState``.

The depthwise causal convolutions in front of linear attention and state-space layers (Qwen3.5,
Qwen3-Next and OLMo-Hybrid's gated delta rule, LFM2's short convolution; transformers'
``causal_conv1d`` torch fallback, ``nn.Conv1d(C, C, k, groups=C, padding=k - 1)`` over the cached
``k`` columns and the step's ``T``) reach the graph as::

    cat = Concat(past_conv, x, axis=2)                 # [B, C, k + T]
    y   = Slice(Conv(cat, W, group=C, pads=[k-1, k-1]), 0, k + T, axis=2)
    y   = act(y)                                        # nothing, or SiLU as Sigmoid and Mul
    out = Slice(y, -T, end, axis=2)                     # [B, C, T]

``out`` is the causal convolution of the last ``k - 1`` cached columns followed by ``x``: output
``t`` reads ``cat[t + 1 .. t + k]``, so the oldest cached column only ever meets the positions the
graph drops. onnxruntime's ``CausalConvWithState`` contrib op (docs/ContribOperators.md; the model
builder emits it for Qwen3.5 and LFM2, ``builders/base.py`` ``make_causal_conv_with_state``: read
there, nothing copied) computes those ``T`` outputs from ``x``, ``W``, the bias and a
``[B, C, k - 1]`` past state, in one pass instead of a grouped ``Conv`` over ``k + T + k - 1``
padded positions (about 0.26 ms per layer at 6144 channels and one token on this machine's
onnxruntime 1.31). The rewrite feeds it ``past_conv[..., 1:]`` and lets its output take the first
``Slice``'s place, the activation then run on the ``T`` positions and the second ``Slice`` drop
out. The cache's own present (``k`` columns of ``cat``, gathered at each row's last real token:
:mod:`onnxport.hf.padded_states`) is left as it is, so the graph's inputs and outputs do not change.

The first ``Slice`` must keep ``cat``'s length from 0 and the second run to the end (a constant end
of at least 2⁶²) with ``x``'s length (lengths checked on the recorded symbolic shapes); between them only elementwise
unary ops and products of the chain's own values. Float32; applies when the installed onnxruntime's
CPU provider has the kernel.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.fusions import constant_ints, int64_initializer, producer
from onnxport.passes.ort.kernels import MICROSOFT, ContribRewritePass

_TO_THE_END = 2**62  # a Slice end at least this large runs to the end (torch writes INT64_MAX)
#: ops the activation between the two slices may use (on the chain's own values only)
_ACTIVATION = frozenset({"Sigmoid", "Mul", "Tanh", "Relu", "Softplus"})


def _slice_axis(node: ir.Node) -> tuple[int, int | None] | None:
    """``(axis, start)`` of a one-axis ``Slice`` along axis 2 of a rank-3 tensor with step 1
    (``start`` ``None`` when not constant), else ``None``."""
    if len(node.inputs) < 4 or node.inputs[3] is None:
        return None
    axes = constant_ints(node.inputs[3])
    steps = constant_ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] is not None else [1]
    if axes not in ([2], [-1]) or steps != [1]:
        return None
    starts = constant_ints(node.inputs[1])
    return axes[0], (starts[0] if starts is not None and len(starts) == 1 else None)


def _same_shape(a: ir.Value, b: ir.Value) -> bool:
    return a.shape is not None and b.shape is not None and len(a.shape) == 3 and list(a.shape) == list(b.shape)


def _only_use(value: ir.Value, op_type: str) -> ir.Node | None:
    uses = list(value.uses())
    if len(uses) != 1 or value.is_graph_output():
        return None
    node = uses[0].node
    return node if node.op_type == op_type and node.domain == "" else None


def _activation_chain(start: ir.Value) -> tuple[list[ir.Value], ir.Node] | None:
    """The values of the elementwise chain that follows ``start`` and the ``Slice`` it ends in."""
    chain = [start]
    known = {id(start)}
    ends: list[ir.Node] = []
    index = 0
    while index < len(chain):
        value = chain[index]
        index += 1
        if value.is_graph_output():
            return None
        for use in value.uses():
            node = use.node
            if node.domain == "" and node.op_type == "Slice" and use.idx == 0:
                ends.append(node)
            elif node.domain == "" and node.op_type in _ACTIVATION and all(v is not None and id(v) in known for v in node.inputs):
                if id(node.outputs[0]) not in known:
                    known.add(id(node.outputs[0]))
                    chain.append(node.outputs[0])
            elif node.domain == "" and node.op_type in _ACTIVATION:
                continue  # an operand not yet in the chain: checked once every value is known
            else:
                return None
    for value in chain:  # every reader of the chain is in it, or the end
        for use in value.uses():
            inside = use.node.domain == "" and use.node.op_type in _ACTIVATION and id(use.node.outputs[0]) in known
            if use.node not in ends and not inside:
                return None
    if len(ends) != 1 or ends[0].inputs[0] is not chain[-1]:
        return None
    return chain, ends[0]


class CausalConvPass(ContribRewritePass):
    """Rewrite causal depthwise convolutions over a cached state to ``CausalConvWithState``
    (module docstring)."""

    op_type = "Conv"
    kernel = "CausalConvWithState"

    def rewrite(self, graph: ir.Graph, conv: ir.Node) -> bool:
        weight = conv.inputs[1]
        cat = producer(conv.inputs[0], "Concat")
        if weight is None or weight.shape is None or cat is None or len(cat.inputs) != 2:
            return False
        dims = [d for d in weight.shape if isinstance(d, int)]
        if len(dims) != 3 or len(weight.shape) != 3:
            return False
        channels, one, k = dims
        attrs = {name: tuple(conv.attributes.get_ints(name, ())) for name in ("pads", "strides", "dilations")}
        if one != 1 or conv.attributes.get_int("group", 1) != channels or attrs["pads"] != (k - 1, k - 1):
            return False
        if attrs["strides"] not in ((), (1,)) or attrs["dilations"] not in ((), (1,)) or cat.attributes.get_int("axis", 0) not in (2, -1):
            return False
        past, x = cat.inputs
        if past is None or x is None or x.dtype != ir.DataType.FLOAT or past.shape is None or past.shape[-1] != k:
            return False
        first = _only_use(conv.outputs[0], "Slice")
        if first is None or _slice_axis(first) is None or _slice_axis(first)[1] != 0 or not _same_shape(first.outputs[0], cat.outputs[0]):  # type: ignore[index]
            return False
        found = _activation_chain(first.outputs[0])
        if found is None:
            return False
        chain, last = found
        ends = constant_ints(last.inputs[2])
        if _slice_axis(last) is None or ends is None or ends[0] < _TO_THE_END or not _same_shape(last.outputs[0], x):
            return False  # the last T positions: a Slice to the end as long as x
        if last.outputs[0].is_graph_output():
            return False
        name = conv.name or "conv"
        tail = ir.node(
            "Slice",
            [past, *(int64_initializer(graph, [v], f"causal_conv.state_{part}.{v}") for part, v in (("start", 1), ("end", k), ("axis", 2)))],
        )
        bias = conv.inputs[2] if len(conv.inputs) > 2 else None
        fused = ir.node(
            "CausalConvWithState",
            [x, weight, bias, tail.outputs[0]],
            domain=MICROSOFT,
            num_outputs=2,
            name=f"{name}/CausalConvWithState",
        )
        fused.metadata_props.update(conv.metadata_props)
        graph.insert_before(conv, tail)
        graph.insert_before(conv, fused)
        out = fused.outputs[0]
        out.dtype, out.shape = ir.DataType.FLOAT, x.shape
        first.outputs[0].replace_all_uses_with(out)
        for value in chain[1:]:
            value.shape = x.shape
        last.outputs[0].replace_all_uses_with(chain[-1] if len(chain) > 1 else out)
        return True
