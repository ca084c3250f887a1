"""The complex-number ops (view_as_real/complex, real/imag, polar, complex arithmetic, the shape
ops on complex tensors) and the complex-as-real helpers the DFT translations of ``transforms.py``
share. Complex tensors are carried as real tensors with a trailing dimension of 2 (real,
imaginary), the layout of ONNX DFT (onnx.ai/onnx/operators/onnx__DFT.html).

Every translation here is declared ``complex=True``: the dispatcher chooses it for a node with a
complex tensor input or output (docs/architecture.md, "Complex numbers"). Dims in the ATen
arguments count the complex tensor's dims; the real view only adds the last axis, so a
non-negative dim is the same axis in both, and ``d % rank`` must use the complex rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch

from onnxport.ops._common import INT64_MAX, dtype_of, full_pads, rank, window_index
from onnxport.ops.pointwise.arithmetic import aten_atan2
from onnxport.ops.tensor.indexing import aten_index
from onnxport.ops.tensor.scatter import aten_select_scatter
from onnxport.ops.tensor.shape import aten_chunk, aten_split, aten_split_with_sizes, aten_unbind
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.dispatch import is_complex
from onnxport.translate.registry import Promote, translates

aten = torch.ops.aten


# -- helpers ---------------------------------------------------------------------------------

def _arg_val(ctx: Ctx, index: int = 0) -> Any:
    """The FakeTensor (or list of them) of the current node's ``index``-th argument."""
    assert ctx.node is not None
    arg = ctx.node.args[index]
    if isinstance(arg, (list, tuple)):
        return [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in arg]
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg


def _crank(ctx: Ctx, index: int = 0) -> int:
    """Rank of the ``index``-th argument as a complex (or real) tensor, without the real/imag axis."""
    return _arg_val(ctx, index).dim()


def _real_dtype(ctx: Ctx) -> ir.DataType:
    """ONNX element type of the real view of the current node's output."""
    dtype = ctx.val().dtype
    return ir_dtype(dtype.to_real() if dtype.is_complex else dtype)


def _re(ctx: Ctx, x: ir.Value) -> ir.Value:
    return ctx.op.Gather(x, ctx.const(0), axis=-1)


def _im(ctx: Ctx, x: ir.Value) -> ir.Value:
    return ctx.op.Gather(x, ctx.const(1), axis=-1)


def _pack(ctx: Ctx, re: ir.Value, im: ir.Value) -> ir.Value:
    """Real and imaginary parts (broadcast together) → complex real view ``[..., 2]``."""
    re = ctx.op.Expand(re, ctx.op.Shape(im))  # Expand broadcasts both ways: shape of re ⊕ im
    im = ctx.op.Expand(im, ctx.op.Shape(re))
    last = ctx.const([-1])
    return ctx.op.Concat(ctx.op.Unsqueeze(re, last), ctx.op.Unsqueeze(im, last), axis=-1)


def _to_complex(ctx: Ctx, x: ir.Value) -> ir.Value:
    """A real tensor as complex (imaginary part 0): a trailing axis padded from 1 to 2 with zeros."""
    return ctx.op.Pad(ctx.op.Unsqueeze(x, ctx.const([-1])), full_pads(ctx, rank(x) + 1, [0, 1]))


def _complex_operand(ctx: Ctx, x: ir.Value | Any, dtype: ir.DataType) -> ir.Value:
    """An operand of a complex result: complex real view as is, a real tensor or number padded."""
    if not isinstance(x, ir.Value):
        value = complex(x)
        x = ctx.const([value.real, value.imag], dtype)
        return x
    if x.dtype != dtype:
        x = ctx.op.Cast(x, to=dtype)
    return x if is_complex(x) else _to_complex(ctx, x)


def _conj(ctx: Ctx, x: ir.Value) -> ir.Value:
    """Complex conjugate: the imaginary part negated (a product with [1, -1])."""
    return ctx.op.Mul(x, ctx.const([1.0, -1.0], x.dtype))


def _cmul(ctx: Ctx, a: ir.Value, b: ir.Value) -> ir.Value:
    """(ar + i·ai)(br + i·bi) = (ar·br − ai·bi) + i(ar·bi + ai·br)."""
    ar, ai, br, bi = _re(ctx, a), _im(ctx, a), _re(ctx, b), _im(ctx, b)
    return _pack(ctx, ctx.op.Sub(ctx.op.Mul(ar, br), ctx.op.Mul(ai, bi)),
                 ctx.op.Add(ctx.op.Mul(ar, bi), ctx.op.Mul(ai, br)))


def _unsqueeze_last(ctx: Ctx, x: ir.Value) -> ir.Value:
    """A real operand broadcast against a complex real view: a trailing axis of 1."""
    return ctx.op.Unsqueeze(x, ctx.const([-1]))


# -- conversions and views -------------------------------------------------------------------

@translates(aten._to_copy.default, aten.to.dtype, aten.to.dtype_layout, aten.to.device, aten.to.other,
            aten.type_as.default, complex=True)
def aten_to_complex(ctx: Ctx, self: ir.Value, *args: Any, **kwargs: Any) -> ir.Value:
    """_to_copy(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor

    Real → complex pads an imaginary part of 0; complex → complex casts both parts; complex →
    real keeps the real part (torch discards the imaginary part, with a warning).
    """
    out = ctx.val().dtype
    target = _real_dtype(ctx)
    x = self if self.dtype == target else ctx.op.Cast(self, to=target)
    if not is_complex(self):
        return _to_complex(ctx, x)
    if not out.is_complex:
        return _re(ctx, x)
    return x if x is not self else ctx.op.Identity(x)


@translates(aten.clone.default, aten.contiguous.default, aten.alias.default, aten.detach.default,
            aten.lift_fresh_copy.default, aten.resolve_conj.default, aten.resolve_neg.default, complex=True)
def aten_clone_complex(ctx: Ctx, self: ir.Value, *args: Any, **kwargs: Any) -> ir.Value:
    """clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor: the values unchanged
    (``resolve_conj`` materializes a conjugation the graph already applied)."""
    return ctx.op.Identity(self)


@translates(aten._assert_tensor_metadata.default, complex=True)
def aten_assert_complex(ctx: Ctx, *args: Any, **kwargs: Any) -> None:
    """_assert_tensor_metadata(Tensor a, SymInt[]? size=None, ...) -> (): checks torch.export
    already proved; nothing to compute."""
    return None


@translates(aten._conj.default, aten._conj_physical.default, aten.conj_physical.default, complex=True)
def aten_conj_complex(ctx: Ctx, self: ir.Value) -> ir.Value:
    """_conj(Tensor(a) self) -> Tensor(a): the imaginary part negated."""
    return _conj(ctx, self)


@translates(aten.view_as_real.default, complex=True)
def aten_view_as_real(ctx: Ctx, self: ir.Value) -> ir.Value:
    """view_as_real(Tensor(a) self) -> Tensor(a): the carried layout itself."""
    return ctx.op.Identity(self)


@translates(aten.view_as_complex.default, complex=True)
def aten_view_as_complex(ctx: Ctx, self: ir.Value) -> ir.Value:
    """view_as_complex(Tensor(a) self) -> Tensor(a): the input ``[..., 2]`` is the carried layout."""
    return ctx.op.Identity(self)


@translates(aten.real.default, complex=True)
def aten_real(ctx: Ctx, self: ir.Value) -> ir.Value:
    """real(Tensor(a) self) -> Tensor(a)"""
    return _re(ctx, self)


@translates(aten.real.default)
def aten_real_of_real(ctx: Ctx, self: ir.Value) -> ir.Value:
    """real(Tensor(a) self) -> Tensor(a): a real tensor is its own real part."""
    return ctx.op.Identity(self)


@translates(aten.imag.default, complex=True)
def aten_imag(ctx: Ctx, self: ir.Value) -> ir.Value:
    """imag(Tensor(a) self) -> Tensor(a)"""
    return _im(ctx, self)


@translates(aten.complex.default, complex=True)
def aten_complex(ctx: Ctx, real: ir.Value, imag: ir.Value) -> ir.Value:
    """complex(Tensor real, Tensor imag) -> Tensor"""
    return _pack(ctx, real, imag)


@translates(aten.polar.default, complex=True)
def aten_polar(ctx: Ctx, abs: ir.Value, angle: ir.Value) -> ir.Value:
    """polar(Tensor abs, Tensor angle) -> Tensor: abs·cos(angle) + i·abs·sin(angle)."""
    return _pack(ctx, ctx.op.Mul(abs, ctx.op.Cos(angle)), ctx.op.Mul(abs, ctx.op.Sin(angle)))


@translates(aten.abs.default, complex=True)
def aten_abs_complex(ctx: Ctx, self: ir.Value) -> ir.Value:
    """abs(Tensor self) -> Tensor: the magnitude sqrt(re² + im²) of a complex tensor."""
    return ctx.op.Sqrt(ctx.op.ReduceSumSquare(self, ctx.const([-1]), keepdims=0))


@translates(aten.angle.default, complex=True)
def aten_angle_complex(ctx: Ctx, self: ir.Value) -> ir.Value:
    """angle(Tensor self) -> Tensor: atan2(im, re), 0 at 0 (C99 Annex G carg)."""
    re, im = _re(ctx, self), _im(ctx, self)
    zero = ctx.const(0.0, self.dtype)
    both_zero = ctx.op.And(ctx.op.Equal(re, zero), ctx.op.Equal(im, zero))
    return ctx.op.Where(both_zero, zero, aten_atan2(ctx, im, re))


# -- elementwise arithmetic ------------------------------------------------------------------

@translates(aten.mul.Tensor, aten.mul.Scalar, promote=Promote.DEFAULT, complex=True)
def aten_mul_complex(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """mul.Tensor(Tensor self, Tensor other) -> Tensor: a real factor scales both parts."""
    if is_complex(self) and is_complex(other):
        return _cmul(ctx, self, other)
    if is_complex(self):
        return ctx.op.Mul(self, _unsqueeze_last(ctx, other))
    return ctx.op.Mul(_unsqueeze_last(ctx, self), other)


@translates(aten.div.Tensor, aten.div.Scalar, promote=Promote.DEFAULT, complex=True)
def aten_div_complex(ctx: Ctx, self: ir.Value, other: ir.Value) -> ir.Value:
    """div.Tensor(Tensor self, Tensor other) -> Tensor: a/b = a·conj(b) / |b|²."""
    if not is_complex(other):
        return ctx.op.Div(_complex_operand(ctx, self, dtype_of(self)), _unsqueeze_last(ctx, other))
    num = _cmul(ctx, _complex_operand(ctx, self, dtype_of(other)), _conj(ctx, other))
    den = ctx.op.ReduceSumSquare(other, ctx.const([-1]), keepdims=1)
    return ctx.op.Div(num, den)


def _add_sub(ctx: Ctx, op: str, self: ir.Value, other: ir.Value, alpha: Any) -> ir.Value:
    dtype = dtype_of(self)
    a = _complex_operand(ctx, self, dtype)
    b = _complex_operand(ctx, other, dtype)
    if isinstance(alpha, complex):
        b = _cmul(ctx, b, ctx.const([alpha.real, alpha.imag], dtype))
    elif alpha != 1:
        b = ctx.op.Mul(b, ctx.const(alpha, dtype))
    return ctx.op.node(op, [a, b], {})


@translates(aten.add.Tensor, aten.add.Scalar, promote=Promote.DEFAULT, promote_args=("self", "other"), complex=True)
def aten_add_complex(ctx: Ctx, self: ir.Value, other: ir.Value, *, alpha: Any = 1) -> ir.Value:
    """add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor: a real operand adds to
    the real part only."""
    return _add_sub(ctx, "Add", self, other, alpha)


@translates(aten.sub.Tensor, aten.sub.Scalar, promote=Promote.DEFAULT, promote_args=("self", "other"), complex=True)
def aten_sub_complex(ctx: Ctx, self: ir.Value, other: ir.Value, *, alpha: Any = 1) -> ir.Value:
    """sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"""
    return _add_sub(ctx, "Sub", self, other, alpha)


@translates(aten.neg.default, complex=True)
def aten_neg_complex(ctx: Ctx, self: ir.Value) -> ir.Value:
    """neg(Tensor self) -> Tensor"""
    return ctx.op.Neg(self)


# -- shape ops on complex tensors ------------------------------------------------------------

@translates(aten.view.default, aten.reshape.default, aten._unsafe_view.default, complex=True)
def aten_view_complex(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value]) -> ir.Value:
    """view(Tensor(a) self, SymInt[] size) -> Tensor(a): the recorded output shape, then 2."""
    out_shape = ctx.val().shape
    target: list[int | ir.Value] = []
    for i, d in enumerate(out_shape):
        if isinstance(d, int):
            target.append(d)
        elif i < len(size) and isinstance(size[i], ir.Value):
            target.append(size[i])
        else:
            target.append(-1)
    has_zero = any(isinstance(d, int) and d == 0 for d in target)
    if has_zero and any(isinstance(d, int) and d == -1 for d in target):
        ctx.unsupported("reshape of a complex tensor to a shape with both 0 and a symbolic dim")
    return ctx.op.Reshape(self, ctx.shape_tensor([*target, 2]), allowzero=1 if has_zero else None)


@translates(aten.permute.default, complex=True)
def aten_permute_complex(ctx: Ctx, self: ir.Value, dims: Sequence[int]) -> ir.Value:
    """permute(Tensor(a) self, int[] dims) -> Tensor(a): the real/imag axis stays last."""
    r = _crank(ctx)
    return ctx.op.Transpose(self, perm=[*(d % r for d in dims), r]) if r else ctx.op.Identity(self)


@translates(aten.transpose.int, complex=True)
def aten_transpose_complex(ctx: Ctx, self: ir.Value, dim0: int, dim1: int) -> ir.Value:
    """transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"""
    r = _crank(ctx)
    if r < 2:
        return ctx.op.Identity(self)
    perm = list(range(r + 1))
    perm[dim0 % r], perm[dim1 % r] = perm[dim1 % r], perm[dim0 % r]
    return ctx.op.Transpose(self, perm=perm)


@translates(aten.unsqueeze.default, complex=True)
def aten_unsqueeze_complex(ctx: Ctx, self: ir.Value, dim: int) -> ir.Value:
    """unsqueeze(Tensor(a) self, int dim) -> Tensor(a)"""
    return ctx.op.Unsqueeze(self, ctx.const([dim % (_crank(ctx) + 1)]))


@translates(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, complex=True)
def aten_squeeze_complex(ctx: Ctx, self: ir.Value, dim: int | Sequence[int] | None = None) -> ir.Value:
    """squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a): only size-1 dims are removed."""
    shape = _arg_val(ctx).shape
    r = len(shape)
    dims = range(r) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    axes = sorted({d % r for d in dims if r and isinstance(shape[d], int) and shape[d] == 1})
    return ctx.op.Squeeze(self, ctx.const(axes)) if axes else ctx.op.Identity(self)


@translates(aten.expand.default, complex=True)
def aten_expand_complex(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], *, implicit: bool = False) -> ir.Value:
    """expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"""
    sizes = [1 if isinstance(s, int) and s == -1 else s for s in size]
    return ctx.op.Expand(self, ctx.shape_tensor([*sizes, 1]))


@translates(aten.slice.Tensor, complex=True)
def aten_slice_complex(
    ctx: Ctx, self: ir.Value, dim: int = 0, start: int | ir.Value | None = None,
    end: int | ir.Value | None = None, step: int | ir.Value = 1,
) -> ir.Value:
    """slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)"""
    r = _crank(ctx)
    axis = dim % r if r else 0
    start = 0 if start is None else start
    end = INT64_MAX if end is None else min(end, INT64_MAX) if isinstance(end, int) else end
    return ctx.op.Slice(self, ctx.shape_tensor([start]), ctx.shape_tensor([end]), ctx.const([axis]),
                        ctx.shape_tensor([step]))


@translates(aten.select.int, complex=True)
def aten_select_complex(ctx: Ctx, self: ir.Value, dim: int, index: int | ir.Value) -> ir.Value:
    """select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"""
    idx = ctx.const(index, ir.DataType.INT64) if isinstance(index, int) else index
    return ctx.op.Gather(self, idx, axis=dim % _crank(ctx))


@translates(aten.cat.default, aten.concat.default, complex=True)
def aten_cat_complex(ctx: Ctx, tensors: Sequence[ir.Value], dim: int = 0) -> ir.Value:
    """cat(Tensor[] tensors, int dim=0) -> Tensor: real operands get an imaginary part of 0."""
    dtype = _real_dtype(ctx)
    vals = _arg_val(ctx)
    r = ctx.val().dim()
    parts = [_complex_operand(ctx, t, dtype) for t, v in zip(tensors, vals)
             if not (list(v.shape) == [0] and r != 1)]  # torch skips legacy 1-D empty tensors
    return ctx.op.Concat(*parts, axis=dim % r) if len(parts) > 1 else ctx.op.Identity(parts[0])


@translates(aten.split_with_sizes.default, aten.split.sizes, complex=True)
def aten_split_with_sizes_complex(
    ctx: Ctx, self: ir.Value, split_sizes: Sequence[int | ir.Value], dim: int = 0
) -> tuple[ir.Value, ...]:
    """split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]: the
    real view split along the same axis (Qwen-Image splits its complex rotary table by axis)."""
    return aten_split_with_sizes(ctx, self, split_sizes, dim % _crank(ctx))


@translates(aten.split.Tensor, complex=True)
def aten_split_complex(ctx: Ctx, self: ir.Value, split_size: int | ir.Value, dim: int = 0) -> tuple[ir.Value, ...]:
    """split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]"""
    return aten_split(ctx, self, split_size, dim % _crank(ctx))


@translates(aten.chunk.default, complex=True)
def aten_chunk_complex(ctx: Ctx, self: ir.Value, chunks: int, dim: int = 0) -> tuple[ir.Value, ...]:
    """chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"""
    return aten_chunk(ctx, self, chunks, dim % _crank(ctx))


@translates(aten.unbind.int, complex=True)
def aten_unbind_complex(ctx: Ctx, self: ir.Value, dim: int = 0) -> tuple[ir.Value, ...]:
    """unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]"""
    return aten_unbind(ctx, self, dim % _crank(ctx))


@translates(aten.index.Tensor, complex=True)
def aten_index_complex(ctx: Ctx, self: ir.Value, indices: Sequence[ir.Value | None]) -> ir.Value:
    """index.Tensor(Tensor self, Tensor?[] indices) -> Tensor: the real view indexed on the same
    leading dims (there are at most as many indices as complex dims: the real/imaginary axis is
    never indexed and stays last). Z-Image gathers its complex rotary table by position ids."""
    return aten_index(ctx, self, indices)


@translates(aten.select_scatter.default, complex=True)
def aten_select_scatter_complex(ctx: Ctx, self: ir.Value, src: ir.Value, dim: int, index: int | ir.Value) -> ir.Value:
    """select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor: the real views,
    ``dim`` counted on the complex tensor (a real ``src`` gets an imaginary part of 0)."""
    src = _complex_operand(ctx, src, _real_dtype(ctx))
    return aten_select_scatter(ctx, self, src, dim % _crank(ctx), index)


def _complex_filled(ctx: Ctx, shape: ir.Value, fill_value: Any) -> ir.Value:
    """A complex tensor of ``shape`` (the real view's, real/imaginary axis included) filled with
    ``fill_value``."""
    return ctx.op.Expand(_complex_operand(ctx, fill_value, _real_dtype(ctx)), shape)


@translates(aten.new_full.default, complex=True)
def aten_new_full_complex(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], fill_value: Any, **kwargs: Any) -> ir.Value:
    """new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _complex_filled(ctx, ctx.shape_tensor([*size, 2]), fill_value)


@translates(aten.new_zeros.default, aten.new_empty.default, complex=True)
def aten_new_zeros_complex(ctx: Ctx, self: ir.Value, size: Sequence[int | ir.Value], **kwargs: Any) -> ir.Value:
    """new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, ...) -> Tensor"""
    return _complex_filled(ctx, ctx.shape_tensor([*size, 2]), 0)


@translates(aten.zeros_like.default, aten.empty_like.default, complex=True)
def aten_zeros_like_complex(ctx: Ctx, self: ir.Value, **kwargs: Any) -> ir.Value:
    """zeros_like(Tensor self, *, ScalarType? dtype=None, ...) -> Tensor (a real ``self``: its
    shape and a real/imaginary axis)."""
    shape = ctx.op.Shape(self) if is_complex(self) else ctx.shape_tensor([*_arg_val(ctx).shape, 2])
    return _complex_filled(ctx, shape, 0)


@translates(aten.unfold.default, complex=True)
def aten_unfold_complex(ctx: Ctx, self: ir.Value, dimension: int, size: int, step: int) -> ir.Value:
    """unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a): windows gathered
    with a (count, size) index (:func:`~onnxport.ops._common.window_index`), the window axis
    moved before the real/imag axis."""
    shape = _arg_val(ctx).shape
    r = len(shape)
    if r == 0:
        return ctx.op.Unsqueeze(self, ctx.const([0]))
    axis = dimension % r
    gathered = ctx.op.Gather(self, window_index(ctx, self, axis, shape[axis], size, step), axis=axis)
    return ctx.op.Transpose(gathered, perm=[*range(axis + 1), *range(axis + 2, r + 1), axis + 1, r + 1])


def _pad_complex(ctx: Ctx, x: ir.Value, pad: Sequence[int | ir.Value], mode: str, value: Any = None) -> ir.Value:
    """torch's (begin, end) pairs from the last complex dim backwards → ONNX Pad over every dim."""
    n = len(pad) // 2
    if n == 0:
        return ctx.op.Identity(x)
    r = _crank(ctx)
    if mode != "constant":
        if any(isinstance(p, int) and p < 0 for p in pad):
            ctx.unsupported(f"negative {mode} padding of a complex tensor")
        return ctx.op.Pad(x, full_pads(ctx, r + 1, pad, skip_last=1), mode=mode)
    value = complex(value or 0)
    if value == 0:
        return ctx.op.Pad(x, full_pads(ctx, r + 1, pad, skip_last=1))
    pads = full_pads(ctx, r, pad)
    re = ctx.op.Pad(_re(ctx, x), pads, ctx.const(value.real, x.dtype))
    im = ctx.op.Pad(_im(ctx, x), pads, ctx.const(value.imag, x.dtype))
    return _pack(ctx, re, im)


@translates(aten.constant_pad_nd.default, complex=True)
def aten_constant_pad_nd_complex(ctx: Ctx, self: ir.Value, pad: Sequence[int | ir.Value], value: Any = 0) -> ir.Value:
    """constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor"""
    return _pad_complex(ctx, self, pad, "constant", value)


@translates(aten.pad.default, complex=True)
def aten_pad_complex(
    ctx: Ctx, self: ir.Value, pad: Sequence[int | ir.Value], mode: str = "constant", value: float | None = None,
) -> ir.Value:
    """pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor"""
    if mode not in ("constant", "reflect", "replicate"):
        ctx.unsupported(f"{mode} padding of a complex tensor")
    return _pad_complex(ctx, self, pad, {"replicate": "edge"}.get(mode, mode), value)
