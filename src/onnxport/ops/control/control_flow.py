"""Higher-order control flow → ONNX subgraph ops: ``cond`` → If, ``while_loop`` → Loop, ``scan`` → Scan.

The branch/body ``GraphModule`` s are translated by ``ctx.subgraph``; values of the enclosing graph
they use (captured tensors, ``additional_inputs``) are referenced from the outer scope, as ONNX
subgraphs allow (IR spec, "Names Within a Graph").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch

from onnxport.translate.context import Ctx, ir_dtype
from onnxport.translate.registry import translates

hop = torch.ops.higher_order


def _formal(name: str, like: Any) -> ir.Value:
    """A subgraph input with the element type of ``like`` (an ir.Value or a FakeTensor)."""
    if isinstance(like, ir.Value):
        dtype = like.dtype
    elif isinstance(like, torch.Tensor):
        dtype = ir_dtype(like.dtype)
    else:
        dtype = ir.DataType.INT64
    return ir.Value(name=name, type=ir.TensorType(dtype or ir.DataType.FLOAT))


def _as_bool(ctx: Ctx, pred: Any) -> ir.Value:
    if not isinstance(pred, ir.Value):
        return ctx.const(bool(pred))
    return pred if pred.dtype == ir.DataType.BOOL else ctx.op.Cast(pred, to=ir.DataType.BOOL)


@translates(hop.cond)
def hop_cond(ctx: Ctx, pred: Any, true_fn: torch.fx.GraphModule, false_fn: torch.fx.GraphModule,
             operands: Sequence[Any]) -> tuple[ir.Value, ...]:
    """cond(pred, true_fn, false_fn, operands) → If(pred) {then: true_fn(operands)} {else: false_fn(operands)}."""
    assert ctx.node is not None
    name = ctx.node.name
    then_branch = ctx.subgraph(true_fn, list(operands), name=f"{name}_then")
    else_branch = ctx.subgraph(false_fn, list(operands), name=f"{name}_else")
    n = len(then_branch.outputs)
    out = ctx.op.If(_as_bool(ctx, pred), then_branch=then_branch, else_branch=else_branch, _outputs=n)
    return out if isinstance(out, tuple) else (out,)


@translates(hop.while_loop)
def hop_while_loop(ctx: Ctx, cond_fn: torch.fx.GraphModule, body_fn: torch.fx.GraphModule,
                   carried_inputs: Sequence[Any], additional_inputs: Sequence[Any]) -> tuple[ir.Value, ...]:
    """while_loop(cond_fn, body_fn, carried, additional) → Loop(M="", cond=cond_fn(carried), carried).

    The body computes body_fn on the carried values, then cond_fn on the new ones (the Loop's
    condition output), as torch's reference semantics: ``while cond_fn(*c): c = body_fn(*c)``.
    """
    assert ctx.node is not None
    name = ctx.node.name
    carried = [v if isinstance(v, ir.Value) else ctx.const(v) for v in carried_inputs]
    extra = list(additional_inputs)
    (initial,) = ctx.inline(cond_fn, [*carried, *extra])  # the first test, in the current graph
    formals = [  # Loop body inputs: iteration number, condition (scalars), then the carried state
        ir.Value(name=f"{name}_iter", type=ir.TensorType(ir.DataType.INT64), shape=ir.Shape([])),
        ir.Value(name=f"{name}_cond_in", type=ir.TensorType(ir.DataType.BOOL), shape=ir.Shape([])),
    ]
    state = [_formal(f"{name}_carried_{i}", v) for i, v in enumerate(carried)]

    def with_condition(body: Ctx, outputs: list[Any]) -> list[Any]:
        (again,) = body.inline(cond_fn, [*outputs, *extra])
        return [_as_bool(body, again), *outputs]

    body = ctx.subgraph(body_fn, [*state, *extra], inputs=[*formals, *state], name=f"{name}_body",
                        extra_outputs=with_condition)
    out = ctx.op.Loop(None, _as_bool(ctx, initial), *carried, body=body, _outputs=len(carried))
    return out if isinstance(out, tuple) else (out,)


@translates(hop.scan)
def hop_scan(ctx: Ctx, combine_fn: torch.fx.GraphModule, init: Sequence[Any], xs: Sequence[Any],
             additional_inputs: Sequence[Any]) -> tuple[ir.Value, ...]:
    """scan(combine_fn, init, xs, additional_inputs) → Scan over axis 0 of ``xs``.

    combine_fn(*carry, *x_slices, *additional) returns (*next_carry, *ys); the Scan's outputs are
    the final carry and the ys stacked along axis 0 (ONNX Scan-16).
    """
    assert ctx.node is not None
    name = ctx.node.name
    state = [_formal(f"{name}_carry_{i}", v) for i, v in enumerate(init)]
    slices = [_formal(f"{name}_x_{i}", v) for i, v in enumerate(xs)]
    body = ctx.subgraph(combine_fn, [*state, *slices, *additional_inputs], inputs=[*state, *slices],
                        name=f"{name}_body")
    n_out = len(body.outputs)
    out = ctx.op.Scan(*init, *xs, body=body, num_scan_inputs=len(xs), _outputs=n_out)
    return out if isinstance(out, tuple) else (out,)
