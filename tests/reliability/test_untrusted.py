"""Loading untrusted files and the CLI: empty, truncated, non-ONNX and hostile files are refused
(InputError; exit 2) and external data outside the model's folder is never read."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import torch
from tests.reliability import spec_linear
from typer.testing import CliRunner

import onnxport
from onnxport.cli import _common, app
from onnxport.errors import InputError
from onnxport.program import read_onnx_file

SPEC = f"{Path(__file__).with_name('spec_linear.py')}:make"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("good") / "model.onnx"
    model, args = spec_linear.make()
    onnxport.export(model, args, f=path)
    return path


def _external(folder: Path, good: Path, location: str, *, write: bytes | None = None) -> Path:
    """The good model with its weights moved to external data at ``location``."""
    proto = onnx.load(good)
    for init in proto.graph.initializer:
        init.data_location = onnx.TensorProto.EXTERNAL
        raw = init.raw_data or onnx.numpy_helper.from_array(onnx.numpy_helper.to_array(init)).raw_data
        init.ClearField("raw_data")
        del init.external_data[:]
        for key, value in (("location", location), ("offset", "0"), ("length", str(len(raw)))):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
    path = folder / "hostile.onnx"
    path.write_bytes(proto.SerializeToString())
    if write is not None:
        (folder / location).write_bytes(write)
    return path


def _bad_files(folder: Path, good: Path) -> dict[str, Path]:
    data = good.read_bytes()
    files = {
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "text": b"this is not an ONNX model\n" * 4,
        "zeros": b"\0" * 64,
        "png": b"\x89PNG\r\n\x1a\n" + b"\0" * 32,
    }
    out = {}
    for name, content in files.items():
        out[name] = folder / f"{name}.onnx"
        out[name].write_bytes(content)
    (folder / "dir.onnx").mkdir()
    out["folder"] = folder / "dir.onnx"
    out["missing"] = folder / "missing.onnx"
    return out


def test_load_refuses_bad_files(tmp_path, good) -> None:  # type: ignore[no-untyped-def]
    for name, path in _bad_files(tmp_path, good).items():
        with pytest.raises(InputError) as info:
            onnxport.ONNXProgram.load(path)
        assert str(path) in str(info.value), name
    assert read_onnx_file(good).graph.outputs


def test_load_refuses_external_data_outside_the_folder(tmp_path, good) -> None:  # type: ignore[no-untyped-def]
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\1" * 4096)
    inner = tmp_path / "models"
    inner.mkdir()
    for location in ("../secret.bin", str(secret)):
        path = _external(inner, good, location)
        with pytest.raises(InputError, match="outside its folder"):
            onnxport.ONNXProgram.load(path)
    assert secret.read_bytes() == b"\1" * 4096


def test_external_data_inside_the_folder_loads_and_runs(tmp_path, good) -> None:  # type: ignore[no-untyped-def]
    proto = onnx.load(good)
    onnx.save(proto, tmp_path / "m.onnx", save_as_external_data=True, location="m.onnx.data", size_threshold=0)
    program = onnxport.ONNXProgram.load(tmp_path / "m.onnx")
    reference = onnxport.ONNXProgram.load(good)
    x = torch.randn(2, 4)
    torch.testing.assert_close(program(x)[0], reference(x)[0])


runner = CliRunner()


@pytest.mark.parametrize("command", ["inspect", "verify"])
def test_cli_refuses_bad_files_with_exit_2(command, tmp_path, good) -> None:  # type: ignore[no-untyped-def]
    for name, path in _bad_files(tmp_path, good).items():
        args = [command, str(path)] + ([SPEC] if command == "verify" else [])
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (name, result.output)
        assert "Traceback" not in result.output and "Error:" in result.output, name


def test_inspect_warns_about_external_data_outside_the_folder(tmp_path, good) -> None:  # type: ignore[no-untyped-def]
    path = _external(tmp_path, good, "../../etc/passwd")
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    assert "Warning: external data location '../../etc/passwd' points outside" in result.output
    assert "OUTSIDE" in result.output  # the external-data row (rich wraps the rest)


def test_verify_refuses_missing_and_truncated_external_data(tmp_path, good) -> None:  # type: ignore[no-untyped-def]
    path = _external(tmp_path, good, "w.data")  # data file never written
    result = runner.invoke(app, ["verify", str(path), SPEC])
    assert result.exit_code == 2 and "w.data is missing" in result.output, result.output
    (tmp_path / "w.data").write_bytes(b"\0" * 8)
    result = runner.invoke(app, ["verify", str(path), SPEC])
    assert result.exit_code == 2 and "(truncated)" in result.output, result.output
    result = runner.invoke(app, ["verify", str(_external(tmp_path, good, "../x.data")), SPEC])
    assert result.exit_code == 2 and "outside its folder" in result.output
    assert "Traceback" not in result.output


def test_verify_good_file_passes(good) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["verify", str(good), SPEC])
    assert result.exit_code == 0, result.output
    assert "matches eager PyTorch" in result.output


def test_unexpected_error_is_one_line_unless_debug(good, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyError("a bug")

    monkeypatch.setattr("onnxport.cli.inspection.inspect_tables", broken)
    result = runner.invoke(app, ["inspect", str(good)])
    assert result.exit_code == 1
    assert "KeyError: 'a bug'" in result.output and "--debug" in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["--debug", "inspect", str(good)])
    assert isinstance(result.exception, KeyError)  # propagates with its traceback
    _common.DEBUG["enabled"] = False
