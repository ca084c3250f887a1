"""Walk an ExportedProgram's FX graph once and build the ONNX graph (onnx_ir)."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, cast

import onnx_ir as ir
import onnx_ir.passes.common as common_passes
import sympy
import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind

from onnxport.capture.decomp import call_nodes
from onnxport.errors import InputError, UnsupportedOpError
from onnxport.metadata import (
    COMPLEX_META,
    KEY_COMPLEX_AS_REAL,
    KEY_COMPLEX_OUTPUTS,
    KEY_INPUT_KIND,
    KEY_INPUT_PERSISTENT,
    KEY_ORIGINAL_NAME,
    KEY_OUTPUT_KIND,
)
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.dispatch import (
    call_translation,
    is_complex_node,
    mark_complex,
    stamp_metadata,
)
from onnxport.translate.registry import Registry

# Higher-order ops that only change autograd/autocast state around a subgraph: at inference their
# subgraph is translated inline.
INLINED_HOPS = frozenset(
    {torch.ops.higher_order.wrap_with_set_grad_enabled, torch.ops.higher_order.wrap_with_autocast}
)
# FX targets handled by the walker itself rather than by a translation.
STRUCTURAL_TARGETS = frozenset({operator.getitem}) | INLINED_HOPS


class DimNamer:
    """Names symbolic dimensions: user names for input dims, derived expressions kept symbolic.

    Args:
        names: Symbol name (``"s72"``) → user dim name (``"batch"``).
    """

    def __init__(self, names: Mapping[str, str] | None = None) -> None:
        self._names = dict(names or {})

    def __call__(self, dim: Any) -> int | ir.SymbolicDim:
        if isinstance(dim, int):
            return dim
        expr = dim.node.expr if isinstance(dim, torch.SymInt) else dim
        if expr.is_number:
            return int(expr)
        if expr.is_Symbol:
            return ir.SymbolicDim(self._names.get(str(expr), str(expr)))
        subs = {s: _symbol(self._names.get(str(s), str(s))) for s in expr.free_symbols}
        return ir.SymbolicDim(str(expr.xreplace(subs)))


def _symbol(name: str) -> Any:
    return sympy.Symbol(name, integer=True, positive=True)


def unsupported_targets(ep: ExportedProgram, registry: Registry, opset: int) -> dict[Any, list[torch.fx.Node]]:
    """Every ``call_function`` target without a translation at ``opset``, with its nodes, in one pass."""
    missing: dict[Any, list[torch.fx.Node]] = {}
    for node in call_nodes(ep):
        if node.target not in STRUCTURAL_TARGETS:
            if registry.get(node.target, opset, complex=is_complex_node(node)) is None:
                missing.setdefault(node.target, []).append(node)
    return missing


def unsupported_error(missing: Mapping[Any, list[torch.fx.Node]], registry: Registry) -> UnsupportedOpError:
    """One error listing every untranslated op with a count, and how to add a translation."""
    lines = [f"{len(missing)} operator(s) have no ONNX translation in onnxport:"]
    for target, nodes in missing.items():
        extra = ""
        if is_complex_node(nodes[0]):
            extra = (f" (no complex translation for {target}: the node has complex inputs or outputs, "
                     "carried as real [..., 2] tensors, which only translations declared complex=True receive)")
        elif any(not t.complex for t in registry.translations_for(target)):
            since = min(t.since for t in registry.translations_for(target) if not t.complex)
            extra = f" (translated from opset {since}; raise opset_version)"
        lines.append(f"  - {target}: {len(nodes)} node(s), e.g. {nodes[0].name}{extra}")
    first = next(iter(missing.values()))[0]
    example = next(iter(missing))
    name = f"torch.ops.{example}" if isinstance(example, torch._ops.OpOverload) else str(example)
    lines.append(
        "Register a translation, e.g.:\n"
        f"  @onnxport.register_translation({name})\n"
        "  def translate(ctx, *args, **kwargs):  # args as in the op's schema; tensors are onnx_ir.Value\n"
        "      return ctx.op.<OnnxOp>(...)        # or ctx.op.MyOp(..., _domain=\"com.example\")\n"
        "or pass custom_translations={op: translate} to onnxport.export for this export only."
    )
    return UnsupportedOpError("\n".join(lines), first)


class GraphTranslator:
    """Builds one ``ir.Graph`` from one FX graph (the ExportedProgram's)."""

    def __init__(
        self, ep: ExportedProgram, registry: Registry, opset: int, dims: DimNamer,
        graph: ir.Graph | None = None, prefix: str = "",
    ) -> None:
        self.ep = ep
        self.registry = registry
        self.opset = opset
        self.dims = dims
        self.graph = graph if graph is not None else ir.Graph([], [], nodes=[], opset_imports={"": opset}, name="main_graph")
        self.prefix = prefix  # names of a subgraph's values: "<hop node>/<fx node>"
        self.ctx = Ctx(self.graph, opset)
        self.ctx.subgraph = self.subgraph
        self.ctx.inline = self.run_body
        self.env: dict[torch.fx.Node, Any] = {}
        self.has_subgraphs = False
        self.bodies = 0  # bodies inlined so far (run_body's default scope names)

    # -- values ------------------------------------------------------------------------------
    def set_meta(self, value: ir.Value, val: Any, name: str | None) -> None:
        """Name a value and give it the dtype and shape of the FakeTensor / SymInt it stands for."""
        if name is not None:
            value.name = f"{self.prefix}{name}"
        value.meta.pop(COMPLEX_META, None)
        if isinstance(val, torch.Tensor) and val.is_complex():  # carried as real [..., 2]
            value.dtype = ir_dtype(val.dtype.to_real())
            value.shape = ir.Shape([*(self.dims(d) for d in val.shape), 2])
            mark_complex(value, val.dtype)
        elif isinstance(val, torch.Tensor):
            value.dtype = ir_dtype(val.dtype)
            value.shape = ir.Shape([self.dims(d) for d in val.shape])
        elif isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
            value.dtype = ir.DataType.INT64
            value.shape = ir.Shape([])
        elif isinstance(val, (torch.SymFloat, float)):
            value.dtype = ir.DataType.FLOAT
            value.shape = ir.Shape([])
        elif isinstance(val, (torch.SymBool, bool)):
            value.dtype = ir.DataType.BOOL
            value.shape = ir.Shape([])

    def _new_value(self, name: str, val: Any) -> ir.Value:
        value = ir.Value(name=name)
        self.set_meta(value, val, None)
        return value

    # -- walk --------------------------------------------------------------------------------
    def translate(
        self, input_names: Mapping[str, str], output_names: Sequence[str] | None
    ) -> ir.Graph:
        """Translate placeholders, call_function nodes and the output node, in graph order.

        Args:
            input_names: Placeholder name → graph input name (default: the placeholder name).
            output_names: Names of the user outputs, or ``None`` for the FX names.
        """
        sig = self.ep.graph_signature
        specs = {spec.arg.name: spec for spec in sig.input_specs if hasattr(spec.arg, "name")}
        for node in self.ep.graph.nodes:
            if node.op == "placeholder":
                spec = specs[node.name]
                if spec.kind == InputKind.USER_INPUT:
                    self._user_input(node, input_names.get(node.name, node.name))
                else:
                    self._initializer(node, spec)
            elif node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                self._outputs(node, output_names)
            elif node.op == "get_attr":
                self.env[node] = getattr(self.ep.graph_module, node.target)
        for domain, version in self.ctx.op.domains.items():
            self.graph.opset_imports.setdefault(domain, version)
        if self.has_subgraphs:  # values of If/Loop/Scan bodies must not shadow outer names
            common_passes.NameFixPass()(ir.Model(self.graph, ir_version=10))
        return self.graph

    def _user_input(self, node: torch.fx.Node, name: str) -> None:
        val = node.meta.get("val")
        if not isinstance(val, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)):
            self.env[node] = val  # a Python constant torch.export specialized
            return
        value = self._new_value(name, val)
        value.metadata_props[KEY_INPUT_KIND] = InputKind.USER_INPUT.name
        if isinstance(val, torch.Tensor) and val.is_complex():
            value.metadata_props[KEY_COMPLEX_AS_REAL] = str(val.dtype).removeprefix("torch.")
        if name != node.name:
            value.metadata_props[KEY_ORIGINAL_NAME] = node.name
        self.graph.inputs.append(value)
        self.env[node] = value

    def _initializer(self, node: torch.fx.Node, spec: Any) -> None:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            tensor = self.ep.state_dict.get(spec.target)
            if tensor is None:  # non-persistent buffer
                tensor = self.ep.constants[spec.target]
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            tensor = self.ep.constants[spec.target]
        else:
            raise UnsupportedOpError(
                f"Graph input {node.name} of kind {spec.kind.name} is not supported "
                "(custom objects and effect tokens cannot be expressed in ONNX).",
                node,
            )
        if not isinstance(tensor, torch.Tensor):
            raise UnsupportedOpError(f"Constant {spec.target} is a {type(tensor).__name__}, not a tensor.", node)
        value = self._initializer_value(spec.target, tensor.detach())
        value.metadata_props[KEY_INPUT_KIND] = spec.kind.name
        if spec.kind == InputKind.BUFFER:
            value.metadata_props[KEY_INPUT_PERSISTENT] = str(bool(spec.persistent))
        value.metadata_props[KEY_ORIGINAL_NAME] = node.name
        self.env[node] = value

    def _initializer_value(self, name: str, tensor: torch.Tensor) -> ir.Value:
        if name in self.graph.initializers:  # the same tensor lifted twice
            return self.graph.initializers[name]
        complex_dtype = tensor.dtype if tensor.is_complex() else None
        if complex_dtype is not None:  # stored as its real view [..., 2]
            tensor = torch.view_as_real(tensor.resolve_conj().contiguous())
        data = ir.tensor_adapters.TorchTensor(tensor, name=name)  # shares memory, no copy
        value = ir.Value(
            name=name,
            shape=ir.Shape(tuple(tensor.shape)),
            type=ir.TensorType(ir_dtype(tensor.dtype)),
            const_value=data,
        )
        self.graph.register_initializer(value)
        if complex_dtype is not None:
            mark_complex(value, complex_dtype)
            value.metadata_props[KEY_COMPLEX_AS_REAL] = str(complex_dtype).removeprefix("torch.")
        return value

    def _call(self, node: torch.fx.Node) -> None:
        if node.target is operator.getitem:
            source, index = node.args
            assert isinstance(source, torch.fx.Node)  # getitem's source is always a node's output
            value = self.env[source][index]
            if isinstance(value, ir.Value) and value.producer() is not None:
                if value.name is None or value.name.startswith(f"{self.prefix}{source.name}_"):
                    value.name = f"{self.prefix}{node.name}"
            self.env[node] = value
            return
        if node.target in INLINED_HOPS:
            self.env[node] = self._inline(node)
            return
        translation = self.registry.get(node.target, self.opset, complex=is_complex_node(node))
        if translation is None:
            raise unsupported_error({node.target: [node]}, self.registry)
        self.env[node] = call_translation(self.ctx, translation, node, self.env, self.set_meta)

    def _inline(self, node: torch.fx.Node) -> tuple[Any, ...]:
        """Translate a HOP's subgraph in place; return its outputs."""
        index = next(i for i, a in enumerate(node.args) if isinstance(a, torch.fx.Node) and a.op == "get_attr")
        submodule = self.env[cast(torch.fx.Node, node.args[index])]
        operands = [self.env[a] if isinstance(a, torch.fx.Node) else a for a in node.args[index + 1 :]]
        return self.run_body(submodule, operands, node.name)

    def run_body(self, module: torch.fx.GraphModule, operands: Sequence[Any], scope: str | None = None) -> tuple[Any, ...]:
        """Translate ``module``'s nodes into this translator's graph, its placeholders bound to
        ``operands`` in order; return its outputs. Its values are named ``"<scope>/<fx node>"``
        (``scope``: the HOP node inlined, else ``body<n>``): a body's FX names (``getitem``, ``add``)
        repeat the outer graph's, and ONNX value names are unique."""
        outer = self.prefix
        self.bodies += 1
        self.prefix = f"{outer}{scope or f'body{self.bodies}'}/"
        try:
            return self._run_body(module, operands)
        finally:
            self.prefix = outer

    def _run_body(self, module: torch.fx.GraphModule, operands: Sequence[Any]) -> tuple[Any, ...]:
        placeholders = iter(operands)
        for sub in module.graph.nodes:
            if sub.op == "placeholder":
                operand = self.env[sub] = next(placeholders)
                val = sub.meta.get("val")
                if isinstance(operand, ir.Value) and operand.shape is None and isinstance(val, torch.Tensor):
                    self.set_meta(operand, val, None)  # a body's formal input: the captured shape (rank)
            elif sub.op == "call_function":
                self._call(sub)
            elif sub.op == "get_attr":
                self.env[sub] = getattr(module, sub.target)
            elif sub.op == "output":
                result = sub.args[0]
                result = result if isinstance(result, (list, tuple)) else (result,)
                return tuple(self.env[a] if isinstance(a, torch.fx.Node) else a for a in result)
        return ()

    def subgraph(
        self, module: torch.fx.GraphModule, operands: Sequence[Any], inputs: Sequence[ir.Value] = (),
        name: str = "subgraph", extra_outputs: Any = None,
    ) -> ir.Graph:
        """Translate ``module`` into a new ONNX graph (an If/Loop/Scan body).

        Args:
            module: The FX subgraph.
            operands: What its placeholders stand for: values of this graph (captured from the
                outer scope, as ONNX allows) or the new graph's own ``inputs``.
            inputs: The new graph's formal inputs.
            name: Prefix of the subgraph's value names (ONNX names are unique across scopes).
            extra_outputs: Optional ``fn(ctx, outputs) -> outputs`` run with the subgraph's ``Ctx``
                before its outputs are set (e.g. a Loop body evaluating its condition).
        """
        graph = ir.Graph(list(inputs), [], nodes=[], name=name)
        child = GraphTranslator(self.ep, self.registry, self.opset, self.dims, graph, f"{self.prefix}{name}/")
        child.env = self.env  # FX nodes are unique objects; outer values stay reachable
        outputs = list(child.run_body(module, operands))
        if extra_outputs is not None:
            outputs = list(extra_outputs(child.ctx, outputs))
        seen: set[int] = set()
        for out in outputs:
            value = out if isinstance(out, ir.Value) else child.ctx.const(out)
            producer = value.producer()
            if producer is None or producer.graph is not graph or id(value) in seen:
                inner = value
                value = child.ctx.op.Identity(inner)
                value.dtype, value.shape = inner.dtype, inner.shape
            seen.add(id(value))
            graph.outputs.append(value)
        stamp_metadata(child.ctx.op.take_nodes(), next(iter(module.graph.nodes)))
        for domain, version in child.ctx.op.domains.items():
            self.ctx.op.domains.setdefault(domain, version)
        self.has_subgraphs = True
        return graph

    def _outputs(self, node: torch.fx.Node, output_names: Sequence[str] | None) -> None:
        specs = self.ep.graph_signature.output_specs
        results = cast(Sequence[torch.fx.node.Argument], node.args[0])
        user = [(r, s) for r, s in zip(results, specs) if s.kind == OutputKind.USER_OUTPUT]
        if output_names is not None and len(output_names) > len(user):
            raise InputError(
                f"output_names has {len(output_names)} names but the model has {len(user)} outputs."
            )
        complex_outputs: list[str] = []
        for i, (result, spec) in enumerate(user):
            value = self.env[result] if isinstance(result, torch.fx.Node) else result
            if value is None:  # ONNX has no None output; eager's tensor leaves skip it too
                continue
            fx_name = result.name if isinstance(result, torch.fx.Node) else f"output_{i}"
            name = output_names[i] if output_names is not None and i < len(output_names) else fx_name
            value = self._as_output(value, result if isinstance(result, torch.fx.Node) else node, name)
            value.metadata_props[KEY_OUTPUT_KIND] = spec.kind.name
            val = result.meta.get("val") if isinstance(result, torch.fx.Node) else None
            if isinstance(val, torch.Tensor) and val.is_complex():
                value.metadata_props[KEY_COMPLEX_AS_REAL] = str(val.dtype).removeprefix("torch.")
                complex_outputs.append(f"{i}:{value.metadata_props[KEY_COMPLEX_AS_REAL]}")
            if name != fx_name:
                value.metadata_props[KEY_ORIGINAL_NAME] = fx_name
            self.graph.outputs.append(value)
        if complex_outputs:
            self.graph.metadata_props[KEY_COMPLEX_OUTPUTS] = ",".join(complex_outputs)

    def _as_output(self, value: Any, source: torch.fx.Node, name: str) -> ir.Value:
        """The value to list as a graph output, behind an Identity when it cannot be one itself."""
        if not isinstance(value, ir.Value):
            value = self.ctx.const(value)
            stamp_metadata(self.ctx.op.take_nodes(), source)
        needs_identity = (
            value.is_graph_input()
            or value.is_initializer()
            or value.is_graph_output()
            or value.const_value is not None
            or (value.name != name and name in {v.name for v in self.graph.outputs})
        )
        if needs_identity:
            inner = value
            value = self.ctx.op.Identity(inner)
            stamp_metadata(self.ctx.op.take_nodes(), source)
            value.dtype, value.shape = inner.dtype, inner.shape
            if inner.name == name and inner.producer() is not None and not inner.is_graph_output():
                inner.name = f"{name}_value"  # a constant named after the FX node: the output keeps the name
            # An output returning an input (or repeating an output) cannot share its name.
            taken = {v.name for v in (*self.graph.inputs, *self.graph.outputs)} | set(self.graph.initializers)
            while name in taken:
                name = f"{name}_output"
        value.name = name
        return value
