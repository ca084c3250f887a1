"""Verification of models that draw noise: both sides draw at the mean (onnxport.draws)."""

from __future__ import annotations

import onnx_ir as ir
import pytest
import torch
from torch.nn.attention.flex_attention import flex_attention

import onnxport
from onnxport import draws


class _Noisy(torch.nn.Module):
    """A diffusion-style step and a VAE-style sample: normal and uniform draws feeding the outputs."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        eps = torch.randn_like(x)
        u = torch.rand(x.shape[0], 3)
        z = torch.empty(x.shape).normal_(2.0, 3.0)
        return torch.tanh(x + 0.5 * eps) * z, u.sum(-1) + x.sum(-1)


def test_a_model_that_draws_noise_verifies_at_the_mean_and_still_draws() -> None:
    x = torch.randn(4, 5)
    program = onnxport.export(_Noisy(), (x,), dynamic_shapes=({0: "batch"},), verify=True)
    ops = [n.op_type for n in program.model.graph]
    assert {"RandomNormalLike", "RandomUniform"} <= set(ops) or {"RandomNormalLike", "RandomUniformLike"} <= set(ops), ops
    # The graph keeps its draws: two runs differ, and the outputs are not the mean's.
    first, second = program(x)[0], program(x)[0]
    assert not torch.equal(torch.as_tensor(first), torch.as_tensor(second))
    assert [n.op_type for n in program.model.graph] == ops  # restored after the verification
    result = onnxport.verify(program, (torch.randn(3, 5),), reference=_Noisy())
    assert result.passed, result.summary()


def test_a_wrong_graph_around_the_draws_still_fails() -> None:
    class Wrong(_Noisy):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            a, b = super().forward(x)
            return a + 0.1, b

    x = torch.randn(4, 5)
    program = onnxport.export(_Noisy(), (x,))
    result = onnxport.verify(program, (x,), reference=Wrong())
    assert not result.passed and "MISMATCH" in result.summary()


def test_eager_draws_at_the_mean() -> None:
    with draws.EagerDrawsAtMean():
        normal, uniform = torch.randn(2, 3), torch.rand(4, dtype=torch.float64)
        moved = torch.empty(5).normal_(2.0, 3.0)
        ranged = torch.empty(2).uniform_(-1.0, 3.0)
        functional = torch.normal(torch.full((3,), 7.0), 1.0)
        ints = torch.randint(0, 10, (1000,))
    assert torch.equal(normal, torch.zeros(2, 3)) and torch.equal(uniform, torch.full((4,), 0.5, dtype=torch.float64))
    assert torch.equal(moved, torch.full((5,), 2.0)) and torch.equal(ranged, torch.ones(2))
    assert torch.equal(functional, torch.full((3,), 7.0))
    assert len(set(ints.tolist())) > 1  # integer draws run as they are


def test_onnx_draws_at_mean_swaps_and_restores() -> None:
    program = onnxport.export(_Noisy(), (torch.randn(4, 5),))
    before = [(n.op_type, [v.name for v in n.outputs]) for n in program.model.graph]
    assert draws.has_draws(program.model)
    with draws.onnx_draws_at_mean(program.model) as model:
        assert not draws.has_draws(model)
        assert "ConstantOfShape" in {n.op_type for n in model.graph}
        swapped = ir.to_proto(model)
    assert [(n.op_type, [v.name for v in n.outputs]) for n in program.model.graph] == before
    import onnxruntime as ort  # the test's runtime

    session = ort.InferenceSession(swapped.SerializeToString(), providers=["CPUExecutionProvider"])
    x = torch.randn(4, 5)
    a, b = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    torch.testing.assert_close(torch.as_tensor(a), torch.tanh(x) * 2.0)
    torch.testing.assert_close(torch.as_tensor(b), x.sum(-1) + 1.5)


def test_vits_text_to_waveform_verifies_with_its_noise() -> None:
    # transformers' VITS (MMS-TTS): stochastic duration predictor and prior noise, a waveform whose
    # length comes from the predicted durations (data-dependent), a dynamic text length
    transformers = pytest.importorskip("transformers", reason="VITS comes from transformers (the hf extra)")
    config = transformers.VitsConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=24, flow_size=8, spectrogram_bins=9,
        upsample_initial_channel=16, upsample_rates=[2, 2], upsample_kernel_sizes=[4, 4], resblock_kernel_sizes=[3],
        resblock_dilation_sizes=[[1]], prior_encoder_num_wavenet_layers=1, posterior_encoder_num_wavenet_layers=1,
        prior_encoder_num_flows=1, duration_predictor_filter_channels=16, depth_separable_num_layers=1,
        duration_predictor_num_flows=1, vocab_size=30,
    )
    torch.manual_seed(0)
    model = transformers.VitsModel(config).eval()
    ids = torch.randint(1, 30, (1, 9))
    kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    dims = {"input_ids": {1: "sequence_length"}, "attention_mask": {1: "sequence_length"}}
    program = onnxport.export(model, (), kwargs=kwargs, dynamic_shapes=dims, verify=True)
    assert "RandomNormalLike" in {n.op_type for n in program.model.graph}
    waveform = program(**kwargs)[0]
    assert waveform.dtype == torch.float32 and waveform.shape[0] == 1 and waveform.shape[1] % 4 == 0


def test_a_draw_that_is_a_graph_output_is_compared_at_the_mean() -> None:
    class Draw(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x * 2, torch.rand(x.shape[0], 3)

    program = onnxport.export(Draw(), (torch.randn(4, 5),), verify=True)
    outputs = [v.name for v in program.model.graph.outputs]
    with draws.onnx_draws_at_mean(program.model) as model:
        assert [v.name for v in model.graph.outputs] == outputs
        assert model.graph.outputs[1].producer().op_type == "ConstantOfShape"  # type: ignore[union-attr]
    assert [v.name for v in program.model.graph.outputs] == outputs
    assert program.model.graph.outputs[1].producer().op_type == "RandomUniformLike"  # type: ignore[union-attr]


def test_other_draws_are_not_passed_as_rounding() -> None:
    # bernoulli is not taken at a mean: its mismatch stays a mismatch (the referee's reruns would
    # otherwise see eager "move" as much as the graph differs)
    class Coin(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.bernoulli(torch.full_like(x, 0.5))

    x = torch.randn(64, 16) + 3
    program = onnxport.export(Coin(), (x,))
    result = onnxport.verify(program, (x,), reference=Coin())
    (comparison,) = result.input_sets[0].outputs
    assert not comparison.passed and any("not refereed" in n for n in comparison.notes), comparison.notes


class _NoisyFlex(torch.nn.Module):
    """A denoiser-style step as in diffusers' LTX-2 diffusion decoder: noise drawn with
    ``generator=None`` at the input's symbolic size, then FlexAttention over it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noise = torch.randn(x.shape, generator=None, dtype=x.dtype)  # randn.generator, as randn_tensor
        q = (x + 0.5 * noise).unsqueeze(1)
        return flex_attention(q, q, q).squeeze(1) + torch.rand(x.shape[0], 1, 1, generator=None)


def test_noise_at_a_symbolic_size_and_flex_attention_verify_at_the_mean() -> None:
    """``randn(size, generator=None)`` took concrete sizes only in the capture ("SymIntArrayRef
    expected to contain only concrete integers"), ``aten.randn.generator`` had no translation,
    and the eager reference under the draws-at-mean mode failed on the flex_attention op (so
    eager drew noise and verification failed)."""
    x = torch.randn(2, 6, 8)
    program = onnxport.export(_NoisyFlex(), (x,), dynamic_shapes=({0: "batch", 1: "sequence"},), verify=True)
    assert {"RandomNormalLike", "RandomUniformLike"} <= {n.op_type for n in program.model.graph}
    with draws.EagerDrawsAtMean():
        expected = _NoisyFlex()(x := torch.randn(3, 11, 8))
    with draws.onnx_draws_at_mean(program.model):
        program.release()
        (got,) = program(x)
    program.release()
    assert got.shape == (3, 11, 8)
    torch.testing.assert_close(torch.as_tensor(got), expected, rtol=1e-5, atol=1e-5)
