"""Conv → BatchNormalization fusion: positive case and near misses, checked numerically."""

from __future__ import annotations

import onnx_ir as ir
import torch

import onnxport


class ConvBn(torch.nn.Module):
    def __init__(self, reuse_conv: bool = False, bias: bool = True) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, bias=bias)
        self.bn = torch.nn.BatchNorm2d(4)
        self.reuse_conv = reuse_conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        out = self.bn(y)
        return out + y if self.reuse_conv else out


def _trained(model: ConvBn) -> ConvBn:
    torch.manual_seed(0)
    model.train()
    for _ in range(3):
        model(torch.randn(8, 3, 6, 6) * 2 + 1)  # non-trivial running statistics
    with torch.no_grad():
        model.bn.weight.uniform_(0.5, 2.0)
        model.bn.bias.uniform_(-1, 1)
    return model.eval()


def test_batchnorm_folds_into_conv() -> None:
    for bias in (True, False):
        model = _trained(ConvBn(bias=bias))
        x = torch.randn(2, 3, 6, 6)
        program = onnxport.export(model, (x,))
        ops = [n.op_type for n in program.model.graph]
        assert ops == ["Conv"]
        weight = program.model.graph.initializers["conv.weight.bn_folded"]
        assert isinstance(weight.const_value, ir.LazyTensor)
        torch.testing.assert_close(program(x)[0], model(x).detach(), rtol=1e-4, atol=1e-5)


def test_conv_with_other_users_keeps_batchnorm() -> None:
    model = _trained(ConvBn(reuse_conv=True))
    x = torch.randn(2, 3, 6, 6)
    program = onnxport.export(model, (x,))
    assert "BatchNormalization" in [n.op_type for n in program.model.graph]
    torch.testing.assert_close(program(x)[0], model(x).detach(), rtol=1e-4, atol=1e-5)
