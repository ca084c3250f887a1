"""Calling one translation for one FX node: arguments, type promotion, naming and metadata."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import onnx_ir as ir
import torch
import torch.fx
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from onnxport.errors import NodeError, OnnxportError, TranslationError
from onnxport.metadata import (
    COMPLEX_META,
    KEY_CLASS_HIERARCHY,
    KEY_FX_NODE,
    KEY_NAME_SCOPES,
    KEY_NAMESPACE,
    KEY_STACK_TRACE,
)
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.registry import Promote, Translation

_PROMOTION_KIND = {
    Promote.DEFAULT: ELEMENTWISE_TYPE_PROMOTION_KIND.NO_OPMATH,
    Promote.INT_TO_FLOAT: ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT,
}

def is_complex(value: Any) -> bool:
    """Whether a translation argument stands for a complex tensor (carried as real ``[..., 2]``)
    or is a Python complex number."""
    if isinstance(value, ir.Value):
        return value.meta.get(COMPLEX_META) is not None
    return isinstance(value, complex)


def mark_complex(value: ir.Value, dtype: torch.dtype) -> ir.Value:
    """Record that ``value`` is the real view of a complex tensor of ``dtype``."""
    value.meta[COMPLEX_META] = dtype
    return value


def _tensor_vals(val: Any) -> list[torch.Tensor]:
    if isinstance(val, (tuple, list)):
        return [v for item in val for v in _tensor_vals(item)]
    return [val] if isinstance(val, torch.Tensor) else []


def is_complex_node(node: torch.fx.Node) -> bool:
    """Whether any tensor input or output of ``node`` is complex: it then needs a translation
    declared ``complex=True`` (ordinary ones would misread the trailing real/imaginary dim)."""
    vals = _tensor_vals(node.meta.get("val"))
    for arg in node.all_input_nodes:
        vals.extend(_tensor_vals(arg.meta.get("val")))
    return any(v.is_complex() for v in vals) or any(
        isinstance(a, complex) for a in (*node.args, *node.kwargs.values())
    )


def convert_arg(arg: Any, env: Mapping[torch.fx.Node, Any]) -> Any:
    """Map FX arguments to translation arguments: nodes → their ir.Value(s), containers recursed."""
    if isinstance(arg, torch.fx.Node):
        return env[arg]
    if isinstance(arg, tuple):
        return tuple(convert_arg(a, env) for a in arg)
    if isinstance(arg, list):
        return [convert_arg(a, env) for a in arg]
    return arg


def _fake(arg: Any) -> Any:
    """The FakeTensor / Python number an FX argument stands for (for dtype promotion)."""
    if isinstance(arg, torch.fx.Node):
        val = arg.meta.get("val")
        # A symbolic scalar promotes like a Python scalar of its kind.
        for sym, py in ((torch.SymBool, True), (torch.SymInt, 1), (torch.SymFloat, 1.0)):
            if isinstance(val, sym):
                return py
        return val
    return arg


def _promote(
    ctx: Ctx,
    translation: Translation,
    node: torch.fx.Node,
    args: list[Any],
    kwargs: dict[str, Any],
) -> None:
    """Cast tensor operands and materialize scalar operands in the promoted dtype, in place.

    For a complex translation the operands go to the *real* counterpart of the promoted dtype
    (complex64 → FLOAT): real-view complex operands and real ones alike; a Python complex scalar
    becomes a ``[re, im]`` constant marked complex. The translation combines them.
    """
    schema = getattr(node.target, "_schema", None)
    names = [a.name for a in schema.arguments] if schema is not None else []
    slots: list[tuple[str, int | str, Any]] = []  # (kind, index-or-name, fx arg)
    for i, fx_arg in enumerate(node.args):
        name = names[i] if i < len(names) else str(i)
        if _promotable(translation, name, fx_arg):
            slots.append(("pos", i, fx_arg))
    for name, fx_arg in node.kwargs.items():
        if _promotable(translation, name, fx_arg):
            slots.append(("kw", name, fx_arg))
    fakes = [_fake(a) for _, _, a in slots]
    if not fakes or not any(isinstance(f, torch.Tensor) for f in fakes):
        return
    _, dtype = elementwise_dtypes(*fakes, type_promotion_kind=_PROMOTION_KIND[translation.promote])
    complex_dtype = dtype if dtype.is_complex else None
    target = ir_dtype(dtype.to_real() if translation.complex else dtype)
    for kind, key, _ in slots:
        container: Any = args if kind == "pos" else kwargs
        value = container[key]
        if isinstance(value, ir.Value):
            if value.dtype != target:
                cast = ctx.op.Cast(value, to=target)
                cast.dtype = target
                if is_complex(value):
                    mark_complex(cast, value.meta[COMPLEX_META])
                container[key] = cast
        elif isinstance(value, complex) and translation.complex:
            pair = ctx.op.Identity(ctx.const([value.real, value.imag], target))  # constants are shared: mark a copy
            container[key] = mark_complex(pair, complex_dtype or torch.complex64)
        elif isinstance(value, (bool, int, float)):
            container[key] = ctx.const(value, target)


def _promotable(translation: Translation, name: str, fx_arg: Any) -> bool:
    """Whether an argument takes part in promotion: named in ``promote_args``, or else any
    Tensor / Python number argument (``alpha`` excluded: it scales, it does not promote)."""
    if translation.promote_args:
        if name not in translation.promote_args:
            return False
    elif name == "alpha":
        return False
    if isinstance(fx_arg, torch.fx.Node):
        return isinstance(
            fx_arg.meta.get("val"), (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)
        )
    return isinstance(fx_arg, (bool, int, float, complex))


def stamp_metadata(nodes: list[ir.Node], fx_node: torch.fx.Node) -> None:
    """Write namespace, class hierarchy, FX node, name scopes and stack trace on ONNX nodes."""
    if not nodes:
        return
    stack = fx_node.meta.get("nn_module_stack") or {}
    classes: list[str] = []
    scopes: list[str] = []
    parent = None
    for path, cls in stack.values():
        classes.append(cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}")
        scopes.append(path if parent is None or not parent else path[len(parent) + 1 :])
        parent = path
    target = str(fx_node.target)
    props = {
        KEY_NAMESPACE: "/".join([*classes, f"{fx_node.name}: {target}"]),
        KEY_CLASS_HIERARCHY: repr([*classes, target]),
        KEY_FX_NODE: fx_node.format_node() or fx_node.name,
        KEY_NAME_SCOPES: repr([*scopes, fx_node.name]),
    }
    trace = fx_node.meta.get("stack_trace")
    if trace:
        props[KEY_STACK_TRACE] = trace
    for node in nodes:
        node.metadata_props.update(props)
        if node.name is None:
            node.name = f"{fx_node.name}/{node.op_type}"


def call_translation(
    ctx: Ctx,
    translation: Translation,
    node: torch.fx.Node,
    env: Mapping[torch.fx.Node, Any],
    set_meta: Callable[[ir.Value, Any, str], None],
) -> Any:
    """Translate one ``call_function`` FX node; return its ir.Value or tuple of ir.Values.

    Raises:
        UnsupportedOpError: The translation refused the case (``ctx.unsupported``).
        TranslationError: The translation raised any other exception.
    """
    ctx.node = node
    args = [convert_arg(a, env) for a in node.args]
    kwargs = {k: convert_arg(v, env) for k, v in node.kwargs.items()}
    try:
        if translation.promote is not Promote.NONE:
            _promote(ctx, translation, node, args, kwargs)
        result = translation.fn(ctx, *args, **kwargs)
    except NodeError as e:
        if e.node is None:
            raise type(e)(e.message, node) from e
        raise
    except OnnxportError:
        raise
    except Exception as e:  # any bug in a translation becomes an error naming node and source
        raise TranslationError(
            f"Translating {node.target} failed: {type(e).__name__}: {e}", node, translation.name
        ) from e
    finally:
        created = ctx.op.take_nodes()
        stamp_metadata(created, node)
        ctx.node = None
    fresh = {id(v) for n in created for v in n.outputs}
    val = node.meta.get("val")
    if isinstance(result, (tuple, list)):
        vals = val if isinstance(val, (tuple, list)) else [None] * len(result)
        for i, (value, v) in enumerate(zip(result, vals)):
            if isinstance(value, ir.Value) and id(value) in fresh:
                set_meta(value, v, f"{node.name}_{i}")
        return tuple(result)
    if isinstance(result, ir.Value) and id(result) in fresh:
        set_meta(result, val, node.name)
    return result
