"""The examples of the reference documents (/work/shared/reference), run with ``onnxport.export``."""

from __future__ import annotations

import ast

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn as nn

import onnxport

# ---- 000: LinearModel(5, 3), exported "with dynamo_export" at opset 11 ----------------------


class LinearModel(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)


def test_linear_model_opset_11() -> None:
    """Below opset 18 onnxport converts with onnx's version converter: Gemm exists at 11 unchanged."""
    model = LinearModel(5, 3)
    dummy_input = torch.randn(1, 5)
    program = onnxport.export(
        model, args=(dummy_input,), opset_version=11, export_params=True, verbose=True
    )
    proto = program.model_proto
    assert {o.domain: o.version for o in proto.opset_import} == {"": 11}
    onnx.checker.check_model(proto, full_check=True)
    assert [n.op_type for n in proto.graph.node] == ["Gemm"]
    assert sorted(i.name for i in proto.graph.initializer) == ["linear.bias", "linear.weight"]
    with torch.no_grad():
        expected = model(dummy_input)
    (actual,) = program(dummy_input)
    assert actual.shape == expected.shape == (1, 3) and actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)


# ---- 003: the four-Linear MLP ---------------------------------------------------------------


class MLPModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(8, 8, bias=True)
        self.fc1 = nn.Linear(8, 4, bias=True)
        self.fc2 = nn.Linear(4, 2, bias=True)
        self.fc3 = nn.Linear(2, 2, bias=True)

    def forward(self, tensor_x: torch.Tensor):
        tensor_x = self.fc0(tensor_x)
        tensor_x = torch.sigmoid(tensor_x)
        tensor_x = self.fc1(tensor_x)
        tensor_x = torch.sigmoid(tensor_x)
        tensor_x = self.fc2(tensor_x)
        tensor_x = torch.sigmoid(tensor_x)
        output = self.fc3(tensor_x)
        return output


def test_four_linear_mlp(tmp_path) -> None:
    model = MLPModel()
    tensor_x = torch.rand((97, 8), dtype=torch.float32)
    onnx_program = onnxport.export(model, (tensor_x,))
    assert isinstance(onnx_program.model_proto, onnx.ModelProto)
    assert onnx_program.model.graph.inputs[0].name == "tensor_x"
    assert onnx_program.model.graph.inputs[0].shape == (97, 8)
    with torch.no_grad():
        expected = model(tensor_x)
    (actual,) = onnx_program(tensor_x)
    assert actual.shape == expected.shape == (97, 2) and actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)

    path = tmp_path / "mlp.onnx"
    onnx_program.save(path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (saved,) = session.run(None, {"tensor_x": tensor_x.numpy()})
    np.testing.assert_allclose(saved, expected.numpy(), atol=1e-5, rtol=0)


# ---- 002: the MLP with a tensor, a dict and a list input ------------------------------------


class NestedInputsMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(8, 8, bias=True)
        self.fc1 = nn.Linear(8, 4, bias=True)
        self.fc2 = nn.Linear(4, 2, bias=True)
        self.fc3 = nn.Linear(2, 2, bias=True)
        self.fc_combined = nn.Linear(8 + 8 + 8, 8, bias=True)  # Combine all inputs

    def forward(self, tensor_x: torch.Tensor, input_dict: dict, input_list: list):
        dict_tensor = input_dict["tensor_x"]
        list_tensor = input_list[0]
        combined_tensor = torch.cat([tensor_x, dict_tensor, list_tensor], dim=1)
        combined_tensor = self.fc_combined(combined_tensor)
        combined_tensor = torch.sigmoid(combined_tensor)
        combined_tensor = self.fc0(combined_tensor)
        combined_tensor = torch.sigmoid(combined_tensor)
        combined_tensor = self.fc1(combined_tensor)
        combined_tensor = torch.sigmoid(combined_tensor)
        combined_tensor = self.fc2(combined_tensor)
        combined_tensor = torch.sigmoid(combined_tensor)
        output = self.fc3(combined_tensor)
        return output


DYNAMIC = ({0: "batch_size"}, {"tensor_x": {0: "batch_size"}}, [{0: "batch_size"}])
INPUT_NAMES = ["tensor_input", "tensor_x", "list_input_index_0"]
NODE_KEYS = {
    "namespace",
    "pkg.torch.onnx.class_hierarchy",
    "pkg.torch.onnx.fx_node",
    "pkg.torch.onnx.name_scopes",
    "pkg.torch.onnx.stack_trace",
}
KIND = "pkg.torch.export.graph_signature.InputSpec.kind"


def nested_inputs(batch: int) -> tuple[torch.Tensor, dict[str, torch.Tensor], list[torch.Tensor]]:
    return (
        torch.rand((batch, 8), dtype=torch.float32),
        {"tensor_x": torch.rand((batch, 8), dtype=torch.float32)},
        [torch.rand((batch, 8), dtype=torch.float32)],
    )


@pytest.fixture(scope="module")
def nested() -> tuple[NestedInputsMLP, onnxport.ONNXProgram]:
    torch.manual_seed(0)
    model = NestedInputsMLP()
    onnx_program = onnxport.export(
        model,
        nested_inputs(97),
        dynamic_shapes=DYNAMIC,
        input_names=INPUT_NAMES,
        output_names=["output"],
    )
    return model, onnx_program


def test_nested_inputs_are_dynamic(nested: tuple[NestedInputsMLP, onnxport.ONNXProgram]) -> None:
    _, onnx_program = nested
    graph = onnx_program.model.graph
    assert [v.name for v in graph.inputs] == INPUT_NAMES
    assert onnx_program.model.graph.inputs[0].shape == ("batch_size", 8)
    assert onnx_program.model.graph.inputs[1].shape == ("batch_size", 8)
    assert onnx_program.model.graph.inputs[2].shape == ("batch_size", 8)
    assert [v.name for v in graph.outputs] == ["output"]
    assert graph.outputs[0].shape == ("batch_size", 2)


@pytest.mark.parametrize("batch", [97, 5])
def test_nested_inputs_match_eager(
    nested: tuple[NestedInputsMLP, onnxport.ONNXProgram], batch: int
) -> None:
    model, onnx_program = nested
    inputs = nested_inputs(batch)
    with torch.no_grad():
        expected = model(*inputs)
    (actual,) = onnx_program(*inputs)
    assert actual.shape == expected.shape == (batch, 2) and actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)


def test_nested_inputs_default_names() -> None:
    onnx_program = onnxport.export(NestedInputsMLP(), nested_inputs(97), dynamic_shapes=DYNAMIC)
    assert [v.name for v in onnx_program.model.graph.inputs] == [
        "tensor_x",
        "input_dict.tensor_x",
        "input_list.0",
    ]
    assert all(v.shape == ("batch_size", 8) for v in onnx_program.model.graph.inputs)


def test_node_metadata(nested: tuple[NestedInputsMLP, onnxport.ONNXProgram]) -> None:
    _, onnx_program = nested
    nodes = list(onnx_program.model.graph)
    assert nodes
    for node in nodes:
        missing = NODE_KEYS - set(node.metadata_props)
        assert not missing, f"{node.op_type} node {node.name} lacks {sorted(missing)}"
    (cat,) = [n for n in nodes if n.op_type == "Concat"]
    meta = cat.metadata_props
    assert meta["namespace"].endswith("NestedInputsMLP/cat: aten.cat.default")
    assert ast.literal_eval(meta["pkg.torch.onnx.class_hierarchy"])[-1] == "aten.cat.default"
    assert ast.literal_eval(meta["pkg.torch.onnx.name_scopes"]) == ["", "cat"]
    assert meta["pkg.torch.onnx.fx_node"].startswith(
        "%cat : [num_users=1] = call_function[target=torch.ops.aten.cat.default]"
    )
    assert "%input_dict_tensor_x" in meta["pkg.torch.onnx.fx_node"]
    assert "test_reference_examples.py" in meta["pkg.torch.onnx.stack_trace"]
    assert (
        "torch.cat([tensor_x, dict_tensor, list_tensor], dim=1)"
        in meta["pkg.torch.onnx.stack_trace"]
    )
    gemm_scopes = {
        ast.literal_eval(n.metadata_props["pkg.torch.onnx.name_scopes"])[1]
        for n in nodes
        if n.op_type == "Gemm"
    }
    assert gemm_scopes == {"fc0", "fc1", "fc2", "fc3", "fc_combined"}


def test_graph_and_value_metadata(nested: tuple[NestedInputsMLP, onnxport.ONNXProgram]) -> None:
    _, onnx_program = nested
    graph = onnx_program.model.graph
    signature = graph.metadata_props["pkg.torch.export.ExportedProgram.graph_signature"]
    assert "p_fc0_weight: PARAMETER target='fc0.weight'" in signature
    assert "input_dict_tensor_x: USER_INPUT" in signature
    constraints = graph.metadata_props["pkg.torch.export.ExportedProgram.range_constraints"]
    assert "VR[" in constraints

    names = {
        f"{layer}.{p}"
        for layer in ("fc0", "fc1", "fc2", "fc3", "fc_combined")
        for p in ("weight", "bias")
    }
    assert set(graph.initializers) == names
    for name, value in graph.initializers.items():
        assert value.metadata_props[KIND] == "PARAMETER", name
        assert value.metadata_props["pkg.torch.onnx.original_node_name"] == "p_" + name.replace(
            ".", "_"
        )
    for value, original in zip(graph.inputs, ["tensor_x", "input_dict_tensor_x", "input_list_0"]):
        assert value.metadata_props[KIND] == "USER_INPUT"
        assert value.metadata_props["pkg.torch.onnx.original_node_name"] == original
    assert (
        graph.outputs[0].metadata_props["pkg.torch.export.graph_signature.OutputSpec.kind"]
        == "USER_OUTPUT"
    )


def test_nested_inputs_saved_file(
    nested: tuple[NestedInputsMLP, onnxport.ONNXProgram], tmp_path
) -> None:
    model, onnx_program = nested
    path = tmp_path / "mlp.onnx"
    onnx_program.save(path)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == INPUT_NAMES
    assert "pkg.torch.export.ExportedProgram.graph_signature" in {
        p.key for p in proto.graph.metadata_props
    }
    assert all(NODE_KEYS <= {p.key for p in n.metadata_props} for n in proto.graph.node)

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == INPUT_NAMES
    assert [i.shape for i in session.get_inputs()] == [["batch_size", 8]] * 3
    for batch in (97, 5):
        tensor_x, input_dict, input_list = nested_inputs(batch)
        feeds = {
            "tensor_input": tensor_x.numpy(),
            "tensor_x": input_dict["tensor_x"].numpy(),
            "list_input_index_0": input_list[0].numpy(),
        }
        (saved,) = session.run(None, feeds)
        with torch.no_grad():
            expected = model(tensor_x, input_dict, input_list)
        assert saved.shape == (batch, 2) and saved.dtype == np.float32
        np.testing.assert_allclose(saved, expected.numpy(), atol=1e-5, rtol=0)


def test_export_writes_f(tmp_path) -> None:
    """``f=`` saves as ``torch.onnx.export(model, args, f)`` does."""
    model = LinearModel(5, 3)
    path = tmp_path / "linear.onnx"
    onnxport.export(model, (torch.randn(1, 5),), f=path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    x = torch.randn(1, 5)
    (saved,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": x.numpy()}
    )
    with torch.no_grad():
        np.testing.assert_allclose(saved, model(x).numpy(), atol=1e-5, rtol=0)
