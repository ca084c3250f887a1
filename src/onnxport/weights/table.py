"""The program's weights: one :class:`Slot` per module weight (state_dict key), turned into
:class:`WeightTensor` initializers right after translation, and replaced by ``apply_weights``.

``apply_weights`` follows ``torch.onnx.ONNXProgram.apply_weights`` (seed 003) and checks names,
shapes and dtypes like ``torch.nn.Module.load_state_dict(strict=True)`` (``missing_keys``,
``unexpected_keys``, size mismatches), but reports every problem in one :class:`WeightsError`
and reads no tensor data: it only records where each tensor will come from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import onnx_ir as ir

from onnxport.errors import WeightsError
from onnxport.weights.sources import Source, open_weights, torch_source
from onnxport.weights.tensor import Slot, WeightTensor


@dataclasses.dataclass
class WeightTable:
    """The weights of one exported program.

    Attributes:
        slots: state_dict key → :class:`Slot`, as translated (kept when a pass replaces or drops
            the initializer, so weights still map by the module's own names).
        aliases: Another name of a tied weight (``lm_head.weight``) → the slot's name.
    """

    slots: dict[str, Slot] = dataclasses.field(default_factory=dict)
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)

    def missing(self, model: ir.Model) -> list[str]:
        """Names of the weights the model uses that have no data yet."""
        return sorted({s.name for s in used_slots(model) if not s.source.has_data})


def graph_tensors(model: ir.Model) -> Iterator[tuple[ir.Value | None, ir.TensorProtocol]]:
    """Every initializer tensor of the model and its subgraphs, with its value."""
    for graph in model.graphs():
        for value in graph.initializers.values():
            if value.const_value is not None:
                yield value, value.const_value


def used_slots(model: ir.Model) -> list[Slot]:
    """The slots the model's initializers read (directly or through transforms)."""
    seen: dict[int, Slot] = {}
    for _, tensor in graph_tensors(model):
        if isinstance(tensor, WeightTensor):
            for slot in tensor.slots():
                seen.setdefault(id(slot), slot)
    return list(seen.values())


def adopt(model: ir.Model, required: Callable[[ir.Value], bool]) -> WeightTable:
    """Replace every torch-backed initializer by a root :class:`WeightTensor` over its data (no copy;
    a meta/fake tensor becomes a missing source) and return the table of slots.

    Args:
        model: The translated model, changed in place.
        required: Whether ``apply_weights`` must supply a given initializer (parameters and
            persistent buffers: the module's state_dict).
    """
    table = WeightTable()
    for value, tensor in list(graph_tensors(model)):
        if not isinstance(tensor, ir.tensor_adapters.TorchTensor) or value is None or value.name is None:
            continue
        slot = Slot(value.name, torch_source(tensor.raw, value.name), required=required(value))
        table.slots[value.name] = slot
        value.const_value = WeightTensor.root(slot)
    return table


def tie(model: ir.Model, table: WeightTable, groups: list[list[str]]) -> None:
    """Merge the initializers of tied weights (several module names, one tensor: an embedding
    and its output head) into the first one of each group; the others become aliases.

    ``torch.export`` lifts each name of a tied parameter as its own input; stored as they are,
    the same bytes would be written twice and ``apply_weights`` would need every name.

    Args:
        groups: The names of each tied tensor (``named_parameters(remove_duplicate=False)``).
    """
    graph = model.graph
    for names in groups:
        present = [n for n in names if n in graph.initializers and n in table.slots]
        for name in names:
            if present and name != present[0]:
                table.aliases[name] = present[0]
        if len(present) < 2:
            continue
        keep = graph.initializers[present[0]]
        for name in present[1:]:
            value = graph.initializers[name]
            value.replace_all_uses_with(keep)
            del graph.initializers[name]
            del table.slots[name]


def _spec(dtype: ir.DataType, shape: tuple[int, ...]) -> str:
    return f"{dtype.numpy().name}{list(shape)}"


def _prefix_hint(missing: list[str], unexpected: list[str]) -> str:
    """A hint when the two lists differ by a constant prefix (``model.`` added or dropped)."""
    if not missing or not unexpected:
        return ""
    m, u = missing[0], next((x for x in unexpected if x.endswith(missing[0]) or missing[0].endswith(x)), None)
    if u is None or u == m:
        return ""
    if u.endswith(m):
        return f"\nThe weights' names carry an extra prefix {u[: len(u) - len(m)]!r}: strip it."
    return f"\nThe model's names carry an extra prefix {m[: len(m) - len(u)]!r}: add it to the weights' names."


def apply(table: WeightTable, model: ir.Model, weights: Any, *, strict: bool = True) -> int:
    """Point the slots at ``weights`` (state_dict, ``.safetensors`` file or shard folder), lazily.

    Args:
        table: The program's weights.
        model: The program's model (to know which weights it still uses).
        weights: See :func:`onnxport.weights.sources.open_weights`.
        strict: Require every parameter/persistent buffer the model uses (like
            ``load_state_dict(strict=True)``); ``False`` requires only those still without data.

    Returns:
        The number of weights applied.

    Raises:
        WeightsError: Missing, unexpected or mismatched names, all listed.
        InputError: Unreadable weights.
    """
    given: dict[str, Source] = open_weights(weights)
    used = {s.name for s in used_slots(model)}
    assignments: dict[str, Source] = {}
    unexpected: list[str] = []
    mismatched: list[tuple[str, str, str]] = []
    for name, source in given.items():
        target = name if name in table.slots else table.aliases.get(name)
        if target is None:
            unexpected.append(name)
            continue
        slot = table.slots[target]
        if tuple(source.shape) != slot.shape or source.dtype != slot.dtype:
            mismatched.append((name, _spec(slot.dtype, slot.shape), _spec(source.dtype, tuple(source.shape))))
            continue
        if name == target or target not in assignments:
            assignments[target] = source
    missing = [
        name
        for name, slot in table.slots.items()
        if name in used and name not in assignments and name not in {m[0] for m in mismatched} and ((strict and slot.required) or not slot.source.has_data)
    ]
    if missing or unexpected or mismatched:
        lines = [
            f"The weights do not fit the model: {len(missing)} missing, {len(unexpected)} unexpected, "
            f"{len(mismatched)} mismatched (nothing was applied)."
        ]
        if missing:
            lines.append("Missing (the model needs them, the weights lack them): " + ", ".join(missing))
        if unexpected:
            lines.append("Unexpected (in the weights, not in the model): " + ", ".join(unexpected))
        for name, want, got in mismatched:
            lines.append(f"Mismatched: {name}: the model has {want}, the weights {got}")
        hint = _prefix_hint(missing, unexpected)
        if hint:
            lines.append(hint.strip())
        elif missing and strict:
            lines.append("Pass strict=False to apply a subset of the weights.")
        raise WeightsError("\n".join(lines), missing=missing, unexpected=unexpected, mismatched=mismatched)
    for name, source in assignments.items():
        table.slots[name].source = source
    return len(assignments)
