"""Lower bounds of dynamic dims reach the trace: a model whose shapes are right only for a
sequence of at least one token (transformers' MPT ALiBi slice) captures with
``DimName(..., min=1)`` / ``Dim.DYNAMIC(min=1)``, and its ONNX graph equals eager at other sizes.
Axes sharing a ``Dim`` are one size while tracing (a mask viewed by another input's batch)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch.export import Dim

import onnxport
from onnxport.capture.dynamic_shapes import DimName


class AlibiSlice(torch.nn.Module):
    """MPT's attention bias (``modeling_mpt.py``): one bias row sliced from
    ``max(0, 1 - query_length)`` with ``query_length = 2 * S + past``, added to ``S`` score rows.
    It broadcasts only when ``S >= 1`` (at ``S = past = 0`` the slice keeps 0 rows)."""

    def forward(self, x: torch.Tensor, past: torch.Tensor) -> torch.Tensor:
        s = x.shape[1]
        query_length = s + (past.shape[1] + s)
        bias = torch.arange(-7.0, 1.0).view(1, 1, 8).expand(x.shape[2], 1, 8)
        bias = bias[:, max(0, bias.size(1) - query_length) :, :]
        scores = x.transpose(1, 2).unsqueeze(-1) * torch.ones(8)
        return scores + bias


EXAMPLE = (torch.randn(2, 3, 4), torch.randn(2, 5))


def test_unbounded_sequence_is_captured_with_torch_exports_size_rule() -> None:
    # size-oblivious capture cannot show s == 1 - Max(0, 1 - 2s - past) (a mismatch of symbolic
    # sizes); torch.export's own rule (dynamic dims above 1) captures it, with a warning
    with pytest.warns(UserWarning, match="dynamic dims assumed above 1"):
        program = onnxport.export(
            AlibiSlice(), EXAMPLE,
            dynamic_shapes={"x": {1: "sequence_length"}, "past": {1: "past_sequence_length"}},
        )  # fmt: skip
    assert program.status.capture_attempts[0].cause == "shape mismatch between symbolic sizes"
    for sequence in (1, 6):
        x, past = torch.randn(2, sequence, 4), torch.randn(2, 5)
        torch.testing.assert_close(torch.as_tensor(program(x, past)[0]), AlibiSlice()(x, past))


@pytest.mark.parametrize(
    "sequence", [DimName("sequence_length", min=1), Dim.DYNAMIC(min=1), Dim("sequence_length", min=1, max=4096)]
)
def test_bounded_sequence_captures_and_equals_eager(sequence) -> None:
    program = onnxport.export(
        AlibiSlice(), EXAMPLE, dynamic_shapes={"x": {1: sequence}, "past": {1: "past_sequence_length"}}
    )
    graph_input = program.model.graph.inputs[0]
    if isinstance(sequence, str):  # a DimName names the ONNX dim
        assert [str(d) for d in graph_input.shape] == ["2", "sequence_length", "4"]
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for s, p in ((1, 0), (1, 9), (6, 2)):
        x, past = torch.randn(2, s, 4), torch.randn(2, p)
        (got,) = session.run(None, dict(zip(names, (x.numpy(), past.numpy()))))
        want = AlibiSlice()(x, past).numpy()
        assert got.shape == want.shape == (2, 4, s, 8)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_dim_name_is_its_text() -> None:
    name = DimName("batch_size", min=1)
    assert name == "batch_size" and name.min == 1 and str(name) == "batch_size"
    assert DimName("past_sequence_length").min == 0


class MaskByLatentBatch(torch.nn.Module):
    """diffusers' ``prepare_attention_mask`` + ``view`` (Sana's cross-attention): the caption mask
    is repeated per head when its batch is below ``batch * heads`` and viewed by the *latents'*
    batch, so the view's ``-1`` is 1 only if the two batches are one size."""

    def forward(self, latents: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, heads = latents.shape[0], 2
        bias = (1 - mask[:, None, :].float()) * -10000.0
        if bias.shape[0] < batch * heads:
            bias = bias.repeat_interleave(heads, dim=0, output_size=bias.shape[0] * heads)
        bias = bias.view(batch, heads, -1, bias.shape[-1])  # [batch, heads, 1, S]
        scores = latents.unsqueeze(1).expand(-1, heads, -1, -1)  # [batch, heads, L, S]
        return (scores + bias).softmax(-1)


def test_axes_sharing_a_dim_are_one_size_while_tracing() -> None:
    batch, length, caption = Dim("batch_size"), Dim("latent_length"), Dim("sequence_length")
    example = (torch.randn(2, 6, 5), torch.ones(2, 5, dtype=torch.int64))
    program = onnxport.export(MaskByLatentBatch(), example,
                              dynamic_shapes=({0: batch, 1: length, 2: caption}, {0: batch, 1: caption}))  # fmt: skip
    latents, mask = torch.randn(3, 4, 7), torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] + [0] * 6])
    session = ort.InferenceSession(program.model_proto.SerializeToString())
    (actual,) = session.run(None, {"latents": latents.numpy(), "mask": mask.numpy()})
    np.testing.assert_allclose(actual, MaskByLatentBatch()(latents, mask).numpy(), rtol=1e-6, atol=1e-7)
