"""Scatter-style writes: scatter, scatter_add, scatter_reduce, index_put, masked_scatter,
select_scatter, slice_scatter, embedding_dense_backward.

Everything is computed from runtime shapes (``Shape``/``Range``), never from the example's sizes,
so the translations hold under dynamic shapes (torch.onnx's index_put on the last dim does not;
see issue 3).
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir
import torch

from onnxport.ops._common import INT64_MAX, dtype_of, rank
from onnxport.ops.pointwise.arithmetic import _int_floor_fix
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten

_FLOATS = {ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.BFLOAT16, ir.DataType.DOUBLE}


def _i64(ctx: Ctx, x: ir.Value) -> ir.Value:
    return x if x.dtype == ir.DataType.INT64 else ctx.op.Cast(x, to=ir.DataType.INT64)


def _as(ctx: Ctx, x: ir.Value, dtype: ir.DataType | None) -> ir.Value:
    return x if dtype is None or x.dtype == dtype else ctx.op.Cast(x, to=dtype)


# -- scatter (ScatterElements) ----------------------------------------------------------------

def _updates_like_index(ctx: Ctx, src: ir.Value, index: ir.Value, r: int) -> ir.Value:
    """torch lets ``src`` be larger than ``index``; ScatterElements needs equal shapes."""
    if r == 0:
        return src
    zeros = ctx.const([0] * r)
    return ctx.op.Slice(src, zeros, ctx.op.Shape(index), ctx.const(list(range(r))))


def _scatter(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, updates: ir.Value, reduction: str,
             r: int | None = None) -> ir.Value:
    r = rank(self) if r is None else r
    if r == 0:  # 0-D: index/src are 0-D too
        self_, index, updates = (ctx.op.Reshape(v, ctx.const([1])) for v in (self, index, updates))
        out = ctx.op.ScatterElements(self_, index, updates, axis=0, reduction=reduction)
        return ctx.op.Reshape(out, ctx.const([], ir.DataType.INT64))
    return ctx.op.ScatterElements(self, _i64(ctx, index), updates, axis=dim % r, reduction=reduction)


@translates(aten.scatter.src)
def aten_scatter_src(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, src: ir.Value) -> ir.Value:
    """scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"""
    src = _as(ctx, src, self.dtype)
    return _scatter(ctx, self, dim, index, _updates_like_index(ctx, src, index, rank(self)), "none")


@translates(aten.scatter.value)
def aten_scatter_value(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, value: float) -> ir.Value:
    """scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor"""
    updates = ctx.op.Expand(ctx.const(value, self.dtype), ctx.op.Shape(index))
    return _scatter(ctx, self, dim, index, updates, "none")


@translates(aten.scatter_add.default)
def aten_scatter_add(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, src: ir.Value) -> ir.Value:
    """scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor"""
    if self.dtype == ir.DataType.BOOL:  # bool addition is Or: add as int32, nonzero is True
        as_int = aten_scatter_add(ctx, _as(ctx, self, ir.DataType.INT32), dim, index, _as(ctx, src, ir.DataType.INT32))
        return ctx.op.Cast(as_int, to=ir.DataType.BOOL)
    src = _as(ctx, src, self.dtype)
    return _scatter(ctx, self, dim, index, _updates_like_index(ctx, src, index, rank(self)), "add")


_IDENTITY = {"sum": 0, "prod": 1, "mean": 0}
_ONNX_REDUCTION = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "mean": "add"}


def _extreme(dtype: ir.DataType, largest: bool) -> float | int | bool:
    if dtype == ir.DataType.BOOL:
        return largest
    if dtype in _FLOATS:
        return float("inf") if largest else float("-inf")
    info = torch.iinfo(ir.tensor_adapters.to_torch_dtype(dtype))
    return info.max if largest else info.min


@translates(aten.scatter_reduce.two)
def aten_scatter_reduce(
    ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, src: ir.Value, reduce: str, *, include_self: bool = True,
) -> ir.Value:
    """scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor

    ScatterElements-18 reduces with add/mul/max/min. ``include_self=False`` first writes the
    reduction's identity at every target position; ``mean`` divides a sum by the count of values
    written (+1 with include_self), integer means rounding toward −∞ as torch does.
    """
    r = rank(self)
    src = _updates_like_index(ctx, _as(ctx, src, self.dtype), index, r)
    base = self
    if not include_self:
        fill = _IDENTITY[reduce] if reduce in _IDENTITY else _extreme(dtype_of(self), reduce == "amin")
        filler = ctx.op.Expand(ctx.const(fill, self.dtype), ctx.op.Shape(index))
        base = _scatter(ctx, self, dim, index, filler, "none", r)
    if self.dtype == ir.DataType.BOOL:  # no ORT kernel reduces bools: compute in int32
        as_int = aten_scatter_reduce(ctx, ctx.op.Cast(base, to=ir.DataType.INT32), dim, index,
                                     ctx.op.Cast(src, to=ir.DataType.INT32), reduce)
        return ctx.op.Cast(as_int, to=ir.DataType.BOOL)
    total = _scatter(ctx, base, dim, index, src, _ONNX_REDUCTION[reduce], r)
    if reduce != "mean":
        return total
    ones = ctx.op.Expand(ctx.const(1, self.dtype), ctx.op.Shape(index))
    start = ctx.op.Expand(ctx.const(1 if include_self else 0, self.dtype), ctx.op.Shape(self))
    count = _scatter(ctx, start, dim, index, ones, "add", r)
    count = ctx.op.Max(count, ctx.const(1, self.dtype))
    if self.dtype in _FLOATS:
        return ctx.op.Div(total, count)

    return _int_floor_fix(ctx, total, count, ctx.op.Div(total, count))


# -- index_put (ScatterND) --------------------------------------------------------------------

def _bool_to_int_indices(ctx: Ctx, mask: ir.Value, mask_rank: int) -> list[ir.Value]:
    """A boolean mask over ``mask_rank`` dims → that many 1-D int64 indices (its NonZero rows)."""
    nz = ctx.op.NonZero(mask)  # (mask_rank, N)
    if mask_rank == 1:
        return [ctx.op.Reshape(nz, ctx.const([-1]))]
    rows = ctx.op.Split(nz, axis=0, num_outputs=mask_rank, _outputs=mask_rank)
    return [ctx.op.Reshape(row, ctx.const([-1])) for row in rows]


@translates(aten.index_put.default, aten._unsafe_index_put.default)
def aten_index_put(
    ctx: Ctx, self: ir.Value, indices: Sequence[ir.Value | None], values: ir.Value, accumulate: bool = False,
) -> ir.Value:
    """index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor

    The indexed dims are moved to the front, the broadcast indices stacked into ScatterND's last
    axis, and ``values`` broadcast to the shape ``self[indices]`` has (index dims where the first
    indexed dim was when the indexed dims are adjacent, first otherwise, as NumPy) and laid out
    like the transposed ``self``. Shapes come from Shape ops, so dynamic dims work on any axis.
    """
    r = rank(self)
    in_vals = ctx.arg_val(1) or []  # the indices' FakeTensors
    expanded: list[ir.Value | None] = []  # boolean masks become one int index per masked dim
    for i, idx in enumerate(indices):
        if idx is not None and idx.dtype == ir.DataType.BOOL:
            fake = in_vals[i] if i < len(in_vals) else None
            mask_rank = fake.dim() if fake is not None else rank(idx)
            if mask_rank == 0:
                ctx.unsupported("index_put with a 0-D boolean index")
            expanded.extend(_bool_to_int_indices(ctx, idx, mask_rank))
        else:
            expanded.append(idx)
    expanded += [None] * (r - len(expanded))
    positions = [i for i, idx in enumerate(expanded) if idx is not None]
    rest = [i for i in range(r) if i not in positions]
    int_idx = [_i64(ctx, e) for e in expanded if e is not None]  # in the order of positions
    values = _as(ctx, values, self.dtype)

    perm = positions + rest
    x = self if perm == list(range(r)) else ctx.op.Transpose(self, perm=perm)
    # Broadcast shape of the indices.
    total = int_idx[0]
    for other in int_idx[1:]:
        total = ctx.op.Add(total, other)
    bshape = ctx.op.Shape(total)
    stacked = ctx.op.Concat(*[ctx.op.Unsqueeze(ctx.op.Expand(t, bshape), ctx.const([-1])) for t in int_idx], axis=-1)
    self_shape = ctx.op.Shape(self)
    rest_shape = ctx.op.Gather(self_shape, ctx.const(rest), axis=0) if rest else ctx.const([], ir.DataType.INT64)
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    if adjacent and positions[0] > 0:
        before = ctx.op.Gather(self_shape, ctx.const(list(range(positions[0]))), axis=0)
        after = [i for i in rest if i > positions[0]]
        after_shape = ctx.op.Gather(self_shape, ctx.const(after), axis=0) if after else ctx.const([], ir.DataType.INT64)
        index_shape = ctx.op.Concat(before, bshape, after_shape, axis=0)
        values = ctx.op.Expand(values, index_shape)
        # values: (before..., b..., after...) → (b..., before..., after...)
        n_b = _broadcast_rank(ctx)
        p = positions[0]
        vperm = list(range(p, p + n_b)) + list(range(p)) + list(range(p + n_b, p + n_b + len(after)))
        values = ctx.op.Transpose(values, perm=vperm)
    else:
        values = ctx.op.Expand(values, ctx.op.Concat(bshape, rest_shape, axis=0))
    reduction = "add" if accumulate and self.dtype != ir.DataType.BOOL else "none"
    if accumulate and self.dtype == ir.DataType.BOOL:  # bool "sum" is logical or
        hit = ctx.op.ScatterND(ctx.op.Cast(x, to=ir.DataType.INT32), stacked,
                               ctx.op.Cast(values, to=ir.DataType.INT32), reduction="add")
        out = ctx.op.Cast(hit, to=ir.DataType.BOOL)
    else:
        out = ctx.op.ScatterND(x, stacked, values, reduction=reduction)
    if perm == list(range(r)):
        return out
    inverse = [perm.index(i) for i in range(r)]
    return ctx.op.Transpose(out, perm=inverse)


def _broadcast_rank(ctx: Ctx) -> int:
    """Rank of the broadcast indices of index_put, from their FakeTensors (a mask counts 1)."""
    assert ctx.node is not None
    n_b = 0
    for val in ctx.arg_val(1):
        if val is not None:
            n_b = max(n_b, 1 if val.dtype == torch.bool else val.dim())
    return n_b


# -- masked_scatter ---------------------------------------------------------------------------

@translates(aten.masked_scatter.default)
def aten_masked_scatter(ctx: Ctx, self: ir.Value, mask: ir.Value, source: ir.Value) -> ir.Value:
    """masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor

    The k-th True of the (broadcast) mask, in row-major order, takes ``source.flatten()[k]``:
    positions come from a CumSum over the flattened mask, so the order is the mask's, not the
    order of NonZero over a transposed layout. Bools (no onnxruntime bool Where) go through uint8.
    """
    if self.dtype == ir.DataType.BOOL:
        as_u8 = aten_masked_scatter(ctx, ctx.op.Cast(self, to=ir.DataType.UINT8), mask,
                                    ctx.op.Cast(source, to=ir.DataType.UINT8))
        return ctx.op.Cast(as_u8, to=ir.DataType.BOOL)
    out_shape = ctx.op.Shape(ctx.op.Add(ctx.op.Cast(mask, to=ir.DataType.INT64),
                                        ctx.op.Expand(ctx.const(0), ctx.op.Shape(self))))
    full_mask = ctx.op.Expand(mask, out_shape)
    flat_mask = ctx.op.Reshape(full_mask, ctx.const([-1]))
    position = ctx.op.Sub(ctx.op.CumSum(ctx.op.Cast(flat_mask, to=ir.DataType.INT64), ctx.const(0)), ctx.const(1))
    position = ctx.op.Max(position, ctx.const(0))
    flat_source = ctx.op.Reshape(_as(ctx, source, self.dtype), ctx.const([-1]))
    # An all-False mask with an empty source: Gather would index nothing; pad with one element.
    flat_source = ctx.op.Concat(flat_source, ctx.op.Expand(ctx.const([0], self.dtype), ctx.const([1])), axis=0)
    picked = ctx.op.Gather(flat_source, position, axis=0)
    flat_self = ctx.op.Reshape(ctx.op.Expand(self, out_shape), ctx.const([-1]))
    return ctx.op.Reshape(ctx.op.Where(flat_mask, picked, flat_self), out_shape)


# -- slice_scatter / select_scatter -----------------------------------------------------------

def _scatter_along(ctx: Ctx, self: ir.Value, src: ir.Value, dim: int, positions: ir.Value) -> ir.Value:
    """Write ``src`` (laid out like ``self`` with dim ``dim`` of length len(positions)) at those
    positions of ``dim``: ScatterND on ``self`` with ``dim`` moved first."""
    r = rank(self)
    perm = [dim] + [i for i in range(r) if i != dim]
    x = self if dim == 0 else ctx.op.Transpose(self, perm=perm)
    updates = src if dim == 0 else ctx.op.Transpose(src, perm=perm)
    out = ctx.op.ScatterND(x, ctx.op.Unsqueeze(positions, ctx.const([-1])), updates)
    if dim == 0:
        return out
    return ctx.op.Transpose(out, perm=[perm.index(i) for i in range(r)])


def _positions(ctx: Ctx, self: ir.Value, dim: int) -> ir.Value:
    size = ctx.op.Squeeze(ctx.op.Shape(self, start=dim, end=dim + 1), ctx.const([0]))
    return ctx.op.Range(ctx.const(0), size, ctx.const(1))


@translates(aten.slice_scatter.default)
def aten_slice_scatter(
    ctx: Ctx, self: ir.Value, src: ir.Value, dim: int = 0, start: int | ir.Value | None = None,
    end: int | ir.Value | None = None, step: int | ir.Value = 1,
) -> ir.Value:
    """slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor

    The written positions are ``Slice(arange(size), start, end, step)``: Slice clamps and wraps
    negative bounds exactly as Python slicing does.
    """
    r = rank(self)
    if r == 0:
        return _as(ctx, src, self.dtype)
    dim %= r
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    positions = ctx.op.Slice(_positions(ctx, self, dim), ctx.shape_tensor([start]),
                             ctx.shape_tensor([min(end, INT64_MAX) if isinstance(end, int) else end]),
                             ctx.const([0]), ctx.shape_tensor([step]))
    return _scatter_along(ctx, self, _as(ctx, src, self.dtype), dim, positions)


@translates(aten.select_scatter.default)
def aten_select_scatter(ctx: Ctx, self: ir.Value, src: ir.Value, dim: int, index: int | ir.Value) -> ir.Value:
    """select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor"""
    dim %= rank(self)
    idx = ctx.const(index) if isinstance(index, int) else index
    position = ctx.op.Reshape(ctx.op.Gather(_positions(ctx, self, dim), idx, axis=0), ctx.const([1]))
    src = ctx.op.Unsqueeze(_as(ctx, src, self.dtype), ctx.const([dim]))
    return _scatter_along(ctx, self, src, dim, position)


@translates(aten.index_copy.default)
def aten_index_copy(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, source: ir.Value) -> ir.Value:
    """index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor"""
    r = rank(self)
    if r == 0:
        return _as(ctx, source, self.dtype)
    index = ctx.op.Reshape(_i64(ctx, index), ctx.const([-1]))
    return _scatter_along(ctx, self, _as(ctx, source, self.dtype), dim % r, index)


@translates(aten.index_add.default, promote=Promote.NONE)
def aten_index_add(
    ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, source: ir.Value, *, alpha: float = 1,
) -> ir.Value:
    """index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor

    Bools (addition is Or) add as int32 and come back as nonzero.
    """
    if self.dtype == ir.DataType.BOOL:
        as_int = aten_index_add(ctx, _as(ctx, self, ir.DataType.INT32), dim, index,
                                _as(ctx, source, ir.DataType.INT32), alpha=int(bool(alpha)))
        return ctx.op.Cast(as_int, to=ir.DataType.BOOL)
    r = rank(self)
    source = _as(ctx, source, self.dtype)
    if alpha != 1:
        source = ctx.op.Mul(source, ctx.const(alpha, self.dtype))
    if r == 0:
        return ctx.op.Add(self, source)
    dim %= r
    index = ctx.op.Reshape(_i64(ctx, index), ctx.const([-1]))
    perm = [dim] + [i for i in range(r) if i != dim]
    x = self if dim == 0 else ctx.op.Transpose(self, perm=perm)
    updates = source if dim == 0 or rank(source) < r else ctx.op.Transpose(source, perm=perm)
    out = ctx.op.ScatterND(x, ctx.op.Unsqueeze(index, ctx.const([-1])), updates, reduction="add")
    return out if dim == 0 else ctx.op.Transpose(out, perm=[perm.index(i) for i in range(r)])


# -- embedding backward -----------------------------------------------------------------------

@translates(aten.embedding_dense_backward.default)
def aten_embedding_dense_backward(
    ctx: Ctx, grad_output: ir.Value, indices: ir.Value, num_weights: int | ir.Value, padding_idx: int | ir.Value,
    scale_grad_by_freq: bool,
) -> ir.Value:
    """embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor

    Rows of ``grad_output`` summed into their index's row (ScatterND add); the padding row gets
    nothing; with ``scale_grad_by_freq`` each row is divided by its index's frequency.
    """
    dim = ctx.op.Shape(grad_output, start=-1)
    flat_idx = ctx.op.Reshape(_i64(ctx, indices), ctx.const([-1]))
    rows = ctx.op.Reshape(grad_output, ctx.op.Concat(ctx.const([-1]), dim, axis=0))
    pad = ctx.const(padding_idx) if isinstance(padding_idx, int) else padding_idx
    keep = ctx.op.Not(ctx.op.Equal(flat_idx, pad))
    rows = ctx.op.Where(ctx.op.Unsqueeze(keep, ctx.const([1])), rows, ctx.const(0, grad_output.dtype))
    if scale_grad_by_freq:
        ones = ctx.op.Expand(ctx.const([1.0], grad_output.dtype), ctx.op.Shape(flat_idx))
        counts = ctx.op.ScatterND(ctx.op.Expand(ctx.const(0.0, grad_output.dtype), ctx.shape_tensor([num_weights])),
                                  ctx.op.Unsqueeze(flat_idx, ctx.const([-1])), ones, reduction="add")
        freq = ctx.op.Gather(counts, flat_idx, axis=0)
        rows = ctx.op.Div(rows, ctx.op.Unsqueeze(freq, ctx.const([1])))
    zeros = ctx.op.Expand(ctx.const(0.0, grad_output.dtype),
                          ctx.op.Concat(ctx.shape_tensor([num_weights]), dim, axis=0))
    return ctx.op.ScatterND(zeros, ctx.op.Unsqueeze(flat_idx, ctx.const([-1])), rows, reduction="add")


@translates(aten.scatter.reduce, aten.scatter.value_reduce)
def aten_scatter_legacy_reduce(ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, src: ir.Value | float, *, reduce: str) -> ir.Value:
    """scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor ("add" or "multiply"; also scatter.value_reduce)."""
    if isinstance(src, ir.Value):
        updates = _updates_like_index(ctx, _as(ctx, src, self.dtype), index, rank(self))
    else:
        updates = ctx.op.Expand(ctx.const(src, self.dtype), ctx.op.Shape(index))
    return _scatter(ctx, self, dim, index, updates, {"add": "add", "multiply": "mul"}[reduce])


@translates(aten.index_reduce.default)
def aten_index_reduce(
    ctx: Ctx, self: ir.Value, dim: int, index: ir.Value, source: ir.Value, reduce: str, *, include_self: bool = True,
    r: int | None = None,
) -> ir.Value:
    """index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor

    scatter_reduce with the 1-D index broadcast along ``dim`` of ``source``.
    """
    r = rank(self) if r is None else r
    if r == 0:
        one = ctx.const([1])
        flat_self, flat_index, flat_source = (ctx.op.Reshape(v, one) for v in (self, index, source))
        for v, like in ((flat_self, self), (flat_index, index), (flat_source, source)):
            v.shape, v.dtype = ir.Shape([1]), like.dtype
        flat = aten_index_reduce(ctx, flat_self, 0, flat_index, flat_source, reduce, include_self=include_self, r=1)
        return ctx.op.Reshape(flat, ctx.const([], ir.DataType.INT64))
    axis = dim % r
    shape = [1] * r
    shape[axis] = -1
    expanded = ctx.op.Expand(ctx.op.Reshape(_i64(ctx, index), ctx.const(shape)), ctx.op.Shape(source))
    return aten_scatter_reduce(ctx, self, axis, expanded, source, reduce, include_self=include_self)


@translates(aten.put.default)
def aten_put(ctx: Ctx, self: ir.Value, index: ir.Value, source: ir.Value, accumulate: bool = False) -> ir.Value:
    """put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor

    self viewed as 1-D gets ``source`` at ``index`` (negative counts from the end), added when
    ``accumulate`` (PyTorch docs, Tensor.put_): ScatterElements on the flattened tensor.
    """
    flat = ctx.op.Reshape(self, ctx.const([-1]))
    idx = ctx.op.Reshape(_i64(ctx, index), ctx.const([-1]))
    idx = ctx.op.Where(ctx.op.Less(idx, ctx.const(0)), ctx.op.Add(idx, ctx.op.Shape(flat)), idx)
    src = ctx.op.Reshape(source, ctx.const([-1]))
    # onnxruntime's accumulating ScatterElements has no bool/float16/bfloat16 kernels: int32 (max
    # is or) or float, cast back.
    work = {ir.DataType.BOOL: ir.DataType.INT32, ir.DataType.FLOAT16: ir.DataType.FLOAT,
            ir.DataType.BFLOAT16: ir.DataType.FLOAT}.get(dtype_of(self)) if accumulate else None
    if work is not None:
        out = ctx.op.ScatterElements(ctx.op.Cast(flat, to=work), idx, ctx.op.Cast(src, to=work), axis=0,
                                     reduction="max" if self.dtype == ir.DataType.BOOL else "add")
        out = ctx.op.Cast(out, to=self.dtype)
    else:
        out = ctx.op.ScatterElements(flat, idx, src, axis=0, reduction="add" if accumulate else "none")
    return ctx.op.Reshape(out, ctx.op.Shape(self))


# -- bincount ---------------------------------------------------------------------------------

@translates(aten.bincount.default)
def aten_bincount(ctx: Ctx, self: ir.Value, weights: ir.Value | None = None, minlength: int | ir.Value = 0) -> ir.Value:
    """bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor

    max(max(self) + 1, minlength) bins (data-dependent), each value's count or weight summed into
    its bin by ScatterElements(add); an empty input gives ``minlength`` zeros.
    """
    out_dtype = ctx.out_dtype()
    index = ctx.op.Reshape(_i64(ctx, self), ctx.const([-1]))
    top = ctx.op.ReduceMax(ctx.op.Concat(index, ctx.const([-1]), axis=0), keepdims=1)  # (1,): −1 when empty
    length = ctx.op.Max(ctx.op.Add(top, ctx.const([1])), ctx.op.Reshape(_i64(ctx, ctx.shape_tensor([minlength])), ctx.const([1])))
    zeros = ctx.op.Expand(ctx.const(0, out_dtype), length)
    if weights is None:
        updates = ctx.op.Expand(ctx.const(1, out_dtype), ctx.op.Shape(index))
    else:
        updates = ctx.op.Reshape(_as(ctx, weights, out_dtype), ctx.const([-1]))
    return ctx.op.ScatterElements(zeros, index, updates, axis=0, reduction="add")
