"""Eager references whose ``topk`` and ``sort`` return tied values in index order, as ONNX's TopK does.

ONNX's TopK returns, of equal elements, the one with the lower index first (ONNX operator spec,
TopK), and onnxruntime's CPU kernel does. PyTorch's CPU ``topk`` leaves the order of equal
elements unspecified: ``torch.topk`` of 300 from 8400 values, 7200 of them tied, returned the tied
indices 5346, 5336, 5337, ... (torch 2.13). A model that selects by ``topk`` among ties (RT-DETR's
query selection on random weights: every masked anchor scores the same) then gives other rows in
eager than in any ONNX graph, whose own order is the specified one. Eager references are computed
under :func:`index_ordered`, where ``aten.topk`` is a stable sort cut to ``k``: the same values,
the same indices where there are no ties, and the ONNX order where there are; ``aten.sort`` is
the stable sort (onnxport translates sort and argsort to TopK: ViT-MAE's random masking argsorts
noise that verification draws at its mean, all ties).
:func:`eager_outputs` runs a reference that way and flattens its outputs (``onnxport.verify``,
the runtime check). The same references draw normal and uniform noise at its mean
(:class:`onnxport.draws.EagerDrawsAtMean`), as verification loads the ONNX graph, and each runs
from the model's state before it (:func:`kept_state`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from onnxport.draws import EagerDrawsAtMean

aten = torch.ops.aten
_FLEX = torch.ops.higher_order.flex_attention
T = TypeVar("T")


def _topk(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[torch.Tensor, torch.Tensor]:  # noqa: A002 - aten's name
    values, indices = aten.sort.stable(x, stable=True, dim=dim, descending=largest)
    return values.narrow(dim, 0, k).contiguous(), indices.narrow(dim, 0, k).contiguous()


class _IndexOrderedTopK(TorchDispatchMode):
    supports_higher_order_operators = True  # flex_attention passes through (:func:`index_ordered`)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func is aten.topk.default and isinstance(args[0], torch.Tensor) and args[0].dim() > 0:
            return _topk(*args, **kwargs)
        if func is aten.sort.default:  # sort(self, dim, descending): ties in index order, as TopK
            names = ("dim", "descending")
            return aten.sort.stable(args[0], stable=True, **dict(zip(names, args[1:])), **kwargs)
        if func is aten.sort.stable and not kwargs.get("stable"):
            return aten.sort.stable(*args, **{**kwargs, "stable": True})
        return func(*args, **kwargs)


def has_higher_order_ops(program: Any) -> bool:
    """Whether an ExportedProgram (or GraphModule) calls a higher-order operator (``torch.cond``,
    ``while_loop``, ``map``), in its graph or a subgraph; ``flex_attention`` does not count, it
    runs under the modes of :func:`index_ordered` (:class:`onnxport.draws.EagerDrawsAtMean`)."""
    module = program.graph_module if isinstance(program, torch.export.ExportedProgram) else program
    if not isinstance(module, torch.fx.GraphModule):
        return False
    return any(isinstance(node.target, torch._ops.HigherOrderOperator) and node.target is not _FLEX
               for sub in module.modules() if isinstance(sub, torch.fx.GraphModule) for node in sub.graph.nodes)


def index_ordered(run: Callable[[], T], program: Any = None) -> T:
    """``run()`` with ``aten.topk`` (``torch.topk``, ``Tensor.topk``, an ExportedProgram's node)
    ordering tied values by index and normal / uniform draws at their mean (module docstring);
    everything else runs unchanged.

    When ``program`` (the model's ExportedProgram) calls a higher-order operator, ``run()`` runs
    without the mode, in torch's tie order: ``torch.cond`` refuses to run under a dispatch mode
    without a rule for it, and after that refusal (or under a mode passing it through) its
    compiled eager path stays broken for later calls in the process (torch 2.13).
    """
    if program is not None and has_higher_order_ops(program):
        return run()
    with EagerDrawsAtMean(), _IndexOrderedTopK():
        return run()


_SCALARS = (bool, int, float, str, type(None))


def _scalar(value: Any) -> bool:
    return isinstance(value, _SCALARS) or (isinstance(value, tuple) and all(isinstance(v, _SCALARS) for v in value))


@contextlib.contextmanager
def kept_state(module: Any) -> Iterator[None]:
    """The Python-number attributes of ``module``'s submodules (ints, floats, bools, strings,
    ``None`` and tuples of them) as they were before the block, restored after it.

    Some modules change such state in their forward and keep it: transformers' Swin layers drop
    their shift (``shift_size = 0``) on a forward at a grid no larger than their window and keep
    it dropped, so eager's result at one size depended on the sizes run before. The eager
    references of verification and the runtime check run at several sizes; under this each is
    the model's forward from the state the user exported, and the model is left in it. Anything
    else (tensors, parameters, buffers, caches in containers) is not saved.
    """
    if not isinstance(module, torch.nn.Module):
        yield
        return
    saved = [(m, {k: v for k, v in vars(m).items() if _scalar(v)}) for m in module.modules()]
    try:
        yield
    finally:
        for m, attributes in saved:
            state = vars(m)
            for name, value in attributes.items():
                if state.get(name) is not value:
                    state[name] = value


def eager_outputs(reference: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], program: Any = None) -> list[torch.Tensor]:
    """An eager reference's outputs under :func:`index_ordered`, without grad, flattened to tensors
    (pytree order; Python numbers as 0-d tensors, as the translation makes them; ``None`` dropped).

    Args:
        reference: The user's ``nn.Module`` or an ExportedProgram (its graph module runs, user
            outputs kept).
        args, kwargs: The inputs.
        program: The reference's ExportedProgram when ``reference`` is a module (higher-order
            operators: :func:`index_ordered`). The module's Python-number state is restored
            after the run (:func:`kept_state`).
    """
    if isinstance(reference, torch.export.ExportedProgram):
        flat = reference._graph_module_flat_inputs(args, kwargs)
        with torch.no_grad():
            results = index_ordered(lambda: reference.graph_module(*flat), reference)
        specs = reference.graph_signature.output_specs
        out: Any = [r for r, s in zip(results, specs) if s.kind.name == "USER_OUTPUT"]
    else:
        with torch.no_grad(), kept_state(reference):
            out = index_ordered(lambda: reference(*args, **kwargs), program)
    return [x if isinstance(x, torch.Tensor) else torch.tensor(x)
            for x in torch.utils._pytree.tree_leaves(out) if isinstance(x, (torch.Tensor, bool, int, float))]
