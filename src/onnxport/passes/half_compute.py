"""Run half-precision nodes without an onnxruntime CPU kernel in float32, rounding once per op.

onnxruntime's CPU execution provider registers few bfloat16 kernels (no Add, MatMul, Exp,
ReduceSum, Softmax, Where, Expand, ...) and not every float16 one, so a half-precision export
fails to load ("Could not find an implementation for MatMul(13)"). PyTorch eager computes most
CPU half ops in float32 and rounds the result once; this pass does the same in the graph: a node
whose type binding (bfloat16/float16 inputs and outputs) has no kernel gets its half inputs
``Cast`` to FLOAT, runs in FLOAT, and its half outputs are ``Cast`` back. Where a rewritten node
reads a value another rewritten node of the same ATen op made (the dispatcher's ``fx_node``
metadata), it reads the float value: an ATen op is rounded once, at its result. Everything else is left
alone: nodes with a kernel in their dtype, nodes that already compute in float, non-float inputs
(indices, shapes, conditions; only the half type constraints change, so every other constraint
stays as it was), nodes of other domains, and control flow (``If``/``Loop``/``Scan`` have
half kernels; their bodies are rewritten as graphs of their own, as are local functions).

The kernel table (``passes/ort_kernels.json``) is data generated once from onnxruntime's
kernel registry (``python -m onnxport.passes.half_compute``) and checked in with the onnxruntime
version it came from, so an export does not depend on which onnxruntime is installed (or whether
one is), and costs no probing. ``tests/passes/test_half_compute.py`` compares it with the
installed onnxruntime when the versions match.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir

from onnxport.passes.graphs import all_graphs, all_values

HALF_TYPES = frozenset({ir.DataType.BFLOAT16, ir.DataType.FLOAT16})

# Ops whose output dtype is an attribute, not an input's: set to FLOAT when the output is rewritten.
_DTYPE_ATTRIBUTE = {
    "Cast": "to",
    "EyeLike": "dtype",
    "RandomNormal": "dtype",
    "RandomUniform": "dtype",
    "RandomNormalLike": "dtype",
    "RandomUniformLike": "dtype",
    "Bernoulli": "dtype",
}
# Kernels onnxruntime registers for half types but refuses at run time: bfloat16 ScatterElements
# with a reduction ("BFloat16 data type is not supported with ScatterElements opset 16 when
# reduction is 'mul'"); rewritten whenever the attribute is set to something else than "none".
_REFUSED_WITH_ATTRIBUTE = {
    "ScatterElements": ("reduction", "none"),
    "ScatterND": ("reduction", "none"),
}
# On rewritten nodes: "float32", the dtype they compute in; on the Casts the pass adds: "cast".
METADATA_KEY = "pkg.onnxport.half_compute"
# Never rewritten: data, and nodes whose types come from their subgraphs.
_SKIPPED = frozenset({"Constant", "If", "Loop", "Scan", "SequenceMap"})


# -- the kernel table -------------------------------------------------------------------------


def type_string(type_: ir.TypeProtocol | None) -> str | None:
    """``tensor(float)`` → ``float`` (the table's short form); ``seq(tensor(float))`` as ONNX spells it."""
    if type_ is None:
        return None
    if isinstance(type_, ir.TensorType):
        return type_.dtype.name.lower()
    inner = type_string(getattr(type_, "elem_type", None))
    if inner is None:
        return None
    inner = inner if "(" in inner else f"tensor({inner})"
    if isinstance(type_, ir.SequenceType):
        return f"seq({inner})"
    if isinstance(type_, ir.OptionalType):
        return f"optional({inner})"
    return None


def kernel_table_from_onnxruntime(provider: str = "CPUExecutionProvider") -> dict[str, list[Any]]:
    """The default-domain kernels of ``provider`` as registered in the installed onnxruntime.

    ``{op_type: [(since, until, ((constraint, (type, ...)), ...)), ...]}``; registrations that
    differ only in the types of a single constraint are merged.
    """
    from onnxruntime.capi import _pybind_state  # heavy runtime: only to regenerate the table

    def short(t: str) -> str:
        return t[len("tensor(") : -1] if t.startswith("tensor(") else t

    merged: dict[tuple[str, int, int, str], set[str]] = {}
    multi: dict[str, set[tuple[int, int, tuple[tuple[str, tuple[str, ...]], ...]]]] = {}
    for d in _pybind_state.get_all_opkernel_def():
        if d.provider != provider or d.domain not in ("", "ai.onnx"):
            continue
        start, end = d.version_range
        constraints = d.type_constraints
        if len(constraints) == 1:
            ((name, types),) = constraints.items()
            merged.setdefault((d.op_name, start, end, name), set()).update(short(t) for t in types)
        else:
            key = tuple(
                sorted((k, tuple(sorted(short(t) for t in v))) for k, v in constraints.items())
            )
            multi.setdefault(d.op_name, set()).add((start, end, key))
    table: dict[str, set[tuple[int, int, tuple[tuple[str, tuple[str, ...]], ...]]]] = multi
    for (op, start, end, name), types in merged.items():
        table.setdefault(op, set()).add((start, end, ((name, tuple(sorted(types))),)))
    return {op: sorted(entries) for op, entries in sorted(table.items())}


KERNEL_TABLE = Path(__file__).with_name("ort_kernels.json")
KernelTable = dict[str, list[tuple[int, int, tuple[tuple[str, tuple[str, ...]], ...]]]]


@functools.cache
def kernel_table() -> tuple[str, KernelTable]:
    """(onnxruntime version, op type → [(since, until, ((constraint, types), ...))]) from the checked-in
    ``ort_kernels.json``."""
    data = json.loads(KERNEL_TABLE.read_text())
    table = {
        op: [(start, end, tuple((name, tuple(types)) for name, types in constraints.items()))
             for start, end, constraints in entries]
        for op, entries in data["kernels"].items()
    }
    return data["onnxruntime_version"], table


def write_kernel_table(path: str | Path | None = None) -> Path:
    """Regenerate ``ort_kernels.json`` from the installed onnxruntime; returns the path written."""
    import onnxruntime  # heavy runtime: only to regenerate the table

    path = Path(path or KERNEL_TABLE)
    data = {
        "onnxruntime_version": onnxruntime.__version__,
        "about": "onnxruntime CPU kernels (default domain): op type -> [since, until, {type constraint: "
                 "[types]}]. Generated by `python -m onnxport.passes.half_compute` from onnxruntime's kernel "
                 "registry (get_all_opkernel_def); read by onnxport.passes.half_compute. Do not edit.",
        "kernels": {op: [[start, end, {name: list(types) for name, types in constraints}]
                         for start, end, constraints in entries]
                    for op, entries in kernel_table_from_onnxruntime().items()},
    }
    path.write_text(json.dumps(data, indent=0) + "\n")
    return path


@functools.cache
def _kernels(op_type: str, since: int) -> tuple[dict[str, frozenset[str]], ...]:
    """The registered kernels of ``op_type`` whose version range holds ``since``."""
    return tuple(
        {name: frozenset(types) for name, types in constraints}
        for start, end, constraints in kernel_table()[1].get(op_type, ())
        if start <= since <= end
    )


def has_kernel(op_type: str, since: int, binding: Mapping[str, str]) -> bool:
    """Whether a kernel accepts ``binding`` (type constraint → type); unbound constraints match."""
    return any(
        all(name not in binding or binding[name] in types for name, types in kernel.items())
        for kernel in _kernels(op_type, since)
    )


@functools.cache
def _schema(op_type: str, opset: int, domain: str) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def _formal(params: Sequence[Any], index: int) -> str | None:
    """The type string of the formal parameter an actual input/output ``index`` binds to."""
    if index < len(params):
        return params[index].type_str
    if params and params[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return params[-1].type_str
    return None


# -- the pass ---------------------------------------------------------------------------------

_HALF_NAMES = {"bfloat16": ir.DataType.BFLOAT16, "float16": ir.DataType.FLOAT16}


class HalfComputePass(ir.passes.InPlacePass):
    """bfloat16/float16 nodes without an onnxruntime CPU kernel compute in float32 (see module doc)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        self._names = {v.name for v in all_values(model) if v.name}
        self._graph_outputs: dict[int, list[tuple[ir.Graph, int]]] = {}
        for g in all_graphs(model):
            for k, v in enumerate(g.outputs):
                self._graph_outputs.setdefault(id(v), []).append((g, k))
        self._count = 0
        self._inferred: dict[int, str] = {}  # id(value) → type string, for values without a type
        # id(half value a Cast back made) → (the float value it rounds, the ATen op that made it)
        self._rounded: dict[int, tuple[ir.Value, str]] = {}
        self._graph(model.graph, dict(model.opset_imports))
        for function in model.functions.values():
            self._graph(function.graph, {**model.opset_imports, **function.opset_imports})
        return ir.passes.PassResult(model, self._count > 0)

    def _graph(self, graph: ir.Graph, opsets: dict[str, int]) -> None:
        opsets = {**opsets, **graph.opset_imports}
        casts: dict[int, ir.Value] = {}  # id(half value) → its FLOAT cast, shared in this graph
        backs: list[ir.Node] = []
        for node in list(graph):
            for attr in node.attributes.values():
                if attr.type == ir.AttributeType.GRAPH:
                    self._graph(attr.value, opsets)
                elif attr.type == ir.AttributeType.GRAPHS:
                    for sub in attr.value:
                        self._graph(sub, opsets)
            if node.domain not in ("", "ai.onnx") or node.op_type in _SKIPPED:
                continue
            schema = _schema(
                node.op_type, node.version or opsets.get("", opsets.get("ai.onnx", 0)), ""
            )
            if schema is None:
                continue
            half = _half_constraints(node, schema, self._inferred)
            if half:
                backs.extend(self._rewrite(graph, node, schema, half, casts))
        for back in backs:  # rounded values only nodes of their own ATen op read: rounded by none
            if not back.outputs[0].uses() and id(back.outputs[0]) not in self._graph_outputs:
                graph.remove(back, safe=True)

    def _rewrite(
        self,
        graph: ir.Graph,
        node: ir.Node,
        schema: onnx.defs.OpSchema,
        half: dict[str, str],
        casts: dict[int, ir.Value],
    ) -> list[ir.Node]:
        """Rewrite ``node`` in float; returns the Casts back to half it added."""
        label = node.name or node.op_type
        aten_op = _aten_op(node)
        for i, value in enumerate(list(node.inputs)):
            if value is None or _formal(schema.inputs, i) not in half:
                continue
            rounded = self._rounded.get(id(value))
            if rounded is not None and aten_op and rounded[1] == aten_op:
                # an intermediate value of the same ATen op: eager rounds an op's result once
                node.replace_input_with(i, rounded[0])
                continue
            cast = casts.get(id(value))
            if cast is None:
                cast_node = ir.Node(
                    "",
                    "Cast",
                    [value],
                    attributes=[ir.AttrInt64("to", ir.DataType.FLOAT)],
                    name=self._fresh(f"{label}_in{i}_float"),
                    num_outputs=1,
                )
                cast_node.metadata_props.update(node.metadata_props)
                cast_node.metadata_props[METADATA_KEY] = "cast"
                cast = cast_node.outputs[0]
                cast.name = self._fresh(f"{value.name or label}_to_float")
                cast.type, cast.shape = ir.TensorType(ir.DataType.FLOAT), value.shape
                graph.insert_before(node, cast_node)
                casts[id(value)] = cast
            node.replace_input_with(i, cast)
        backs = []
        for i, value in enumerate(node.outputs):
            formal = _formal(schema.outputs, i)
            if formal in half:
                back = self._cast_output_back(graph, node, value, _HALF_NAMES[half[formal]])
                if back is not None:
                    backs.append(back)
                    self._rounded[id(back.outputs[0])] = (value, aten_op)
        attr_name = _DTYPE_ATTRIBUTE.get(node.op_type)
        attr = node.attributes.get(attr_name) if attr_name else None
        if attr is not None and attr.value in HALF_TYPES:
            node.attributes[attr.name] = ir.AttrInt64(attr.name, ir.DataType.FLOAT)
        node.metadata_props[METADATA_KEY] = "float32"
        self._count += 1
        return backs

    def _cast_output_back(
        self, graph: ir.Graph, node: ir.Node, value: ir.Value, dtype: ir.DataType
    ) -> ir.Node | None:
        uses = list(value.uses())
        if not uses and id(value) not in self._graph_outputs:  # an unused output stays float
            value.type = ir.TensorType(ir.DataType.FLOAT)
            return None
        name = value.name
        value.name = self._fresh(f"{name or node.name}_float")
        back = ir.Node(
            "",
            "Cast",
            [value],
            attributes=[ir.AttrInt64("to", dtype)],
            name=self._fresh(f"{node.name or node.op_type}_out{value.index()}_back"),
            num_outputs=1,
        )
        back.metadata_props.update(node.metadata_props)
        back.metadata_props[METADATA_KEY] = "cast"
        out = back.outputs[0]
        out.type, out.shape = ir.TensorType(dtype), value.shape
        out.metadata_props.update(value.metadata_props)
        out.meta.update(value.meta)
        value.type = ir.TensorType(ir.DataType.FLOAT)
        graph.insert_after(node, back)
        out.name = name
        for user, index in uses:
            user.replace_input_with(index, out)
        for g, k in self._graph_outputs.pop(id(value), []):
            g.outputs[k] = out
            self._graph_outputs.setdefault(id(out), []).append((g, k))
        return back

    def _fresh(self, name: str) -> str:
        candidate, k = name, 0
        while candidate in self._names:
            k += 1
            candidate = f"{name}_{k}"
        self._names.add(candidate)
        return candidate


def _aten_op(node: ir.Node) -> str:
    """The ATen op (FX node) a node was translated from, per the dispatcher's metadata; or ''."""
    fx_node = node.metadata_props.get("pkg.torch.onnx.fx_node", "")
    return f"{node.metadata_props.get('namespace', '')}|{fx_node}" if fx_node else ""


def _half_constraints(
    node: ir.Node, schema: onnx.defs.OpSchema, inferred: dict[int, str]
) -> dict[str, str]:
    """The node's half-typed constraints to move to float; empty when it stays as it is.

    Values without a type (a few intermediate values of translations) take the type their
    constraint is bound to by the node's other values; ``inferred`` keeps it for their consumers.
    """
    constraints = {c.type_param_str for c in schema.type_constraints}
    binding: dict[str, str] = {}
    for params, values in ((schema.inputs, node.inputs), (schema.outputs, node.outputs)):
        for i, value in enumerate(values):
            if value is None:
                continue
            formal = _formal(params, i)
            t = type_string(value.type) or inferred.get(id(value))
            if formal in constraints and t is not None:
                binding.setdefault(formal, t)
    for i, value in enumerate(node.outputs):
        formal = _formal(schema.outputs, i)
        if value.type is None and formal in binding:
            inferred[id(value)] = binding[formal]
    half = {c: t for c, t in binding.items() if t in _HALF_NAMES}
    if not half:
        return {}
    since = schema.since_version
    refused = _REFUSED_WITH_ATTRIBUTE.get(node.op_type)
    attr = node.attributes.get(refused[0]) if refused else None
    refused_here = attr is not None and refused is not None and attr.value != refused[1]
    if has_kernel(node.op_type, since, binding) and not refused_here:
        return {}
    in_float = {**binding, **dict.fromkeys(half, "float")}
    if _kernels(node.op_type, since) and not has_kernel(node.op_type, since, in_float):
        return {}  # no float kernel either: casting would not help
    return half


if __name__ == "__main__":
    print(write_kernel_table(sys.argv[1] if len(sys.argv) > 1 else None))
