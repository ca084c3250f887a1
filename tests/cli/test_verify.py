"""``onnxport verify``, ``onnxport inspect`` and ``onnxport report``."""

from __future__ import annotations

import os
import pathlib

import pytest
import torch
from typer.testing import CliRunner

import onnxport
from onnxport.cli import app

FACTORY = '''
import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, gelu):
        super().__init__()
        self.fc = torch.nn.Linear(32, 32)
        self.gelu = gelu

    def forward(self, x):
        x = self.fc(x)
        return F.gelu(x) if self.gelu else torch.relu(x)  # block activation


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(i == 1) for i in range(3))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def make():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(2, 32),), {}, {"x": {0: "batch"}}
'''


@pytest.fixture
def spec(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "net_factory.py"
    path.write_text(FACTORY, encoding="utf-8")
    return f"{path}:make"


def invoke(*args: str | os.PathLike[str]):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_verify_and_inspect_a_good_file(spec: str, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "net.onnx"
    assert invoke("export", spec, "-o", out, "--external-data").exit_code == 0
    result = invoke("verify", out, spec)
    assert result.exit_code == 0, result.output
    assert "net.onnx matches eager PyTorch." in result.output
    assert "generated: batch=3 (x [3, 32])" in result.output
    assert result.output.count(" pass ") == 2

    result = invoke("inspect", out)
    assert result.exit_code == 0, result.output
    assert "[batch, 32]" in result.output
    assert "ai.onnx 23" in result.output
    assert "net.onnx.data: 3 tensors, 12.3 KB" in result.output  # the weights; biases stay inline
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") == 3}
    assert lines["Gemm"].split("│")[2].strip() == "3" and lines["Gelu"].split("│")[2].strip() == "1"


def test_verify_localizes_a_wrong_file(spec: str, tmp_path: pathlib.Path) -> None:
    from onnxport.translate.registry import Translation

    def flipped(ctx: onnxport.Ctx, self: object, *, approximate: str = "none") -> object:
        """gelu(Tensor self, *, str approximate="none") -> Tensor"""
        return ctx.op.Neg(ctx.op.Gelu(self, approximate=approximate))

    registry = onnxport.default_registry().copy()
    registry.register(Translation(torch.ops.aten.gelu.default, flipped, since=20))
    from onnxport.cli.spec import load_spec

    loaded = load_spec(spec)
    wrong = tmp_path / "wrong.onnx"
    onnxport.export(loaded.model, loaded.args, dynamic_shapes=loaded.dynamic_shapes, registry=registry, f=wrong)

    result = invoke("verify", wrong, spec)
    assert result.exit_code == 1
    assert "differs from eager PyTorch" in result.output and "--localize" in result.output

    result = invoke("verify", wrong, spec, "--localize")
    assert result.exit_code == 1, result.output
    assert "first diverging node" in result.output
    assert "aten.gelu.default" in result.output and "blocks.1: Block" in result.output
    assert 'net_factory.py", line 14, in forward' in result.output and "# block" in result.output


def test_bad_files_exit_2(tmp_path: pathlib.Path, spec: str) -> None:
    missing = invoke("inspect", tmp_path / "nope.onnx")
    assert missing.exit_code == 2 and "not found" in missing.output
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    assert invoke("inspect", junk).exit_code == 2
    assert invoke("verify", junk, spec).exit_code == 2


def test_report_command(spec: str, tmp_path: pathlib.Path) -> None:
    report = tmp_path / "r.md"
    result = invoke("report", spec, "-o", report)
    assert result.exit_code == 0, result.output
    text = report.read_text(encoding="utf-8")
    assert "**Result: success**" in text and "- [x] accuracy" in text
    assert "### generated: batch=3: pass" in text
