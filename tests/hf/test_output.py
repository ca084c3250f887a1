"""The output folder of an hf export (onnxport.hf.output): refused when not empty unless
``overwrite``; with it, replaced whole once the new export is complete, and left as it was by a
failed export; no staging or previous folder is left beside it, and a killed export's staging
folder is removed by the next export."""

from __future__ import annotations

import os
import pathlib
import stat
import subprocess
import sys

import onnx
import pytest
from typer.testing import CliRunner

import onnxport.hf
from _checkpoints import llama_checkpoint
from onnxport.cli import app
from onnxport.errors import HFError, OnnxportError
from onnxport.hf.output import check_output_dir, staged


def _previous(folder: pathlib.Path) -> None:
    folder.mkdir()
    (folder / "stale.onnx.data").write_bytes(b"from an earlier export")
    (folder / "model.onnx").write_bytes(b"not a model")


def test_a_non_empty_folder_needs_overwrite(tmp_path: pathlib.Path) -> None:
    _previous(tmp_path / "out")
    with pytest.raises(HFError, match="--overwrite"):
        check_output_dir(tmp_path / "out")
    assert check_output_dir(tmp_path / "out", overwrite=True) == tmp_path / "out"
    (tmp_path / "file").write_text("x")
    with pytest.raises(HFError, match="is a file"):
        check_output_dir(tmp_path / "file", overwrite=True)


def test_a_staged_folder_replaces_the_previous_one_whole(tmp_path: pathlib.Path) -> None:
    destination = tmp_path / "out"
    _previous(destination)
    with staged(destination) as staging:
        (staging / "model.onnx").write_bytes(b"new")
        assert (destination / "stale.onnx.data").exists()  # replaced only at the end
    assert sorted(p.name for p in destination.iterdir()) == ["model.onnx"]
    assert (destination / "model.onnx").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging, no previous folder
    assert stat.S_IMODE(destination.stat().st_mode) & 0o055  # not mkdtemp's private 0700


def test_overwrite_replaces_an_export_and_a_failure_keeps_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ckpt"
    llama_checkpoint(folder)
    out = tmp_path / "onnx"
    _previous(out)
    result = CliRunner().invoke(app, ["export", "--hf", str(folder), "-o", str(out), "--no-validate"])
    assert result.exit_code == 2 and "--overwrite" in result.output
    result = CliRunner().invoke(app, ["export", "--hf", str(folder), "-o", str(out), "--no-validate", "--overwrite"])
    assert result.exit_code == 0, result.output
    assert not (out / "stale.onnx.data").exists()
    assert len(onnx.load(out / "onnx" / "model.onnx").graph.node) > 10  # the new export, its data beside it
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full (injected)")

    monkeypatch.setattr("onnxport.hf.streamed._save_parts", broken)
    with pytest.raises(OnnxportError, match="disk full"):
        onnxport.hf.export(folder, output_dir=out, stream=True, overwrite=True, validate=False)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt", "onnx"]


def test_a_killed_exports_staging_folder_is_removed_by_the_next_export(tmp_path: pathlib.Path) -> None:
    """A staging folder of a process that is gone (as a SIGKILLed export leaves it) is removed when
    the next export to the same destination starts; one of a live process, or of another
    destination, is kept."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    killed = tmp_path / f".out.onnxport-{gone.pid}-abc123"
    running = tmp_path / f".out.onnxport-{os.getppid()}-def456"  # the test runner's parent: alive
    other = tmp_path / f".other.onnxport-{gone.pid}-abc123"
    for folder in (killed, running, other):
        folder.mkdir()
        (folder / "model.onnx.data").write_bytes(b"partial")
    with staged(tmp_path / "out") as staging:
        assert staging.name.startswith(f".out.onnxport-{os.getpid()}-")
        assert not killed.exists() and running.is_dir() and other.is_dir()
        (staging / "model.onnx").write_bytes(b"new")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", running.name, other.name])


def test_an_export_killed_while_replacing_a_folder_loses_nothing(tmp_path: pathlib.Path) -> None:
    """``publish`` sets the old export aside under a pid-tagged name before it moves the new one in.
    Killed between the two renames, the old export is only in the aside folder: the next export to
    the same place renames it back (and then needs ``overwrite`` to replace it). Killed after them,
    the aside folder is deleted. An aside folder of a live process is left alone."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    aside = tmp_path / f".out.previous.onnxport-{gone.pid}-abc123"
    _previous(aside)
    live = tmp_path / f".out.previous.onnxport-{os.getppid()}-def456"
    live.mkdir()
    with pytest.raises(HFError, match="not empty"):
        check_output_dir(tmp_path / "out")  # the old export is back, so overwrite is needed
    assert (tmp_path / "out" / "stale.onnx.data").read_bytes() == b"from an earlier export"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", live.name])

    killed_late = tmp_path / f".out.previous.onnxport-{gone.pid}-0f0f0f"
    _previous(killed_late)  # the new export was already in place
    assert check_output_dir(tmp_path / "out", overwrite=True) == tmp_path / "out"
    assert (tmp_path / "out" / "model.onnx").read_bytes() == b"not a model"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", live.name])


def test_publish_sets_the_previous_export_aside_under_its_pid(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The aside folder carries this process's id, so a later export can tell a killed one's."""
    destination = tmp_path / "out"
    _previous(destination)
    seen: list[str] = []
    rename = pathlib.Path.rename

    def spy(self: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
        seen.append(pathlib.Path(target).name)
        return rename(self, target)

    monkeypatch.setattr(pathlib.Path, "rename", spy)
    with staged(destination) as staging:
        (staging / "model.onnx").write_bytes(b"new")
    assert seen[0].startswith(f".out.previous.onnxport-{os.getpid()}-")
    assert (destination / "model.onnx").read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
