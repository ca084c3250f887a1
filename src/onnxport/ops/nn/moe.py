"""Grouped matrix multiplication of mixture-of-experts layers.

transformers 5 computes the experts of a MoE block (Mixtral, Qwen2/3-MoE, OLMoE, DeepSeek-V3, ...)
with ``experts_implementation="grouped_mm"`` (its default): the (token, expert) pairs are sorted by
expert and every expert's rows are multiplied by that expert's weight, through ``aten._grouped_mm``
(bfloat16 weights, or eager CUDA) or the custom op ``transformers::grouped_mm_fallback``
(``transformers/integrations/moe.py``; float32 under torch.export). Both take ``input`` (S, K)
sorted by group, ``weight`` (E, K, N) and ``offs`` (E,), the cumulative end row of each group
(int32), and return (S, N); rows past ``offs[-1]`` are zero in the fallback and unspecified in
``aten._grouped_mm`` (its CPU kernel leaves them uninitialized), zero here.

Encoding: an ONNX ``Loop`` over the E experts whose body slices the expert's rows
``input[offs[e-1]:offs[e]]``, multiplies them by ``weight[e]`` and writes them with ``ScatterND``
into the carried (S, N) result, so the multiply-adds are those of the S rows only (as the CUDA
kernel's), not E times as many (as a dense ``MatMul`` over every expert followed by a selection,
the form torch.onnx's decomposition of the fallback's Python loop cannot produce at all because it
specializes ``offs.tolist()``). onnxruntime's contrib ``com.microsoft.MoE`` fuses a whole block
(router included) and needs its own weight layout; it is not emitted.

The transformers op is registered by its qualified name when transformers is installed, so
importing onnxport does not import transformers (the registry resolves the name when a graph
uses the op).
"""

from __future__ import annotations

import importlib.util

import onnx_ir as ir
import torch

from onnxport.ops._common import _loop, rank, static_dim
from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.registry import translates

aten = torch.ops.aten
TRANSFORMERS_GROUPED_MM = "transformers::grouped_mm_fallback.default"


def grouped_mm_rows(ctx: Ctx, x: ir.Value, weight: ir.Value, offs: ir.Value, bias: ir.Value | None = None) -> ir.Value:
    """``out[r] = x[r] @ weight[g(r)] (+ bias[g(r)])`` for the rows of group ``g`` (``offs``).

    Args:
        x: (S, K) rows sorted by group.
        weight: (E, K, N).
        offs: (E,) int32/int64, cumulative end row of each group (non-decreasing).
        bias: Optional (E, N).

    Returns:
        (S, N) in ``x``'s dtype; rows at or past ``offs[-1]`` are zero.
    """
    i64 = ir.DataType.INT64
    ends = ctx.op.Cast(offs, to=i64)
    starts = ctx.op.Concat(ctx.const([0], i64), ctx.op.Slice(ends, ctx.const([0]), ctx.const([-1])), axis=0)
    n = static_dim(weight, 2)
    n_value = ctx.const([n], i64) if n is not None else ctx.op.Shape(weight, start=2, end=3)
    out_shape = ctx.op.Concat(ctx.op.Shape(x, start=0, end=1), n_value, axis=0)
    zero = ir.tensor([0], dtype=x.dtype) if x.dtype is not None else ir.tensor([0.0])
    init = ctx.op.ConstantOfShape(out_shape, value=zero)
    init.dtype = x.dtype
    experts = ctx.op.Shape(weight, start=0, end=1)
    trips = ctx.op.Squeeze(experts, ctx.const([0]))

    def step(b: Ctx, it: ir.Value, states: list[ir.Value]) -> list[ir.Value]:
        index = b.op.Unsqueeze(it, b.const([0]))
        start, end = b.op.Gather(starts, index), b.op.Gather(ends, index)
        rows = b.op.Slice(x, start, end, b.const([0]))
        w = b.op.Gather(weight, it, axis=0)  # (K, N)
        y = b.op.MatMul(rows, w)
        if bias is not None:
            y = b.op.Add(y, b.op.Gather(bias, it, axis=0))
        positions = b.op.Range(b.op.Squeeze(start, b.const([0])), b.op.Squeeze(end, b.const([0])), b.const(1))
        return [b.op.ScatterND(states[0], b.op.Unsqueeze(positions, b.const([1])), y)]

    return _loop(ctx, trips, [init], step)[0]


@translates(aten._grouped_mm.default)
def aten_grouped_mm(
    ctx: Ctx, self: ir.Value, mat2: ir.Value, offs: ir.Value | None = None, bias: ir.Value | None = None,
    out_dtype: torch.dtype | None = None,
) -> ir.Value:
    """_grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None, Tensor? bias=None, ScalarType? out_dtype=None) -> Tensor

    Forms (ATen's ``_grouped_mm`` documentation, ``torch/nn/functional.py: grouped_mm``): 3-D × 3-D
    without ``offs`` is a batched ``MatMul``; 2-D (S, K) × 3-D (E, K, N) with ``offs`` is the MoE form
    (:func:`grouped_mm_rows`). The forms grouping the K dim (2-D × 2-D) or ``mat2``'s rows
    (3-D × 2-D) are refused: no model exported for inference uses them (they are the backward's).
    """
    ranks = (rank(self), rank(mat2))
    if ranks == (3, 3) and offs is None:
        y = ctx.op.MatMul(self, mat2)
        if bias is not None:
            y = ctx.op.Add(y, ctx.op.Unsqueeze(bias, ctx.const([1])))
    elif ranks == (2, 3) and offs is not None:
        y = grouped_mm_rows(ctx, self, mat2, offs, bias)
    else:
        ctx.unsupported(
            f"aten._grouped_mm of ranks {ranks} with{'' if offs is not None else 'out'} offs: only the "
            "batched (3-D × 3-D) and the mixture-of-experts (2-D × 3-D with offs) forms are translated"
        )
    if out_dtype is not None and ir_dtype(out_dtype) != self.dtype:
        y = ctx.op.Cast(y, to=ir_dtype(out_dtype))
    return y


def transformers_grouped_mm_fallback(ctx: Ctx, input: ir.Value, weight: ir.Value, offs: ir.Value) -> ir.Value:
    """transformers::grouped_mm_fallback(Tensor input, Tensor weight, Tensor offs) -> Tensor

    transformers' Python loop ``for i, end in enumerate(offs.tolist()): out[start:end] =
    input[start:end] @ weight[i]`` (``transformers/integrations/moe.py``): :func:`grouped_mm_rows`.
    """
    return grouped_mm_rows(ctx, input, weight, offs)


if importlib.util.find_spec("transformers") is not None:  # the op exists only with transformers
    transformers_grouped_mm_fallback = translates(TRANSFORMERS_GROUPED_MM)(transformers_grouped_mm_fallback)
