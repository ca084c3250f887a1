"""Graph passes: each with a positive case and a near-miss negative case, checked numerically."""

from __future__ import annotations

import math

import onnx_ir as ir
import torch

import onnxport


class Linear3d(torch.nn.Module):
    def __init__(self, tie: bool = False) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
        self.fc = torch.nn.Linear(8, 16, bias=False)
        if tie:
            self.fc.weight = self.embed.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.fc(self.embed(ids))


def _ops(program: onnxport.ONNXProgram) -> list[str]:
    return [n.op_type for n in program.model.graph]


def test_transposed_weight_becomes_lazy_initializer() -> None:
    model = Linear3d().eval()
    ids = torch.tensor([[1, 2, 3], [4, 5, 9]])
    program = onnxport.export(model, (ids,))
    assert "Transpose" not in _ops(program)
    weight = program.model.graph.initializers["fc.weight.T"]
    assert isinstance(weight.const_value, ir.LazyTensor)  # not materialized during export
    assert "fc.weight" not in program.model.graph.initializers
    assert tuple(weight.shape) == (8, 16)
    torch.testing.assert_close(program(ids)[0], model(ids).detach())


def test_tied_weight_keeps_its_transpose() -> None:
    model = Linear3d(tie=True).eval()
    ids = torch.tensor([[1, 2, 3]])
    program = onnxport.export(model, (ids,))
    assert "Transpose" in _ops(program)  # the weight is also gathered: one copy only
    assert "fc.weight.T" not in program.model.graph.initializers
    torch.testing.assert_close(program(ids)[0], model(ids).detach())


class PositionIds(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(x.shape[1]).unsqueeze(0).expand(x.shape[0], -1)
        return x + positions


def test_static_shapes_fold_to_constants() -> None:
    x = torch.randn(2, 5)
    program = onnxport.export(PositionIds(), (x,))
    assert _ops(program) == ["Add"]  # arange/unsqueeze/expand folded, the constant an initializer
    torch.testing.assert_close(program(x)[0], PositionIds()(x))


def test_dynamic_shapes_do_not_fold() -> None:
    x = torch.randn(2, 5)
    program = onnxport.export(PositionIds(), (x,), dynamic_shapes=({0: "batch", 1: "seq"},))
    assert "Range" in _ops(program) and "Shape" in _ops(program)
    x2 = torch.randn(3, 7)
    torch.testing.assert_close(program(x2)[0], PositionIds()(x2))


def test_optimize_false_keeps_translation_as_is() -> None:
    x = torch.randn(2, 5)
    program = onnxport.export(PositionIds(), (x,), optimize=False)
    assert "Add" in _ops(program) and len(_ops(program)) > 1
    torch.testing.assert_close(program(x)[0], PositionIds()(x))


def test_folded_scalars_keep_rank_zero() -> None:
    class ScalarMath(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            limit = torch.tensor(3) * 2 - 1  # folds to a 0-D constant
            return x * limit

    x = torch.randn(4)
    program = onnxport.export(ScalarMath(), (x,))
    constants = [v for v in program.model.graph.initializers.values() if v.const_value is not None]
    assert all(v.const_value.numpy().ndim == 0 for v in constants)
    torch.testing.assert_close(program(x)[0], x * 5)


class LogitScale(torch.nn.Module):
    """Swin-V2's attention scale: ``clamp(logit_scale, max=log(100)).exp()`` of a [heads, 1, 1]
    weight, a weight-derived initializer whose Min has a scalar and a [3, 1, 1] operand."""

    def __init__(self) -> None:
        super().__init__()
        self.logit_scale = torch.nn.Parameter(torch.tensor([[[1.0]], [[5.0]], [[2.0]]]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.clamp(self.logit_scale, max=4.6052).exp()


def test_weight_derived_min_broadcasts() -> None:
    model = LogitScale()
    x = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(0))
    program = onnxport.export(model, (x,), dynamic_shapes=({0: "batch_size"},))
    derived = [v for v in program.model.graph.initializers.values() if "logit_scale" not in str(v.name)]
    assert derived and derived[0].const_value.numpy().shape == (3, 1, 1)
    torch.testing.assert_close(program(x)[0], model(x).detach())
    # channel 1's scale is clamped to e^4.6052 (~100), not e^5 (~148)
    torch.testing.assert_close(program(x)[0][:, 1], x[:, 1] * math.exp(4.6052))


class _TimestepEmbedding(torch.nn.Module):
    """diffusers' ``get_timestep_embedding`` with AuraFlow's ``scale=1000``: 128 constant
    frequencies ``exp(-ln(10000) * k / 128)``, multiplied by the timesteps × 1000 before sin/cos."""

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        exponent = -math.log(10000) * torch.arange(0, 128, dtype=torch.float32) / 128
        emb = 1000 * (t[:, None].float() * torch.exp(exponent)[None, :])
        return torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)


def test_folded_transcendentals_equal_eager_bit_for_bit() -> None:
    """The constant frequency table is folded with torch's exp, as eager computes it (numpy's
    float32 exp is up to 2 ulp off on 55 of the 128; times 1e6 that moved sin by ~0.06)."""
    t = torch.tensor([999.0, 1.5, 500.25])
    program = onnxport.export(_TimestepEmbedding(), (t,))
    assert not any(n.op_type == "Exp" for n in program.model.graph)  # folded
    expected = _TimestepEmbedding()(t)
    actual = torch.as_tensor(program(t)[0])
    torch.testing.assert_close(actual, expected, rtol=0, atol=2e-6)


class _AlternatingFilter(torch.nn.Module):
    """Cosmos' wavelet patcher (diffusers 0.42 ``AutoencoderKLCosmos``): a filter buffer times
    ``(-1) ** arange``, an integer ``Pow`` over a buffer, folded into a weight derived from it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("wavelets", torch.tensor([0.5, 2.0, 0.25]), persistent=False)
        self.register_buffer("_arange", torch.arange(3), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * (self.wavelets * ((-1) ** self._arange)).reshape(1, -1)


def test_a_folded_integer_pow_of_a_buffer_is_written() -> None:
    """The int64 ``Pow`` left torch's float kernels for the reference implementation, which got a
    node that had left the graph with its inputs unnamed: the folded weight failed when it was
    written (SerdeError). It now evaluates by position."""
    x = torch.tensor([[1.0, 3.0, -2.0], [0.5, 0.0, 4.0]])
    program = onnxport.export(_AlternatingFilter(), (x,))
    assert not any(n.op_type == "Pow" for n in program.model.graph)  # folded
    actual = torch.as_tensor(program(x)[0])
    torch.testing.assert_close(actual, torch.tensor([[0.5, -6.0, -0.5], [0.25, 0.0, 1.0]]), rtol=0, atol=0)
