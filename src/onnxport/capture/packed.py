"""Capture ``pack_padded_sequence`` → ``nn.LSTM``/``GRU``/``RNN`` → ``pad_packed_sequence`` with a
dynamic batch and length, as one recurrent op over the *padded* sequence and its lengths.

Why: a ``PackedSequence`` holds ``sum(lengths)`` rows and ``batch_sizes`` whose values drive the RNN
(``RNNBase.forward`` reads ``batch_sizes[0]``): both are data-dependent, so torch.export cannot
trace them with dynamic shapes. ONNX's recurrent operators take the padded sequence and a
``sequence_lens`` input instead (ONNX LSTM/GRU/RNN spec); torch.onnx's TorchScript exporter
reached the same form by emitting ``prim::PackPadded``/``prim::PadPacked`` around the RNN
(``torch/onnx/_internal/torchscript_exporter/symbolic_opset9.py: _pack_padded_sequence``,
``_pad_packed_sequence``) and moving them out of the way with a peephole pass, so that the RNN's
``batch_sizes`` input became its ``sequence_lens`` (``torch/csrc/jit/passes/onnx/peephole.cpp``:
``pushPackingPastRnn``, ``removeNopPacking``).

onnxport does the same at capture time (:func:`keep_packed_sequences`, active only while
capturing):

- ``torch._VF._pack_padded_sequence(input, lengths, batch_first)`` (called by
  ``nn.utils.rnn.pack_padded_sequence`` after its own sort for ``enforce_sorted=False``) returns the
  padded input sequence-first, (T, B, *), and ``batch_sizes`` computed from the lengths
  (``batch_sizes[t]`` = number of sequences longer than t, their real values); the lengths are
  remembered for that ``batch_sizes`` tensor.
- ``nn.LSTM/GRU/RNN.forward`` on such a packed sequence calls ``onnxport::lstm_packed`` (``gru_``,
  ``rnn_tanh_``, ``rnn_relu_packed``) on the padded data, the lengths, the initial states (zeros
  or the given ones, permuted by ``sorted_indices`` as ``RNNBase.forward`` does) and the flat
  weights; the result is again a padded packed sequence, the final states are permuted back by
  ``unsorted_indices``.
- ``torch._VF._pad_packed_sequence`` on it returns the padded data with ``padding_value`` past each
  length, padded to ``total_length`` when given, and the lengths.

Difference from eager (documented in docs/coverage.md): the padded output keeps the input's length
T, where eager's ``pad_packed_sequence`` trims it to ``max(lengths)``; they are equal when the
batch is padded to its longest sequence (as ``pad_sequence`` makes it) or ``total_length=T`` is
given. ``PackedSequence.data`` inside the model is the (T, B, *) padded tensor, not the packed rows.
The custom ops' eager kernels run torch's own packed path (pack, ``aten.lstm.data``, pad to T), so
the ExportedProgram computes what the user's model computes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.nn.utils.rnn import PackedSequence

_VF: Any = torch._VF
_C_VF: Any = torch._C._VariableFunctions
aten = torch.ops.aten

# id(batch_sizes) → (batch_sizes, lengths) for the packed sequences made during a capture.
_LENGTHS: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}


def _run_packed(op: str, input: torch.Tensor, lengths: torch.Tensor, hx: list[torch.Tensor],
                params: list[torch.Tensor], flags: tuple[Any, ...]) -> tuple[torch.Tensor, ...]:
    """torch's packed RNN on a padded (T, B, *) input: sort by length, pack, run, pad to T, unsort."""
    lengths = lengths.to(device="cpu", dtype=torch.int64)
    order = torch.argsort(lengths, descending=True, stable=True)
    back = torch.argsort(order)
    data, batch_sizes = _C_VF._pack_padded_sequence(input.index_select(1, order), lengths[order], False)
    states = [h.index_select(1, order) for h in hx]
    state: Any = states if op == "lstm" else states[0]
    out = getattr(_C_VF, op)(data, batch_sizes, state, params, *flags)
    padded, _ = _C_VF._pad_packed_sequence(out[0], batch_sizes, False, 0.0, input.shape[0])
    return (padded.index_select(1, back).contiguous(), *[h.index_select(1, back).contiguous() for h in out[1:]])


def _out_shape(input: torch.Tensor, hx: list[torch.Tensor], bidirectional: bool) -> list[Any]:
    """(T, B, directions · H_out): H_out is the last dim of the initial hidden state."""
    return [input.shape[0], input.shape[1], (2 if bidirectional else 1) * hx[0].shape[2]]


@torch.library.custom_op("onnxport::lstm_packed", mutates_args=())
def lstm_packed(
    input: torch.Tensor, lengths: torch.Tensor, hx: list[torch.Tensor], params: list[torch.Tensor], *,
    has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``nn.LSTM`` on ``pack_padded_sequence(input, lengths)`` padded back to the input's length.

    Args: input (T, B, F) sequence-first, lengths (B,) int64 (any order), hx [h0, c0] each
    (layers · directions, B, H_out/H), params the module's ``_flat_weights``.
    Returns: output (T, B, directions · H_out), zeros past each length; h_n; c_n.
    """
    out = _run_packed("lstm", input, lengths, hx, params, (has_biases, num_layers, dropout, train, bidirectional))
    return out[0], out[1], out[2]


@lstm_packed.register_fake
def _lstm_packed_fake(
    input: torch.Tensor, lengths: torch.Tensor, hx: list[torch.Tensor], params: list[torch.Tensor], *,
    has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return input.new_empty(_out_shape(input, hx, bidirectional)), hx[0].new_empty(hx[0].shape), \
        hx[1].new_empty(hx[1].shape)


def _define_gate_packed(name: str) -> Any:
    """``onnxport::<name>_packed`` for GRU / RNN (one hidden state)."""

    def impl(
        input: torch.Tensor, lengths: torch.Tensor, hx: torch.Tensor, params: list[torch.Tensor], *,
        has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        out = _run_packed(name, input, lengths, [hx], params, (has_biases, num_layers, dropout, train, bidirectional))
        return out[0], out[1]

    def fake(
        input: torch.Tensor, lengths: torch.Tensor, hx: torch.Tensor, params: list[torch.Tensor], *,
        has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return input.new_empty(_out_shape(input, [hx], bidirectional)), hx.new_empty(hx.shape)

    impl.__doc__ = f"``nn.{name}`` on a packed padded sequence (as :func:`lstm_packed`, one state)."
    custom = torch.library.custom_op(f"onnxport::{name}_packed", impl, mutates_args=())
    custom.register_fake(fake)
    return custom


gru_packed = _define_gate_packed("gru")
rnn_tanh_packed = _define_gate_packed("rnn_tanh")
rnn_relu_packed = _define_gate_packed("rnn_relu")

#: The custom op → the ONNX recurrent kind ``ops/nn/rnn.py`` emits for it.
PACKED_OPS: dict[Any, str] = {
    torch.ops.onnxport.lstm_packed.default: "lstm",
    torch.ops.onnxport.gru_packed.default: "gru",
    torch.ops.onnxport.rnn_tanh_packed.default: "rnn_tanh",
    torch.ops.onnxport.rnn_relu_packed.default: "rnn_relu",
}
_BY_MODE = {"LSTM": torch.ops.onnxport.lstm_packed.default, "GRU": torch.ops.onnxport.gru_packed.default,
            "RNN_TANH": torch.ops.onnxport.rnn_tanh_packed.default,
            "RNN_RELU": torch.ops.onnxport.rnn_relu_packed.default}


def _pack(input: torch.Tensor, lengths: torch.Tensor, batch_first: bool) -> tuple[torch.Tensor, torch.Tensor]:
    x = input.transpose(0, 1) if batch_first else input
    steps = torch.arange(x.shape[0], device=lengths.device)
    batch_sizes = (lengths.unsqueeze(0) > steps.unsqueeze(1)).sum(1)
    _LENGTHS[id(batch_sizes)] = (batch_sizes, lengths)
    return x, batch_sizes


def _pad(data: torch.Tensor, batch_sizes: torch.Tensor, batch_first: bool, padding_value: float,
         total_length: Any) -> tuple[torch.Tensor, torch.Tensor]:
    entry = _LENGTHS.get(id(batch_sizes))
    if entry is None:
        return _C_VF._pad_packed_sequence(data, batch_sizes, batch_first, padding_value, total_length)
    lengths = entry[1]
    steps = torch.arange(data.shape[0], device=data.device)
    valid = (steps.unsqueeze(1) < lengths.to(data.device).unsqueeze(0)).reshape(
        *data.shape[:2], *[1] * (data.dim() - 2))
    out = torch.where(valid, data, torch.full((), padding_value, dtype=data.dtype, device=data.device))
    extra = total_length - data.shape[0]
    if not (isinstance(extra, torch.SymInt) and extra.node.expr == 0) and not (isinstance(extra, int) and extra == 0):
        out = torch.cat([out, out.new_full((extra, *out.shape[1:]), padding_value)], 0)
    return (out.transpose(0, 1) if batch_first else out), lengths


def _packed_forward(module: torch.nn.RNNBase, input: PackedSequence, hx: Any) -> Any:
    """``RNNBase.forward`` for a packed sequence made by :func:`_pack` (same results, padded data)."""
    data, batch_sizes, sorted_indices, unsorted_indices = input
    lengths = _LENGTHS[id(batch_sizes)][1]
    d = 2 if module.bidirectional else 1
    lstm = module.mode == "LSTM"
    h_out = module.proj_size if lstm and module.proj_size > 0 else module.hidden_size
    if hx is None:
        zeros = [data.new_zeros(module.num_layers * d, data.shape[1], h_out)]
        if lstm:
            zeros.append(data.new_zeros(module.num_layers * d, data.shape[1], module.hidden_size))
        states = zeros
    else:
        states = list(hx) if lstm else [hx]
        if sorted_indices is not None:
            states = [h.index_select(1, sorted_indices) for h in states]
    module._update_flat_weights()
    flags = {"has_biases": module.bias, "num_layers": module.num_layers, "dropout": float(module.dropout),
             "train": module.training, "bidirectional": module.bidirectional}
    op = _BY_MODE[module.mode]
    out = op(data, lengths, states if lstm else states[0], module._flat_weights, **flags)
    output = PackedSequence(out[0], batch_sizes, sorted_indices, unsorted_indices)
    final = list(out[1:])
    if unsorted_indices is not None:
        final = [h.index_select(1, unsorted_indices) for h in final]
    return output, (tuple(final) if lstm else final[0])


def _forward_of(cls: type[torch.nn.RNNBase]) -> Any:
    original = cls.forward

    def forward(self: Any, input: Any, hx: Any = None) -> Any:
        if isinstance(input, PackedSequence) and id(input.batch_sizes) in _LENGTHS:
            return _packed_forward(self, input, hx)
        return original(self, input, hx)

    return original, forward


@contextlib.contextmanager
def keep_packed_sequences() -> Iterator[None]:
    """While capturing, packed sequences stay padded (module docstring); restored on exit."""
    classes = (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)
    saved = {cls: _forward_of(cls) for cls in classes}
    try:
        _VF._pack_padded_sequence = _pack
        _VF._pad_packed_sequence = _pad
        for cls, (_, patched) in saved.items():
            cls.forward = patched  # type: ignore[method-assign]
        yield
    finally:
        for cls, (original, _) in saved.items():
            cls.forward = original  # type: ignore[method-assign]
        for name in ("_pack_padded_sequence", "_pad_packed_sequence"):
            _VF.__dict__.pop(name, None)
        _LENGTHS.clear()


__all__ = ["PACKED_OPS", "keep_packed_sequences", "lstm_packed"]
