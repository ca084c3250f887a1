"""The q/k/v MatMuls sharing one input with constant weights of the same ``K`` → one MatMul + Split.

A decoder layer projects the normalized hidden state three times for attention (``q_proj``,
``k_proj``, ``v_proj``): ``MatMul(x, W_i)`` with ``W_i`` of shape ``[K, N_i]``. Since
``x @ [W_1 | W_2 | ...] = [x @ W_1 | x @ W_2 | ...]``, one MatMul over the weights concatenated along ``N`` followed by ``Split(axis=-1, [N_1, N_2, ...])``
computes the same values: at decode (one token, memory-bound) one larger GEMM reads the same bytes
with fewer kernel launches and better thread use. A bias ``Add(MatMul(x, W_i), b_i)`` present on
every member is packed the same way (``[b_1 | b_2 | ...]``) before the Split.

onnxruntime-genai's model builder does the same for q/k/v (``make_packed_matmul`` in
src/python/py/models/builders/base.py, ``make_attention_input_proj``); onnxruntime's transformer
optimizer packs q/k/v for its Attention fusion (``fusion_attention.py``). Both were read, nothing
copied. Here the concatenation is a lazy weight transform (:func:`onnxport.weights.concatenated`):
no weight is read or copied at pass time, the packed bytes are produced when the model is written
or run, from whatever source the weights have then.

Packing along ``N`` commutes with MatMulNBits' block quantization (blocks run along ``K``, one set
per output column), so running this pass before :mod:`~onnxport.passes.ort.matmul_nbits` gives
packed int4/int8 bytes equal to the separate quantizations side by side.

Applies to MatMuls in the main graph whose first input is the same value and whose second input is
a 2-D float initializer (not a graph input) of the same dtype and ``K``, two or more per group, in
a model importing the default domain at opset ≥ 13 (Split's sizes as an input). A gated MLP's gate
and up projections (two MatMuls whose outputs meet in one ``Mul``) also share their input but stay
two MatMuls, as in the builder's graphs (which pack q/k/v only): packed, the Split's copy and the wider GEMM
cost ~2% of a 0.85B Llama's float32 prefill (onnxruntime profile, session 34: 6.3 ms of Split and
645.5 against 636.7 ms of MatMul per 128-token prompt). A parallel block (Phi-2, GPT-J, Cohere:
attention and MLP read the same normed input) packs its attention projections (those reaching an
attention node) apart from the MLP's, so q|k|v can go whole into the attention
(:mod:`~onnxport.passes.ort.packed_qkv`) and the MLP keeps the builder's unpacked form. MatMuls with a
dynamic second input, another first input, or another ``K`` are left alone. All ops are standard,
so no kernel guard is needed.
"""

from __future__ import annotations

import collections
import dataclasses
import os

import numpy as np
import onnx_ir as ir

from onnxport import weights

FLOATS = (ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16)
MIN_OPSET = 13


@dataclasses.dataclass
class Member:
    """One MatMul of a group: its node, weight (``[K, N]``) and optional bias Add (``[N]``)."""

    node: ir.Node
    weight: ir.Value
    tensor: ir.TensorProtocol
    k: int
    n: int
    dtype: ir.DataType
    bias: tuple[ir.Node, ir.Value, ir.TensorProtocol] | None = None


def member(node: ir.Node) -> Member | None:
    """``node`` as a packable MatMul: standard, its second input a 2-D float initializer (not a
    graph input) of its first input's dtype with static dims; else ``None``."""
    if node.op_type != "MatMul" or node.domain != "" or len(node.inputs) != 2:
        return None
    a, w = node.inputs
    if a is None or w is None or w.is_graph_input() or not w.is_initializer():
        return None
    tensor, dtype = w.const_value, w.dtype
    if tensor is None or dtype is None or dtype not in FLOATS or a.dtype != dtype:
        return None
    dims = tuple(tensor.shape)
    if len(dims) != 2 or not all(isinstance(d, int) for d in dims):
        return None
    k, n = int(dims[0]), int(dims[1])  # type: ignore[arg-type]
    found = Member(node, w, tensor, k, n, dtype)
    found.bias = _bias(found)
    return found


def _bias(m: Member) -> tuple[ir.Node, ir.Value, ir.TensorProtocol] | None:
    """The ``Add(out, b)`` (either order) with a constant ``[N]`` bias that is the MatMul output's
    only use, else ``None``."""
    out = m.node.outputs[0]
    uses = out.uses()
    if len(uses) != 1 or out.is_graph_output():
        return None
    add = next(iter(uses)).node
    if add.op_type != "Add" or add.domain != "" or len(add.inputs) != 2:
        return None
    other = add.inputs[1] if add.inputs[0] is out else add.inputs[0]
    if other is None or other is out or not other.is_initializer() or other.is_graph_input():
        return None
    tensor = other.const_value
    if tensor is None or other.dtype != m.dtype or tuple(tensor.shape) != (m.n,):
        return None
    return add, other, tensor


# how many nodes deep a gated MLP's gate output is followed to the product with its up output
# (SiLU as Sigmoid then Mul, GELU's written-out forms)
_GATE_DEPTH = 4


def _reached(value: ir.Value, depth: int, stop: tuple[str, ...] = ()) -> dict[int, ir.Node]:
    """The nodes reading ``value`` within ``depth`` nodes, by id; a node of a ``stop`` op type is
    reached but not followed further."""
    frontier, seen = [value], {}
    for _ in range(depth):
        following: list[ir.Value] = []
        for v in frontier:
            for user, _ in v.uses():
                if id(user) not in seen:
                    seen[id(user)] = user
                    if user.op_type not in stop:
                        following.extend(user.outputs)
        frontier = following
    return seen


def gated(a: ir.Value, b: ir.Value) -> bool:
    """Whether ``a`` and ``b`` meet in one ``Mul`` within a few nodes: a gated MLP's gate and up
    projections (``act(x W_gate) * x W_up``)."""
    gate, up = (_reached(v, _GATE_DEPTH) for v in (a, b))
    return any(node.op_type == "Mul" for key, node in gate.items() if key in up)


def _gated_pair(group: list[Member]) -> bool:
    """Whether ``group`` is a gated MLP's gate and up projections (:func:`gated`)."""
    return len(group) == 2 and gated(group[0].node.outputs[0], group[1].node.outputs[0])


# how many nodes deep a projection's output is followed to an attention (q/k/v through a rotary,
# head reshapes and the cache Concat), never through another projection (the MLP's output reaches
# the next layer's attention through its own)
_ATTENTION_DEPTH = 10
_ATTENTIONS = ("GroupQueryAttention", "Attention", "MultiHeadAttention")
_PROJECTIONS = ("MatMul", "Gemm", "MatMulNBits")


def _feeds_attention(m: Member) -> bool:
    reached = _reached(m.node.outputs[0], _ATTENTION_DEPTH, stop=_PROJECTIONS)
    return any(n.op_type in _ATTENTIONS for n in reached.values())


def _parallel_split(group: list[Member]) -> list[list[Member]]:
    """A parallel block's group (attention and MLP read one normed input: Phi-2, GPT-J, Cohere)
    as its attention projections and the rest, else the group whole."""
    attention = [m for m in group if _feeds_attention(m)]
    if not attention or len(attention) == len(group):
        return [group]
    return [attention, [m for m in group if not any(m is a for a in attention)]]


def groups(graph: ir.Graph) -> list[list[Member]]:
    """The MatMuls to pack, grouped: same first input, weight dtype and ``K``, two or more each;
    not a gated MLP's gate and up (:func:`_gated_pair`); the attention projections of a parallel
    block apart from its MLP's (:func:`_parallel_split`)."""
    by_key: dict[tuple[int, ir.DataType, int], list[Member]] = collections.defaultdict(list)
    for node in graph:
        m = member(node)
        if m is not None:
            by_key[(id(node.inputs[0]), m.dtype, m.k)].append(m)
    found = [part for g in by_key.values() if len(g) > 1 for part in _parallel_split(g)]
    return [g for g in found if len(g) > 1 and not _gated_pair(g)]


def packed_name(graph: ir.Graph, names: list[str]) -> str:
    """``<common prefix><rest_1>+<rest_2>+...`` (``a.q_proj.weight.T+k_proj.weight.T``), unique
    among the graph's initializers."""
    prefix = os.path.commonprefix(names)
    prefix = prefix[: prefix.rfind(".") + 1]
    name = prefix + "+".join(n[len(prefix) :] for n in names)
    base, i = name, 1
    while name in graph.initializers:
        name, i = f"{base}.{i}", i + 1
    return name


class PackedMatMulPass(ir.passes.InPlacePass):
    """Pack every group of MatMuls found by :func:`groups` (see the module docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        if model.opset_imports.get("", 0) < MIN_OPSET:
            return ir.passes.PassResult(model, False)
        found = groups(model.graph)
        for group in found:
            _pack(model.graph, group)
        return ir.passes.PassResult(model, bool(found))


def _pack(graph: ir.Graph, group: list[Member]) -> None:
    """Insert ``Split(Add?(MatMul(x, concat(W)), concat(b)))`` before the group's first MatMul and
    hand each member's output (or bias Add's output) to the matching Split output."""
    first, dtype, sizes = group[0], group[0].dtype, [m.n for m in group]
    nodes: list[ir.Node] = []

    def initializer(name: str, tensor: ir.TensorProtocol, shape: list[int]) -> ir.Value:
        value = ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(tensor.dtype), const_value=tensor)
        graph.register_initializer(value)
        return value

    def add(op: str, inputs: list[ir.Value], **attrs: int) -> ir.Node:
        node = ir.node(op, inputs, attrs, num_outputs=len(sizes) if op == "Split" else 1,
                       name=f"{first.node.name}.packed_{op}")
        nodes.append(node)
        return node

    name = packed_name(graph, [m.weight.name or "" for m in group])
    weight = initializer(name, weights.concatenated([m.tensor for m in group], 1, name), [first.k, sum(sizes)])
    result = add("MatMul", [first.node.inputs[0], weight]).outputs[0]  # type: ignore[list-item]
    result.dtype = dtype
    replaced = [m.node.outputs[0] for m in group]
    removed = [m.node for m in group]
    dropped = [m.weight for m in group]
    biases = [m.bias for m in group if m.bias is not None]
    if len(biases) == len(group):
        bias_name = packed_name(graph, [b[1].name or "" for b in biases])
        bias = initializer(bias_name, weights.concatenated([b[2] for b in biases], 0, bias_name), [sum(sizes)])
        result = add("Add", [result, bias]).outputs[0]
        result.dtype = dtype
        replaced = [b[0].outputs[0] for b in biases]
        removed += [b[0] for b in biases]
        dropped += [b[1] for b in biases]
    split_sizes = initializer(f"{name}.split", ir.tensor(np.array(sizes, np.int64), name=f"{name}.split"), [len(sizes)])
    split = add("Split", [result, split_sizes], axis=-1)
    graph.insert_before(first.node, nodes)
    for old, new in zip(replaced, split.outputs, strict=True):
        new.shape, new.type = old.shape, old.type
        old_name = old.name
        old.replace_all_uses_with(new, replace_graph_outputs=True)
        old.name = None
        new.name = old_name
    graph.remove(removed, safe=True)
    for value in dropped:
        if value.name is not None and not value.uses() and not value.is_graph_output():
            graph.initializers.pop(value.name, None)
