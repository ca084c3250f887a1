"""Keep ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` whole through torch.export, with a dynamic sequence.

Why: ``aten.lstm.input`` (and ``gru.input``, ``rnn_tanh.input``, ``rnn_relu.input``) is a
CompositeImplicitAutograd op that torch.export preserves in its graph, but FakeTensor computes its
output shapes by running the CIA decomposition (``torch/_subclasses/fake_tensor.py``:
``func.decompose``), a Python loop over the time steps (``torch/_decomp/decompositions.py``:
``one_layer_lstm``) that specializes the sequence length: ``Dim.DYNAMIC`` on it raises a
constraint violation. torch.onnx instead swaps in a ``while_loop`` decomposition while capturing
with dynamic shapes (``torch/onnx/_internal/exporter/_capture_strategies.py``:
``_patch_dynamic_shape_rnn_decompositions``, ``torch/export/_patches.py``), which becomes an ONNX
``Loop`` of cell ops.

onnxport keeps the op whole instead, to emit the ONNX ``LSTM``/``GRU``/``RNN`` operators: while
capturing and decomposing (:func:`keep_recurrent_ops`), the CIA kernels of those four ops (the
Python-dispatcher ``py_kernels`` entry, as torch's own patch does) call the custom ops
``onnxport::lstm``, ``onnxport::gru``, ``onnxport::rnn_tanh``, ``onnxport::rnn_relu`` defined
here, whose fake kernels give the output shapes without looking at the sequence length. The
captured graph still records the ATen op (export preserves CIA ops above the Python dispatcher), so
the ExportedProgram runs eager's kernel; the custom ops' real kernels call the ATen op too, for any
path that executes them. Outside the context nothing changes.

torch.export (2.13) warns that ``self.lstm._flat_weights[0], ...`` "were assigned during export"
and "must be registered as buffers" for every ``nn.LSTM``/``GRU``/``RNN`` (plain
``torch.export.export(nn.LSTM(3, 5), ...)`` does too): ``RNNBase`` rebuilds its ``_flat_weights``
list of the parameters whenever one is set, and the capture sets them; torch puts the list back
itself (``torch/_functorch/_aot_autograd/frontend_utils.py``). The user can do nothing about it,
so while capturing that warning is ignored when every attribute it names is such a list's item;
any other attribute it names still warns.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch._dispatch.python import no_python_dispatcher

aten = torch.ops.aten
_CIA = torch._C.DispatchKey.CompositeImplicitAutograd
_META = torch._C.DispatchKey.Meta
_AUTOGRAD = torch._C.DispatchKey.Autograd


def _hidden_shapes(
    input: torch.Tensor, params: Sequence[torch.Tensor], has_biases: bool, num_layers: int, bidirectional: bool,
    batch_first: bool,
) -> tuple[list[int | torch.SymInt], tuple[int, int]]:
    """(output shape, (hidden size, output hidden size)) from the flat weights of ``aten.lstm``.

    Per layer and direction the flat weights are ``w_ih, w_hh[, b_ih, b_hh][, w_hr]``
    (``torch.nn.RNNBase._flat_weights``); ``w_hh`` is (gates·H, H_out) and H_out is the projection
    size when ``w_hr`` is present.
    """
    per = len(params) // (num_layers * (2 if bidirectional else 1))
    w_hh = params[1]
    h_out = int(w_hh.shape[1])
    hidden = int(params[per - 1].shape[1]) if per in (3, 5) else h_out  # w_hr: (H_out, H)
    d = 2 if bidirectional else 1
    seq, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    out: list[int | torch.SymInt] = [batch, seq, d * h_out] if batch_first else [seq, batch, d * h_out]
    return out, (hidden, h_out)


# The ATen flags after (input, hx, params), keyword-only in the custom ops' schemas.
_FLAGS = ("has_biases", "num_layers", "dropout", "train", "bidirectional", "batch_first")


@torch.library.custom_op("onnxport::lstm", mutates_args=())
def lstm(
    input: torch.Tensor, hx: list[torch.Tensor], params: list[torch.Tensor], *, has_biases: bool, num_layers: int,
    dropout: float, train: bool, bidirectional: bool, batch_first: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``aten.lstm.input`` (same arguments and results; the flags keyword-only)."""
    with no_python_dispatcher():
        out = aten.lstm.input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return out[0].clone(), out[1].clone(), out[2].clone()


@lstm.register_fake
def lstm_fake(
    input: torch.Tensor, hx: list[torch.Tensor], params: list[torch.Tensor], *, has_biases: bool, num_layers: int,
    dropout: float, train: bool, bidirectional: bool, batch_first: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    out, _ = _hidden_shapes(input, params, has_biases, num_layers, bidirectional, batch_first)
    return input.new_empty(out), hx[0].new_empty(hx[0].shape), hx[1].new_empty(hx[1].shape)


# custom op → its fake kernel (the output shapes), which also serves as the ATen op's meta kernel
_FAKES: dict[Any, Callable[..., Any]] = {torch.ops.onnxport.lstm.default: lstm_fake}


def _define_gate_rnn(name: str, op: torch._ops.OpOverload) -> torch._library.custom_ops.CustomOpDef:
    """``onnxport::<name>`` for an ATen RNN with the schema of ``aten.gru.input``."""

    def impl(
        input: torch.Tensor, hx: torch.Tensor, params: list[torch.Tensor], *, has_biases: bool, num_layers: int,
        dropout: float, train: bool, bidirectional: bool, batch_first: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        with no_python_dispatcher():
            out = op(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        return out[0].clone(), out[1].clone()

    def fake(
        input: torch.Tensor, hx: torch.Tensor, params: list[torch.Tensor], *, has_biases: bool, num_layers: int,
        dropout: float, train: bool, bidirectional: bool, batch_first: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        out, _ = _hidden_shapes(input, params, has_biases, num_layers, bidirectional, batch_first)
        return input.new_empty(out), hx.new_empty(hx.shape)

    impl.__doc__ = f"``{op}`` (same arguments and results; the flags keyword-only)."
    custom = torch.library.custom_op(f"onnxport::{name}", impl, mutates_args=())
    custom.register_fake(fake)
    _FAKES[getattr(torch.ops.onnxport, name).default] = fake
    return custom


def _positional(custom: Any) -> Callable[..., Any]:
    """A kernel with the ATen op's positional signature that calls ``custom``."""

    def kernel(input: torch.Tensor, hx: Any, params: list[torch.Tensor], *flags: Any) -> Any:
        return custom(input, hx, params, **dict(zip(_FLAGS, flags)))

    return kernel


gru = _define_gate_rnn("gru", aten.gru.input)
rnn_tanh = _define_gate_rnn("rnn_tanh", aten.rnn_tanh.input)
rnn_relu = _define_gate_rnn("rnn_relu", aten.rnn_relu.input)

#: ATen op → the custom op that stands for it in captured graphs.
RECURRENT_OPS: dict[torch._ops.OpOverload, torch._ops.OpOverload] = {
    aten.lstm.input: torch.ops.onnxport.lstm.default,
    aten.gru.input: torch.ops.onnxport.gru.default,
    aten.rnn_tanh.input: torch.ops.onnxport.rnn_tanh.default,
    aten.rnn_relu.input: torch.ops.onnxport.rnn_relu.default,
}


# torch's warning when the only tensor attributes it saw assigned are RNN modules' flat weights
_FLAT_WEIGHTS_ASSIGNED = (
    r"The tensor attributes? self\.[\w.]*_flat_weights\[\d+\](, self\.[\w.]*_flat_weights\[\d+\])* "
    r"(was|were) assigned during export"
)


@contextlib.contextmanager
def keep_recurrent_ops() -> Iterator[None]:
    """While capturing, route the ATen RNN ops to their ``onnxport::`` custom ops.

    Only the Python dispatcher's entries (``OpOverload.py_kernels``) change, and they are restored
    on exit; eager calls outside export do not use them. The CIA and ``Autograd`` entries (torch
    registers its unrolled ``lstm_impl`` under both; the streamed path's meta parameters, which
    require grad, dispatched to the latter) call the custom op; the
    ``Meta`` entry and the op's entry in ``torch._decomp.decomposition_table`` (both torch's
    ``lstm_impl``, the loop over time steps) give the custom op's fake shapes:
    ``run_decompositions`` keeps a translated RNN op whole, and FakeTensor computed its shapes with
    that decomposition (``fake_tensor.py``: ``decomposition_table[func]`` for an op with symbolic
    sizes), which fixed the sequence length of an LSTM in a program that needed decomposing
    (EnCodec's decoder: the graph took the example's 8 frames only).
    """
    table: dict[Any, Callable[..., Any]] = torch._decomp.decomposition_table  # type: ignore[assignment]
    saved = {op: dict(op.py_kernels) for op in RECURRENT_OPS}
    saved_table = {op: table[op] for op in RECURRENT_OPS if op in table}
    try:
        for op, custom in RECURRENT_OPS.items():
            op.py_kernels[_CIA] = _positional(custom)
            if _AUTOGRAD in op.py_kernels:  # torch's lstm_impl too: parameters that require grad
                op.py_kernels[_AUTOGRAD] = _positional(custom)
            shapes = _positional(_FAKES[custom])
            if _META in op.py_kernels:
                op.py_kernels[_META] = shapes
            if op in saved_table:
                table[op] = shapes
            op._dispatch_cache.clear()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_FLAT_WEIGHTS_ASSIGNED, category=UserWarning)
            yield
    finally:
        table.update(saved_table)
        for op, kernels in saved.items():
            op.py_kernels.clear()
            op.py_kernels.update(kernels)
            op._dispatch_cache.clear()
