"""Private helpers shared by every op family; no translations.

Shapes and dtypes of graph values (:func:`shape_of`, :func:`rank`, :func:`dtype_of`, static dims from
the FakeTensors torch.export recorded), :func:`reshape_to` a recorded output shape, float64 evaluation
(:func:`_f64` / :func:`_back`, constants by :func:`_c`), and the ONNX ``Loop`` builder with its trip count
(:func:`_loop`, :func:`_trip_count`) used by the special functions and integer algorithms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np
import onnx_ir as ir
import sympy
import torch
from torch.utils._sympy import functions as symfn

from onnxport.translate.context import Ctx

INT64_MAX = 2**63 - 1
_HALF_TYPES = {ir.DataType.FLOAT16, ir.DataType.BFLOAT16}
_FLOAT_TYPES = {ir.DataType.FLOAT, ir.DataType.DOUBLE} | _HALF_TYPES


def shape_of(x: ir.Value) -> ir.Shape:
    """The shape of ``x``. Every value a translation receives has one (the dispatcher sets it from
    ``meta["val"]``), as have the outputs of shape-preserving ops (:class:`OpBuilder`)."""
    assert x.shape is not None, f"value {x.name} has no shape"
    return x.shape


def rank(x: ir.Value) -> int:
    return len(shape_of(x))


def full_pads(ctx: Ctx, rank: int, pad: Sequence[int | ir.Value], skip_last: int = 0) -> ir.Value:
    """ONNX ``Pad``'s ``pads`` for every one of ``rank`` dims from torch's ``pad`` (``(begin, end)``
    pairs from dim ``rank - 1 - skip_last`` backwards), zeros for the dims it does not name.

    Pad-18's ``axes`` input would name the dims instead, but onnxruntime 1.31's transpose optimizer
    (``onnx_transpose_optimization.cc``, run at every optimization level from basic) permutes a
    Pad's ``pads`` as if they covered every dim when it pushes a Transpose through: with ``axes``
    it Gathers 2·rank entries out of 2·len(axes) and the session fails ("indices element out of
    data bounds"). Found on Mistral3's patch merger.
    """
    n = len(pad) // 2
    begins: list[int | ir.Value] = [0] * rank
    ends: list[int | ir.Value] = [0] * rank
    for i in range(n):
        begins[rank - 1 - skip_last - i] = pad[2 * i]
        ends[rank - 1 - skip_last - i] = pad[2 * i + 1]
    return ctx.shape_tensor([*begins, *ends])


def dtype_of(x: ir.Value) -> ir.DataType:
    """The element type of ``x``, known for the same values as :func:`shape_of`."""
    assert x.dtype is not None, f"value {x.name} has no element type"
    return x.dtype


def static_dim(x: ir.Value, axis: int) -> int | None:
    """``x.shape[axis]`` when it is a static size, ``None`` when it is symbolic or unknown."""
    dim = shape_of(x)[axis]
    return dim if isinstance(dim, int) else None


def static_dims(
    ctx: Ctx, x: ir.Value, what: str, axes: slice = slice(None), why: str = "the encoding needs static sizes"
) -> list[int]:
    """The static sizes of ``x`` on ``axes`` (all of them by default).

    Refuses (``ctx.unsupported``) with ``"{what} with dynamic sizes [...]: {why}"`` when one of them
    is symbolic or unknown.
    """
    sizes = shape_of(x)[axes]
    static = [s for s in sizes if isinstance(s, int)]
    if len(static) != len(sizes):
        ctx.unsupported(f"{what} with dynamic sizes {[str(s) for s in sizes]}: {why}")
    return static


def _expr(dim: Any) -> Any:
    return dim.node.expr if isinstance(dim, torch.SymInt) else dim


def input_val(ctx: Ctx, index: int = 0) -> Any:
    """The FakeTensor of the current node's ``index``-th argument (:meth:`Ctx.arg_val`)."""
    assert ctx.node is not None
    return ctx.arg_val(index)


def dim_value(ctx: Ctx, x: ir.Value, axis: int) -> ir.Value:
    """x.shape[axis] as a 1-element INT64 tensor."""
    return ctx.op.Shape(x, start=axis, end=axis + 1)


def window_index(ctx: Ctx, x: ir.Value, axis: int, length: Any, size: int, step: int) -> ir.Value:
    """The (count, size) INT64 index of ``Tensor.unfold``'s windows ``[i·step, i·step + size)``
    along ``axis`` of ``x`` (``length`` its size there), count = (length − size) // step + 1: a
    constant for a static length, else ``Range`` over the count computed from ``Shape``."""
    offsets = np.arange(size, dtype=np.int64)[None, :]
    if isinstance(length, int):
        count = (length - size) // step + 1
        return ctx.const(np.arange(count, dtype=np.int64)[:, None] * step + offsets)
    n = ctx.op.Squeeze(ctx.op.Shape(x, start=axis, end=axis + 1), ctx.const([0]))
    count = ctx.op.Add(ctx.op.Div(ctx.op.Sub(n, ctx.const(size)), ctx.const(step)), ctx.const(1))
    starts = ctx.op.Mul(ctx.op.Range(ctx.const(0), count, ctx.const(1)), ctx.const(step))
    return ctx.op.Add(ctx.op.Unsqueeze(starts, ctx.const([1])), ctx.const(offsets))


def _floor_div(ctx: Ctx, a: ir.Value, b: ir.Value) -> ir.Value:
    """Python's ``a // b`` on INT64 values: ONNX ``Div`` truncates, so subtract 1 where the
    quotient is inexact and the signs differ (as ``pointwise/arithmetic.py``'s floor division)."""
    q = ctx.op.Div(a, b)
    zero = ctx.const(0, ir.DataType.INT64)
    inexact = ctx.op.Not(ctx.op.Equal(ctx.op.Mul(q, b), a))
    signs_differ = ctx.op.Xor(ctx.op.Less(a, zero), ctx.op.Less(b, zero))
    return ctx.op.Sub(q, ctx.op.Cast(ctx.op.And(inexact, signs_differ), to=ir.DataType.INT64))


def sym_expr_value(ctx: Ctx, expr: Any, symbols: dict[Any, ir.Value]) -> ir.Value | None:
    """A sympy size expression as a 1-element INT64 value, or ``None`` if it cannot be built.

    Args:
        expr: A SymInt's ``node.expr`` (integers, symbols, ``+``, ``*``, ``FloorDiv``,
            ``Mod``/``PythonMod`` (Python semantics: the sign of the divisor), ``Max``, ``Min``,
            ``CeilDiv``) as torch.fx.experimental.symbolic_shapes writes them.
        symbols: The value of each free symbol (e.g. ``Shape(x)[axis]`` for the input dims).

    Every symbol of ``expr`` must be in ``symbols``; integer division floors (sizes are ≥ 0).
    """
    if not expr.free_symbols <= set(symbols):
        return None

    def build(e: Any) -> ir.Value:
        if e.is_Integer:
            return ctx.const([int(e)], ir.DataType.INT64)
        if e in symbols:
            return symbols[e]
        args = [build(a) for a in e.args]
        if isinstance(e, (sympy.Add, sympy.Mul, symfn.Max, symfn.Min)):
            onnx_op = {sympy.Add: "Add", sympy.Mul: "Mul", symfn.Max: "Max", symfn.Min: "Min"}[e.func]
            out = args[0]
            for a in args[1:]:
                out = getattr(ctx.op, onnx_op)(out, a)
            return out
        if isinstance(e, symfn.FloorDiv):
            return _floor_div(ctx, args[0], args[1])
        if isinstance(e, (symfn.Mod, symfn.PythonMod)):
            return ctx.op.Mod(args[0], args[1], fmod=0)
        if isinstance(e, symfn.CeilDiv):  # -((-a) // b)
            return ctx.op.Neg(_floor_div(ctx, ctx.op.Neg(args[0]), args[1]))
        raise _Unbuildable(str(e))

    try:
        return build(expr)
    except _Unbuildable:
        return None


class _Unbuildable(Exception):
    """An expression node :func:`sym_expr_value` has no encoding for."""


def reshape_to(ctx: Ctx, x: ir.Value, out_shape: Sequence[Any], sizes: Sequence[int | ir.Value] | None = None) -> ir.Value:
    """Reshape ``x`` (FakeTensor ``input_val``) to the recorded output shape ``out_shape``.

    Args:
        out_shape: The output FakeTensor's shape (ints and SymInts).
        sizes: The size list the op was called with, used for dims that cannot be derived.
    """
    in_val = input_val(ctx)
    in_shape = list(in_val.shape) if isinstance(in_val, torch.Tensor) else []
    static = [int(d) if isinstance(d, int) or _expr(d).is_number else None for d in out_shape]
    has_zero = 0 in static  # needs allowzero=1, which forbids 0-copy and -1 (ONNX Reshape-14)
    target: list[int | ir.Value] = []
    unknown: list[int] = []
    for i, dim in enumerate(out_shape):
        if static[i] is not None:
            target.append(static[i])  # type: ignore[arg-type]
        elif not has_zero and i < len(in_shape) and _expr(in_shape[i]) == _expr(dim):
            target.append(0)
        else:
            target.append(-1)
            unknown.append(i)
    if len(unknown) > 1 or (unknown and has_zero):
        # Resolve from the sizes the op was called with (SymInt values, or ints the FakeTensor
        # recorded as an unsimplified expression such as (s+p)//((s+p)//4) for 4), then from equal
        # input dims, then from the dim's sympy expression over the input's dims (Mod, FloorDiv:
        # Mamba2's chunk padding); at most one dim may stay -1 (and none with allowzero).
        for i in list(unknown):
            size = sizes[i] if sizes is not None and i < len(sizes) else None
            if isinstance(size, ir.Value) or (isinstance(size, int) and size >= 0):
                target[i] = size
                unknown.remove(i)
        for i in list(unknown):
            if len(unknown) == 1 and not has_zero:
                break
            match = next((j for j, d in enumerate(in_shape) if _expr(d) == _expr(out_shape[i])), None)
            if match is not None:
                target[i] = dim_value(ctx, x, match)
                unknown.remove(i)
        dims = {_expr(d): axis for axis, d in enumerate(in_shape) if isinstance(_expr(d), sympy.Symbol)}
        for i in list(unknown):
            if len(unknown) == 1 and not has_zero:
                break
            built = sym_expr_value(ctx, _expr(out_shape[i]), {s: dim_value(ctx, x, a) for s, a in dims.items()})
            if built is not None:
                target[i] = built
                unknown.remove(i)
        if len(unknown) > 1 or (unknown and has_zero):
            ctx.unsupported(f"cannot derive output dims {[str(out_shape[i]) for i in unknown]} of the reshape")
    return ctx.op.Reshape(x, ctx.shape_tensor(target), allowzero=1 if has_zero else None)


# --- float64 evaluation and loops (the special functions, integer algorithms, linalg) -----------

_D = ir.DataType.DOUBLE
_F = ir.DataType.FLOAT
_I64 = ir.DataType.INT64


def _c(ctx: Ctx, value: float, dtype: ir.DataType = _D) -> ir.Value:
    return ctx.const(value, dtype)


def _f64(ctx: Ctx, x: ir.Value) -> ir.Value:
    return x if x.dtype == _D else ctx.op.Cast(x, to=_D)


def _back(ctx: Ctx, y: ir.Value, dtype: ir.DataType | None = None) -> ir.Value:
    """Cast a float64 result to the node's output dtype."""
    dtype = dtype or ctx.out_dtype()
    return y if dtype == _D else ctx.op.Cast(y, to=dtype)


# A loop body: step(body_ctx, iteration, states) -> new states; with a ``cond``, -> (keep_going, new states).
_Step = Callable[[Ctx, ir.Value, list[ir.Value]], Sequence[ir.Value]]
_CondStep = Callable[[Ctx, ir.Value, list[ir.Value]], tuple[ir.Value, Sequence[ir.Value]]]


@overload
def _loop(ctx: Ctx, trips: ir.Value, states: Sequence[ir.Value], step: _Step, cond: None = None) -> list[ir.Value]: ...


@overload
def _loop(ctx: Ctx, trips: ir.Value, states: Sequence[ir.Value], step: _CondStep, cond: ir.Value) -> list[ir.Value]: ...


def _loop(
    ctx: Ctx, trips: ir.Value, states: Sequence[ir.Value], step: Callable[[Ctx, ir.Value, list[ir.Value]], Any],
    cond: ir.Value | None = None,
) -> list[ir.Value]:
    """An ONNX Loop of ``trips`` iterations (an INT64 scalar) carrying ``states``.

    ``step(body_ctx, iteration, states)`` builds the body with its own :class:`Ctx` and returns the
    new states; the body reads values of the enclosing graph directly (IR spec, "Names Within a
    Graph"). Body values are named after the FX node, so they never shadow an outer name. With a
    ``cond`` (a BOOL scalar: run at all?), ``step`` returns ``(keep_going, new_states)`` and the loop
    also stops as soon as ``keep_going`` is false (ONNX Loop's run-time termination condition).
    """
    it = ir.Value(type=ir.TensorType(_I64), shape=ir.Shape([]))
    cond_in = ir.Value(type=ir.TensorType(ir.DataType.BOOL), shape=ir.Shape([]))
    formals = [ir.Value(type=ir.TensorType(dtype_of(s))) for s in states]
    body = ir.Graph([it, cond_in, *formals], [], nodes=[], name="loop_body")
    bctx = Ctx(body, ctx.opset)
    if cond is None:
        new, keep_going = list(step(bctx, it, formals)), cond_in
    else:
        keep_going, new = step(bctx, it, formals)
        new = list(new)
    outputs = [bctx.op.Identity(keep_going)]
    for value, state in zip(new, states):
        producer = value.producer()
        if producer is None or producer.graph is not body:
            value = bctx.op.Identity(value)
        value.dtype = dtype_of(state)
        outputs.append(value)
    body.outputs.extend(outputs)
    name_body(body, [it, cond_in, *formals], f"{ctx.node.name if ctx.node is not None else 'special'}_loop{len(ctx.graph)}")
    loop = ctx.op.Loop(trips, cond, *states, body=body, _outputs=len(states))
    results: list[ir.Value] = [loop] if len(states) == 1 else list(loop)
    for value, state in zip(results, states):
        value.dtype = dtype_of(state)
    return results


def name_body(body: ir.Graph, formals: Sequence[ir.Value], prefix: str) -> None:
    """Name a Loop/Scan body's formal inputs ``{prefix}_in{i}``, its nodes ``{prefix}/{op}_{k}`` and
    their outputs ``{prefix}_v{k}``: unique, so no body value shadows a name of an enclosing graph
    (IR spec, "Names Within a Graph")."""
    for i, value in enumerate(formals):
        value.name = f"{prefix}_in{i}"
    count = 0
    for node in body:
        node.name = f"{prefix}/{node.op_type}_{count}"
        for out in node.outputs:
            out.name = f"{prefix}_v{count}"
            count += 1


def _trip_count(ctx: Ctx, n: ir.Value, active: ir.Value, offset: int = 0) -> ir.Value:
    """max(n over the ``active`` elements) + offset, at least 0, as an INT64 scalar (0 when empty)."""
    masked = ctx.op.Where(active, n, ctx.const(0, _I64))
    flat = ctx.op.Concat(ctx.op.Reshape(masked, ctx.const([-1])), ctx.const([0]), axis=0)
    top = ctx.op.ReduceMax(flat, keepdims=0)
    return ctx.op.Max(ctx.op.Add(top, ctx.const(offset, _I64)), ctx.const(0, _I64))


def _inf(ctx: Ctx) -> ir.Value:
    return _c(ctx, math.inf)


def _nan(ctx: Ctx) -> ir.Value:
    return _c(ctx, math.nan)


def _not(ctx: Ctx, a: ir.Value) -> ir.Value:
    return ctx.op.Not(a)


def _finite(ctx: Ctx, x: ir.Value) -> ir.Value:
    return ctx.op.Not(ctx.op.Or(ctx.op.IsInf(x), ctx.op.IsNaN(x)))
