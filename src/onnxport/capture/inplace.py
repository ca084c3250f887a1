"""In-place ops on fresh intermediate tensors made functional, so that they do not force
``ExportedProgram.run_decompositions`` (a re-trace of the whole program: ~35 s of a 4-layer
Qwen3-Next's 46 s export).

torch.export (non-strict, torch >= 2.5) returns a graph that still holds in-place ATen ops: a
cache's ``conv_states.copy_(new)``, a router's ``weights /= weights.sum(-1, keepdim=True)``,
``inverse_permutation[perm] = arange(n)`` (``index_put_``). ``run_decompositions`` removes them by
functionalization, which needs the re-trace. Many of them mutate a tensor that nothing else can
observe: it was made by an op returning a new tensor (not a view), nothing views it, and nothing
reads it after the mutation except through the in-place op's own result (torch's tracer hands the
mutated tensor's later uses to that result: ``set_proxy_slot`` in
``torch/fx/experimental/proxy_tensor.py``). There the in-place op and its out-of-place form
(``aten.copy_`` → ``aten.copy``, ``aten.div_.Tensor`` → ``aten.div.Tensor``) compute the same
values, and :func:`functionalize_fresh` swaps the target. Every other mutation (graph inputs,
views, tensors read after the mutation) is left for ``run_decompositions``.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.export import ExportedProgram


def _returns_alias(target: Any) -> bool:
    """The op's outputs may alias an input (views, in-place and ``out=`` ops), or it is unknown."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return True
    return any(r.alias_info is not None for r in schema.returns)


def _fresh(node: torch.fx.Node) -> bool:
    """``node``'s tensor is a new one: made by an op that returns no alias of its inputs, or an
    element of such an op's (or a higher-order op's) tuple output."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        source = node.args[0]
        return isinstance(source, torch.fx.Node) and source.op == "call_function" and (
            isinstance(source.target, torch._ops.HigherOrderOperator) or not _returns_alias(source.target)
        )
    return isinstance(node.target, torch._ops.OpOverload) and not _returns_alias(node.target)


def _functional(target: Any) -> Any | None:
    """The out-of-place overload of an in-place ATen op that writes its first argument only
    (``aten.div_.Tensor`` → ``aten.div.Tensor``), else ``None``."""
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return None
    schema = target._schema
    writes = [i for i, a in enumerate(schema.arguments) if a.alias_info is not None and a.alias_info.is_write]
    if writes != [0] or not schema.name.endswith("_"):
        return None
    packet = getattr(torch.ops.aten, schema.name.split("::")[-1][:-1], None)
    functional = getattr(packet, target._overloadname, None) if packet is not None else None
    if functional is None or _returns_alias(functional):
        return None
    return functional


def _rewrite(graph: torch.fx.Graph) -> bool:
    """Swap the qualifying in-place ops of ``graph``; whether any was."""
    order = {node: i for i, node in enumerate(graph.nodes)}
    changed = False
    for node in list(graph.nodes):
        functional = _functional(node.target) if node.op == "call_function" else None
        if functional is None or not node.args or not isinstance(node.args[0], torch.fx.Node):
            continue
        base = node.args[0]
        others = [u for u in base.users if u is not node]
        if not _fresh(base) or any(order[u] > order[node] or _returns_alias(u.target) for u in others):
            continue
        node.target = functional
        changed = True
    return changed


def functionalize_fresh(ep: ExportedProgram) -> None:
    """Swap in place every in-place op of ``ep`` (subgraphs of higher-order ops included) whose
    mutation nothing else can observe for its out-of-place form."""
    for module in ep.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule) and _rewrite(module.graph):
            module.recompile()
