"""dtype conversions, copies and ops that are no-ops at inference (dropout in eval, asserts)."""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import torch

from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten
prims = torch.ops.prims


def _cast_to_out(ctx: Ctx, self: ir.Value) -> ir.Value:
    dtype = ctx.out_dtype()
    if self.dtype == dtype:
        return self
    return ctx.op.Cast(self, to=dtype)


@translates(
    aten.to.dtype, aten.to.dtype_layout, aten.to.device, aten.to.other, aten._to_copy.default,
    aten.type_as.default,
)
def aten_to(ctx: Ctx, self: ir.Value, *args: Any, **kwargs: Any) -> ir.Value:
    """to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)

    Devices and memory formats do not exist in ONNX: only the dtype change is kept.
    """
    return _cast_to_out(ctx, self)


@translates(prims.convert_element_type.default)
def prims_convert_element_type(ctx: Ctx, a: ir.Value, dtype: Any) -> ir.Value:
    """convert_element_type(Tensor a, ScalarType dtype) -> Tensor: a Cast (left by decompositions such as renorm's)."""
    return _cast_to_out(ctx, a)


@translates(
    aten.clone.default, aten.contiguous.default, aten.alias.default, aten.detach.default,
    aten.lift_fresh_copy.default, aten.lift_fresh.default,
)
def aten_identity(ctx: Ctx, self: ir.Value, *args: Any, **kwargs: Any) -> ir.Value:
    """clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor: values unchanged."""
    return self


@translates(
    aten._assert_tensor_metadata.default, aten._assert_scalar.default, aten.sym_constrain_range_for_size.default,
    aten._assert_async.msg, aten.sym_constrain_range.default,
)
def aten_assert(ctx: Ctx, *args: Any, **kwargs: Any) -> None:
    """_assert_tensor_metadata(Tensor a, SymInt[]? size=None, ...) -> (): checks torch.export
    already proved; nothing to compute in ONNX."""
    return None
