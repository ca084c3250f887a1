"""runtime.create_session's session file: from SESSION_FILE_MIN_BYTES of weights in memory the model
goes to onnxruntime as a temporary file whose aligned weights onnxruntime memory-maps (no copy of
its own), removed as soon as the session is open; a temporary folder that cannot take it; the
export's runtime check without pre-packing when its session is released."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import onnx
import pytest
import torch

import onnxport
from onnxport import _export, runtime
from onnxport.errors import ModelCheckError, RuntimeCheckError

LINUX = sys.platform.startswith("linux")


def _model() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(100, 512), torch.nn.Linear(512, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 512)).eval()  # two 2 MiB weights: aligned
    return model, torch.randint(0, 100, (2, 5))


def _mapped_session_files() -> list[str]:
    """The lines of this process's memory map that name a session folder's data file."""
    with open("/proc/self/maps", encoding="utf-8") as f:
        return [line.strip() for line in f if runtime._SESSION_PREFIX in line and runtime._SESSION_DATA in line]


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own temporary folder for session files."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.mark.skipif(not LINUX, reason="reads /proc/self/maps and relies on a mapping outliving its file's name")
def test_weights_are_memory_mapped_from_a_file_removed_at_once(own_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """onnxruntime maps the two 2 MiB weights from the session's data file (its pages are in
    the process's memory map, the file already deleted), the outputs are eager's, and the session
    is a snapshot: zeroing the parameters afterwards changes nothing."""
    monkeypatch.setattr(runtime, "SESSION_FILE_MIN_BYTES", 1)
    model, ids = _model()
    program = onnxport.export(model, (ids,), check_runtime=False)
    before = _mapped_session_files()
    session = runtime.create_session(program.model)
    mapped = [line for line in _mapped_session_files() if line not in before]
    assert mapped, "onnxruntime did not memory-map the session's data file"
    assert all(line.endswith("(deleted)") for line in mapped)
    assert list(own_tmp.iterdir()) == []  # nothing left on disk
    names = [i.name for i in session.get_inputs()]
    with torch.no_grad():
        expected = model(ids)
        first = runtime.run_session(session, runtime.feeds(names, (ids,), {}))[0]
        for p in model.parameters():
            p.zero_()
        again = runtime.run_session(session, runtime.feeds(names, (ids,), {}))[0]
    assert float(expected.abs().max()) > 0.01
    torch.testing.assert_close(first, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(again, expected, rtol=1e-5, atol=1e-6)
    assert not runtime.on_disk(program.model)  # the model's tensors came back


def test_session_file_layout_aligns_large_weights(tmp_path: Path) -> None:
    """write_session_file: initializers over 256 bytes in model.onnx.data, those over 1 MiB at
    offsets that are multiples of 64 KiB (what onnxruntime maps), the .onnx loads alone."""
    model, ids = _model()
    program = onnxport.export(model, (ids,), check_runtime=False)
    path = runtime.write_session_file(program.model, str(tmp_path))
    proto = onnx.load(path, load_external_data=False)
    places = {t.name: {e.key: e.value for e in t.external_data} for t in proto.graph.initializer
              if t.data_location == onnx.TensorProto.EXTERNAL}
    sizes = {v.name: v.const_value.nbytes for v in program.model.graph.initializers.values()}
    assert {n for n, s in sizes.items() if s > 256} == set(places)
    big = [n for n in places if sizes[n] > 1024**2]
    assert len(big) == 2
    assert all(int(places[n]["offset"]) % 65536 == 0 for n in big)
    assert all(places[n]["location"] == "model.onnx.data" for n in places)
    assert os.path.getsize(tmp_path / "model.onnx.data") >= sum(sizes[n] for n in places)
    assert not runtime.on_disk(program.model)


def test_a_temporary_folder_without_room(own_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights in memory go to onnxruntime as arrays instead; a loaded model, whose weights are in
    another file, cannot: a ModelCheckError naming the folder and TMPDIR."""
    monkeypatch.setattr(runtime, "SESSION_FILE_MIN_BYTES", 1)
    model, ids = _model()
    program = onnxport.export(model, (ids,), check_runtime=False)
    saved = own_tmp / "saved"
    saved.mkdir()
    program.save(saved / "m.onnx", external_data=True)
    loaded = onnxport.ONNXProgram.load(saved / "m.onnx")
    monkeypatch.setattr(runtime.shutil, "disk_usage", lambda _: types.SimpleNamespace(free=1000))
    (out,) = program(ids)
    with torch.no_grad():
        torch.testing.assert_close(torch.as_tensor(out), model(ids), rtol=1e-5, atol=1e-6)
    with pytest.raises(ModelCheckError, match="TMPDIR") as info:
        loaded(ids)
    assert str(own_tmp) in str(info.value) and info.value.check == "onnxruntime load"
    assert sorted(p.name for p in own_tmp.iterdir()) == ["saved"]


def test_a_killed_process_session_folder_is_removed(own_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder named after a process that is gone goes at the next session file; one of this
    process (maybe in use by another thread) and one of a live process stay."""
    monkeypatch.setattr(runtime, "SESSION_FILE_MIN_BYTES", 1)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    dead = own_tmp / f"{runtime._SESSION_PREFIX}{int(gone.stdout)}-abc"
    mine = own_tmp / f"{runtime._SESSION_PREFIX}{os.getpid()}-abc"
    alive = own_tmp / f"{runtime._SESSION_PREFIX}1-abc"  # init is alive
    for folder in (dead, mine, alive):
        folder.mkdir()
        (folder / runtime._SESSION_DATA).write_bytes(b"x" * 10)
    model, ids = _model()
    program = onnxport.export(model, (ids,), check_runtime=False)
    program(ids)
    assert sorted(p.name for p in own_tmp.iterdir()) == sorted([mine.name, alive.name])


def test_the_check_of_a_released_session_does_not_prepack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights of KEEP_SESSION_MAX_BYTES or more: the runtime check's session opens with
    ``session.disable_prepacking`` and is released; a later call opens one that pre-packs."""
    monkeypatch.setattr(_export, "KEEP_SESSION_MAX_BYTES", 1)
    opened: list[str] = []
    create = runtime.create_session

    def recording(*args: object, **kwargs: object) -> object:
        session = create(*args, **kwargs)  # type: ignore[arg-type]
        options = session.get_session_options()
        try:
            opened.append(options.get_session_config_entry("session.disable_prepacking"))
        except Exception:  # onnxruntime raises for an entry never set: pre-packing on
            opened.append("unset")
        return session

    monkeypatch.setattr(runtime, "create_session", recording)
    model, ids = _model()
    program = onnxport.export(model, (ids,))
    assert opened == ["1"]
    step = next(s for s in program.status.steps if s.name == "onnxruntime run")
    assert "session released" in step.detail and program._session is None
    (out,) = program(ids)
    with torch.no_grad():
        torch.testing.assert_close(torch.as_tensor(out), model(ids), rtol=1e-5, atol=1e-6)
    assert opened == ["1", "unset"]


class _Relu(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(512, 512)  # 1 MiB

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def _baked_relu(ctx: Any, self: Any) -> Any:
    """A broken translation: reshapes to the example's static shape (fails at another batch)."""
    return ctx.op.Relu(ctx.op.Reshape(self, ctx.const([2, 512])))


def test_a_save_with_external_data_is_checked_on_its_own_files(tmp_path: Path) -> None:
    """export(f=..., external_data=True): the runtime check runs on the written files before they
    replace the destination (one write of the weights); its step comes before the save's, the
    session is released and the saved model runs."""
    x = torch.randn(2, 512)
    model = _Relu().eval()
    out = tmp_path / "m.onnx"
    program = onnxport.export(model, (x,), f=out, external_data=True, dynamic_shapes=({0: "batch"},))
    names = [s.name for s in program.status.steps]
    assert names[-2:] == ["onnxruntime run", "save"]
    run = program.status.steps[-2]
    assert "on the files being saved" in run.detail and run.detail.startswith("example inputs; generated inputs")
    assert program._session is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    y = torch.randn(5, 512)
    with torch.no_grad():
        torch.testing.assert_close(onnxport.ONNXProgram.load(out)(y)[0], model(y), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(program(y)[0], model(y), rtol=1e-5, atol=1e-6)


def test_a_model_the_check_refuses_never_replaces_the_previous_one(tmp_path: Path) -> None:
    """The check of the written files fails at the second batch size: RuntimeCheckError, the
    previous model at the destination unchanged, none of the new files left, the save step not
    blamed."""
    x = torch.randn(2, 512)
    out = tmp_path / "models" / "m.onnx"
    out.parent.mkdir()
    report = tmp_path / "report.md"
    onnxport.export(_Relu().eval(), (x,), f=out, external_data=True)
    before = {p.name: p.read_bytes() for p in out.parent.iterdir()}
    seen: list[str] = []
    with pytest.raises(RuntimeCheckError) as info:
        onnxport.export(_Relu().eval(), (x,), f=out, external_data=True, dynamic_shapes=({0: "batch"},),
                        custom_translations={torch.ops.aten.relu.default: _baked_relu}, progress=seen.append,
                        report=report)
    assert info.value.op_type == "Reshape"
    assert {p.name: p.read_bytes() for p in out.parent.iterdir()} == before
    assert seen[-2:] == ["save", "onnxruntime run"]
    text = report.read_text(encoding="utf-8")
    assert "- [ ] onnxruntime run" in text and "- [x] save" in text and "not committed" in text


@pytest.mark.parametrize("links", [True, False])
def test_a_loaded_model_runs_on_its_own_data_file(tmp_path: Path, own_tmp: Path, monkeypatch: pytest.MonkeyPatch,
                                                  links: bool) -> None:
    """ONNXProgram.load of a model with external data: the session's folder hard-links its data
    file (no byte of it copied); where linking fails, the tensors are copied. Either way the
    outputs are eager's and nothing stays in the temporary folder."""
    model, ids = _model()
    saved = tmp_path / "saved"
    saved.mkdir()
    onnxport.export(model, (ids,), f=saved / "m.onnx", external_data=True)
    loaded = onnxport.ONNXProgram.load(saved / "m.onnx")
    assert runtime.on_disk(loaded.model)
    written: list[int] = []
    write = runtime.write_data_file

    def recording(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        written.append(sum(t.nbytes for t in tensors))
        return write(tensors, *args, **kwargs)

    monkeypatch.setattr(runtime, "write_data_file", recording)
    def cross_device(*args: Any) -> None:
        raise OSError(18, "Invalid cross-device link")

    if not links:
        monkeypatch.setattr(runtime.os, "link", cross_device)
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids)[0], model(ids), rtol=1e-5, atol=1e-6)
    stored = sum(v.const_value.nbytes for v in loaded.model.graph.initializers.values())
    assert written == ([0] if links else [stored])
    assert sorted(p.name for p in own_tmp.iterdir()) == ["saved"]  # own_tmp is tmp_path


def test_a_checked_session_of_a_loaded_model_copies_its_data(tmp_path: Path, own_tmp: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``check=True`` the data is copied, not linked: onnx.checker refuses a data file with
    several hard links ("a potential hardlink attack"). The checker and onnxruntime pass."""
    model, ids = _model()
    saved = tmp_path / "saved"
    saved.mkdir()
    onnxport.export(model, (ids,), f=saved / "m.onnx", external_data=True)
    loaded = onnxport.ONNXProgram.load(saved / "m.onnx")
    links: list[object] = []
    monkeypatch.setattr(runtime.os, "link", lambda *args: links.append(args))
    checks: list[runtime.CheckResult] = []
    session = runtime.create_session(loaded.model, check=True, checks=checks)
    assert links == [] and [c.passed for c in checks] == [True, True]
    names = [i.name for i in session.get_inputs()]
    with torch.no_grad():
        torch.testing.assert_close(runtime.run_session(session, runtime.feeds(names, (ids,), {}))[0], model(ids),
                                   rtol=1e-5, atol=1e-6)


def test_the_verification_session_of_a_big_model_is_released(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify=True with weights of KEEP_SESSION_MAX_BYTES or more: the verification's session
    opens without pre-packing, passes, and is not kept after the export; a later call opens one."""
    monkeypatch.setattr(_export, "KEEP_SESSION_MAX_BYTES", 1)
    opened: list[bool] = []
    create = runtime.create_session

    def recording(*args: Any, **kwargs: Any) -> Any:
        opened.append(kwargs.get("prepack", True) and not kwargs.get("transient", False))  # transient: no pre-packing
        return create(*args, **kwargs)

    monkeypatch.setattr(runtime, "create_session", recording)
    model, ids = _model()
    program = onnxport.export(model, (ids,), verify=True)
    assert program.status.verification is not None and program.status.verification.passed
    assert program._session is None
    assert opened == [False, False]  # the runtime check's session, then the verification's
    with torch.no_grad():
        torch.testing.assert_close(program(ids)[0], model(ids), rtol=1e-5, atol=1e-6)
