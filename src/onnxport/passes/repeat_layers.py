"""Grow a graph captured with a few identical layers to the model's full depth.

torch.export spends most of a decoder's export retracing the same layer again and again (on a
16-layer 0.85B Llama, 13 of the export's 27 s; each layer ~0.8 s of symbolic-shape work). When
every layer of the model is the same module with the same settings (checked by the caller,
:mod:`onnxport.hf.repeat`), the graph of a model cut to ``captured`` layers holds everything: this
pass copies the last captured layer's nodes once per missing layer, the way onnxruntime-genai's
model builder (``builders/base.py``, ``make_layer`` in a loop) writes one layer's nodes per
layer, but from the captured graph instead of hand-written code.

Roles of the values the template layer (the last captured one, never the first: a first layer may
differ, e.g. where the cache's length is read) reads from outside itself:

* the *carried* value: the one that depends on the previous layer's own weights or past inputs
  (the residual stream); copy ``j`` reads copy ``j - 1``'s output in its place;
* per-layer weights (``<prefix>.<i>.``): new initializers ``<prefix>.<j>.`` whose
  :class:`onnxport.weights.WeightTensor` has the same transforms over a new, missing slot
  (``apply_weights`` fills it by name);
* per-layer graph inputs (``past_key_values.<i>.``) and outputs (``present.<i>.``): new ones;
* everything else (masks, rotary cos/sin, shapes, constants): shared, as in a full capture.

Anything else — two carried values, a template output read outside other than by the next
stage, a subgraph inside the layer — refuses (:class:`RepeatRefused`), and the caller captures
the full model instead.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

import onnx_ir as ir

from onnxport.metadata import KEY_NAME_SCOPES
from onnxport.passes.module_functions import module_instance
from onnxport.passes.node_copy import copy_node
from onnxport.weights import WeightTable
from onnxport.weights.tensor import Slot, WeightTensor, missing_slot

# Metadata on a copied node: the captured layer it was copied from.
KEY_REPEATED_FROM = "pkg.onnxport.repeated_from"


class RepeatRefused(Exception):
    """The captured graph does not have the shape this pass copies (the message says why)."""


@dataclasses.dataclass(frozen=True)
class LayerNames:
    """Where the layer index appears in names.

    Attributes:
        layer_class: The layer module's class name (``LlamaDecoderLayer``).
        weights: The weight-name prefix before the index (``model.layers``).
        inputs: Graph-input prefixes before the index (``past_key_values``).
        outputs: Graph-output prefixes before the index (``present``).
    """

    layer_class: str
    weights: str
    inputs: tuple[str, ...] = ("past_key_values",)
    outputs: tuple[str, ...] = ("present",)

    def rename(self, name: str, prefixes: Iterable[str], old: int, new: int) -> str | None:
        """``name`` with ``<prefix>.<old>.`` (or a final ``<prefix>.<old>``) made ``<prefix>.<new>``;
        ``None`` if it has none."""
        for prefix in prefixes:
            pattern = rf"(^|\.){re.escape(prefix)}\.{old}(\.|$)"
            if re.search(pattern, name):
                return re.sub(pattern, rf"\g<1>{prefix}.{new}\g<2>", name, count=1)
        return None


def _depends(graph: ir.Graph, sources: set[int]) -> set[int]:
    """ids of the values computed (transitively) from the values whose ids are in ``sources``."""
    tainted = set(sources)
    for node in graph:  # graph order is topological
        if any(v is not None and id(v) in tainted for v in node.inputs):
            tainted.update(id(out) for out in node.outputs)
    return tainted


def _layer_sources(graph: ir.Graph, names: LayerNames, index: int) -> set[int]:
    """ids of layer ``index``'s own weights and graph inputs."""
    own = set()
    for value in graph.initializers.values():
        if value.name and names.rename(value.name, [names.weights], index, index) is not None:
            own.add(id(value))
    for value in graph.inputs:
        if value.name and names.rename(value.name, names.inputs, index, index) is not None:
            own.add(id(value))
    return own


def _clone_tensor(tensor: WeightTensor, rename: dict[str, str], table: WeightTable, memo: dict[int, WeightTensor]) -> WeightTensor:
    """``tensor`` with every slot under a renamed weight replaced by a new, missing slot."""
    if id(tensor) in memo:
        return memo[id(tensor)]
    name = rename.get(tensor.name or "", tensor.name or "")
    slot: Slot | None = None
    if tensor.slot is not None:
        slot_name = rename.get(tensor.slot.name)
        if slot_name is None:
            slot = tensor.slot  # a shared weight read by the layer
        else:
            slot = table.slots.get(slot_name) or missing_slot(slot_name, tensor.slot.dtype, tensor.slot.shape)
            if not tensor.slot.required and tensor.slot.source.has_data:
                slot = Slot(slot_name, tensor.slot.source, required=False)  # a computed buffer, same in every layer
            table.slots[slot_name] = slot
            name = slot_name  # a root is named after its slot
    bases = [
        _clone_tensor(b, rename, table, memo) if isinstance(b, WeightTensor) else b for b in tensor.bases
    ]
    clone = WeightTensor(
        dtype=tensor.dtype, shape=tuple(tensor.shape.numpy()), name=name, slot=slot, bases=bases,
        fn=tensor.fn, chunks=tensor.chunks,
    )
    clone.perm = tensor.perm
    memo[id(tensor)] = clone
    return clone


def repeat_layers(model: ir.Model, table: WeightTable, names: LayerNames, captured: int, total: int) -> None:
    """Copy layer ``captured - 1`` of ``model`` to make layers ``captured .. total - 1``, in place.

    The copies' graph inputs and outputs follow the captured ones in the order a full capture
    gives (``past_key_values.<j>.key``, ``.value``; ``present.<j>.*``), so the result has the
    full model's signature.

    Args:
        model: The graph of the model cut to ``captured`` (>= 2) layers, weights named by the
            model's own state_dict keys.
        table: Its weight table; the new layers' slots are added (missing until applied).
        names: Where the layer index appears in names.
        captured: Layers in ``model``.
        total: Layers wanted.

    Raises:
        RepeatRefused: The graph is not a chain of copyable layers (the message says why).
    """
    if captured < 2 or total <= captured:
        raise RepeatRefused(f"nothing to repeat: {captured} captured layers, {total} wanted")
    graph = model.graph
    last = captured - 1
    template = _template(graph, names, last)
    members = {id(n) for n in template}
    carried, exit_value = _boundary(graph, names, template, last)
    downstream = [(user, index) for user, index in exit_value.uses() if id(user) not in members]
    inputs = [v for v in graph.inputs if v.name and names.rename(v.name, names.inputs, last, last)]
    outputs = [v for v in graph.outputs if v.name and names.rename(v.name, names.outputs, last, last)]
    anchor, current = template[-1], exit_value
    for layer in range(captured, total):
        mapping: dict[int, ir.Value] = {id(carried): current}
        for value in inputs:
            new = ir.Value(name=names.rename(value.name or "", names.inputs, last, layer), type=value.type, shape=value.shape)
            graph.inputs.append(new)
            mapping[id(value)] = new
        copies = _Copy(model, table, names, last, layer, mapping).nodes(template)
        graph.insert_after(anchor, copies)
        for value in outputs:
            new = mapping[id(value)]
            new.name = names.rename(value.name or "", names.outputs, last, layer)
            graph.outputs.append(new)
        anchor, current = copies[-1], mapping[id(exit_value)]
    for user, index in downstream:
        user.replace_input_with(index, current)


def _template(graph: ir.Graph, names: LayerNames, last: int) -> list[ir.Node]:
    """The nodes of layer ``last`` (by their module path: ``pkg.torch.onnx.name_scopes``), in
    graph order."""
    template = []
    for node in graph:
        found = module_instance(node, [names.layer_class])
        if found is not None and (found[0].endswith(f".{last}") or found[0] == str(last)):
            template.append(node)
    if not template:
        raise RepeatRefused(f"no node of layer {last} ({names.layer_class}) in the graph")
    if any(a.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS) for n in template for a in n.attributes.values()):
        raise RepeatRefused(f"layer {last} holds a subgraph (If/Loop/Scan)")
    return template


def _boundary(graph: ir.Graph, names: LayerNames, template: list[ir.Node], last: int) -> tuple[ir.Value, ir.Value]:
    """(the one value the template reads from the layer before, the one value read after it)."""
    members = {id(n) for n in template}
    before = _template(graph, names, last - 1)
    tainted = _depends(graph, _layer_sources(graph, names, last - 1))
    previous = {id(out) for node in before for out in node.outputs if id(out) in tainted}
    own = _layer_sources(graph, names, last)
    carried: list[ir.Value] = []
    for node in template:
        for value in node.inputs:
            if value is None or id(value) in own or id(value) not in previous:
                continue
            producer = value.producer()
            if (producer is None or id(producer) not in members) and all(value is not c for c in carried):
                carried.append(value)
    if len(carried) != 1:
        raise RepeatRefused(f"layer {last} reads {len(carried)} values computed by layer {last - 1}, not one")
    exits = []
    for node in template:
        for out in node.outputs:
            if out.is_graph_output():
                if not names.rename(out.name or "", names.outputs, last, last):
                    raise RepeatRefused(f"layer {last} computes graph output {out.name!r}, not a per-layer one")
            elif any(id(user) not in members for user, _ in out.uses()):
                exits.append(out)
    if len(exits) != 1:
        raise RepeatRefused(f"layer {last} has {len(exits)} values read after it, not one")
    return carried[0], exits[0]


@dataclasses.dataclass
class _Copy:
    """One copy of the template: layer ``old`` copied as layer ``new``.

    ``mapping`` (template value id → the copy's value) is read for inputs and filled with every
    output; ``memo`` shares cloned weight transforms between the copy's initializers.
    """

    model: ir.Model
    table: WeightTable
    names: LayerNames
    old: int
    new: int
    mapping: dict[int, ir.Value]
    memo: dict[int, WeightTensor] = dataclasses.field(default_factory=dict)

    def nodes(self, template: list[ir.Node]) -> list[ir.Node]:
        """Copies of ``template``'s nodes, in order (not yet in the graph)."""
        copies = []
        for node in template:
            inputs = [None if v is None else self.value(v) for v in node.inputs]
            copy = copy_node(node, inputs, f"{node.name}/layer{self.new}" if node.name else None)
            copy.metadata_props[KEY_REPEATED_FROM] = str(self.old)
            scopes = node.metadata_props.get(KEY_NAME_SCOPES)
            if scopes:  # the layer's scope 'layers.<old>' becomes 'layers.<new>'
                copy.metadata_props[KEY_NAME_SCOPES] = re.sub(
                    rf"'((?:[^']*\.)?){self.old}'", lambda m: f"'{m.group(1)}{self.new}'", scopes, count=1
                )
            for out, new_out in zip(node.outputs, copy.outputs):
                new_out.name = f"{out.name}_l{self.new}" if out.name else None
                self.mapping[id(out)] = new_out
            copies.append(copy)
        return copies

    def value(self, value: ir.Value) -> ir.Value:
        """What the copy reads where the template reads ``value``: the copy's own weight (a
        new initializer over new slots), or the shared value itself."""
        if id(value) in self.mapping:
            return self.mapping[id(value)]
        result = value
        rename = self.names.rename
        renamed = rename(value.name, [self.names.weights], self.old, self.new) if value.is_initializer() and value.name else None
        if renamed is not None:
            tensor = value.const_value
            if isinstance(tensor, WeightTensor):
                names = {tensor.name or "": renamed}
                for slot in tensor.slots():
                    target = rename(slot.name, [self.names.weights], self.old, self.new)
                    if target is not None:
                        names[slot.name] = target
                tensor = _clone_tensor(tensor, names, self.table, self.memo)
            result = ir.Value(name=renamed, type=value.type, shape=value.shape, const_value=tensor)
            self.model.graph.register_initializer(result)
        self.mapping[id(value)] = result
        return result
