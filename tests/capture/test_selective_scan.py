"""transformers' Mamba selective scan (a Python loop over the sequence) captured as one ONNX Scan
with a dynamic sequence length (capture/selective_scan.py, applied by capture/patches.py), checked
against transformers' own function in eager and in onnxruntime at two lengths."""

from __future__ import annotations

import onnx_ir as ir
import pytest
import torch

import onnxport
from onnxport.capture.selective_scan import selective_scan

modeling_mamba = pytest.importorskip("transformers.models.mamba.modeling_mamba")

BATCH, INTERMEDIATE, STATE = 2, 6, 4


def _inputs(batch: int, length: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(batch, INTERMEDIATE, length, generator=g),
            "dt": torch.randn(batch, INTERMEDIATE, length, generator=g),
            "B": torch.randn(batch, STATE, length, generator=g),
            "C": torch.randn(batch, STATE, length, generator=g),
            "z": torch.randn(batch, INTERMEDIATE, length, generator=g)}


class Mixer(torch.nn.Module):
    """The call MambaMixer makes (D, gate, delta bias, softplus), through the module attribute."""

    def __init__(self, last_state: bool) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.A = torch.nn.Parameter(-torch.rand(INTERMEDIATE, STATE, generator=g) - 0.1)
        self.D = torch.nn.Parameter(torch.randn(INTERMEDIATE, generator=g))
        self.bias = torch.nn.Parameter(torch.randn(INTERMEDIATE, generator=g))
        self.last_state = last_state

    def forward(self, x: torch.Tensor, dt: torch.Tensor, B: torch.Tensor, C: torch.Tensor,  # noqa: N803
                z: torch.Tensor) -> torch.Tensor:
        return modeling_mamba.mamba_selective_scan(x, dt, self.A, B, C, D=self.D, z=z, delta_bias=self.bias,
                                                   delta_softplus=True, return_last_state=self.last_state)


@pytest.mark.parametrize("last_state", [False, True])
def test_same_values_as_transformers_loop(last_state: bool) -> None:
    model, inputs = Mixer(last_state), _inputs(BATCH, 7, 1)
    with torch.no_grad():
        expected = model(**inputs)
        actual = selective_scan(inputs["x"], inputs["dt"], model.A, inputs["B"], inputs["C"], D=model.D,
                                z=inputs["z"], delta_bias=model.bias, delta_softplus=True,
                                return_last_state=last_state, use_mambapy=False)
    for a, e in zip(*(t if isinstance(t, tuple) else (t,) for t in (actual, expected))):
        assert a.shape == e.shape and a.dtype == e.dtype
        assert float(e.abs().max()) > 0.1
        torch.testing.assert_close(a, e, rtol=1e-6, atol=1e-6)


def test_one_scan_with_a_dynamic_sequence_in_onnxruntime() -> None:
    model = Mixer(last_state=True)
    seq = {0: "batch_size", 2: "sequence_length"}
    program = onnxport.export(model, (), _inputs(BATCH, 7, 1),
                              dynamic_shapes={"x": seq, "dt": seq, "B": seq, "C": seq, "z": seq})
    op_types = [n.op_type for n in ir.traversal.RecursiveGraphIterator(program.model.graph)]
    assert op_types.count("Scan") == 1
    for batch, length in [(BATCH, 7), (3, 12)]:
        inputs = _inputs(batch, length, length)
        with torch.no_grad():
            expected = model(**inputs)
        actual = program(**inputs)
        assert [tuple(a.shape) for a in actual] == [(batch, INTERMEDIATE, length), (batch, INTERMEDIATE, STATE)]
        for a, e in zip(actual, expected):
            torch.testing.assert_close(torch.as_tensor(a), e, rtol=1e-5, atol=1e-5)
    assert modeling_mamba.mamba_selective_scan is not selective_scan  # restored after the capture
