"""Random draws at their mean, in eager PyTorch and in an ONNX graph, for verification.

A model that draws random numbers at inference (VITS' noise, a VAE's latent sample, a diffusion
step's ``randn_like``) gives other values in every run, so its ONNX graph cannot be compared with
eager PyTorch as it is. Verification compares both with every normal or uniform draw replaced by
its mean (normal: ``mean``, 0 by default; uniform: ``(low + high) / 2``, 0.5 by default), which
checks everything the draws feed; the draws themselves are the ONNX ``Random*`` ops, whose
distributions the translation tests check.

- :class:`EagerDrawsAtMean`: a dispatch mode in which ``aten.randn``, ``randn_like``, ``rand``,
  ``rand_like``, ``normal`` and ``uniform_`` return their mean (the same shape, dtype and device).
- :func:`onnx_draws_at_mean`: an ONNX graph's ``RandomNormal(Like)`` / ``RandomUniform(Like)``
  (ONNX operator spec) replaced by ``ConstantOfShape`` of their mean, restored on exit.

Other draws (``bernoulli``, ``multinomial``, ``randint``, ``randperm``) run as they are.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import onnx_ir as ir
import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

_NORMAL = {aten.randn.default, aten.randn.generator, aten.randn_like.default, aten.normal_.default}
_UNIFORM = {aten.rand.default, aten.rand.generator, aten.rand_like.default, aten.uniform_.default}
_NORMAL_FUNCTIONAL = {aten.normal.Tensor_float, aten.normal.float_Tensor, aten.normal.Tensor_Tensor,
                      aten.normal.float_float}


def _eager_mean(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The mean of the draw ``func(*args, **kwargs)`` (same shape and dtype), or ``NotImplemented``
    for an op that is not a normal or uniform draw."""
    if func in _NORMAL or func in _UNIFORM:
        out = func(*args, **kwargs)
        if func is aten.normal_.default:
            mean = args[1] if len(args) > 1 else kwargs.get("mean", 0.0)
        elif func is aten.uniform_.default:
            low = args[1] if len(args) > 1 else kwargs.get("from", 0.0)
            high = args[2] if len(args) > 2 else kwargs.get("to", 1.0)
            mean = (low + high) / 2
        else:
            mean = 0.0 if func in _NORMAL else 0.5
        with torch.no_grad():
            return out.fill_(mean) if func in (aten.normal_.default, aten.uniform_.default) else torch.full_like(out, mean)
    if func in _NORMAL_FUNCTIONAL:
        out = func(*args, **kwargs)
        mean = args[0] if len(args) > 0 else kwargs["mean"]
        return torch.broadcast_to(torch.as_tensor(mean, dtype=out.dtype), out.shape).clone()
    return NotImplemented


class EagerDrawsAtMean(TorchDispatchMode):
    """Normal and uniform draws return their mean (module docstring); other ops run unchanged,
    higher-order ops too (``flex_attention``, ``cond``: without ``supports_higher_order_operators``
    torch raises "no rule registered for HigherOrderOperator" in this mode), their bodies with the
    mode off. FlexAttention runs its op directly meanwhile, not through ``torch.compile``
    (``_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG``), which refuses to trace under a user dispatch mode
    ("non-infra torch dispatch mode present"); the op computes the same values either way on CPU
    (``math_attention``)."""

    supports_higher_order_operators = True
    _FLEX_FLAG = "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG"

    def __enter__(self) -> EagerDrawsAtMean:
        self._flex = sys.modules.get("torch.nn.attention.flex_attention")
        self._flex_saved = getattr(self._flex, self._FLEX_FLAG, None)
        if self._flex is not None:
            setattr(self._flex, self._FLEX_FLAG, True)
        return cast(EagerDrawsAtMean, super().__enter__())

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            if self._flex is not None:
                setattr(self._flex, self._FLEX_FLAG, self._flex_saved)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        out = _eager_mean(func, args, kwargs)
        return func(*args, **kwargs) if out is NotImplemented else out


def _onnx_mean(node: ir.Node) -> float | None:
    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type in ("RandomNormal", "RandomNormalLike"):
        return node.attributes.get_float("mean", 0.0)
    if node.op_type in ("RandomUniform", "RandomUniformLike"):
        return (node.attributes.get_float("low", 0.0) + node.attributes.get_float("high", 1.0)) / 2
    return None


@contextlib.contextmanager
def onnx_draws_at_mean(model: ir.Model) -> Iterator[ir.Model]:
    """``model`` with its main graph's normal and uniform draws replaced by ``ConstantOfShape`` of
    their mean (module docstring; a graph output keeps its name), restored on exit."""
    graph = model.graph
    swapped: list[tuple[ir.Node, list[ir.Node], str | None]] = []
    try:
        for node in list(graph):
            mean = _onnx_mean(node)
            draw = node.outputs[0]
            if mean is None or draw.dtype is None:
                continue
            value = ir.tensor(np.array([mean], dtype=draw.dtype.numpy()), dtype=draw.dtype)
            added: list[ir.Node] = []
            if node.op_type.endswith("Like"):
                added.append(ir.node("Shape", [node.inputs[0]]))
            else:
                dims = ir.tensor(np.array(node.attributes.get_ints("shape", ()), dtype=np.int64))
                added.append(ir.node("Constant", [], attributes={"value": dims}))
            added.append(ir.node("ConstantOfShape", [added[0].outputs[0]], attributes={"value": value}))
            at_mean = added[-1].outputs[0]
            at_mean.dtype, at_mean.shape, name = draw.dtype, draw.shape, draw.name
            graph.insert_before(node, added)
            draw.name, at_mean.name = f"{name}.draw", name  # a graph output keeps its name
            ir.convenience.replace_all_uses_with(draw, at_mean, replace_graph_outputs=True)
            graph.remove(node)
            swapped.append((node, added, name))
        yield model
    finally:
        for node, added, name in reversed(swapped):
            draw, at_mean = node.outputs[0], added[-1].outputs[0]
            graph.insert_before(added[0], node)
            ir.convenience.replace_all_uses_with(at_mean, draw, replace_graph_outputs=True)
            at_mean.name, draw.name = f"{name}.mean", name
            graph.remove(added)


def has_draws(model: ir.Model) -> bool:
    """Whether ``model``'s main graph has a normal or uniform draw (:func:`onnx_draws_at_mean`)."""
    return any(_onnx_mean(node) is not None for node in model.graph)
