"""ONNXProgram: saving (external data, initializer options), running in onnxruntime, memory sharing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import onnxport
from onnxport.weights import save as save_mod


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)
        self.register_buffer("offset", torch.arange(8, dtype=torch.float32))

    def forward(self, x: torch.Tensor, extra: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.relu(self.fc(x)) + self.offset + extra["bias"]


@pytest.fixture(scope="module")
def exported() -> tuple[Net, onnxport.ONNXProgram, tuple]:
    torch.manual_seed(0)
    model = Net().eval()
    args = (torch.randn(4, 16), {"bias": torch.randn(8)})
    return model, onnxport.export(model, args, dynamic_shapes=({0: "batch"}, {"bias": None})), args


def _run(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_initializers_share_memory_with_torch(exported: tuple) -> None:
    model, program, _ = exported
    weight = program.model.graph.initializers["fc.weight"].const_value
    assert weight.slot.source.raw.data_ptr() == model.fc.weight.data_ptr()  # a WeightTensor over the torch storage
    assert program.model.graph.initializers["offset"].metadata_props[
        "pkg.torch.export.graph_signature.InputSpec.kind"
    ] == "BUFFER"


def test_call_with_nested_inputs(exported: tuple) -> None:
    model, program, _ = exported
    x, extra = torch.randn(7, 16), {"bias": torch.randn(8)}
    (out,) = program(x, extra)
    expected = model(x, extra)
    assert out.shape == (7, 8) and out.dtype == torch.float32
    torch.testing.assert_close(out, expected.detach(), rtol=1e-5, atol=1e-5)
    assert [i.name for i in program.model.graph.inputs] == ["x", "extra.bias"]
    program.release()
    (again,) = program(x, extra)  # a new session after release
    torch.testing.assert_close(again, out)


def test_save_embedded_and_external(exported: tuple, tmp_path: Path) -> None:
    model, program, (x, extra) = exported
    feeds = {"x": x.numpy(), "extra.bias": extra["bias"].numpy()}
    expected = model(x, extra).detach().numpy()

    embedded = tmp_path / "embedded.onnx"
    program.save(embedded)
    assert not (tmp_path / "embedded.onnx.data").exists()
    onnx.checker.check_model(onnx.load(str(embedded)), full_check=True)
    np.testing.assert_allclose(_run(embedded, feeds)[0], expected, rtol=1e-5, atol=1e-5)

    external = tmp_path / "external.onnx"
    program.save(external, external_data=True)
    data = tmp_path / "external.onnx.data"
    assert data.stat().st_size >= 16 * 8 * 4  # the fc.weight bytes live in the data file
    assert external.stat().st_size < embedded.stat().st_size
    np.testing.assert_allclose(_run(external, feeds)[0], expected, rtol=1e-5, atol=1e-5)
    assert [p.name for p in tmp_path.iterdir() if "onnxport-" in p.name] == []


def test_external_data_automatic_past_limit(exported: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, program, _ = exported
    monkeypatch.setattr(save_mod, "PROTOBUF_LIMIT", 100)  # pretend the weights exceed 2 GB
    program.save(tmp_path / "big.onnx")
    assert (tmp_path / "big.onnx.data").exists()


def test_save_without_initializers(exported: tuple, tmp_path: Path) -> None:
    model, program, (x, extra) = exported
    path = tmp_path / "no_weights.onnx"
    program.save(path, include_initializers=False, keep_initializers_as_inputs=True)
    proto = onnx.load(str(path))
    assert len(proto.graph.initializer) == 0
    names = [i.name for i in proto.graph.input]
    assert names[:2] == ["x", "extra.bias"] and "fc.weight" in names
    feeds = {"x": x.numpy(), "extra.bias": extra["bias"].numpy()}
    feeds.update({k: v.detach().numpy() for k, v in model.state_dict().items()})
    np.testing.assert_allclose(_run(path, feeds)[0], model(x, extra).detach().numpy(), rtol=1e-5, atol=1e-5)
    # The in-memory model is unchanged.
    assert "fc.weight" in program.model.graph.initializers
    assert [i.name for i in program.model.graph.inputs] == ["x", "extra.bias"]


def test_keep_initializers_as_inputs(exported: tuple, tmp_path: Path) -> None:
    _, program, _ = exported
    path = tmp_path / "as_inputs.onnx"
    program.save(path, keep_initializers_as_inputs=True)
    proto = onnx.load(str(path))
    assert {"fc.weight", "fc.bias", "offset"} <= {i.name for i in proto.graph.input}
    assert {"fc.weight", "fc.bias", "offset"} <= {i.name for i in proto.graph.initializer}


def test_call_with_wrong_number_of_tensors(exported: tuple) -> None:
    _, program, _ = exported
    with pytest.raises(onnxport.InputError, match="takes 2 tensor inputs"):
        program(torch.randn(2, 16))


def test_model_proto_and_exported_program(exported: tuple) -> None:
    _, program, _ = exported
    proto = program.model_proto
    assert isinstance(proto, onnx.ModelProto)
    assert proto.opset_import[0].version == 23
    assert program.exported_program is not None


def test_output_that_is_an_input_gets_its_own_name() -> None:
    class PassThrough(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x, x + y

    x, y = torch.randn(2), torch.randn(2)
    program = onnxport.export(PassThrough(), (x, y))
    names = [v.name for v in program.model.graph.outputs]
    assert names[0] == "x_output" and len(set(names) | {"x", "y"}) == 4
    first, second = program(x, y)
    torch.testing.assert_close(first, x)
    torch.testing.assert_close(second, x + y)


def test_bfloat16_in_and_out() -> None:
    class Reshape(torch.nn.Module):  # onnxruntime's CPU kernels for bfloat16 are mostly data movement
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x.reshape(-1, 1), x.float() * 2

    x = torch.tensor([1.5, -2.25, 3.0], dtype=torch.bfloat16)
    moved, scaled = onnxport.export(Reshape(), (x,))(x)
    assert moved.dtype == torch.bfloat16 and moved.shape == (3, 1)
    torch.testing.assert_close(moved, x.reshape(-1, 1))
    torch.testing.assert_close(scaled, x.float() * 2)


def test_repeated_output_gets_its_own_name() -> None:
    class Twice(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            y = x * 3
            return y, y

    x = torch.randn(3)
    program = onnxport.export(Twice(), (x,))
    names = [v.name for v in program.model.graph.outputs]
    assert len(set(names)) == 2
    first, second = program(x)
    torch.testing.assert_close(first, x * 3)
    torch.testing.assert_close(second, x * 3)


def test_none_output_is_left_out_as_in_eager_tensor_leaves() -> None:
    class WithNone(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None, torch.Tensor]:
            return x + 1, None, x * 2

    x = torch.randn(2, 3)
    program = onnxport.export(WithNone(), (x,), verify=True)
    assert [v.name for v in program.model.graph.outputs] == ["add", "mul"]
    first, second = program(x)
    torch.testing.assert_close(first, x + 1)
    torch.testing.assert_close(second, x * 2)


def test_constant_output_named_after_its_fx_node_keeps_the_name() -> None:
    class WithReserve(torch.nn.Module):  # aten._batch_norm_with_update returns an empty uint8 "reserve" constant
        def forward(self, x: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> tuple[torch.Tensor, ...]:
            w, b = torch.ones(3), torch.zeros(3)
            return torch.ops.aten._batch_norm_with_update.default(x, w, b, mean, var, momentum=0.5, eps=1e-5)

    x, mean, var = torch.randn(4, 3, 2), torch.zeros(3), torch.ones(3)
    expected = WithReserve()(x, mean.clone(), var.clone())
    program = onnxport.export(WithReserve(), (x, mean.clone(), var.clone()), optimize=False)
    names = [v.name for v in program.model.graph.outputs]
    assert len(names) == 4 == len(set(names))
    actual = program(x, mean.clone(), var.clone())
    assert actual[3].dtype == torch.uint8 and actual[3].shape == (0,)
    for e, a in zip(expected[:3], actual[:3]):
        torch.testing.assert_close(a, e)
