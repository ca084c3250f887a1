"""Fake-mode / meta-device export, then ``apply_weights`` from a state_dict, a ``.safetensors``
file or a shard folder: the saved model is byte for byte the one a normal export saves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from _weight_models import Tiny, randomized
from safetensors.torch import save_file

import onnxport
from onnxport.weights.sources import read_safetensors_header

IDS = torch.tensor([[1, 7, 3, 49, 0], [5, 5, 2, 8, 11]])


@pytest.fixture(scope="module")
def real() -> torch.nn.Module:
    torch.manual_seed(1)
    return randomized(Tiny())


@pytest.fixture(scope="module")
def reference_files(real: torch.nn.Module, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    """``model.onnx`` and ``model.onnx.data`` of a normal export (real weights)."""
    folder = tmp_path_factory.mktemp("reference")
    program = onnxport.export(real, (IDS,))
    program.save(folder / "model.onnx", external_data=True)
    return (folder / "model.onnx").read_bytes(), (folder / "model.onnx.data").read_bytes()


def _fake_program() -> onnxport.ONNXProgram:
    with onnxport.enable_fake_mode():
        fake = Tiny().eval()
    return onnxport.export(fake, (IDS,))


def _saved(program: onnxport.ONNXProgram, folder: Path) -> tuple[bytes, bytes]:
    program.save(folder / "model.onnx", external_data=True)
    return (folder / "model.onnx").read_bytes(), (folder / "model.onnx.data").read_bytes()


def _run(path: Path) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: IDS.numpy()})[0]


def test_fake_export_knows_its_missing_weights() -> None:
    program = _fake_program()
    names = set(program.missing_weights)
    # the module's own names, also for the weights the passes transposed or folded
    assert {"emb.weight", "conv.weight", "conv.bias", "bn.running_var", "fc.weight", "scale"} <= names
    with pytest.raises(onnxport.MissingWeightsError, match="apply_weights"):
        program(IDS)


def test_state_dict_gives_the_same_bytes(real: torch.nn.Module, reference_files: tuple[bytes, bytes], tmp_path: Path) -> None:
    program = _fake_program()
    program.apply_weights(real.state_dict())  # holds head.weight too: a tied alias, accepted
    assert program.missing_weights == []
    assert _saved(program, tmp_path) == reference_files
    np.testing.assert_allclose(_run(tmp_path / "model.onnx"), real(IDS).detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(program(IDS)[0].numpy(), real(IDS).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_safetensors_file_gives_the_same_bytes(real: torch.nn.Module, reference_files: tuple[bytes, bytes], tmp_path: Path) -> None:
    state = {k: v for k, v in real.state_dict().items() if k != "head.weight"}  # as HF stores tied weights
    save_file(state, tmp_path / "model.safetensors")
    program = _fake_program()
    program.apply_weights(tmp_path / "model.safetensors")
    out = tmp_path / "out"
    out.mkdir()
    assert _saved(program, out) == reference_files


def test_shard_folder_gives_the_same_bytes(real: torch.nn.Module, reference_files: tuple[bytes, bytes], tmp_path: Path) -> None:
    state = {k: v.contiguous() for k, v in real.state_dict().items() if k != "head.weight"}
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2 :]}
    for file, keys in shards.items():
        save_file({k: state[k] for k in keys}, tmp_path / file)
    weight_map = {k: file for file, keys in shards.items() for k in keys}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    program = _fake_program()
    program.apply_weights(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    assert _saved(program, out) == reference_files


def test_meta_device_model_with_real_inputs(real: torch.nn.Module, reference_files: tuple[bytes, bytes], tmp_path: Path) -> None:
    with torch.device("meta"):
        meta = Tiny().eval()
    program = onnxport.export(meta, (IDS,))  # real example inputs, meta weights
    assert "fc.weight" in program.missing_weights
    program.apply_weights(real.state_dict())
    assert _saved(program, tmp_path) == reference_files


def test_every_problem_in_one_error(real: torch.nn.Module) -> None:
    program = _fake_program()
    state = dict(real.state_dict())
    del state["conv.bias"], state["bn.running_mean"]
    state["fc.weight"] = torch.zeros(3, 16)
    state["scale"] = state["scale"].half()
    state["extra.weight"] = torch.zeros(2)
    with pytest.raises(onnxport.WeightsError) as info:
        program.apply_weights(state)
    error = info.value
    assert sorted(error.missing) == ["bn.running_mean", "conv.bias"]
    assert error.unexpected == ["extra.weight"]
    assert sorted(m[0] for m in error.mismatched) == ["fc.weight", "scale"]
    message = str(error)
    for text in ("conv.bias", "bn.running_mean", "extra.weight", "float32[16, 16]", "float32[3, 16]", "float16[2]"):
        assert text in message
    assert "fc.weight" in program.missing_weights  # nothing was applied


def test_prefix_difference_is_named(real: torch.nn.Module) -> None:
    program = _fake_program()
    with pytest.raises(onnxport.WeightsError, match="extra prefix 'model.'"):
        program.apply_weights({f"model.{k}": v for k, v in real.state_dict().items()})


def test_partial_apply_with_strict_false(real: torch.nn.Module) -> None:
    program = onnxport.export(real, (IDS,))
    new_fc = torch.randn(16, 16)
    program.apply_weights({"fc.weight": new_fc}, strict=False)
    with torch.no_grad():
        real_copy = randomized(Tiny())
        real_copy.load_state_dict(real.state_dict())
        real_copy.fc.weight.copy_(new_fc)
    np.testing.assert_allclose(program(IDS)[0].numpy(), real_copy(IDS).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_apply_weights_reads_nothing(real: torch.nn.Module, tmp_path: Path) -> None:
    save_file({k: v for k, v in real.state_dict().items() if k != "head.weight"}, tmp_path / "w.safetensors")
    program = _fake_program()
    program.apply_weights(tmp_path / "w.safetensors")
    (tmp_path / "w.safetensors").write_bytes(b"")  # lazy: the bytes are only read when saved or run
    with pytest.raises(onnxport.OnnxportError):
        program.save(tmp_path / "model.onnx")
    assert not (tmp_path / "model.onnx").exists()


def test_bad_weight_sources_are_input_errors(tmp_path: Path) -> None:
    program = _fake_program()
    with pytest.raises(onnxport.InputError, match="not found"):
        program.apply_weights(tmp_path / "absent.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file at all")
    with pytest.raises(onnxport.InputError, match="not a readable .safetensors"):
        program.apply_weights(tmp_path / "junk.safetensors")
    with pytest.raises(onnxport.InputError, match="neither"):
        program.apply_weights(tmp_path / "absent_folder_is_empty") if False else program.apply_weights(_empty(tmp_path))
    with pytest.raises(onnxport.InputError, match="state_dict"):
        program.apply_weights(42)


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_safetensors_header_sources_match_torch(tmp_path: Path) -> None:
    tensors = {"a": torch.randn(3, 4), "b": torch.randn(5).to(torch.bfloat16), "c": torch.arange(6).reshape(2, 3)}
    save_file(tensors, tmp_path / "t.safetensors")
    sources = read_safetensors_header(tmp_path / "t.safetensors")
    for name, tensor in tensors.items():
        data = sources[name].tensor()
        assert tuple(data.shape.numpy()) == tuple(tensor.shape)
        assert data.tobytes() == tensor.view(torch.int16).numpy().tobytes() if tensor.dtype == torch.bfloat16 else data.tobytes() == tensor.numpy().tobytes()


def test_bfloat16_weights_stay_bfloat16(tmp_path: Path) -> None:
    torch.manual_seed(2)
    real = randomized(Tiny()).to(torch.bfloat16)
    with torch.device("meta"):  # (FakeTensorMode cannot swap parameters for .to(dtype))
        fake = Tiny().eval().to(torch.bfloat16)
    program = onnxport.export(fake, (IDS,))
    program.apply_weights(real.state_dict())
    program.save(tmp_path / "model.onnx", external_data=True)
    proto = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False)
    emb = next(t for t in proto.graph.initializer if t.name == "emb.weight")
    assert emb.data_type == onnx.TensorProto.BFLOAT16
    expected = onnxport.export(real, (IDS,))
    expected.save(tmp_path / "expected.onnx", external_data=True)
    assert (tmp_path / "model.onnx.data").read_bytes() == (tmp_path / "expected.onnx.data").read_bytes()


def test_verify_without_weights_says_so() -> None:
    with onnxport.enable_fake_mode():
        fake = Tiny().eval()
    with pytest.raises(onnxport.MissingWeightsError, match="verify"):
        onnxport.export(fake, (IDS,), verify=True)
