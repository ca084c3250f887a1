"""``owner/name`` ids (onnxport.hf.hub): resolved to their snapshot in the Hugging Face cache (a
cache built here on disk: tests never reach the hub), exported like the local folder; an id the
cache lacks with the hub off, and other strings, fail with onnxport's HFError naming the fix."""

from __future__ import annotations

import os
import pathlib
from typing import Any

import huggingface_hub
import huggingface_hub.constants
import huggingface_hub.errors
import onnx
import pytest
from typer.testing import CliRunner

import onnxport.hf
from _checkpoints import llama_checkpoint
from onnxport.cli import app
from onnxport.errors import HFError
from onnxport.hf import hub

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """An empty Hugging Face hub cache, with the hub off."""
    root = tmp_path / "hub"
    root.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


def _cached(cache: pathlib.Path, repo: str) -> pathlib.Path:
    """``repo``'s snapshot folder in ``cache`` (huggingface_hub's layout: refs/main → snapshots/<commit>)."""
    entry = cache / f"models--{repo.replace('/', '--')}"
    (entry / "refs").mkdir(parents=True)
    (entry / "refs" / "main").write_text(COMMIT)
    return entry / "snapshots" / COMMIT


@pytest.mark.parametrize(
    ("text", "expected"),
    [("acme/tiny-llama", ("acme/tiny-llama", None)), ("acme/tiny.v2@refs/pr/1", ("acme/tiny.v2", "refs/pr/1")),
     ("tiny-llama", None), ("./acme/x", None), ("/abs/acme", None), ("a--b/c", None), ("acme/x/y", None)],
)
def test_hub_ids_are_told_from_paths(text: str, expected: tuple[str, str | None] | None) -> None:
    assert hub.hub_id(text) == expected


def test_a_cached_hub_id_exports_like_its_folder(cache: pathlib.Path, tmp_path: pathlib.Path) -> None:
    snapshot = _cached(cache, "acme/tiny-llama")
    llama_checkpoint(snapshot)
    assert hub.resolve("acme/tiny-llama") == snapshot
    assert hub.resolve(str(snapshot)) == snapshot  # an existing path is taken as it is
    result = onnxport.hf.export("acme/tiny-llama", output_dir=tmp_path / "api", stream=True)
    assert result.checks and all(c.comparison.passed for c in result.checks)
    run = CliRunner().invoke(app, ["export", "--hf", "acme/tiny-llama", "-o", str(tmp_path / "cli")])
    assert run.exit_code == 0, run.output
    graphs = [onnx.load(str(tmp_path / out / "onnx" / "model.onnx"), load_external_data=False).graph for out in ("api", "cli")]
    assert [v.name for v in graphs[0].input] == [v.name for v in graphs[1].input]
    assert "past_key_values.0.key" in [v.name for v in graphs[0].input]


def test_an_id_missing_from_the_cache_with_the_hub_off_names_the_fix(cache: pathlib.Path, tmp_path: pathlib.Path) -> None:
    with pytest.raises(HFError, match=r"acme/absent is neither a local folder nor in the Hugging Face cache.*HF_HUB_OFFLINE=1.*hf download acme/absent"):
        onnxport.hf.export("acme/absent", output_dir=tmp_path / "out")
    run = CliRunner().invoke(app, ["export", "--hf", "acme/absent", "-o", str(tmp_path / "out")])
    assert run.exit_code == 2 and "hf download acme/absent" in run.output
    assert not (tmp_path / "out").exists()


def test_a_missing_path_that_is_no_hub_id_is_reported_as_a_folder(cache: pathlib.Path, tmp_path: pathlib.Path) -> None:
    with pytest.raises(HFError, match="is not a folder"):
        onnxport.hf.export(tmp_path / "absent" / "model", output_dir=tmp_path / "out")


def _raising(error: Exception) -> Any:
    def download(*args: Any, **kwargs: Any) -> str:
        raise error

    return download


class _Gated(huggingface_hub.errors.GatedRepoError):
    def __init__(self, message: str) -> None:  # no HTTP response to build one from here
        Exception.__init__(self, message)


class _Missing(huggingface_hub.errors.RepositoryNotFoundError):
    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)


@pytest.mark.parametrize(
    ("error", "expected"),
    [(_Gated("401 Client Error: access to acme/llama is restricted"), r"acme/llama is a gated repository: accept its terms.*hf auth login.*restricted"),
     (_Missing("404 Client Error: repository not found"), r"acme/llama: no such model on the Hugging Face Hub, or it is private"),
     (ConnectionError("Name or service not known"), r"Could not download acme/llama from the Hugging Face Hub \(ConnectionError: Name or service not known\); check the network")],
)
def test_hub_failures_are_hf_errors_naming_the_fix(
    error: Exception, expected: str, cache: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", _raising(error))
    with pytest.raises(HFError, match=expected) as caught:
        hub.resolve("acme/llama")
    assert caught.value.__cause__ is error


def test_the_hub_switched_off_by_onnxport_still_downloads_a_later_id(
    cache: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """import_transformers sets HF_HUB_OFFLINE=1 for the process when the user had not set it; a
    second Hub id in the same process was then "missing from the cache with the hub off". Only the
    user's setting counts, and huggingface_hub's own offline flag is lifted for the download."""
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(hub, "_SWITCHED_OFF", set())
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # as read at its import after
    seen: list[tuple[bool, bool]] = []

    def download(repo_id: str, **kwargs: Any) -> str:
        seen.append((kwargs["local_files_only"], huggingface_hub.constants.is_offline_mode()))
        return str(cache / "downloaded")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    hub.switch_off()  # what onnxport.hf.loading.import_transformers does
    assert os.environ["HF_HUB_OFFLINE"] == "1" and not hub.offline()
    assert hub.resolve("acme/llama") == cache / "downloaded"
    assert seen == [(False, False)] and huggingface_hub.constants.HF_HUB_OFFLINE is True  # restored
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "_SWITCHED_OFF", set())  # the user's own setting is obeyed
    assert hub.offline()
    hub.resolve("acme/other")
    assert seen[-1] == (True, True)
