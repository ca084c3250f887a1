"""Emit the instances of chosen module types as calls to ONNX local functions.

Each ONNX node knows the module instance it came from (``pkg.torch.onnx.name_scopes`` and
``pkg.torch.onnx.class_hierarchy``, written from ``nn_module_stack``). The nodes of one instance of a
selected type move into a function body whose inputs are the values the block reads (activations,
weights, constants) and whose outputs are the values used after it. Blocks with identical bodies
(same ops, attributes and wiring; weights differ only as inputs) share one function, so Netron shows
``LlamaDecoderLayer`` ×N calling one function. ONNX IR spec, "Functions"; onnxruntime inlines local
functions at load, so numerics do not change.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from typing import Any

import onnx_ir as ir

from onnxport.metadata import KEY_CLASS_HIERARCHY, KEY_FX_NODE, KEY_NAME_SCOPES

DOMAIN = "pkg.onnxport.modules"
# FX targets of symbolic-shape arithmetic (``aten.sym_size.int``, ``operator.mul`` on SymInts...).
_SHAPE_ARITHMETIC = (
    "target=operator.", "target=<built-in function", "target=torch.ops.aten.sym_size", "target=torch.sym_",
)


def _type_names(types: Iterable[str | type]) -> list[str]:
    """Accepted spellings of each type: ``"LlamaDecoderLayer"`` or a class (its qualified name)."""
    names = []
    for t in types:
        names.append(f"{t.__module__}.{t.__qualname__}" if isinstance(t, type) else str(t))
    return names


def _matches(class_name: str, wanted: Sequence[str]) -> bool:
    return any(class_name == w or class_name.endswith(f".{w}") for w in wanted)


def module_instance(node: ir.Node, wanted: Sequence[str]) -> tuple[str, str] | None:
    """(instance path, class name) of the outermost selected module the node belongs to."""
    fx_node = node.metadata_props.get(KEY_FX_NODE, "")
    if any(marker in fx_node for marker in _SHAPE_ARITHMETIC):
        return None  # SymInt arithmetic torch.export shares across blocks: computed outside them
    scopes_text = node.metadata_props.get(KEY_NAME_SCOPES)
    classes_text = node.metadata_props.get(KEY_CLASS_HIERARCHY)
    if not scopes_text or not classes_text:
        return None
    scopes, classes = ast.literal_eval(scopes_text), ast.literal_eval(classes_text)
    for depth, class_name in enumerate(classes[:-1]):
        if _matches(class_name, wanted):
            path = ".".join(s for s in scopes[1 : depth + 1] if s)
            return path, class_name.rsplit(".", 1)[-1]
    return None


def _attr_key(attr: ir.Attr) -> Any:
    """An attribute's value for comparison (tensors by dtype, shape and bytes, not by name)."""
    if attr.type == ir.AttributeType.TENSOR:
        tensor = attr.value
        return (tensor.dtype, tuple(tensor.shape), tensor.tobytes())
    return repr(attr.value)


def _signature(nodes: Sequence[ir.Node], inputs: Sequence[ir.Value]) -> tuple[Any, ...]:
    """A structural key: equal for blocks that compute the same function of their inputs."""
    index: dict[int, tuple[str | int, ...]] = {id(v): ("in", i) for i, v in enumerate(inputs)}
    key = []
    for n, node in enumerate(nodes):
        for k, out in enumerate(node.outputs):
            index[id(out)] = ("node", n, k)
        attrs = tuple(sorted((name, _attr_key(attr)) for name, attr in node.attributes.items()))
        refs = tuple(index.get(id(v)) if v is not None else None for v in node.inputs)
        key.append((node.domain, node.op_type, node.overload, attrs, refs, len(node.outputs)))
    return tuple(key)


def _canonical_order(group: list[ir.Node]) -> list[ir.Node]:
    """Constants first, in order of first use; then the other nodes in graph order. Blocks whose
    constants were created at different points then still compare equal."""
    position = {id(n): i for i, n in enumerate(group)}
    constants = [n for n in group if n.op_type == "Constant" and not n.inputs]

    def first_use(node: ir.Node) -> tuple[int, int]:
        uses = [(position.get(id(u), len(group)), i) for u, i in node.outputs[0].uses()]
        return min(uses, default=(len(group), 0))

    constants.sort(key=first_use)
    rest = [n for n in group if not (n.op_type == "Constant" and not n.inputs)]
    return constants + rest


def _convex(graph: ir.Graph, group: list[ir.Node]) -> bool:
    """No path leaves the group and comes back (replacing it by one node keeps a DAG)."""
    members = {id(n) for n in group}
    frontier = [user for n in group for out in n.outputs for user, _ in out.uses() if id(user) not in members]
    seen: set[int] = set()
    while frontier:
        node = frontier.pop()
        if id(node) in seen or node.graph is not graph:
            continue
        seen.add(id(node))
        for out in node.outputs:
            for user, _ in out.uses():
                if id(user) in members:
                    return False
                frontier.append(user)
    return True


def _unshare_constants(graph: ir.Graph, instance_of: Any) -> None:
    """Give every module instance its own copy of the Constant nodes it uses, so a constant
    created once and reused by several blocks does not make their bodies differ."""
    for node in list(graph):
        if node.op_type != "Constant" or node.domain != "" or node.outputs[0].is_graph_output():
            continue
        home = instance_of(node)
        by_instance: dict[Any, list[tuple[ir.Node, int]]] = {}
        for user, index in node.outputs[0].uses():
            if user.graph is graph:
                by_instance.setdefault(instance_of(user), []).append((user, index))
        for instance, uses in by_instance.items():
            if instance == home:
                continue
            copy = ir.Node("", "Constant", [], attributes=list(node.attributes.values()), num_outputs=1)
            copy.metadata_props.update(uses[0][0].metadata_props)
            out = copy.outputs[0]
            out.type, out.shape, out.const_value = node.outputs[0].type, node.outputs[0].shape, node.outputs[0].const_value
            graph.insert_before(uses[0][0], copy)
            for user, index in uses:
                user.replace_input_with(index, out)
        if not node.outputs[0].uses():
            graph.remove(node, safe=True)


class ModuleFunctionsPass(ir.passes.InPlacePass):
    """Replace each instance of the selected module types by a call to a (shared) local function."""

    def __init__(self, module_types: Iterable[str | type]) -> None:
        super().__init__()
        self.wanted = _type_names(module_types)

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        _unshare_constants(graph, lambda n: (module_instance(n, self.wanted) or (None,))[0])
        groups: dict[str, list[ir.Node]] = {}
        classes: dict[str, str] = {}
        for node in graph:
            found = module_instance(node, self.wanted)
            if found is not None:
                groups.setdefault(found[0], []).append(node)
                classes[found[0]] = found[1]
        functions: dict[tuple[Any, ...], ir.Function] = {}
        for path, group in groups.items():
            if _convex(graph, group):
                self._outline(model, path, classes[path], group, functions)
        if functions:
            model.opset_imports.setdefault(DOMAIN, 1)
        return ir.passes.PassResult(model, bool(functions))

    def _outline(
        self, model: ir.Model, path: str, class_name: str, group: list[ir.Node],
        functions: dict[tuple[Any, ...], ir.Function],
    ) -> None:
        graph = model.graph
        group = _canonical_order(group)
        members = {id(n) for n in group}
        inputs: list[ir.Value] = []
        for node in group:
            for value in node.inputs:
                if value is not None and (value.producer() is None or id(value.producer()) not in members):
                    if all(value is not v for v in inputs):
                        inputs.append(value)
        outputs = [
            out for node in group for out in node.outputs
            if out.is_graph_output() or any(id(user) not in members for user, _ in out.uses())
        ]
        key = _signature(group, inputs) + (tuple((group.index(o.producer()), o.index()) for o in outputs),)  # type: ignore[arg-type]
        function = functions.get(key)
        call = ir.Node(
            DOMAIN, class_name, inputs, num_outputs=len(outputs),
            overload="" if function is None else function.overload, name=path or class_name,
        )
        call.metadata_props.update(group[0].metadata_props)
        call.metadata_props["pkg.onnxport.module_path"] = path
        graph.insert_after(group[-1], call)
        for old, new in zip(outputs, call.outputs):
            if old.type is not None:
                new.type, new.shape = old.type, old.shape
            for user, index in list(old.uses()):
                if id(user) not in members:
                    user.replace_input_with(index, new)
            if old.is_graph_output():
                graph.outputs[graph.outputs.index(old)] = new
            new.name = old.name  # the body has its own scope: both may keep the name
        graph.remove(group, safe=False)
        if function is not None:
            for node in group:  # the shared body already exists: drop this copy
                for i in range(len(node.inputs)):
                    node.replace_input_with(i, None)
            return
        overload = str(sum(1 for f in functions.values() if f.name == class_name) or "")
        call.overload = overload
        formals = [ir.Value(name=f"arg{i}") for i in range(len(inputs))]
        for node in group:
            for i, value in enumerate(node.inputs):
                for j, outer in enumerate(inputs):
                    if value is outer:
                        node.replace_input_with(i, formals[j])
        body = ir.Graph(formals, list(outputs), nodes=group, opset_imports=dict(model.graph.opset_imports), name=class_name)
        function = ir.Function(DOMAIN, class_name, overload, graph=body, attributes=[])
        model.functions[function.identifier()] = function
        functions[key] = function
