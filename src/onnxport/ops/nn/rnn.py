"""Recurrent layers: ``aten.lstm.input`` / ``gru.input`` / ``rnn_tanh.input`` / ``rnn_relu.input``
(``nn.LSTM``, ``nn.GRU``, ``nn.RNN``) → one ONNX ``LSTM`` / ``GRU`` / ``RNN`` node per layer.

The capture keeps these ops whole with a dynamic sequence length (``capture/rnn.py``). ONNX's
recurrent operators are single-layer (one or two directions) and sequence-first, so each layer is
one node whose ``Y`` (seq, directions, batch, hidden) is reshaped into the next layer's input
(seq, batch, directions·hidden); the final states are the layers' ``Y_h`` / ``Y_c`` concatenated on
axis 0, as PyTorch stacks them (layer-major, direction-minor).

Weights (``torch.nn.RNNBase._flat_weights``: ``w_ih, w_hh[, b_ih, b_hh]`` per layer and direction)
keep their initializers; the gate order differs, so each is split into its gate blocks and
concatenated in ONNX's order by graph ops that constant folding folds when the weight is used
nowhere else (no weight value is read at translation time):

- LSTM: PyTorch i, f, g, o (``nn.LSTM`` docs) → ONNX i, o, f, c (ONNX LSTM spec, ``W[iofc]``).
- GRU: PyTorch r, z, n (``nn.GRU`` docs) → ONNX z, r, h (``W[zrh]``); PyTorch applies the reset
  gate after the hidden matmul, ONNX's ``linear_before_reset=1``.
- RNN: one gate; ``activations=["Relu"]`` for ``nonlinearity="relu"``.

The bias is ONNX's ``[Wb, Rb]`` = ``[b_ih, b_hh]``, reordered the same way. torch.onnx's
TorchScript exporter made the same mapping (``torch/onnx/symbolic_opset9.py: _generic_rnn``).

LSTM ``proj_size`` (ONNX LSTM has no projection) becomes one ``Scan`` per layer and direction
(``rnn_proj.py``). ``pack_padded_sequence`` (``capture/packed.py``: ``onnxport::*_packed``) gives
every node a ``sequence_lens`` input. Refused with the reason: dropout between layers in training
mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx_ir as ir
import torch

from onnxport.capture import packed  # noqa: F401  (defines the onnxport::*_packed ops translated here)
from onnxport.ops._common import shape_of
from onnxport.ops.nn.rnn_proj import lstm_with_projection
from onnxport.translate.context import Ctx
from onnxport.translate.registry import translates

aten = torch.ops.aten

# ONNX gate block k is PyTorch gate block ORDER[k].
_LSTM_ORDER = (0, 3, 1, 2)
_GRU_ORDER = (1, 0, 2)


def _reorder(ctx: Ctx, w: ir.Value, order: Sequence[int]) -> ir.Value:
    """``w`` (gates·H, ...) with its gate blocks on axis 0 in ``order``."""
    if len(order) == 1:
        return w
    blocks = ctx.op.Split(w, axis=0, num_outputs=len(order), _outputs=len(order))
    return ctx.op.Concat(*[blocks[i] for i in order], axis=0)


def _stack(ctx: Ctx, per_direction: list[ir.Value]) -> ir.Value:
    """Direction-stacked ONNX weight: (D, ...) from one value per direction."""
    zero = ctx.const([0])
    return ctx.op.Concat(*[ctx.op.Unsqueeze(w, zero) for w in per_direction], axis=0)


def _recurrent(
    ctx: Ctx, kind: str, input: ir.Value, hx: Sequence[ir.Value], params: Sequence[ir.Value],
    *, has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
    lengths: ir.Value | None = None,
) -> tuple[ir.Value, ...]:
    """The stacked recurrent net as one ONNX node per layer; returns (output, *final states).
    ``lengths`` (B,) becomes every layer's ``sequence_lens`` (INT32, as the ONNX spec types it)."""
    d = 2 if bidirectional else 1
    per = len(params) // (num_layers * d)
    if train and dropout > 0 and num_layers > 1:
        ctx.unsupported("dropout between RNN layers only exists in training; call model.eval()")
    if kind == "lstm" and per == (5 if has_biases else 3):  # w_hr: proj_size > 0 (rnn_proj.py)
        x = ctx.op.Transpose(input, perm=[1, 0, 2]) if batch_first else input
        y, h_n, c_n = lstm_with_projection(ctx, x, hx, params, has_biases=has_biases, num_layers=num_layers,
                                           bidirectional=bidirectional, lengths=lengths)
        return (ctx.op.Transpose(y, perm=[1, 0, 2]) if batch_first else y), h_n, c_n
    op_type, order = {"lstm": ("LSTM", _LSTM_ORDER), "gru": ("GRU", _GRU_ORDER)}.get(kind, ("RNN", (0,)))
    hidden = shape_of(params[1])[1]  # w_hh: (gates·H, H)
    assert isinstance(hidden, int), "RNN weights have static shapes"
    attrs: dict = {"hidden_size": hidden, "direction": "bidirectional" if bidirectional else "forward"}
    if kind == "gru":
        attrs["linear_before_reset"] = 1
    if kind == "rnn_relu":
        attrs["activations"] = ["Relu"] * d
    n_out = 3 if kind == "lstm" else 2
    x = ctx.op.Transpose(input, perm=[1, 0, 2]) if batch_first else input
    seq_lens = None if lengths is None else ctx.op.Cast(lengths, to=ir.DataType.INT32)
    finals: list[list[ir.Value]] = [[] for _ in range(n_out - 1)]
    for layer in range(num_layers):
        ws = [params[(layer * d + j) * per:(layer * d + j + 1) * per] for j in range(d)]
        w = _stack(ctx, [_reorder(ctx, p[0], order) for p in ws])
        r = _stack(ctx, [_reorder(ctx, p[1], order) for p in ws])
        b = _stack(ctx, [ctx.op.Concat(_reorder(ctx, p[2], order), _reorder(ctx, p[3], order), axis=0)
                         for p in ws]) if has_biases else None
        states = [ctx.op.Slice(h, ctx.const([layer * d]), ctx.const([(layer + 1) * d]), ctx.const([0])) for h in hx]
        outs = getattr(ctx.op, op_type)(x, w, r, b, seq_lens, *states, _outputs=n_out, **attrs)
        y = outs[0]  # (seq, D, batch, H)
        for k in range(n_out - 1):
            finals[k].append(outs[k + 1])
        if d == 1:
            x = ctx.op.Squeeze(y, ctx.const([1]))
        else:
            x = ctx.op.Reshape(ctx.op.Transpose(y, perm=[0, 2, 1, 3]), ctx.const([0, 0, d * hidden]))
    output = ctx.op.Transpose(x, perm=[1, 0, 2]) if batch_first else x
    return (output, *[f[0] if len(f) == 1 else ctx.op.Concat(*f, axis=0) for f in finals])


@translates(aten.lstm.input)
def aten_lstm(
    ctx: Ctx, input: ir.Value, hx: Sequence[ir.Value], params: Sequence[ir.Value], has_biases: bool,
    num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
) -> tuple[ir.Value, ...]:
    """lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)"""
    return _recurrent(ctx, "lstm", input, hx, params, has_biases=has_biases, num_layers=num_layers,
                      dropout=dropout, train=train, bidirectional=bidirectional, batch_first=batch_first)


@translates(aten.gru.input)
def aten_gru(
    ctx: Ctx, input: ir.Value, hx: ir.Value, params: Sequence[ir.Value], has_biases: bool,
    num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
) -> tuple[ir.Value, ...]:
    """gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"""
    return _recurrent(ctx, "gru", input, [hx], params, has_biases=has_biases, num_layers=num_layers,
                      dropout=dropout, train=train, bidirectional=bidirectional, batch_first=batch_first)


@translates(aten.rnn_tanh.input)
def aten_rnn_tanh(
    ctx: Ctx, input: ir.Value, hx: ir.Value, params: Sequence[ir.Value], has_biases: bool,
    num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
) -> tuple[ir.Value, ...]:
    """rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"""
    return _recurrent(ctx, "rnn_tanh", input, [hx], params, has_biases=has_biases, num_layers=num_layers,
                      dropout=dropout, train=train, bidirectional=bidirectional, batch_first=batch_first)


@translates(aten.rnn_relu.input)
def aten_rnn_relu(
    ctx: Ctx, input: ir.Value, hx: ir.Value, params: Sequence[ir.Value], has_biases: bool,
    num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool,
) -> tuple[ir.Value, ...]:
    """rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"""
    return _recurrent(ctx, "rnn_relu", input, [hx], params, has_biases=has_biases, num_layers=num_layers,
                      dropout=dropout, train=train, bidirectional=bidirectional, batch_first=batch_first)


@translates(torch.ops.onnxport.lstm_packed.default)
def onnxport_lstm_packed(
    ctx: Ctx, input: ir.Value, lengths: ir.Value, hx: Sequence[ir.Value], params: Sequence[ir.Value], *,
    has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
) -> tuple[ir.Value, ...]:
    """onnxport::lstm_packed (``capture/packed.py``): the padded (T, B, F) input with ``lengths`` as
    ONNX ``sequence_lens``; outputs past a length are 0 (ONNX LSTM spec), final states at each length."""
    return _recurrent(ctx, "lstm", input, hx, params, has_biases=has_biases, num_layers=num_layers,
                      dropout=dropout, train=train, bidirectional=bidirectional, batch_first=False, lengths=lengths)


def _gate_packed(kind: str) -> Any:
    def translate(
        ctx: Ctx, input: ir.Value, lengths: ir.Value, hx: ir.Value, params: Sequence[ir.Value], *,
        has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
    ) -> tuple[ir.Value, ...]:
        return _recurrent(ctx, kind, input, [hx], params, has_biases=has_biases, num_layers=num_layers,
                          dropout=dropout, train=train, bidirectional=bidirectional, batch_first=False,
                          lengths=lengths)

    translate.__doc__ = f"onnxport::{kind}_packed (``capture/packed.py``): as :func:`onnxport_lstm_packed`."
    return translate


onnxport_gru_packed = translates(torch.ops.onnxport.gru_packed.default)(_gate_packed("gru"))
onnxport_rnn_tanh_packed = translates(torch.ops.onnxport.rnn_tanh_packed.default)(_gate_packed("rnn_tanh"))
onnxport_rnn_relu_packed = translates(torch.ops.onnxport.rnn_relu_packed.default)(_gate_packed("rnn_relu"))
