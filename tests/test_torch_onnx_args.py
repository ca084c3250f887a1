"""A call written for ``torch.onnx.export`` runs unchanged with ``onnxport.export``: the seed
documents' examples with ``dynamo=True``, the TorchScript-era options (reference 001), and what
each torch.onnx-only parameter does (``onnxport/torch_onnx_args.py``)."""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import onnxport
from onnxport.errors import InputError


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc0 = torch.nn.Linear(8, 4)
        self.fc1 = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc1(torch.sigmoid(self.fc0(x)))


def _no_warnings(fn):  # noqa: ANN001, ANN202
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_the_seed_documents_call_with_dynamo_true(tmp_path: pathlib.Path) -> None:
    # reference 003: torch.onnx.export(model, (tensor_x,), dynamo=True), then save
    model, x = MLP().eval(), torch.rand(97, 8)
    program = _no_warnings(lambda: onnxport.export(model, (x,), dynamo=True))
    program.save(tmp_path / "mlp.onnx")
    (actual,) = ort.InferenceSession(str(tmp_path / "mlp.onnx")).run(None, {"x": x.numpy()})
    np.testing.assert_allclose(actual, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torchscript_era_options_are_accepted_and_the_defaults_do_not_warn(tmp_path: pathlib.Path) -> None:
    # reference 001's call: opset, do_constant_folding, names, dynamic_axes, training=EVAL, verbose
    model, x = MLP().eval(), torch.rand(3, 8)
    path = tmp_path / "m.onnx"
    _no_warnings(lambda: onnxport.export(
        model, args=(x,), f=str(path), opset_version=18, do_constant_folding=True, input_names=["input"],
        output_names=["output"], dynamic_axes={"input": {0: "batch"}}, training=torch.onnx.TrainingMode.EVAL,
        verbose=False, operator_export_type=torch.onnx.OperatorExportTypes.ONNX, custom_opsets={},
        autograd_inlining=True, export_modules_as_functions=False, profile=False, dump_exported_program=False,
    ))  # fmt: skip
    session = ort.InferenceSession(str(path))
    assert [(i.name, i.shape) for i in session.get_inputs()] == [("input", ["batch", 8])]
    x5 = torch.rand(5, 8)
    np.testing.assert_allclose(session.run(None, {"input": x5.numpy()})[0], model(x5).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_options_asking_for_something_else_warn_and_are_ignored() -> None:
    model, x = MLP().eval(), torch.rand(2, 8)
    with pytest.warns(UserWarning, match="TorchScript exporter") as caught:
        onnxport.export(model, (x,), dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
                        do_constant_folding=False)  # fmt: skip
    messages = [str(w.message) for w in caught]
    (ignored,) = [m for m in messages if "deprecated in torch.onnx" in m]
    assert "training=<TrainingMode.TRAINING" in ignored and "do_constant_folding=False" in ignored


def test_keep_initializers_as_inputs_with_f(tmp_path: pathlib.Path) -> None:
    model, x = MLP().eval(), torch.rand(2, 8)
    onnxport.export(model, (x,), f=tmp_path / "m.onnx", keep_initializers_as_inputs=True)
    proto = onnx.load(tmp_path / "m.onnx")
    weights = {i.name for i in proto.graph.initializer}
    assert weights == {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias"}
    inputs = [i.name for i in proto.graph.input]
    assert inputs[0] == "x" and set(inputs[1:]) == weights
    # overriding a weight at run time changes the output
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    zero_bias = np.zeros(2, np.float32)
    (out,) = session.run(None, {"x": x.numpy(), "fc1.bias": zero_bias})
    expected = (model(x) - model.fc1.bias).detach().numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_profile_and_dump_write_into_artifacts_dir(tmp_path: pathlib.Path) -> None:
    model, x = MLP().eval(), torch.rand(2, 8)
    onnxport.export(model, (x,), profile=True, dump_exported_program=True, artifacts_dir=tmp_path)
    report = (tmp_path / "onnxport_report_MLP.md").read_text()
    assert "capture" in report and "translate" in report
    ep = torch.export.load(tmp_path / "onnxport_MLP.pt2")
    torch.testing.assert_close(ep.module()(x), model(x))


def test_export_modules_as_functions_is_modules_as_functions() -> None:
    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = MLP(), MLP()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.a(x) + self.b(x)

    model, x = Two().eval(), torch.rand(2, 8)
    program = onnxport.export(model, (x,), export_modules_as_functions={MLP})
    proto = program.model_proto
    assert len(proto.functions) == 1 and [n.op_type for n in proto.graph.node].count(proto.functions[0].name) == 2
    (actual,) = program(x)
    torch.testing.assert_close(actual, model(x))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"export_modules_as_functions": True}, "modules_as_functions="),
        ({"dynamo": "yes"}, "dynamo must be True or False"),
        ({"keep_initializers_as_inputs": 1}, "keep_initializers_as_inputs must be True or False"),
        ({"artifacts_dir": 3}, "artifacts_dir must be a folder path"),
    ],
)
def test_unsupported_or_bad_values_are_input_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        onnxport.export(MLP(), (torch.rand(2, 8),), **kwargs)


# ---- torch.onnx.ONNXProgram's methods: rename_axes, compute_values, call_reference, apply_weights(state_dict=)


class Attention(torch.nn.Module):
    def forward(self, x: torch.Tensor, past: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        total = torch.cat([past, x], dim=1)  # [batch, past + seq, 4]
        return (x @ total.transpose(1, 2)).softmax(-1), total


def test_rename_axes_renames_dims_and_expressions() -> None:
    dims = {"x": {0: "s0", 1: "s1"}, "past": {0: "s0", 1: "s11"}}
    program = onnxport.export(Attention(), (torch.rand(2, 3, 4), torch.rand(2, 5, 4)), dynamic_shapes=dims)
    batch = program.model.graph.inputs[0].shape[0]
    program.rename_axes({batch: "batch_size", "s1": "sequence_length", "s11": "past_sequence_length"})
    shapes = {v.name: [str(d) for d in v.shape] for v in [*program.model.graph.inputs, *program.model.graph.outputs]}
    assert shapes["x"] == ["batch_size", "sequence_length", "4"]
    assert shapes["past"] == ["batch_size", "past_sequence_length", "4"]
    # torch.export's "s1 + s11": each identifier renamed, "s1" not inside "s11"
    assert shapes["softmax"] == ["batch_size", "sequence_length", "sequence_length + past_sequence_length"]
    assert shapes["cat"] == ["batch_size", "sequence_length + past_sequence_length", "4"]
    inner = [str(d) for n in program.model.graph for v in n.outputs if v.shape is not None for d in v.shape]
    assert not {"s0", "s1", "s11"} & set(inner)
    x, past = torch.rand(3, 2, 4), torch.rand(3, 6, 4)
    torch.testing.assert_close(program(x, past)[0], Attention()(x, past)[0])
    with pytest.raises(InputError, match="rename_axes"):
        program.rename_axes({"s1": 3})


def test_compute_values_returns_intermediates_and_restores_the_outputs() -> None:
    model, x = MLP().eval(), torch.rand(2, 8)
    program = onnxport.export(model, (x,))
    node = next(n for n in program.model.graph if n.op_type == "Sigmoid")
    outputs = [o.name for o in program.model.graph.outputs]
    (hidden,) = program.compute_values([node.outputs[0].name], (x,))
    torch.testing.assert_close(hidden, torch.sigmoid(model.fc0(x)))
    assert [o.name for o in program.model.graph.outputs] == outputs
    torch.testing.assert_close(program(x)[0], model(x))
    with pytest.raises(InputError, match="not a value"):
        program.compute_values(["nope"], (x,))


def test_call_reference_and_apply_weights_by_keyword() -> None:
    model, x = MLP().eval(), torch.rand(2, 8)
    program = onnxport.export(model, (x,))
    (reference,) = program.call_reference(x)
    torch.testing.assert_close(reference, model(x), rtol=1e-5, atol=1e-6)
    other = MLP()
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(-1)
    program.apply_weights(state_dict=other.state_dict())
    torch.testing.assert_close(program(x)[0], other(x))


# ---- custom_translation_table: torch.onnx's onnxscript functions (translate/onnxscript_table.py)


class AddMul(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.add(x, y, alpha=2.0) * 3


def test_custom_translation_table_of_onnxscript_functions() -> None:
    from onnxscript import opset18 as op

    calls = []

    # torch.onnx's documented example: aten.add.Tensor with its alpha attribute
    def custom_aten_add(self, other, alpha: float = 1.0):  # noqa: ANN001, ANN202
        calls.append(alpha)
        if alpha != 1.0:
            alpha = op.CastLike(alpha, other)
            other = op.Mul(other, alpha)
        return op.Sub(self, op.Neg(other))  # x + alpha*y, spelled so that the graph shows it is ours

    x, y = torch.rand(2, 3), torch.rand(2, 3)
    program = onnxport.export(AddMul(), (x, y), dynamo=True,
                              custom_translation_table={torch.ops.aten.add.Tensor: custom_aten_add})  # fmt: skip
    assert calls == [2.0]
    assert {"Sub", "Neg", "CastLike"} <= {n.op_type for n in program.model.graph}
    torch.testing.assert_close(program(x, y)[0], AddMul()(x, y))


def test_custom_translation_table_constants_take_the_input_dtype_and_scripted_functions_inline() -> None:
    import onnxscript
    from onnxscript import opset18 as op

    @onnxscript.script()
    def scaled_tanh(x, scale: float):  # noqa: ANN001, ANN202
        return op.Mul(op.Tanh(x), op.CastLike(scale, x))

    def translate(x, scale):  # noqa: ANN001, ANN202
        return op.Add(scaled_tanh(x, scale), 1.0)  # 1.0: a constant of x's dtype (float16 here)

    class Tanh(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.ops.aten.tanh.default(x)

    x = torch.rand(4, 5, dtype=torch.float16)
    program = onnxport.export(Tanh(), (x,), custom_translation_table={torch.ops.aten.tanh.default: lambda x: translate(x, 0.5)})
    (actual,) = program(x)
    assert actual.dtype == torch.float16
    torch.testing.assert_close(actual, torch.tanh(x) * 0.5 + 1, rtol=2e-3, atol=2e-3)


def test_a_model_in_training_mode_is_exported_with_torch_onnx_s_warning() -> None:
    # torch.onnx.export warns the same way (torch/onnx/_internal/exporter/_compat.py)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5))
    with pytest.warns(UserWarning, match=r"training mode .*Call model.eval\(\) before export"):
        onnxport.export(model, (torch.randn(2, 4),))
    assert model.training  # the model is left as it was
