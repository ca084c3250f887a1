"""nn.LSTM / nn.GRU / nn.RNN → ONNX LSTM / GRU / RNN (one node per layer) with dynamic batch and
sequence length, run in onnxruntime at two sizes against eager; the cell modules in a Python loop
over a static length; LSTM proj_size as a Scan per layer and direction; pack_padded_sequence as the
ONNX sequence_lens input."""

from __future__ import annotations

import warnings

import pytest
import torch

import onnxport
from _cases import params
from onnxport.testing.coverage_cases import PACKED_CASES, PROJ_CASES, RNN_CASES, Case, run_case

_ONNX_OP = {"lstm": "LSTM", "gru": "GRU", "rnn": "RNN"}


@pytest.mark.parametrize("case", params(RNN_CASES))
def test_recurrent_runs_at_two_sizes(case: Case) -> None:
    result = run_case(case)
    kind = case.name.split("/")[1].split("_")[0]
    layers = 2 if "num_layers=2" in case.name else 1
    if "cell_loop" in case.name:
        assert not {"LSTM", "GRU", "RNN"} & set(result.op_types)
    else:
        assert result.op_types.count(_ONNX_OP[kind]) == layers, result.op_types
    assert len(result.diffs) == 2


@pytest.mark.parametrize("case", params(PACKED_CASES))
def test_packed_sequence_becomes_sequence_lens(case: Case) -> None:
    """pack_padded_sequence → RNN → pad_packed_sequence: one ONNX recurrent node per layer with a
    sequence_lens input; the padded outputs (zeros past each length), final states and lengths
    equal eager's at two sizes (dynamic batch and length, lengths sorted or not)."""
    result = run_case(case)
    kind = _ONNX_OP[case.name.split("/")[1].split("_")[0]]
    layers = 2 if "num_layers=2" in case.name else 1
    if "proj_size" in case.name:  # a Scan per layer and direction, masked by the lengths
        directions = 2 if "bidirectional=True" in case.name else 1
        assert result.op_types.count("Scan") == layers * directions, result.op_types
    else:
        assert result.op_types.count(kind) == layers, result.op_types
    assert len(result.diffs) == 2 and all(d[-1] == 0.0 for d in result.diffs)  # lengths: exact


def test_packed_capture_patches_are_restored() -> None:
    forward = torch.nn.LSTM.forward
    model, inputs, _ = _packed_model()
    onnxport.export(model, inputs, dynamic_shapes=PACKED_CASES[0].dynamic_shapes)
    assert torch.nn.LSTM.forward is forward
    assert "_pack_padded_sequence" not in vars(torch._VF)
    x, lengths = torch.randn(5, 2, 4), torch.tensor([5, 3])
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths)
    assert packed.data.shape == (8, 4)  # eager packing is torch's own again


def _packed_model() -> tuple:
    case = PACKED_CASES[0]
    return case.build(), case.inputs(0), None


@pytest.mark.parametrize("case", params(PROJ_CASES))
def test_lstm_proj_size_runs_as_scan(case: Case) -> None:
    """proj_size > 0: ONNX LSTM has no projection; one Scan per layer and direction, at two
    batch sizes and lengths."""
    result = run_case(case)
    layers = 2 if "num_layers=2" in case.name else 1
    d = 2 if "bidirectional=True" in case.name else 1
    assert "LSTM" not in result.op_types
    assert result.op_types.count("Scan") == layers * d, result.op_types
    assert len(result.diffs) == 2


def test_recurrent_ops_are_restored_after_capture() -> None:
    """The capture's patches of aten.lstm's CIA and meta kernels and of its entry in torch's
    decomposition table (capture/rnn.py) are undone afterwards."""
    op = torch.ops.aten.lstm.input
    before, decomposition = dict(op.py_kernels), torch._decomp.decomposition_table[op]
    lstm = torch.nn.LSTM(4, 8).eval()
    program = onnxport.export(lstm, (torch.randn(5, 2, 4),))
    assert op.py_kernels == before
    assert torch._decomp.decomposition_table[op] is decomposition
    assert [n.op_type for n in program.model.graph].count("LSTM") == 1


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_recurrent_op_in_a_program_that_needs_decomposing_keeps_its_sequence_dynamic(kind: str) -> None:
    """A weight-normed Linear after the LSTM (``_weight_norm_interface`` has no translation) makes
    the program go through run_decompositions, where FakeTensor computed the kept LSTM's shapes with
    torch's unrolled decomposition: the graph took the example's length only (EnCodec's decoder).
    The graph runs at other batch sizes and lengths, matching eager."""

    class Normed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.recurrent = getattr(torch.nn, kind)(4, 4, batch_first=True)
            self.linear = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(self.recurrent(x)[0])

    model = Normed().eval()
    program = onnxport.export(model, (torch.randn(2, 6, 4),), dynamic_shapes=({0: "batch", 1: "seq"},))
    assert program.status.decomposed
    assert [n.op_type for n in program.model.graph].count(kind) == 1
    assert [d.value if hasattr(d, "value") else d for d in program.model.graph.inputs[0].shape][:2] == ["batch", "seq"]
    for shape in ((3, 9, 4), (1, 1, 4)):
        x = torch.randn(*shape)
        (out,) = program(x)
        with torch.no_grad():
            expected = model(x)
        assert out.shape == (*shape[:2], 3)
        torch.testing.assert_close(torch.as_tensor(out), expected, rtol=1e-5, atol=1e-5)


def test_capturing_an_rnn_does_not_warn_about_its_flat_weights() -> None:
    """torch.export warns that an RNN module's ``_flat_weights`` items "were assigned during export"
    and "must be registered as buffers" (the module rebuilds that list itself): onnxport's capture
    keeps that false alarm from the user, and a real attribute assignment still warns."""

    class Recurrent(torch.nn.Module):
        def __init__(self, assigns: bool) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(3, 5, batch_first=True)
            self.assigns = assigns

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out, _ = self.lstm(x)
            if self.assigns:
                self.last = out  # a tensor attribute set in forward: torch's warning is right
            return out

    x = torch.randn(2, 7, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = onnxport.export(Recurrent(False), (x,), dynamic_shapes=({0: "batch", 1: "seq"},))
    assert not [w for w in caught if "assigned during export" in str(w.message)]
    assert [n.op_type for n in program.model.graph].count("LSTM") == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onnxport.export(Recurrent(True), (x,))
    assert [w for w in caught if "self.last" in str(w.message) and "assigned during export" in str(w.message)]
