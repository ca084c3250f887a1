"""The decomposition step: core-ATen table minus the ops onnxport translates directly.

As in torch.onnx's ``_decomp.py``, every op that has its own translation is removed from
``torch.export.default_decompositions()`` so that ``linear``, ``layer_norm``,
``scaled_dot_product_attention``... reach the translator whole and become one ONNX op.

Fast path (onnxport's own): when every ``call_function`` target of the captured graph already has
a translation and none of them mutates its inputs, ``run_decompositions`` would only re-trace the
graph; it is skipped. In-place ops on fresh intermediates are made out-of-place first
(:mod:`onnxport.capture.inplace`), so that they alone do not cost the re-trace.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export._remove_effect_tokens_pass import _remove_effect_tokens

from onnxport.capture.inplace import functionalize_fresh
from onnxport.capture.rnn import keep_recurrent_ops


@functools.cache
def decomposition_table(translated: frozenset[Any]) -> Any:
    """The default core-ATen decomposition table minus ``translated`` ops (built once per set)."""
    table = torch.export.default_decompositions()
    for op in translated:
        if op in table:
            del table[op]
    return table


def call_nodes(ep: ExportedProgram) -> list[torch.fx.Node]:
    """Every ``call_function`` node of the program, subgraphs of higher-order ops included."""
    return [
        node
        for module in ep.graph_module.modules()
        if isinstance(module, torch.fx.GraphModule)
        for node in module.graph.nodes
        if node.op == "call_function"
    ]


def _draws(node: torch.fx.Node) -> bool:
    """The node's op draws random numbers: its schema tag ``nondeterministic_seeded`` (rand,
    randn_like, bernoulli, ...), unless its ``train``/``training`` argument is False (dropout and
    RNN ops at inference) or its ``dropout_p`` is 0 (``scaled_dot_product_attention``'s default)."""
    target = node.target
    if torch.Tag.nondeterministic_seeded not in getattr(target, "tags", ()):
        return False
    arguments = target._schema.arguments  # type: ignore[union-attr]

    def value(name: str) -> Any:
        index = next(i for i, a in enumerate(arguments) if a.name == name)
        default = arguments[index].default_value if arguments[index].has_default_value() else None
        return node.kwargs.get(name, node.args[index] if index < len(node.args) else default)

    names = {a.name for a in arguments}
    if any(value(name) is False for name in ("train", "training") if name in names):
        return False
    return not ("dropout_p" in names and value("dropout_p") == 0)


def draws_random(ep: ExportedProgram) -> bool:
    """Whether an op of the program draws random numbers (:func:`_draws`)."""
    return any(_draws(node) for node in call_nodes(ep))


def needs_decomposition(ep: ExportedProgram, translated: frozenset[Any]) -> bool:
    """Whether the graph holds an op without translation, one that mutates its inputs, or an
    autocast region (its subgraph holds the ops at their input dtypes: the re-trace applies
    autocast's casts, as eager's dispatcher does)."""
    for node in call_nodes(ep):
        target = node.target
        if target not in translated or target is torch.ops.higher_order.wrap_with_autocast:
            return True
        schema = getattr(target, "_schema", None)
        if schema is not None and schema.is_mutable:
            return True
    return False


def decompose(ep: ExportedProgram, translated: frozenset[Any]) -> tuple[ExportedProgram, bool]:
    """Return the program to translate and whether ``run_decompositions`` ran. ``ep``'s graph is
    edited in place first (:func:`onnxport.capture.inplace.functionalize_fresh`: same values)."""
    functionalize_fresh(ep)
    if not needs_decomposition(ep, translated):
        return ep, False
    table = decomposition_table(translated)
    # The re-trace computes RNN shapes without unrolling time (capture/rnn.py), and does not
    # specialize sizes of 1 either, as the capture did not (strategies._size_oblivious): without it
    # the re-trace of a scan over one chunk fixed Qwen3.5's chunk count to 1.
    with (
        keep_recurrent_ops(),
        torch.fx.experimental._config.patch(backed_size_oblivious=True),  # type: ignore[attr-defined]
        warnings.catch_warnings(),
    ):
        # torch 2.13's run_decompositions deep-copies the module call graph, whose pytree specs
        # warn "isinstance(treespec, LeafSpec) is deprecated" (torch/export/exported_program.py,
        # _get_updated_module_call_graph): torch's own deprecation, nothing the user can act on.
        warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\)", category=FutureWarning)
        ep = ep.run_decompositions(dict(table))
    if any(node.target is torch.ops.higher_order.with_effects for node in call_nodes(ep)):
        # Effect tokens (e.g. linalg.inv's _linalg_check_errors) have no ONNX form: torch's own pass
        # turns with_effects(token, op, *args) back into op(*args) and drops the token inputs/outputs.
        ep = _remove_effect_tokens(ep)
    return ep, True
