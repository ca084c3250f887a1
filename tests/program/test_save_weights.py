"""``ONNXProgram.save``: the four initializer layouts of seed 003, shards, alignment, tied weights
stored once, and atomicity (a failure mid-save keeps the previous model and leaves no file)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import onnxport
from onnxport.errors import SaveError
from onnxport.weights import save as save_mod
from onnxport.weights.tensor import WeightTensor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "weights"))
from _weight_models import Tiny, Wide, randomized  # noqa: E402

IDS = torch.tensor([[1, 7, 3, 49, 0], [5, 5, 2, 8, 11]])


@pytest.fixture(scope="module")
def tiny() -> tuple[torch.nn.Module, onnxport.ONNXProgram, np.ndarray]:
    torch.manual_seed(3)
    model = randomized(Tiny())
    with torch.no_grad():
        expected = model(IDS).numpy()
    return model, onnxport.export(model, (IDS,)), expected


@pytest.fixture(scope="module")
def wide() -> tuple[torch.nn.Module, onnxport.ONNXProgram, torch.Tensor]:
    torch.manual_seed(4)
    model = Wide().eval()
    x = torch.randn(2, 3, 512)
    return model, onnxport.export(model, (x,)), x


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _weights_of(program: onnxport.ONNXProgram) -> dict[str, np.ndarray]:
    """The (transformed) initializer values, as a runtime would feed them."""
    return {name: v.const_value.numpy() for name, v in program.model.graph.initializers.items()}


@pytest.mark.parametrize("include", [True, False])
@pytest.mark.parametrize("as_inputs", [True, False])
def test_four_layouts_load_and_run(tiny: tuple, tmp_path: Path, include: bool, as_inputs: bool) -> None:
    _, program, expected = tiny
    path = tmp_path / "model.onnx"
    program.save(path, include_initializers=include, keep_initializers_as_inputs=as_inputs, external_data=True)
    proto = onnx.load(str(path), load_external_data=False)
    weights = _weights_of(program)
    assert bool(proto.graph.initializer) == include
    input_names = [i.name for i in proto.graph.input]
    assert (set(weights) <= set(input_names)) == as_inputs
    feeds: dict[str, np.ndarray] = {"ids": IDS.numpy()}
    if not include and not as_inputs:
        # the weights are attached in a post-processing step (seed 003), here through onnx
        proto = onnx.load(str(path))
        proto.graph.initializer.extend(onnx.numpy_helper.from_array(a, name) for name, a in weights.items())
        path = tmp_path / "attached.onnx"
        onnx.save(proto, str(path))
    elif as_inputs and not include:
        feeds.update(weights)
    out = _session(path).run(None, feeds)[0]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    if include and as_inputs:  # weights kept as inputs can be overridden at run time
        zeroed = dict(feeds, **{"fc.bias": np.zeros_like(weights["fc.bias"])})
        assert not np.allclose(_session(path).run(None, zeroed)[0], expected)


def test_tied_weight_stored_once(tiny: tuple, tmp_path: Path) -> None:
    model, program, _ = tiny
    program.save(tmp_path / "model.onnx", external_data=True)
    proto = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False)
    names = [t.name for t in proto.graph.initializer]
    assert "emb.weight" in names and "head.weight" not in names
    unique_bytes = sum(np.prod(t.dims) * 4 for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    assert (tmp_path / "model.onnx.data").stat().st_size == unique_bytes


def test_aligned_offsets_and_shards(wide: tuple, tmp_path: Path) -> None:
    model, program, x = wide
    files = program.save(tmp_path / "model.onnx", max_shard_size=3 * 1024**2)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["model.onnx", "model.onnx.data", "model.onnx.data_1"]
    assert [p.name for p in files] == ["model.onnx", "model.onnx.data", "model.onnx.data_1"]
    proto = onnx.load(str(tmp_path / "model.onnx"), load_external_data=False)
    for tensor in proto.graph.initializer:
        info = {e.key: e.value for e in tensor.external_data}
        if not info:
            continue
        assert (tmp_path / info["location"]).is_file() and "/" not in info["location"]
        if int(info["length"]) > 1024**2:
            assert int(info.get("offset", 0)) % 65536 == 0
    out = _session(tmp_path / "model.onnx").run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_external_data_chosen_from_the_serialized_size(wide: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, program, _ = wide
    weights = sum(v.const_value.nbytes for v in program.model.graph.initializers.values())
    # the weights alone fit the (shrunk) limit; weights plus graph, with the margin, do not
    monkeypatch.setattr(save_mod, "PROTOBUF_LIMIT", int(weights / save_mod.EXTERNAL_MARGIN) + 10)
    program.save(tmp_path / "model.onnx")
    assert (tmp_path / "model.onnx.data").exists()
    with pytest.raises(SaveError, match="external_data=True"):
        monkeypatch.setattr(save_mod, "PROTOBUF_LIMIT", weights // 2)
        program.save(tmp_path / "inline.onnx", external_data=False)
    assert not (tmp_path / "inline.onnx").exists()


def test_missing_weights_refuse_to_save_but_graph_only_works(tmp_path: Path) -> None:
    with onnxport.enable_fake_mode():
        fake = Tiny().eval()
    program = onnxport.export(fake, (IDS,))
    with pytest.raises(onnxport.MissingWeightsError, match="include_initializers=False"):
        program.save(tmp_path / "model.onnx")
    assert list(tmp_path.iterdir()) == []
    program.save(tmp_path / "graph.onnx", include_initializers=False, keep_initializers_as_inputs=True)
    proto = onnx.load(str(tmp_path / "graph.onnx"))
    assert len(proto.graph.initializer) == 0 and "fc.weight.T" in [i.name for i in proto.graph.input]


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_failure_mid_save_keeps_the_previous_model(wide: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, program, x = wide
    path = tmp_path / "model.onnx"
    program.save(path, external_data=True)
    before = _listing(tmp_path)
    calls = []
    original = WeightTensor.tofile

    def failing(self: WeightTensor, file: object) -> None:
        calls.append(self.name)
        if len(calls) == 3:  # after two tensors were written
            raise OSError(28, "No space left on device")
        original(self, file)

    monkeypatch.setattr(WeightTensor, "tofile", failing)
    with pytest.raises(SaveError, match="No space left"):
        program.save(path, external_data=True)
    assert len(calls) == 3  # tensors are written one at a time: the failing one was the last started
    assert _listing(tmp_path) == before  # nothing new, nothing lost
    out = _session(path).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_failure_after_the_data_is_written_keeps_the_previous_model(wide: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, program, _ = wide
    path = tmp_path / "model.onnx"
    program.save(path, external_data=True)
    before = _listing(tmp_path)

    def failing_graph(*args: object) -> None:
        raise RuntimeError("injected while writing the graph")

    monkeypatch.setattr(save_mod, "_write_graph", failing_graph)
    with pytest.raises(SaveError, match="injected"):
        program.save(path, external_data=True)
    assert _listing(tmp_path) == before


def test_resave_replaces_files_and_removes_stale_ones(wide: tuple, tiny: tuple, tmp_path: Path) -> None:
    _, program, x = wide
    path = tmp_path / "model.onnx"
    program.save(path, max_shard_size=3 * 1024**2)
    assert (tmp_path / "model.onnx.data_1").exists()
    program.save(path, external_data=True)  # one data file now: the second shard is stale
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "model.onnx.data"]
    _, small, _ = tiny
    small.save(path, external_data=False)  # inline now: the data file goes too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


def test_leftovers_of_a_killed_save_are_swept(wide: tuple, tmp_path: Path) -> None:
    import subprocess

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    pid = int(dead.stdout)  # a process that has exited
    leftovers = [
        f"model.onnx.onnxport-{pid}-deadbeef.data0",
        f".model.onnx.onnxport-{pid}-deadbeef.onnx",
        f".model.onnx.onnxport-{pid}-deadbeef.data0.tmpabc",
    ]
    for name in leftovers[:2]:
        (tmp_path / name).write_bytes(b"partial")
    (tmp_path / leftovers[2]).mkdir()
    alive = tmp_path / f"model.onnx.onnxport-{os.getppid()}-cafe.data0"  # a running process: kept
    alive.write_bytes(b"in progress")
    _, program, _ = wide
    program.save(tmp_path / "model.onnx", external_data=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["model.onnx", "model.onnx.data", alive.name])


def test_save_errors_are_onnxport_errors(tiny: tuple, tmp_path: Path) -> None:
    _, program, _ = tiny
    with pytest.raises(SaveError, match="does not exist"):
        program.save(tmp_path / "absent" / "model.onnx")
    with pytest.raises(SaveError, match="is a directory"):
        program.save(tmp_path)
    with pytest.raises(SaveError, match="positive"):
        program.save(tmp_path / "m.onnx", max_shard_size=0)


def test_loaded_model_saved_over_itself(wide: tuple, tmp_path: Path) -> None:
    model, program, x = wide
    path = tmp_path / "model.onnx"
    program.save(path, external_data=True)
    loaded = onnxport.ONNXProgram.load(path)
    loaded.save(path, max_shard_size=3 * 1024**2)  # its own source files are replaced meanwhile
    loaded.save(path, external_data=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "model.onnx.data"]
    expected = model(x).detach().numpy()
    np.testing.assert_allclose(loaded(x)[0].numpy(), expected, rtol=1e-4, atol=1e-5)
    out = _session(path).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("durable", [False, True])
def test_fsync_only_when_durable(wide: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durable: bool) -> None:
    """ONNXPORT_FSYNC=1 (``save.DURABLE``) flushes the data file and the graph before their
    renames; by default nothing is fsynced (the renames alone keep a killed save atomic)."""
    synced: list[str] = []
    real = os.fsync

    def record(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(save_mod, "DURABLE", durable)
    monkeypatch.setattr(save_mod.os, "fsync", record)
    _, program, x = wide
    program.save(tmp_path / "m.onnx", external_data=True)
    assert ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": x.numpy()})[0].shape[0] == x.shape[0]
    if durable:
        assert any(".data" in p for p in synced) and any(p.endswith(".onnx") for p in synced)
    else:
        assert synced == []
