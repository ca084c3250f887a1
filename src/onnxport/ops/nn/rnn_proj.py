"""``nn.LSTM(proj_size > 0)`` → one ONNX ``Scan`` per layer and direction (the sequence stays dynamic).

ONNX LSTM has no output projection, so the cell is written out (``nn.LSTM`` docs, with
``proj_size``): per step, gates = x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh split into i, f, g, o;
c' = σ(f)·c + σ(i)·tanh(g); h' = (σ(o)·tanh(c'))·W_hrᵀ. The input products x·W_ihᵀ + b of all steps are
one MatMul before the Scan; the Scan carries (h, c) and emits σ(o)·tanh(c') per step, projected by
one MatMul after it. The backward
direction runs the same body with ``scan_input_directions``/``scan_output_directions`` = 1
(reverse), as the ONNX Scan spec defines them.

With ``sequence_lens`` (``pack_padded_sequence``, ``capture/packed.py``) a (T, B, 1) mask rides
along as a second scan input: past a sequence's length the state is kept and the output is 0, so
the forward direction's final state is the one at the length, and the reverse direction starts at
length - 1 from the initial state (PyTorch's packed semantics).

torch.onnx's dynamo exporter reaches a Loop of cell ops through its ``while_loop`` decomposition
(``torch/export/_patches.py``); the TorchScript exporter refused ``proj_size``.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir

from onnxport.ops._common import dtype_of, name_body
from onnxport.translate.context import Ctx


def _scan_body(ctx: Ctx, masked: bool, dtype: ir.DataType, w_hh_t: ir.Value, w_hr_t: ir.Value) -> ir.Graph:
    """The Scan body: inputs (h, c, xw_t[, m_t]) → outputs (h', c', y_t) with y_t the step's
    unprojected output σ(o)·tanh(c') (0 past the length). Emitting h' itself as the scan output too
    would make one value two body outputs once identity elimination runs, which onnxruntime's Scan
    computes wrongly; the projection of the stacked y is one MatMul after the Scan."""
    formals = [ir.Value(type=ir.TensorType(dtype)) for _ in range(4 if masked else 3)]
    body = ir.Graph(formals, [], nodes=[], name="lstm_proj_body")
    b = Ctx(body, ctx.opset)
    h, c, xw = formals[:3]
    gates = b.op.Add(xw, b.op.MatMul(h, w_hh_t))
    i, f, g, o = b.op.Split(gates, axis=1, num_outputs=4, _outputs=4)
    c_new = b.op.Add(b.op.Mul(b.op.Sigmoid(f), c), b.op.Mul(b.op.Sigmoid(i), b.op.Tanh(g)))
    y = b.op.Mul(b.op.Sigmoid(o), b.op.Tanh(c_new))  # projected after the Scan, for all steps at once
    h_new = b.op.MatMul(y, w_hr_t)
    if masked:
        m = formals[3]
        keep = b.op.Sub(b.const(1.0, dtype), m)
        h_new = b.op.Add(b.op.Mul(m, h_new), b.op.Mul(keep, h))
        c_new = b.op.Add(b.op.Mul(m, c_new), b.op.Mul(keep, c))
        y = b.op.Mul(m, y)
    outputs = [b.op.Identity(v) for v in (h_new, c_new, y)]
    for v in outputs:
        v.dtype = dtype
    body.outputs.extend(outputs)
    name_body(body, formals, f"{ctx.node.name if ctx.node is not None else 'lstm'}_scan{len(ctx.graph)}")
    return body


def lstm_with_projection(
    ctx: Ctx, x: ir.Value, hx: Sequence[ir.Value], params: Sequence[ir.Value], *, has_biases: bool,
    num_layers: int, bidirectional: bool, lengths: ir.Value | None,
) -> tuple[ir.Value, ir.Value, ir.Value]:
    """The stacked LSTM with projection on a sequence-first ``x`` (T, B, F).

    Args:
        hx: [h0 (layers·D, B, P), c0 (layers·D, B, H)].
        params: Per layer and direction ``w_ih (4H, in), w_hh (4H, P)[, b_ih, b_hh], w_hr (P, H)``
            (``torch.nn.RNNBase._flat_weights``).
        lengths: (B,) sequence lengths, or ``None``.

    Returns:
        (output (T, B, D·P), h_n (layers·D, B, P), c_n (layers·D, B, H)).
    """
    d = 2 if bidirectional else 1
    per = len(params) // (num_layers * d)
    dtype = dtype_of(x)
    mask = None
    if lengths is not None:  # (T, B, 1): step t < length
        steps = ctx.op.Range(ctx.const(0, ir.DataType.INT64), ctx.op.Squeeze(
            ctx.op.Slice(ctx.op.Shape(x), ctx.const([0]), ctx.const([1])), ctx.const([0])),
            ctx.const(1, ir.DataType.INT64))
        valid = ctx.op.Less(ctx.op.Unsqueeze(steps, ctx.const([1])),
                            ctx.op.Unsqueeze(ctx.op.Cast(lengths, to=ir.DataType.INT64), ctx.const([0])))
        mask = ctx.op.Unsqueeze(ctx.op.Cast(valid, to=dtype), ctx.const([2]))
    h_n: list[ir.Value] = []
    c_n: list[ir.Value] = []
    for layer in range(num_layers):
        ys = []
        for j in range(d):
            index = layer * d + j
            p = params[index * per:(index + 1) * per]
            xw = ctx.op.MatMul(x, ctx.op.Transpose(p[0], perm=[1, 0]))
            if has_biases:
                xw = ctx.op.Add(xw, ctx.op.Add(p[2], p[3]))
            w_hr_t = ctx.op.Transpose(p[-1], perm=[1, 0])
            body = _scan_body(ctx, mask is not None, dtype, ctx.op.Transpose(p[1], perm=[1, 0]), w_hr_t)
            h0 = ctx.op.Squeeze(ctx.op.Slice(hx[0], ctx.const([index]), ctx.const([index + 1]), ctx.const([0])),
                                ctx.const([0]))
            c0 = ctx.op.Squeeze(ctx.op.Slice(hx[1], ctx.const([index]), ctx.const([index + 1]), ctx.const([0])),
                                ctx.const([0]))
            scans = [xw] if mask is None else [xw, mask]
            reverse = {"scan_input_directions": [1] * len(scans), "scan_output_directions": [1]} if j == 1 else {}
            h, c, y = ctx.op.Scan(h0, c0, *scans, body=body, num_scan_inputs=len(scans), _outputs=3, **reverse)
            h_n.append(ctx.op.Unsqueeze(h, ctx.const([0])))
            c_n.append(ctx.op.Unsqueeze(c, ctx.const([0])))
            ys.append(ctx.op.MatMul(y, w_hr_t))
        x = ys[0] if d == 1 else ctx.op.Concat(*ys, axis=2)
    return x, ctx.op.Concat(*h_n, axis=0), ctx.op.Concat(*c_n, axis=0)


__all__ = ["lstm_with_projection"]
