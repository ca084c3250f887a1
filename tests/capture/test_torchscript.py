"""TorchScript modules and functions (``capture/torchscript.py``): converted at the example's shapes
with PyTorch's TS2EPConverter; dynamic dims refused with onnxport's error, not inspect's OSError."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import onnxport


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 3)
        self.norm = torch.nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.linear(x)))


def _block() -> _Block:
    torch.manual_seed(0)
    block = _Block().eval()
    with torch.no_grad():
        block.norm.running_mean.uniform_(-1, 1)
        block.norm.running_var.uniform_(0.5, 2)
    return block


@pytest.mark.parametrize("kind", ["script", "trace", "saved"])
def test_a_torchscript_module_exports_at_the_example_shapes(kind: str, tmp_path: Path) -> None:
    block, x = _block(), torch.randn(5, 4)
    model = torch.jit.script(block) if kind == "script" else torch.jit.trace(block, (x,))
    if kind == "saved":  # a .pt file without its Python source
        torch.jit.save(model, tmp_path / "block.pt")
        model = torch.jit.load(tmp_path / "block.pt")
    with pytest.warns(UserWarning, match="model is TorchScript: converted with .*TS2EPConverter"):
        program = onnxport.export(model, (x,))
    other = torch.randn(5, 4)
    torch.testing.assert_close(torch.as_tensor(program(other)[0]), block(other).detach(), rtol=1e-5, atol=1e-6)
    assert program.model.graph.inputs[0].shape[1] == 4


def test_a_torchscript_function_exports() -> None:
    @torch.jit.script
    def affine(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y + 1

    x, y = torch.randn(3, 2), torch.randn(3, 2)
    with pytest.warns(UserWarning, match="TorchScript"):
        program = onnxport.export(affine, (x, y))
    torch.testing.assert_close(torch.as_tensor(program(x, y)[0]), x * y + 1)


def test_dynamic_dims_on_torchscript_are_refused_with_the_fix() -> None:
    with pytest.raises(onnxport.DynamicShapesError, match=r"TorchScript .*Export the Python nn.Module"):
        onnxport.export(torch.jit.script(_block()), (torch.randn(5, 4),), dynamic_shapes={"x": {0: "batch"}})
