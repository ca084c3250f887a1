"""``torch.onnx.export``'s ``custom_translation_table`` in onnxport: onnxscript functions as
translations.

torch.onnx's table maps an op (``torch.ops.aten.add.Tensor``) to a function written with
onnxscript's ops (``from onnxscript import opset18 as op``; ``return op.Add(self, other)``), called
with the FX node's arguments. onnxscript dispatches each ``op.X(...)`` call to the evaluator set as
its default (``onnxscript.evaluator.default_as``; the ``Evaluator`` protocol's ``eval_op`` /
``eval_function``, onnxscript ≥ 0.6). :func:`onnxscript_translation` wraps such a function as an
onnxport translation ``fn(ctx, *args, **kwargs)`` that runs it with :class:`_GraphRecorder` as the
evaluator, which writes every op as a node through ``ctx.op`` (torch.onnx traces the same way with
its ``OpRecorder``; nothing of it is used here):

- tensor arguments are the node's ONNX values; Python numbers passed as op inputs become
  constants of the element type of an input sharing their type constraint in the op's schema
  (``op.Mul(x, 2.0)`` with a float16 ``x`` multiplies by a float16 2), else ``float32`` /
  ``int64`` / ``bool``;
- keyword arguments of an op are its attributes; the number of outputs is the schema's
  (``_outputs`` for a variadic output is not supported);
- a function decorated with ``@onnxscript.script()`` (an ``OnnxFunction``) called from the
  translation is inlined: its Python body runs with the same evaluator, so it must use op calls
  (``op.Add(a, b)``), not the operators (``a + b``) that only onnxscript's script converter reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import onnx_ir as ir

from onnxport.errors import InputError


class _GraphRecorder:
    """An onnxscript evaluator writing each op it is asked to evaluate into ``ctx``'s graph."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def eval_op(self, op: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        schema = getattr(op, "op_schema", None)
        inputs = [self._input(arg, i, args, schema) for i, arg in enumerate(args)]
        attrs = {key: value for key, value in kwargs.items() if value is not None}
        outputs = len(schema.outputs) if schema is not None else 1
        domain = getattr(getattr(op, "opset", None), "domain", "") or ""
        if domain not in ("", "ai.onnx"):
            attrs["_domain"] = domain
            attrs["_version"] = getattr(op.opset, "version", 1)
        return self._ctx.op.node(op.name, inputs, {**attrs, "_outputs": outputs})

    def eval_function(self, function: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return function.function(*args, **kwargs)

    def _input(self, arg: Any, index: int, args: Sequence[Any], schema: Any) -> ir.Value | None:
        if arg is None or isinstance(arg, ir.Value):
            return arg
        if isinstance(arg, (list, tuple)) and all(isinstance(a, ir.Value) for a in arg):
            raise InputError("custom_translation_table: variadic op inputs given as a list are not supported; "
                             "pass the values as separate arguments.")
        return self._ctx.const(arg, _constraint_dtype(index, args, schema))


def _constraint_dtype(index: int, args: Sequence[Any], schema: Any) -> ir.DataType | None:
    """The element type of a value input sharing input ``index``'s type constraint, if any."""
    if schema is None or not schema.inputs:
        return None
    formal = schema.inputs[min(index, len(schema.inputs) - 1)]
    for i, other in enumerate(args):
        other_formal = schema.inputs[min(i, len(schema.inputs) - 1)]
        if isinstance(other, ir.Value) and other.dtype is not None and other_formal.type_str == formal.type_str:
            return other.dtype
    return None


def onnxscript_translation(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (an onnxscript function of torch.onnx's table) as an onnxport translation."""
    # heavy optional dependency: imported only for a custom_translation_table
    import onnxscript.evaluator

    def translation(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        with onnxscript.evaluator.default_as(_GraphRecorder(ctx)):
            return fn(*args, **kwargs)

    translation.__name__ = getattr(fn, "__name__", "onnxscript_translation")
    translation.__doc__ = getattr(fn, "__doc__", None)
    return translation


def translations_from_table(table: Mapping[Any, Any]) -> dict[Any, Callable[..., Any]]:
    """torch.onnx's ``custom_translation_table`` (op → onnxscript function, or a list of them
    for overloads by dtype, of which the first is used) as onnxport's ``custom_translations``.

    Raises:
        InputError: ``table`` is not a mapping of ops to callables.
    """
    if not isinstance(table, Mapping):
        raise InputError(f"custom_translation_table must be a dict {{op: onnxscript function}}, got {type(table).__name__}.")
    translations: dict[Any, Callable[..., Any]] = {}
    for target, fn in table.items():
        chosen = fn[0] if isinstance(fn, (list, tuple)) and fn else fn
        if not callable(chosen):
            raise InputError(f"custom_translation_table[{target}] must be an onnxscript function, got {type(fn).__name__}.")
        translations[target] = onnxscript_translation(chosen)
    return translations


__all__ = ["onnxscript_translation", "translations_from_table"]
