"""In-place ops on fresh intermediates made out-of-place before translation
(``capture/inplace.py``): no ``run_decompositions``, and the values of eager PyTorch; a mutation
something else can observe is left to ``run_decompositions``."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import torch

import onnxport


class Router(torch.nn.Module):
    """A mixture-of-experts router's normalization and an inverse permutation, both in place."""

    def forward(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        weights = logits.softmax(-1).topk(2, dim=-1)[0]
        weights /= weights.sum(dim=-1, keepdim=True)
        order = logits[:, 0].argsort()
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.shape[0])
        state = torch.zeros_like(logits)
        state.copy_(logits * 2)
        return weights + state[:, :2], inverse


class ReadAfterWrite(torch.nn.Module):
    """``before`` is read after the in-place add: only functionalization keeps its old value apart."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        before = x * 1.5
        view = before[:, :1]
        before.add_(1.0)  # also writes through ``view``
        return before + view


def _run(program: onnxport.ONNXProgram, x: torch.Tensor) -> list[np.ndarray]:
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})


def test_fresh_intermediates_need_no_decomposition() -> None:
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(0))
    model = Router()
    program = onnxport.export(model, (x,), dynamic_shapes=({0: "batch_size"},))
    assert program.status.decomposed is False
    for rows in (5, 9):
        x = torch.randn(rows, 6, generator=torch.Generator().manual_seed(rows))
        want = model(x)
        got = _run(program, x)
        np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-5, atol=1e-6)
        assert got[1].dtype == np.int64 and got[1].tolist() == want[1].tolist()


def test_an_observed_mutation_is_left_to_run_decompositions() -> None:
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
    model = ReadAfterWrite()
    program = onnxport.export(model, (x,))
    assert program.status.decomposed is True
    np.testing.assert_allclose(_run(program, x)[0], model(x).numpy(), rtol=1e-6)
