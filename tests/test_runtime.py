"""runtime.py: the one onnxruntime session factory, feeds, outputs, the external-data rule."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest
import torch

import onnxport
from onnxport import runtime
from onnxport.errors import InputError, ModelCheckError


def _add_model(dtype: ir.DataType = ir.DataType.FLOAT, op: str = "Add", n_inputs: int = 2) -> ir.Model:
    inputs = [ir.Value(name=n, type=ir.TensorType(dtype), shape=ir.Shape([2, 3])) for n in "xy"[:n_inputs]]
    node = ir.node(op, inputs, num_outputs=1)
    node.outputs[0].name = "z"
    graph = ir.Graph(inputs, node.outputs, nodes=[node], opset_imports={"": 23})
    return ir.Model(graph, ir_version=11)


def test_session_runs_float_with_keyword_feeds() -> None:
    session = runtime.create_session(_add_model())
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    (z,) = runtime.run_session(session, runtime.feeds(["x", "y"], (a,), {"y": b}))
    assert z.dtype == torch.float32
    torch.testing.assert_close(z, a + b)
    # no CPU memory arena: a run's buffers are freed, not kept at the largest run's peak
    assert session.get_session_options().enable_cpu_mem_arena is False


def test_bfloat16_goes_through_ortvalues_both_ways() -> None:
    """numpy has no bfloat16: the feed is an OrtValue of the bits, the output comes back as bfloat16."""
    session = runtime.create_session(_add_model(ir.DataType.BFLOAT16, "Identity", n_inputs=1))
    a = torch.randn(2, 3).to(torch.bfloat16)
    (z,) = runtime.run_session(session, runtime.feeds(["x"], (a,), {}))
    assert z.dtype == torch.bfloat16
    assert torch.equal(z, a)


def test_checker_refusal_is_a_model_check_error_with_its_check_recorded() -> None:
    model = _add_model(op="NoSuchOp")
    checks: list[runtime.CheckResult] = []
    with pytest.raises(ModelCheckError, match=r"onnx.checker.check_model\(full_check=True\) rejected"):
        runtime.create_session(model, check=True, checks=checks)
    assert [(c.name, c.passed) for c in checks] == [(runtime.CHECKER, False)]
    with pytest.raises(ModelCheckError, match="onnxruntime refused to load"):
        runtime.create_session(model)  # without the checker, onnxruntime's own refusal


def test_feeds_count_mismatch_names_the_inputs() -> None:
    with pytest.raises(InputError, match=r"takes 2 tensor inputs \['x', 'y'\]; got 1"):
        runtime.feeds(["x", "y"], (torch.zeros(1),), {})


def test_external_data_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _add_model()
    model.graph.initializers["w"] = ir.Value(name="w", const_value=ir.tensor(torch.zeros(10)))
    assert runtime.initializer_bytes(model) == 40
    assert runtime.needs_external_data(model, None) is False
    assert runtime.needs_external_data(model, True) is True
    monkeypatch.setattr(runtime, "PROTOBUF_LIMIT", 39)
    assert runtime.needs_external_data(model, None) is True
    assert runtime.needs_external_data(model, None, include_initializers=False) is False
    assert runtime.needs_external_data(model, False) is False


def test_weights_are_handed_to_onnxruntime_and_copied() -> None:
    """Initializers of 1 KiB or more reach onnxruntime as arrays (add_external_initializers), not
    in the serialized model; an embedding table's array is the parameter's own memory. onnxruntime
    copies them, so the session is a snapshot: zeroing the model's parameters afterwards leaves
    its outputs as they were (if a later onnxruntime kept the arrays instead, this fails)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(100, 16), torch.nn.Linear(16, 512)).eval()
    ids = torch.randint(0, 100, (2, 5))
    program = onnxport.export(model, (ids,), check_runtime=False)
    handed = runtime._in_memory_weights(program.model)
    table = model[0].weight.detach().numpy()
    assert any(np.shares_memory(t.numpy(), table) for _, t in handed)  # no copy of our own
    session = runtime.create_session(program.model)
    names = [i.name for i in session.get_inputs()]
    with torch.no_grad():
        expected = model(ids)
        before = runtime.run_session(session, runtime.feeds(names, (ids,), {}))[0]
        for p in model.parameters():
            p.zero_()
        after = runtime.run_session(session, runtime.feeds(names, (ids,), {}))[0]
    assert float(expected.abs().max()) > 0.1
    torch.testing.assert_close(torch.as_tensor(before), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.as_tensor(after), expected, rtol=1e-5, atol=1e-6)
    assert not runtime.on_disk(program.model)  # the placeholders were put back


def test_unused_initializers_of_an_unoptimized_export_are_not_handed() -> None:
    """optimize=False keeps the weights of a module forward never calls (a codec decoder's
    encoder); onnxruntime drops them when it loads the graph and refused them as external
    initializers ("Failed to find existing initializer"). They stay in the model bytes."""

    class Skips(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.unused = torch.nn.Linear(64, 64)
            self.used = torch.nn.Linear(64, 32)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.used(x)

    model = Skips().eval()
    x = torch.randn(2, 64)
    program = onnxport.export(model, (x,), optimize=False)
    assert "unused.weight" in program.model.graph.initializers
    assert [v.name for v, _ in runtime._in_memory_weights(program.model)] == ["used.weight"]
    (out,) = program(x)
    with torch.no_grad():
        torch.testing.assert_close(torch.as_tensor(out), model(x), rtol=1e-5, atol=1e-6)


def test_past_the_protobuf_limit_every_weight_goes_to_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """bfloat16 weights are never handed as arrays; when they alone pass 2 GB (a bfloat16 LLM in
    memory) the model goes to a file, float32 weights included. Before, the float32 ones were left
    as placeholders that ir.save then read from a file called "onnxport-in-memory"."""
    model = _add_model()
    add = model.graph.node(0)
    half = ir.Value(name="half", const_value=ir.tensor(torch.full((2, 3), 0.5, dtype=torch.bfloat16)))
    table = ir.Value(name="table", const_value=ir.tensor(torch.arange(300, dtype=torch.float32).reshape(100, 3)))
    model.graph.initializers["half"], model.graph.initializers["table"] = half, table
    cast = ir.node("Cast", [half], attributes={"to": ir.DataType.FLOAT})
    total = ir.node("ReduceSum", [table], attributes={"keepdims": 0})
    plus = ir.node("Add", [cast.outputs[0], total.outputs[0]])
    model.graph.extend([cast, total, plus])
    add.replace_input_with(1, plus.outputs[0])
    model.graph.inputs.pop()
    monkeypatch.setattr(runtime, "PROTOBUF_LIMIT", 12)  # the bfloat16 weight alone passes it
    session = runtime.create_session(model)
    x = torch.randn(2, 3)
    (z,) = runtime.run_session(session, runtime.feeds(["x"], (x,), {}))
    torch.testing.assert_close(z, x + 0.5 + torch.arange(300.0).sum())  # ReduceSum without axes: all of it
    assert not runtime.on_disk(model)


def test_refusal_of_other_input_dimensions_lists_them() -> None:
    """onnxruntime puts the offending axes of an input on the lines after its first one; the reason
    keeps them (the hf validation's error showed only "... for the following indices")."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 128, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 128, 128])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString())
    with pytest.raises(Exception) as refused:  # onnxruntime's pybind InvalidArgument
        session.run(None, {"x": np.zeros((1, 3, 160, 96), np.float32)})
    reason, op_type, node = runtime.refusal_parts(refused.value)
    assert reason.endswith("for the following indices: index: 2 Got: 160 Expected: 128; index: 3 Got: 96 Expected: 128")
    assert (op_type, node) == (None, None)
