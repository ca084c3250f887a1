"""RWKV's WKV recurrence (a Python loop over the sequence in transformers) captured as one ONNX Scan
with a dynamic sequence length (capture/wkv.py, applied by capture/patches.py), checked against
transformers' own function in eager, with and without a state, and in onnxruntime at two lengths."""

from __future__ import annotations

import onnx_ir as ir
import pytest
import torch

import onnxport
from onnxport.capture.wkv import wkv_scan

modeling_rwkv = pytest.importorskip("transformers.models.rwkv.modeling_rwkv")

BATCH, HIDDEN = 2, 6


def _inputs(batch: int, length: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"key": 3 * torch.randn(batch, length, HIDDEN, generator=g),
            "value": torch.randn(batch, length, HIDDEN, generator=g)}


class Attention(torch.nn.Module):
    """The call RwkvSelfAttention makes, through the module attribute."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.time_decay = torch.nn.Parameter(torch.randn(HIDDEN, generator=g))
        self.time_first = torch.nn.Parameter(torch.randn(HIDDEN, generator=g))

    def forward(self, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, ...]:
        output, state = modeling_rwkv.rwkv_linear_attention(self.time_decay, self.time_first, key, value,
                                                             return_state=True)
        return output, *state


@pytest.mark.parametrize("with_state", [False, True])
def test_same_values_as_transformers_loop(with_state: bool) -> None:
    model, inputs = Attention(), _inputs(BATCH, 7, 1)
    g = torch.Generator().manual_seed(5)
    state = [torch.rand(BATCH, HIDDEN, generator=g), torch.rand(BATCH, HIDDEN, generator=g) + 0.5,
             torch.randn(BATCH, HIDDEN, generator=g)] if with_state else None
    args = (model.time_decay, model.time_first, inputs["key"], inputs["value"])
    with torch.no_grad():
        expected = modeling_rwkv.rwkv_linear_attention_cpu(*args, state=None if state is None else list(state),
                                                           return_state=True)
        actual = wkv_scan(*args, state=state, return_state=True)
    assert actual[1] is not None and expected[1] is not None
    for a, e in zip([actual[0], *actual[1]], [expected[0], *expected[1]], strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        assert float(e.abs().max()) > 0.1
        torch.testing.assert_close(a, e, rtol=1e-6, atol=1e-6)
    with torch.no_grad():
        assert wkv_scan(*args)[1] is None  # no state given nor asked: none returned, as transformers


def test_one_scan_with_a_dynamic_sequence_in_onnxruntime() -> None:
    model = Attention()
    seq = {0: "batch_size", 1: "sequence_length"}
    program = onnxport.export(model, (), _inputs(BATCH, 7, 1), dynamic_shapes={"key": seq, "value": seq})
    op_types = [n.op_type for n in ir.traversal.RecursiveGraphIterator(program.model.graph)]
    assert op_types.count("Scan") == 1
    for batch, length in [(BATCH, 7), (3, 12)]:
        inputs = _inputs(batch, length, length)
        with torch.no_grad():
            expected = model(**inputs)
        actual = program(**inputs)
        assert [tuple(a.shape) for a in actual] == [(batch, length, HIDDEN)] + [(batch, HIDDEN)] * 3
        for a, e in zip(actual, expected, strict=True):
            torch.testing.assert_close(torch.as_tensor(a), e, rtol=1e-5, atol=1e-5)
    assert modeling_rwkv.rwkv_linear_attention is not wkv_scan  # restored after the capture
